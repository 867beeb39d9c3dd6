/* core/config/ -- layered INI configuration (DESIGN §6): built-in defaults <
 * system file < -c FILE < --set section.key=value, checked against the key
 * table (config_keys.c). Every value remembers where it came from so errors
 * can name file, line, section and key. May include: core/skipper/, error.h.
 * Called by the policy host (a policy's own section) and the CLI. */
#ifndef SKIPPER_CONFIG_H
#define SKIPPER_CONFIG_H

#include <stddef.h>

#include "skipper/status.h"

struct skipper_config; /* opaque */

struct skipper_config_entry {
	const char *section, *key, *value;
	const char *file; /* "<default>", a path, or "--set" */
	int line;         /* 0 for defaults and --set */
};

/* New configuration holding the built-in defaults. Free with skipper_config_free(). */
int skipper_config_new(struct skipper_config **out, struct skipper_error *err);
void skipper_config_free(struct skipper_config *cfg);

/* A copy of src, entry for entry (where each came from included). *out
 * owned by the caller. */
int skipper_config_copy(const struct skipper_config *src, struct skipper_config **out, struct skipper_error *err);

/* Read an INI file on top of what is there. must_exist = 0 lets a missing
 * file pass silently (the system-wide file). Syntax errors, duplicate
 * sections and duplicate keys name file:line. */
int skipper_config_load_file(struct skipper_config *cfg, const char *path, int must_exist,
                             struct skipper_error *err);

/* Apply "section.key=value" (from --set). */
int skipper_config_set(struct skipper_config *cfg, const char *assignment, struct skipper_error *err);

/* Check every section and key against the built-in table; a section that is
 * not built in is accepted only if is_policy(section) returns non-zero (its
 * keys are then checked by the plugin). Value types (int, double, bool, enum)
 * are checked too. is_policy may be NULL. */
int skipper_config_validate(const struct skipper_config *cfg, int (*is_policy)(const char *name, void *arg),
                            void *arg, struct skipper_error *err);

/* The effective entry for section.key (NULL if unset and without default). */
const struct skipper_config_entry *skipper_config_find(const struct skipper_config *cfg,
                                                       const char *section, const char *key);
/* Its value, or NULL. */
const char *skipper_config_get(const struct skipper_config *cfg, const char *section, const char *key);

/* Typed access; a bad value is an error naming file:line [section] key. */
int skipper_config_get_int(const struct skipper_config *cfg, const char *section, const char *key,
                           long *out, struct skipper_error *err);
int skipper_config_get_double(const struct skipper_config *cfg, const char *section, const char *key,
                              double *out, struct skipper_error *err);
/* A SIZE key's bytes (K, M, G, T: powers of 1024). */
int skipper_config_get_size(const struct skipper_config *cfg, const char *section, const char *key,
                            long long *out, struct skipper_error *err);
int skipper_config_get_bool(const struct skipper_config *cfg, const char *section, const char *key,
                            int *out, struct skipper_error *err);

/* Entry i of everything cfg holds, in the order it was added (the defaults,
 * then each file, then --set; for one section.key the last one wins), or
 * NULL past the end. */
const struct skipper_config_entry *skipper_config_entry_at(const struct skipper_config *cfg, size_t i);

/* All entries of one section in file order (for policy sections); the array
 * is owned by cfg and valid until the next change. */
/* 1 if the core owns this section ([model], [lookup], ...): its keys are
 * never a policy's, even one of that name. */
int skipper_config_core_section(const char *section);

size_t skipper_config_section(const struct skipper_config *cfg, const char *section,
                              const struct skipper_config_entry *const **entries);

/* Value parsers shared with the policy host ("yes/no/true/false/on/off/1/0"). */
int skipper_parse_bool(const char *s, int *out);
int skipper_parse_long(const char *s, long *out);
int skipper_parse_double(const char *s, double *out);

#endif
