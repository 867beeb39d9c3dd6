/* A policy's INI keys written once, as a table: name, type, where the value
 * lives, default, range and one line of help. The table parses the keys
 * (keys_config, from the plugin's config hook), sets the defaults
 * (keys_defaults, from create), frees the strings (keys_free, from destroy)
 * and makes the descriptor's config_help (keys_help, from the function
 * SKIPPER_POLICY_REGISTER_WITH calls when the plugin is loaded), so a
 * default is never written twice. Errors are set through the host like its
 * parsers'. A table ends with an entry whose name is NULL. */
#ifndef COMMON_KEYS_KEYS_H
#define COMMON_KEYS_KEYS_H

#include <stddef.h>

#include "skipper/policy.h"

/* Types, and the member each one keeps at `offset`. */
#define KEY_INT 0    /* int, in [min, max] */
#define KEY_DOUBLE 1 /* double, in [min, max] */
#define KEY_BOOL 2   /* int, 0 or 1 */
#define KEY_CHOICE 3 /* int: the index of the value among `value`'s "a|b|c" */
#define KEY_STRING 4 /* char *, an owned copy; NULL = not given */
#define KEY_LAYERS 5 /* char *, an owned copy of a layer list whose syntax (and, with
                        a model, range) is checked at once; NULL = not given */

struct key_spec {
	const char *name;
	int type;              /* KEY_* */
	size_t offset;         /* of the value in the struct the table describes */
	double dflt;           /* INT, DOUBLE, BOOL, CHOICE (index) */
	double min, max;       /* INT, DOUBLE */
	const char *value;     /* what a value looks like in the help ("K", "FILE"); CHOICE:
	                          the choices, "a|b"; NULL: BOOL, LAYERS, or N, X, S */
	const char *help;      /* what it does; a '\n' continues it on the next line */
	const char *dflt_text; /* the default as the help says it where the member does not
	                          hold it ("[policy] profile", "round(skip_ratio * L)");
	                          NULL: dflt (strings: no default shown) */
	/* KEY_STRING: a check of the value beyond being a string (may be NULL) */
	int (*check)(const struct skipper_host *h, void *ctx, const char *value);
};

/* dflt_text of a number kept in a macro that the code applies itself. */
#define KEY_TEXT(x) KEY_TEXT_(x)
#define KEY_TEXT_(x) #x

/* Every number and choice to its default in base; strings are left alone
 * (the state is zeroed: NULL = not given). */
void keys_defaults(const struct key_spec *t, void *base);

/* One key of the policy's INI section into base: SKIPPER_POLICY_OK, an
 * error with the message set, or SKIPPER_POLICY_UNKNOWN_KEY (no error set)
 * when the table has no such key. A string given twice keeps the last. */
int keys_config(const struct key_spec *t, void *base, const struct skipper_host *h, void *ctx, const char *key,
                const char *value);

/* Free the strings base holds for the table's keys (and set them NULL). */
void keys_free(const struct key_spec *t, void *base);

/* config_help of the tables (a NULL-terminated list), one
 * "key = VALUE    help (default D)" line per key, into buf (always
 * terminated); returns the length it needs, like snprintf. */
size_t keys_help(char *buf, size_t size, const struct key_spec *const *tables);

#endif
