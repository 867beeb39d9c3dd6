/* Skip profiles: read, check, edit, write atomically; layer lists. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/atomic.h"
#include "base/error.h"
#include "base/file.h"
#include "config/config.h"
#include "profile.h"

/* far above any profile written (a few kilobytes) */
#define PROFILE_MAX_BYTES (16u << 20)
/* a layer list of 1024 layers written one by one is under 5 KB */
#define PROFILE_LINE_MAX (64u << 10)

struct entry {
	char *section, *key, *value;
	int line; /* 0 when set by code */
};

struct skipper_profile {
	struct entry *e;
	size_t n, cap;
	char **sections; /* distinct sections in first-seen order */
	size_t n_sections;
	char *source;
};

/* ---------------------------------------------------------------- layers */

static const char *skip_blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Reads a decimal layer number; returns NULL if there is none. A number
 * past any layer count reads as LAYER_TOO_BIG (out of range for every
 * model), however many digits it has. */
#define LAYER_TOO_BIG 1000000L
static const char *read_num(const char *s, long *out)
{
	long v = 0;
	if (!isdigit((unsigned char)*s))
		return NULL;
	while (isdigit((unsigned char)*s)) {
		v = v * 10 + (*s - '0');
		if (v > LAYER_TOO_BIG)
			v = LAYER_TOO_BIG; /* saturate: no overflow on 20 digits */
		s++;
	}
	*out = v;
	return s;
}

/* The layer number written at digits is one the model has (< limit). */
static int layer_in_range(const char *digits, long v, long limit, int n_layer, struct skipper_error *err)
{
	/* said as written: a 20-digit number read as its saturated value
	 * was once reported as "layer 1000000" */
	int len = (int)strspn(digits, "0123456789");
	const char *more = len > 24 ? "..." : "";

	if (v < limit)
		return SKIPPER_OK;
	if (n_layer > 0)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "layer %.*s%s out of range: the model has %d layers (0-%d)",
		                    len > 24 ? 24 : len, digits, more, n_layer, n_layer - 1);
	return skipper_fail(err, SKIPPER_ERR_RANGE, "layer %.*s%s out of range (at most %d layers)", len > 24 ? 24 : len,
	                    digits, more, SKIPPER_LAYERS_MAX);
}

int skipper_layers_parse(const char *s, uint8_t *mask, int n_layer, struct skipper_error *err)
{
	const char *p = skip_blank(s ? s : "");
	long limit = n_layer > 0 ? n_layer : SKIPPER_LAYERS_MAX;

	if (mask && n_layer > 0) {
		/* Validate first so that a bad list leaves mask untouched. */
		int rc = skipper_layers_parse(s, NULL, n_layer, err);
		if (rc)
			return rc;
		memset(mask, 0, (size_t)n_layer);
	}
	if (*p == '\0' || (strncasecmp(p, "none", 4) == 0 && *skip_blank(p + 4) == '\0'))
		return SKIPPER_OK;

	for (;;) {
		const char *item = p, *q, *at;
		long a, b;
		int rc;

		at = p = skip_blank(p);
		q = read_num(p, &a);
		if (!q)
			goto bad_item;
		if ((rc = layer_in_range(at, a, limit, n_layer, err)))
			return rc;
		q = skip_blank(q);
		b = a;
		if (*q == '-') {
			at = skip_blank(q + 1);
			q = read_num(at, &b);
			if (!q)
				goto bad_item;
			if ((rc = layer_in_range(at, b, limit, n_layer, err)))
				return rc;
			q = skip_blank(q);
			if (b < a)
				return skipper_fail(err, SKIPPER_ERR_ARG,
				                    "bad layer list '%.80s%s': range %ld-%ld is reversed", s, strlen(s) > 80 ? "..." : "",
				                    a, b);
		}
		if (*q != ',' && *q != '\0')
			goto bad_item;
		if (mask && n_layer > 0)
			for (long l = a; l <= b; l++)
				mask[l] = 1;
		if (*q == '\0')
			return SKIPPER_OK;
		p = q + 1;
		continue;
	bad_item: {
		size_t len = strcspn(item, ",");
		return skipper_fail(err, SKIPPER_ERR_ARG,
		                    "bad layer list '%.80s%s': '%.*s' is not a layer or range (expected e.g. 3,5,7-12)",
		                    s, strlen(s) > 80 ? "..." : "", (int)(len > 40 ? 40 : len), item);
	}
	}
}

int skipper_layers_format(const uint8_t *mask, int n_layer, char *buf, size_t size)
{
	size_t len = 0;
	char tmp[32];

	if (size)
		buf[0] = '\0';
	for (int l = 0; l < n_layer; l++) {
		int e = l;
		int k;
		if (!mask[l])
			continue;
		while (e + 1 < n_layer && mask[e + 1])
			e++;
		if (e > l)
			k = snprintf(tmp, sizeof tmp, "%s%d-%d", len ? "," : "", l, e);
		else
			k = snprintf(tmp, sizeof tmp, "%s%d", len ? "," : "", l);
		if (len + (size_t)k < size)
			memcpy(buf + len, tmp, (size_t)k + 1);
		else if (size)
			buf[len < size ? len : size - 1] = '\0';
		len += (size_t)k;
		l = e;
	}
	return (int)len;
}

/* --------------------------------------------------------------- storage */

int skipper_profile_new(struct skipper_profile **out, struct skipper_error *err)
{
	struct skipper_profile *p = calloc(1, sizeof *p);
	if (!p || !(p->source = strdup("<new>"))) {
		free(p);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	*out = p;
	return SKIPPER_OK;
}

void skipper_profile_free(struct skipper_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->e[i].section);
		free(p->e[i].key);
		free(p->e[i].value);
	}
	for (size_t i = 0; i < p->n_sections; i++)
		free(p->sections[i]);
	free(p->sections);
	free(p->e);
	free(p->source);
	free(p);
}

static struct entry *find(const struct skipper_profile *p, const char *section, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->e[i].section, section) == 0 && strcmp(p->e[i].key, key) == 0)
			return &p->e[i];
	return NULL;
}

static int add_section(struct skipper_profile *p, const char *section)
{
	char **ns;
	for (size_t i = 0; i < p->n_sections; i++)
		if (strcmp(p->sections[i], section) == 0)
			return SKIPPER_OK;
	ns = realloc(p->sections, (p->n_sections + 1) * sizeof *ns);
	if (!ns)
		return SKIPPER_ERR_NOMEM;
	p->sections = ns;
	if (!(ns[p->n_sections] = strdup(section)))
		return SKIPPER_ERR_NOMEM;
	p->n_sections++;
	return SKIPPER_OK;
}

/* Appends without checking for duplicates (callers do). */
static int append(struct skipper_profile *p, const char *section, const char *key, const char *value, int line)
{
	struct entry *e;
	if (add_section(p, section))
		return SKIPPER_ERR_NOMEM;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct entry *ne = realloc(p->e, cap * sizeof *ne);
		if (!ne)
			return SKIPPER_ERR_NOMEM;
		p->e = ne;
		p->cap = cap;
	}
	e = &p->e[p->n];
	e->section = strdup(section);
	e->key = strdup(key);
	e->value = strdup(value);
	e->line = line;
	if (!e->section || !e->key || !e->value) {
		free(e->section);
		free(e->key);
		free(e->value);
		return SKIPPER_ERR_NOMEM;
	}
	p->n++;
	return SKIPPER_OK;
}

const char *skipper_profile_get(const struct skipper_profile *p, const char *section, const char *key)
{
	const struct entry *e = find(p, section, key);
	return e ? e->value : NULL;
}

const char *skipper_profile_section(const struct skipper_profile *p, int i)
{
	return i >= 0 && (size_t)i < p->n_sections ? p->sections[i] : NULL;
}

int skipper_profile_entry(const struct skipper_profile *p, int i, const char **section, const char **key,
                          const char **value)
{
	if (i < 0 || (size_t)i >= p->n)
		return -1;
	*section = p->e[i].section;
	*key = p->e[i].key;
	*value = p->e[i].value;
	return 0;
}

const char *skipper_profile_source(const struct skipper_profile *p)
{
	return p->source;
}

int skipper_profile_n_layers(const struct skipper_profile *p)
{
	const char *v = skipper_profile_get(p, "profile", "n_layers");
	long n;
	if (!v || skipper_parse_long(v, &n) || n <= 0 || n > SKIPPER_LAYERS_MAX)
		return 0;
	return (int)n;
}

static int valid_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return 0;
	return 1;
}

/* Values must survive a round trip through inih unchanged. */
static int valid_value(const char *v)
{
	size_t n = strlen(v);
	if (n && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1])))
		return 0;
	return strpbrk(v, "\n\r;#") == NULL;
}

int skipper_profile_set(struct skipper_profile *p, const char *section, const char *key, const char *value,
                        struct skipper_error *err)
{
	struct entry *e;
	if (!valid_name(section) || !valid_name(key))
		return skipper_fail(err, SKIPPER_ERR_ARG, "profile: bad section or key name [%s] %s", section, key);
	if (!valid_value(value))
		return skipper_fail(err, SKIPPER_ERR_ARG,
		                    "profile: [%s] %s: value must be one line without ';', '#' or surrounding blanks",
		                    section, key);
	e = find(p, section, key);
	if (e) {
		char *v = strdup(value);
		if (!v)
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		free(e->value);
		e->value = v;
		e->line = 0;
		return SKIPPER_OK;
	}
	if (append(p, section, key, value, 0))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	return SKIPPER_OK;
}

int skipper_profile_get_mask(const struct skipper_profile *p, const char *section, const char *key,
                             uint8_t *mask, int n_layer, struct skipper_error *err)
{
	const struct entry *e = find(p, section, key);
	int n = skipper_profile_n_layers(p);
	int rc;
	if (!e)
		return skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s: no key [%s] %s", p->source, section, key);
	if (n <= 0)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: [profile] n_layers missing or invalid", p->source);
	if (n != n_layer)
		return skipper_fail(err, SKIPPER_ERR_MISMATCH, "%s: profile is for %d layers, the mask has %d", p->source,
		                    n, n_layer);
	rc = skipper_layers_parse(e->value, mask, n, err);
	if (rc && e->line)
		skipper_fail_prefix(err, "%s:%d: [%s] %s", p->source, e->line, section, key);
	else if (rc)
		skipper_fail_prefix(err, "%s: [%s] %s", p->source, section, key);
	return rc;
}

int skipper_profile_set_mask(struct skipper_profile *p, const char *section, const char *key,
                             const uint8_t *mask, int n_layer, struct skipper_error *err)
{
	int len = skipper_layers_format(mask, n_layer, NULL, 0);
	char *buf = malloc((size_t)len + 1);
	int rc;
	if (!buf)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	skipper_layers_format(mask, n_layer, buf, (size_t)len + 1);
	rc = skipper_profile_set(p, section, key, buf, err);
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ read */

/* Profiles are parsed here rather than with inih: Debian's inih stops at
 * 200-byte lines, and the layer list of a deep model is longer than that.
 * The syntax is inih's subset that profiles use: [section], key = value
 * (or key: value), full-line comments with ';' or '#', inline comments
 * with ';' after a blank, a UTF-8 BOM. Blank lines and indentation are
 * ignored; there are no continuation lines. */

static char *trim(char *s)
{
	char *e;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Cut an inline comment: ';' at the start or after a blank. */
static void cut_comment(char *s)
{
	for (char *c = s; *c; c++)
		if (*c == ';' && (c == s || isspace((unsigned char)c[-1]))) {
			*c = '\0';
			return;
		}
}

static int parse_line(struct skipper_profile *p, char *line, int lineno, char *section, size_t secsize,
                      struct skipper_error *err)
{
	char *s = trim(line), *eq, *key, *value;
	const struct entry *prev;

	if (*s == '\0' || *s == ';' || *s == '#')
		return SKIPPER_OK;
	if (*s == '[') {
		char *close = strchr(s, ']');
		if (!close)
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: section header without ']'", p->source, lineno);
		*close = '\0';
		cut_comment(close + 1);
		if (*trim(close + 1))
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: text after the section header", p->source,
			                    lineno);
		s = trim(s + 1);
		if (!valid_name(s) || strlen(s) >= secsize)
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: bad section name [%s]", p->source, lineno, s);
		for (size_t i = 0; i < p->n_sections; i++)
			if (strcmp(p->sections[i], s) == 0)
				return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: duplicate section [%s]", p->source,
				                    lineno, s);
		if (add_section(p, s))
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		strcpy(section, s);
		return SKIPPER_OK;
	}
	eq = s + strcspn(s, "=:");
	if (!*eq)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: expected 'key = value' or '[section]'", p->source,
		                    lineno);
	*eq = '\0';
	key = trim(s);
	value = eq + 1;
	cut_comment(value);
	value = trim(value);
	if (!section[0])
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: key '%s' outside of any [section]", p->source,
		                    lineno, key);
	if (!valid_name(key))
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: [%s]: bad key name '%s'", p->source, lineno,
		                    section, key);
	if ((prev = find(p, section, key)))
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: [%s] %s: duplicate key (first set on line %d)",
		                    p->source, lineno, section, key, prev->line);
	if (append(p, section, key, value, lineno))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	return SKIPPER_OK;
}

static int parse_file(struct skipper_profile *p, FILE *fp, struct skipper_error *err)
{
	char section[256] = "";
	char *line = NULL;
	size_t cap = 0;
	long len;
	int lineno = 0, rc = SKIPPER_OK;

	while (rc == SKIPPER_OK && (len = skipper_read_line(fp, &line, &cap, PROFILE_LINE_MAX)) != SKIPPER_LINE_EOF) {
		char *s = line;
		lineno++;
		if (len == SKIPPER_LINE_NUL)
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: NUL byte in a text file", p->source, lineno);
		else if (len == SKIPPER_LINE_LONG)
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: line longer than %u bytes", p->source, lineno,
			                  PROFILE_LINE_MAX - 1);
		else if (len < 0)
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		if (rc)
			break;
		if (lineno == 1 && (unsigned char)s[0] == 0xef && (unsigned char)s[1] == 0xbb &&
		    (unsigned char)s[2] == 0xbf)
			s += 3;
		rc = parse_line(p, s, lineno, section, sizeof section, err);
	}
	if (rc == SKIPPER_OK && ferror(fp))
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: read error", p->source);
	free(line);
	return rc;
}

static int is_hex64(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return i == 64;
}

static int policy_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return 0;
	return 1;
}

/* Checks what every profile needs and every list/number it carries. */
static int check(const struct skipper_profile *p, struct skipper_error *err)
{
	const struct entry *e;
	const char *sha = skipper_profile_get(p, "profile", "model_sha256");
	int n;

	if (!skipper_profile_get(p, "profile", "n_layers"))
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: not a skip profile: no [profile] n_layers", p->source);
	e = find(p, "profile", "n_layers");
	n = skipper_profile_n_layers(p);
	if (n <= 0)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: [profile] n_layers: expected 1..%d, got '%.80s'",
		                    p->source, e->line, SKIPPER_LAYERS_MAX, e->value);
	if (!sha)
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "%s: [profile] model_sha256 missing (the SHA-256 of the model file, see skipper info)",
		                    p->source);
	if (!is_hex64(sha)) {
		e = find(p, "profile", "model_sha256");
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: [profile] model_sha256: expected 64 hex digits, got '%s'",
		                    p->source, e->line, sha);
	}
	/* profiles come from hubs: a method is a policy's name, never a path
	 * (a name with '/' loads that file as a plugin where a user names it) */
	if ((e = find(p, "profile", "method")) && !policy_name(e->value))
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "%s:%d: [profile] method: '%.80s' is not a policy name (letters, digits, '_' and '-'; "
		                    "a profile names no plugin file)",
		                    p->source, e->line, e->value);
	for (size_t i = 0; i < p->n; i++) {
		e = &p->e[i];
		int is_mask = strcmp(e->section, "mask") == 0 || strncmp(e->section, "domain.", 7) == 0;
		if (is_mask && (strcmp(e->key, "attn") == 0 || strcmp(e->key, "mlp") == 0)) {
			int rc = skipper_layers_parse(e->value, NULL, n, err);
			if (rc) {
				skipper_fail_prefix(err, "%s:%d: [%s] %s", p->source, e->line, e->section, e->key);
				return SKIPPER_ERR_FORMAT;
			}
		} else if (strncmp(e->section, "latency.", 8) == 0) {
			double v;
			if (skipper_parse_double(e->value, &v))
				return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: [%s] %s: expected a number, got '%.80s'",
				                    p->source, e->line, e->section, e->key, e->value);
		}
	}
	return SKIPPER_OK;
}

int skipper_profile_read(const char *path, struct skipper_profile **out, struct skipper_error *err)
{
	struct skipper_profile *p;
	FILE *fp;
	int rc;

	*out = NULL;
	if ((rc = skipper_profile_new(&p, err)))
		return rc;
	free(p->source);
	if (!(p->source = strdup(path))) {
		skipper_profile_free(p);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	/* a profile is an INI of a few kilobytes: /dev/zero or a sparse
	 * gigabyte is not read into memory to find that out */
	if (!(fp = skipper_open_regular(path, "r", PROFILE_MAX_BYTES, "skip profile", err))) {
		skipper_profile_free(p);
		return err ? err->status : SKIPPER_ERR_IO;
	}
	rc = parse_file(p, fp, err);
	fclose(fp);
	if (rc == SKIPPER_OK)
		rc = check(p, err);
	if (rc) {
		skipper_profile_free(p);
		return rc;
	}
	*out = p;
	return SKIPPER_OK;
}

int skipper_profile_validate(const struct skipper_profile *p, const char *model_sha256, int n_layer,
                             struct skipper_error *err)
{
	const char *sha = skipper_profile_get(p, "profile", "model_sha256");
	const char *name = skipper_profile_get(p, "profile", "model");
	int n = skipper_profile_n_layers(p);

	if (n != n_layer)
		return skipper_fail(err, SKIPPER_ERR_MISMATCH,
		                    "%s: profile made for a %d-layer model%s%s%s, the loaded model has %d layers",
		                    p->source, n, name ? " (" : "", name ? name : "", name ? ")" : "", n_layer);
	if (model_sha256 && (!sha || strcasecmp(sha, model_sha256) != 0))
		return skipper_fail(err, SKIPPER_ERR_MISMATCH,
		                    "%s: profile made for model %s%ssha256 %s, the loaded model has sha256 %s",
		                    p->source, name ? name : "", name ? " " : "", sha ? sha : "(none)", model_sha256);
	return SKIPPER_OK;
}

/* ----------------------------------------------------------------- write */

int skipper_profile_write(const struct skipper_profile *p, const char *path, struct skipper_error *err)
{
	struct skipper_atomic *a = skipper_atomic_open(path, err);
	FILE *fp;

	if (!a)
		return err ? err->status : SKIPPER_ERR_IO;
	fp = skipper_atomic_file(a);
	for (size_t s = 0; s < p->n_sections; s++) {
		fprintf(fp, "%s[%s]\n", s ? "\n" : "", p->sections[s]);
		for (size_t i = 0; i < p->n; i++)
			if (strcmp(p->e[i].section, p->sections[s]) == 0)
				fprintf(fp, "%s = %s\n", p->e[i].key, p->e[i].value);
	}
	return skipper_atomic_commit(a, err);
}
