/* Profile INI parsing for `skipper profile show|verify` and profile pulls.
 * Profiles come from hubs, so the parser treats its input as hostile: every
 * value is bounded and checked, and nothing in it is ever executed. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "error.h"
#include "hub/profile.h"

#define SKIPPER_PROFILE_MAX_BYTES (16L << 20)
#define SKIPPER_PROFILE_MAX_KEYS 100000

struct parse_ctx {
	struct skipper_hub_profile_doc *doc;
	size_t cap;
	int failed; /* SKIPPER_ERR_* from the handler */
	char why[256];
};

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *c = user;
	struct skipper_hub_profile_doc *d = c->doc;
	struct skipper_hub_profile_kv *kv;

	if (c->failed)
		return 0;
	if (skipper_hub_profile_get(d, section, name)) {
		c->failed = SKIPPER_ERR_FORMAT;
		snprintf(c->why, sizeof c->why, "duplicate key [%.80s] %.80s (multi-line values are not supported)",
		         section, name);
		return 0;
	}
	if (d->n == SKIPPER_PROFILE_MAX_KEYS) {
		c->failed = SKIPPER_ERR_FORMAT;
		snprintf(c->why, sizeof c->why, "more than %d keys", SKIPPER_PROFILE_MAX_KEYS);
		return 0;
	}
	if (d->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		kv = realloc(d->kv, cap * sizeof *kv);
		if (!kv) {
			c->failed = SKIPPER_ERR_NOMEM;
			snprintf(c->why, sizeof c->why, "out of memory");
			return 0;
		}
		d->kv = kv;
		c->cap = cap;
	}
	kv = &d->kv[d->n];
	kv->section = strdup(section);
	kv->key = strdup(name);
	kv->value = strdup(value);
	kv->line = 0;
	if (!kv->section || !kv->key || !kv->value) {
		free(kv->section);
		free(kv->key);
		free(kv->value);
		c->failed = SKIPPER_ERR_NOMEM;
		snprintf(c->why, sizeof c->why, "out of memory");
		return 0;
	}
	d->n++;
	return 1;
}

const char *skipper_hub_profile_get(const struct skipper_hub_profile_doc *doc, const char *section, const char *key)
{
	for (size_t i = 0; i < doc->n; i++)
		if (strcmp(doc->kv[i].section, section) == 0 && strcmp(doc->kv[i].key, key) == 0)
			return doc->kv[i].value;
	return NULL;
}

static int has_section(const struct skipper_hub_profile_doc *doc, const char *section)
{
	for (size_t i = 0; i < doc->n; i++)
		if (strcmp(doc->kv[i].section, section) == 0)
			return 1;
	return 0;
}

int skipper_hub_profile_parse_layers(const char *list, int max_layers, unsigned char *mask, int *count)
{
	unsigned char seen[4096] = {0};
	const char *p = list;

	if (max_layers <= 0 || max_layers > 4096)
		max_layers = 4096;
	*count = 0;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0')
		return 0; /* empty list: nothing skipped */
	for (;;) {
		long a, b;
		char *end;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		errno = 0;
		a = strtol(p, &end, 10);
		if (errno || a >= max_layers)
			return -1;
		p = end;
		b = a;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '-') {
			p++;
			while (*p == ' ' || *p == '\t')
				p++;
			if (!isdigit((unsigned char)*p))
				return -1;
			errno = 0;
			b = strtol(p, &end, 10);
			if (errno || b >= max_layers || b < a)
				return -1;
			p = end;
		}
		for (long i = a; i <= b; i++)
			if (!seen[i]) {
				seen[i] = 1;
				(*count)++;
			}
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		if (*p++ != ',')
			return -1;
	}
	if (mask)
		memcpy(mask, seen, (size_t)max_layers);
	return 0;
}

static int hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return 0;
	return 1;
}

static int check_doc(const char *name, const struct skipper_hub_profile_doc *doc, struct skipper_error *err)
{
	const char *v;
	long n_layers = 0;
	int count;

	if (!has_section(doc, "profile"))
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: no [profile] section (is this a skip profile?)", name);
	if ((v = skipper_hub_profile_get(doc, "profile", "n_layers"))) {
		char *end;
		errno = 0;
		n_layers = strtol(v, &end, 10);
		if (errno || end == v || *end || n_layers <= 0 || n_layers > 4096)
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: [profile] n_layers = \"%.40s\" is not a layer count",
			                    name, v);
	}
	if ((v = skipper_hub_profile_get(doc, "profile", "model_sha256")) && !hex64(v))
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: [profile] model_sha256 is not 64 hex digits", name);
	for (size_t i = 0; i < doc->n; i++) {
		const struct skipper_hub_profile_kv *kv = &doc->kv[i];
		if (strcmp(kv->section, "mask") != 0 && strncmp(kv->section, "domain.", 7) != 0)
			continue;
		if (strcmp(kv->key, "attn") != 0 && strcmp(kv->key, "mlp") != 0)
			continue;
		if (skipper_hub_profile_parse_layers(kv->value, (int)n_layers, NULL, &count) < 0)
			return skipper_fail(err, SKIPPER_ERR_FORMAT,
			                    "%s: [%.80s] %s = \"%.60s\" is not a layer list like 3,5,7-12%s", name,
			                    kv->section, kv->key, kv->value, n_layers ? " within n_layers" : "");
	}
	return SKIPPER_OK;
}

int skipper_hub_profile_parse(const char *name, const char *text, size_t len, struct skipper_hub_profile_doc *out,
                          struct skipper_error *err)
{
	struct parse_ctx c = {.doc = out};
	char *copy;
	int line, rc;

	memset(out, 0, sizeof *out);
	if (len > SKIPPER_PROFILE_MAX_BYTES)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: larger than %ld bytes", name, SKIPPER_PROFILE_MAX_BYTES);
	if (memchr(text, '\0', len))
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: contains a NUL byte (not a text file)", name);
	copy = malloc(len + 1);
	if (!copy)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	memcpy(copy, text, len);
	copy[len] = '\0';
	line = ini_parse_string(copy, handler, &c);
	free(copy);
	if (c.failed)
		rc = skipper_fail(err, c.failed, "%s: %s", name, c.why);
	else if (line != 0)
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s:%d: INI syntax error", name, line);
	else
		rc = check_doc(name, out, err);
	if (rc)
		skipper_hub_profile_doc_free(out);
	return rc;
}

int skipper_hub_profile_load(const char *path, struct skipper_hub_profile_doc *out, struct skipper_error *err)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;
	int rc;

	memset(out, 0, sizeof *out);
	if (!f)
		return skipper_fail(err, errno == ENOENT ? SKIPPER_ERR_NOT_FOUND : SKIPPER_ERR_IO, "%s: %s", path,
		                    strerror(errno));
	buf = malloc(SKIPPER_PROFILE_MAX_BYTES + 1);
	if (!buf) {
		fclose(f);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	n = fread(buf, 1, SKIPPER_PROFILE_MAX_BYTES + 1, f);
	if (ferror(f))
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: read error", path);
	else
		rc = skipper_hub_profile_parse(path, buf, n, out, err);
	fclose(f);
	free(buf);
	return rc;
}

void skipper_hub_profile_doc_free(struct skipper_hub_profile_doc *doc)
{
	for (size_t i = 0; i < doc->n; i++) {
		free(doc->kv[i].section);
		free(doc->kv[i].key);
		free(doc->kv[i].value);
	}
	free(doc->kv);
	memset(doc, 0, sizeof *doc);
}

int skipper_hub_profile_name_ok(const char *name)
{
	static const char *const ok_ext[] = {".ini", ".sig", ".safetensors", ".json", ".txt", ".md"};
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof ok_ext / sizeof *ok_ext; i++) {
		size_t e = strlen(ok_ext[i]);
		if (n > e && strcmp(name + n - e, ok_ext[i]) == 0)
			return 1;
	}
	return 0;
}
