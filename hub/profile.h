/* Skip-profile files (DESIGN §7) as the hub sees them: INI syntax with a
 * [profile] section, and which file names count as profile data. Full
 * validation against a model is the engine's job. */
#ifndef SKIPPER_HUB_PROFILE_H
#define SKIPPER_HUB_PROFILE_H

#include <stddef.h>

#include "skipper/status.h"

struct skipper_hub_profile_kv {
	char *section, *key, *value;
	int line;
};

struct skipper_hub_profile_doc {
	struct skipper_hub_profile_kv *kv; /* in file order */
	size_t n;
};

/* Parse profile text (len bytes, NUL not allowed inside). Needs a [profile]
 * section; duplicate keys, a non-numeric n_layers, a malformed model_sha256
 * or a bad layer list in [mask] are errors that name the line. The caller
 * owns *out and frees it with skipper_hub_profile_doc_free(). name is used in
 * messages. */
int skipper_hub_profile_parse(const char *name, const char *text, size_t len, struct skipper_hub_profile_doc *out,
                          struct skipper_error *err);
/* Same, reading the file at path. */
int skipper_hub_profile_load(const char *path, struct skipper_hub_profile_doc *out, struct skipper_error *err);
void skipper_hub_profile_doc_free(struct skipper_hub_profile_doc *doc);

/* Value of section.key or NULL (owned by doc). */
const char *skipper_hub_profile_get(const struct skipper_hub_profile_doc *doc, const char *section, const char *key);

/* Parse a layer list "3,5,7-12" (ascending or not, no duplicates needed).
 * Layers must be < max_layers (<= 0: 4096). Sets *count to the number of
 * distinct layers; mask (max_layers bytes, may be NULL) gets 1 for each. */
int skipper_hub_profile_parse_layers(const char *list, int max_layers, unsigned char *mask, int *count);

/* 1 if name may be fetched as part of a profile: .ini, .sig, .safetensors,
 * .json, .txt, .md only, so nothing executable (.so, scripts) ever is. */
int skipper_hub_profile_name_ok(const char *name);

#endif
