/* INI keys from a table; see keys.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

/* where the help text starts: after the longest "key = VALUE" plus one space */
#define HELP_COLUMN 21

static void *member(void *base, const struct key_spec *k)
{
	return (char *)base + k->offset;
}

void keys_defaults(const struct key_spec *t, void *base)
{
	for (; t->name; t++) {
		if (t->type == KEY_DOUBLE)
			*(double *)member(base, t) = t->dflt;
		else if (t->type == KEY_INT || t->type == KEY_BOOL || t->type == KEY_CHOICE)
			*(int *)member(base, t) = (int)t->dflt;
	}
}

void keys_free(const struct key_spec *t, void *base)
{
	for (; t->name; t++) {
		if (t->type == KEY_STRING || t->type == KEY_LAYERS) {
			char **s = member(base, t);
			free(*s);
			*s = NULL;
		}
	}
}

/* The i-th of "a|b|c" (its length in *len), or NULL past the last. */
static const char *choice_at(const char *c, int i, int *len)
{
	while (i-- > 0) {
		if (!(c = strchr(c, '|')))
			return NULL;
		c++;
	}
	*len = (int)strcspn(c, "|");
	return c;
}

/* The index of value among "a|b|c", or -1. */
static int choice_index(const char *choices, const char *value)
{
	const char *c;
	int len;
	for (int i = 0; (c = choice_at(choices, i, &len)); i++)
		if ((size_t)len == strlen(value) && !strncmp(c, value, (size_t)len))
			return i;
	return -1;
}

/* "expected a or b, got 'x'" (three or more: "one of a, b, c") */
static int bad_choice(const struct skipper_host *h, void *ctx, const char *choices, const char *value)
{
	char list[256] = "";
	const char *c;
	int len, n = 0;
	while (choice_at(choices, n, &len))
		n++;
	for (int i = 0; i < n; i++) {
		size_t o = strlen(list);
		c = choice_at(choices, i, &len);
		snprintf(list + o, sizeof list - o, "%s%.*s", i == 0 ? "" : n == 2 ? " or " : ", ", len, c);
	}
	h->set_error(ctx, "expected %s%s, got '%s'", n > 2 ? "one of " : "", list, value);
	return SKIPPER_POLICY_ERROR;
}

static int set_string(char **dst, const char *value)
{
	char *s = strdup(value);
	if (!s)
		return SKIPPER_POLICY_NOMEM;
	free(*dst);
	*dst = s;
	return SKIPPER_POLICY_OK;
}

int keys_config(const struct key_spec *t, void *base, const struct skipper_host *h, void *ctx, const char *key,
                const char *value)
{
	int64_t i;
	int rc;

	while (t->name && strcmp(t->name, key))
		t++;
	if (!t->name)
		return SKIPPER_POLICY_UNKNOWN_KEY;
	switch (t->type) {
	case KEY_INT:
		if ((rc = h->parse_int(ctx, value, (int64_t)t->min, (int64_t)t->max, &i)) == 0)
			*(int *)member(base, t) = (int)i;
		return rc;
	case KEY_DOUBLE:
		return h->parse_double(ctx, value, t->min, t->max, member(base, t));
	case KEY_BOOL:
		return h->parse_bool(ctx, value, member(base, t));
	case KEY_CHOICE:
		if ((rc = choice_index(t->value, value)) < 0)
			return bad_choice(h, ctx, t->value, value);
		*(int *)member(base, t) = rc;
		return SKIPPER_POLICY_OK;
	case KEY_LAYERS:
		/* syntax and range now, so a typo is reported at its line */
		if ((rc = h->parse_layers(ctx, value, NULL, h->n_layer)))
			return rc;
		return set_string(member(base, t), value);
	case KEY_STRING:
		if (t->check && (rc = t->check(h, ctx, value)))
			return rc;
		return set_string(member(base, t), value);
	}
	h->set_error(ctx, "key %s has type %d, which the key table does not know", key, t->type);
	return SKIPPER_POLICY_ERROR;
}

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(o->len < o->size ? o->buf + o->len : NULL, o->len < o->size ? o->size - o->len : 0, fmt, ap);
	va_end(ap);
	o->len += n > 0 ? (size_t)n : 0;
}

static const char *value_shape(const struct key_spec *k)
{
	static const char *const shape[] = { "N", "X", "BOOL", "", "S", "LAYERS" };
	if (k->value)
		return k->value;
	return k->type >= 0 && k->type < (int)(sizeof shape / sizeof shape[0]) ? shape[k->type] : "";
}

/* " (default D)", from dflt_text or the member's default */
static void put_default(struct out *o, const struct key_spec *k)
{
	if (k->dflt_text) {
		put(o, " (default %s)", k->dflt_text);
	} else if (k->type == KEY_INT) {
		put(o, " (default %lld)", (long long)k->dflt);
	} else if (k->type == KEY_DOUBLE) {
		put(o, " (default %g)", k->dflt);
	} else if (k->type == KEY_BOOL) {
		put(o, " (default %s)", k->dflt ? "true" : "false");
	} else if (k->type == KEY_CHOICE) {
		int len;
		const char *c = choice_at(k->value, (int)k->dflt, &len);
		if (c)
			put(o, " (default %.*s)", len, c);
	}
}

size_t keys_help(char *buf, size_t size, const struct key_spec *const *tables)
{
	struct out o = { buf, size, 0 };

	if (size)
		buf[0] = '\0';
	for (; *tables; tables++) {
		for (const struct key_spec *k = *tables; k->name; k++) {
			int left = (int)(strlen(k->name) + 3 + strlen(value_shape(k)));
			const char *line = k->help ? k->help : "";
			put(&o, "%s = %s%*s", k->name, value_shape(k), left < HELP_COLUMN ? HELP_COLUMN - left : 2, "");
			for (const char *nl; (nl = strchr(line, '\n')); line = nl + 1)
				put(&o, "%.*s\n%*s", (int)(nl - line), line, HELP_COLUMN, "");
			put(&o, "%s", line);
			put_default(&o, k);
			put(&o, "\n");
		}
	}
	return o.len;
}
