#ifndef SKIPPER_CONFIG_KEYS_H
#define SKIPPER_CONFIG_KEYS_H

enum skipper_key_kind {
	SKIPPER_KEY_STRING, SKIPPER_KEY_INT, SKIPPER_KEY_DOUBLE, SKIPPER_KEY_BOOL,
	SKIPPER_KEY_ENUM,  /* one of the comma-separated choices */
	SKIPPER_KEY_SIZE   /* bytes with optional K, M, G, T suffix (powers of 1024) */
};

struct skipper_config_key {
	const char *section, *key, *def;
	int kind;
	const char *choices; /* ENUM: the comma-separated words; INT: one word also taken (a default
	                      * its reader resolves, as draft_vocab's "auto"), or NULL */
	double min, max; /* INT and DOUBLE ranges (both 0: unbounded) */
};

/* Terminated by an entry whose section is NULL. */
extern const struct skipper_config_key skipper_config_keys[];

#endif
