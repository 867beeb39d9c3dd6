/* Layered INI configuration on top of the system inih. Entries are kept in
 * the order they were read; the last one for a section.key wins, so layering
 * is just "read defaults, then each file, then --set". */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "config_keys.h"
#include "base/error.h"
#include "base/file.h"

/* A configuration is a few kilobytes (conf/skipper.ini, every key with its
 * comment, is 12 KB): a file past this is not one, and /dev/zero or a
 * growing log named by mistake stops here instead of being read forever. */
#define CONFIG_MAX_BYTES (1u << 20)

struct skipper_config {
	struct skipper_config_entry *e;
	size_t n, cap;
	char **files;            /* interned file names, freed with cfg */
	size_t n_files;
	const struct skipper_config_entry **sect; /* scratch for skipper_config_section() */
	size_t sect_cap;
};

static int push(struct skipper_config *cfg, const char *section, const char *key, const char *value,
                const char *file, int line)
{
	struct skipper_config_entry *e;

	if (cfg->n == cfg->cap) {
		size_t cap = cfg->cap ? cfg->cap * 2 : 64;
		struct skipper_config_entry *ne = realloc(cfg->e, cap * sizeof *ne);
		if (!ne)
			return SKIPPER_ERR_NOMEM;
		cfg->e = ne;
		cfg->cap = cap;
	}
	e = &cfg->e[cfg->n];
	e->section = strdup(section);
	e->key = strdup(key);
	e->value = strdup(value);
	e->file = file;
	e->line = line;
	if (!e->section || !e->key || !e->value) {
		free((char *)e->section);
		free((char *)e->key);
		free((char *)e->value);
		return SKIPPER_ERR_NOMEM;
	}
	cfg->n++;
	return SKIPPER_OK;
}

static const char *intern_file(struct skipper_config *cfg, const char *path)
{
	char **nf = realloc(cfg->files, (cfg->n_files + 1) * sizeof *nf);
	if (!nf)
		return NULL;
	cfg->files = nf;
	if (!(nf[cfg->n_files] = strdup(path)))
		return NULL;
	return nf[cfg->n_files++];
}

int skipper_config_copy(const struct skipper_config *src, struct skipper_config **out, struct skipper_error *err)
{
	struct skipper_config *cfg = calloc(1, sizeof *cfg);

	if (!cfg)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < src->n; i++) {
		const struct skipper_config_entry *e = &src->e[i];
		const char *file = e->file;
		/* a file name read from disk is interned per configuration; the
		 * literals ("<default>", "--set") are shared */
		for (size_t f = 0; f < src->n_files; f++)
			if (src->files[f] == e->file)
				file = NULL;
		if (!file) {
			for (size_t f = 0; !file && f < cfg->n_files; f++)
				if (!strcmp(cfg->files[f], e->file))
					file = cfg->files[f];
			if (!file)
				file = intern_file(cfg, e->file);
		}
		if (!file || push(cfg, e->section, e->key, e->value, file, e->line)) {
			skipper_config_free(cfg);
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		}
	}
	*out = cfg;
	return SKIPPER_OK;
}

int skipper_config_new(struct skipper_config **out, struct skipper_error *err)
{
	struct skipper_config *cfg = calloc(1, sizeof *cfg);

	if (!cfg)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (const struct skipper_config_key *k = skipper_config_keys; k->section; k++) {
		if (push(cfg, k->section, k->key, k->def, "<default>", 0)) {
			skipper_config_free(cfg);
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		}
	}
	*out = cfg;
	return SKIPPER_OK;
}

void skipper_config_free(struct skipper_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n; i++) {
		free((char *)cfg->e[i].section);
		free((char *)cfg->e[i].key);
		free((char *)cfg->e[i].value);
	}
	for (size_t i = 0; i < cfg->n_files; i++)
		free(cfg->files[i]);
	free(cfg->files);
	free(cfg->e);
	free(cfg->sect);
	free(cfg);
}

/* --- file loading ---------------------------------------------------- */

struct load_state {
	struct skipper_config *cfg;
	const char *file;
	FILE *fp;
	int line;                 /* line most recently read by the reader */
	int too_long;             /* line number of an over-long line, 0 if none */
	int bad_header;           /* line number of a '[' without ']', 0 if none */
	int nul;                  /* line number of a NUL byte, 0 if none */
	int too_big;              /* read past CONFIG_MAX_BYTES (the file grew) */
	size_t bytes;             /* read so far */
	int indented;             /* the line read last starts with blanks and holds something */
	int key_in_section;       /* a key was read since the last [section] */
	size_t first;             /* index of this file's first entry */
	char prev_section[128];
	char **sections;          /* sections already closed in this file */
	size_t n_sections;
	struct skipper_error *err;
	int failed;
};

/* The next byte of the file, or EOF; a NUL byte or a byte past the bound
 * ends the file there (noted for the error), so that inih never sees
 * them: a NUL would cut the line it is in unseen, and every other text
 * input refuses it. */
static int next_byte(struct load_state *st)
{
	int c;
	if (st->nul || st->too_big || (c = getc(st->fp)) == EOF)
		return EOF;
	if (++st->bytes > CONFIG_MAX_BYTES) {
		st->too_big = 1;
		return EOF;
	}
	if (c == '\0') {
		st->nul = st->line + 1;
		return EOF;
	}
	return c;
}

/* fgets-like reader that counts lines, so handler errors can name them
 * (Debian's inih is built without INI_HANDLER_LINENO). */
static char *reader(char *str, int num, void *stream)
{
	struct load_state *st = stream;
	int n = 0, c = EOF;

	while (n < num - 1 && (c = next_byte(st)) != EOF) {
		str[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (n == 0 || st->nul)
		return NULL;
	str[n] = '\0';
	st->line++;
	/* inih reads an indented line after a key as more of that key's value
	 * (under a 49-character prefix of its name): refused in the handler */
	const char *p = str + strspn(str, " \t");
	st->indented = p > str && *p && !strchr(";#\r\n", *p);
	if (*p == '[' && !(st->indented && st->key_in_section))
		st->key_in_section = 0;
	/* inih goes on after it with the section it had: the keys below would
	 * be blamed instead */
	if (*p == '[' && !strchr(p, ']') && !st->bad_header)
		st->bad_header = st->line;
	if (n == num - 1 && str[n - 1] != '\n' && (c = next_byte(st)) != EOF && c != '\n') {
		if (!st->too_long)
			st->too_long = st->line;
		while ((c = next_byte(st)) != EOF && c != '\n')
			;
	}
	return st->nul ? NULL : str;
}

static int section_seen(struct load_state *st, const char *section)
{
	for (size_t i = 0; i < st->n_sections; i++)
		if (strcmp(st->sections[i], section) == 0)
			return 1;
	return 0;
}

static int bad_header(struct load_state *st)
{
	return skipper_fail(st->err, SKIPPER_ERR_CONFIG, "%s:%d: syntax error: section header without ']'", st->file,
	                    st->bad_header);
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct load_state *st = user;
	struct skipper_config *cfg = st->cfg;

	if (st->failed)
		return 0;
	if (st->bad_header) {
		st->failed = 1;
		bad_header(st);
		return 0;
	}
	if (strcmp(section, st->prev_section) != 0) {
		if (section_seen(st, section)) {
			st->failed = 1;
			skipper_fail(st->err, SKIPPER_ERR_CONFIG, "%s:%d: duplicate section [%s]", st->file,
			             st->line, section);
			return 0;
		}
		if (st->prev_section[0]) {
			char **ns = realloc(st->sections, (st->n_sections + 1) * sizeof *ns);
			if (!ns || !(ns[st->n_sections] = strdup(st->prev_section))) {
				if (ns)
					st->sections = ns;
				st->failed = 1;
				skipper_fail(st->err, SKIPPER_ERR_NOMEM, "out of memory");
				return 0;
			}
			st->sections = ns;
			st->n_sections++;
		}
		snprintf(st->prev_section, sizeof st->prev_section, "%s", section);
	}
	if (st->indented && st->key_in_section) {
		st->failed = 1;
		skipper_fail(st->err, SKIPPER_ERR_CONFIG,
		             "%s:%d: indented line: INI reads it as more of the value of the key above; write each "
		             "key = value on one line, without indentation", st->file, st->line);
		return 0;
	}
	if (!section[0]) {
		st->failed = 1;
		skipper_fail(st->err, SKIPPER_ERR_CONFIG, "%s:%d: key '%s' outside of any [section]", st->file,
		             st->line, name);
		return 0;
	}
	for (size_t i = st->first; i < cfg->n; i++) {
		if (strcmp(cfg->e[i].section, section) == 0 && strcmp(cfg->e[i].key, name) == 0) {
			st->failed = 1;
			skipper_fail(st->err, SKIPPER_ERR_CONFIG, "%s:%d: [%s] %s: duplicate key (first set on line %d)",
			             st->file, st->line, section, name, cfg->e[i].line);
			return 0;
		}
	}
	if (push(cfg, section, name, value, st->file, st->line)) {
		st->failed = 1;
		skipper_fail(st->err, SKIPPER_ERR_NOMEM, "out of memory");
		return 0;
	}
	st->key_in_section = 1;
	return 1;
}

int skipper_config_load_file(struct skipper_config *cfg, const char *path, int must_exist,
                             struct skipper_error *err)
{
	struct load_state st = { .cfg = cfg, .err = err, .first = cfg->n };
	int rc;

	/* a FIFO or a device (-c /dev/zero) is refused, not read */
	st.fp = skipper_open_regular(path, "r", CONFIG_MAX_BYTES, "configuration file", err);
	if (!st.fp) {
		if (!must_exist && err && err->status == SKIPPER_ERR_NOT_FOUND)
			return SKIPPER_OK;
		if (!err)
			return SKIPPER_ERR_CONFIG;
		return err->status = SKIPPER_ERR_CONFIG;
	}
	st.file = intern_file(cfg, path);
	if (!st.file) {
		fclose(st.fp);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	rc = ini_parse_stream(reader, &st, handler, &st);
	int read_error = ferror(st.fp);
	fclose(st.fp);
	for (size_t i = 0; i < st.n_sections; i++)
		free(st.sections[i]);
	free(st.sections);
	if (st.failed)
		return err ? err->status : SKIPPER_ERR_CONFIG;
	if (st.bad_header)
		return bad_header(&st);
	if (st.too_long && (rc == 0 || st.too_long < rc))
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s:%d: line longer than %d characters", path,
		                    st.too_long, INI_MAX_LINE - 2);
	if (rc > 0)
		return skipper_fail(err, SKIPPER_ERR_CONFIG,
		                    "%s:%d: syntax error (expected [section], key = value or a comment)", path, rc);
	if (st.nul)
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s:%d: NUL byte in a text file", path, st.nul);
	if (st.too_big)
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: more than %u bytes: not a configuration file", path,
		                    CONFIG_MAX_BYTES);
	if (rc < 0 || read_error)
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: read error", path);
	return SKIPPER_OK;
}

/* Values echoed in messages are cut: a --set of a megabyte (or a file's
 * line of 200 bytes) is named, not reprinted whole. */
#define ECHO_MAX 80
static const char *cut(const char *v, char buf[ECHO_MAX + 4])
{
	size_t n = strlen(v);
	if (n <= ECHO_MAX)
		return v;
	memcpy(buf, v, ECHO_MAX);
	memcpy(buf + ECHO_MAX, "...", 4);
	return buf;
}

int skipper_config_set(struct skipper_config *cfg, const char *assignment, struct skipper_error *err)
{
	const char *dot = strchr(assignment, '.'), *eq = strchr(assignment, '=');
	char section[128], key[128], value[1024], c[ECHO_MAX + 4];
	size_t ls, lk, lv;

	if (!dot || !eq || dot > eq || dot == assignment || eq == dot + 1)
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "--set %s: expected section.key=value", cut(assignment, c));
	ls = (size_t)(dot - assignment);
	lk = (size_t)(eq - dot - 1);
	lv = strlen(eq + 1);
	if (ls >= sizeof section || lk >= sizeof key)
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "--set %s: section or key name longer than %zu bytes",
		                    cut(assignment, c), sizeof key - 1);
	if (lv >= sizeof value)
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "--set %.*s: a value of %zu bytes, more than %zu",
		                    (int)(eq - assignment + 1 + (ECHO_MAX / 2)), assignment, lv, sizeof value - 1);
	memcpy(section, assignment, ls);
	section[ls] = '\0';
	memcpy(key, dot + 1, lk);
	key[lk] = '\0';
	memcpy(value, eq + 1, lv + 1);
	if (push(cfg, section, key, value, "--set", 0))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	return SKIPPER_OK;
}

/* --- lookup ------------------------------------------------------------ */

const struct skipper_config_entry *skipper_config_find(const struct skipper_config *cfg, const char *section,
                                                       const char *key)
{
	for (size_t i = cfg->n; i-- > 0;)
		if (strcmp(cfg->e[i].section, section) == 0 && strcmp(cfg->e[i].key, key) == 0)
			return &cfg->e[i];
	return NULL;
}

const char *skipper_config_get(const struct skipper_config *cfg, const char *section, const char *key)
{
	const struct skipper_config_entry *e = skipper_config_find(cfg, section, key);
	return e ? e->value : NULL;
}

const struct skipper_config_entry *skipper_config_entry_at(const struct skipper_config *cfg, size_t i)
{
	return i < cfg->n ? &cfg->e[i] : NULL;
}

size_t skipper_config_section(const struct skipper_config *cfg, const char *section,
                              const struct skipper_config_entry *const **entries)
{
	struct skipper_config *c = (struct skipper_config *)cfg; /* scratch only */
	size_t n = 0;

	if (c->sect_cap < c->n) {
		const struct skipper_config_entry **ns = realloc(c->sect, c->n * sizeof *ns);
		if (!ns) {
			*entries = NULL;
			return 0;
		}
		c->sect = ns;
		c->sect_cap = c->n;
	}
	/* Effective entries only: an entry overridden later (by a later file or
	 * --set) is skipped so each key reaches a plugin once. */
	for (size_t i = 0; i < c->n; i++) {
		if (strcmp(c->e[i].section, section) != 0)
			continue;
		if (skipper_config_find(cfg, section, c->e[i].key) != &c->e[i])
			continue;
		c->sect[n++] = &c->e[i];
	}
	*entries = c->sect;
	return n;
}

/* --- value parsing ------------------------------------------------------ */

int skipper_parse_bool(const char *s, int *out)
{
	static const char *yes[] = { "1", "yes", "true", "on" }, *no[] = { "0", "no", "false", "off" };
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return SKIPPER_OK;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return SKIPPER_OK;
		}
	}
	return SKIPPER_ERR_CONFIG;
}

/* Length of the decimal number s starts with: [+-] digits, with fraction
 * also [.digits] and an exponent e[+-]digits; 0 if there is none. What
 * strtod and strtol accept besides (leading blanks, hex "0x10" read as 16,
 * "inf", "nan", "1e5" for an integer) is not a number here. */
static size_t decimal_len(const char *s, int fraction)
{
	size_t i = 0, digits = 0;

	if (s[i] == '+' || s[i] == '-')
		i++;
	for (; isdigit((unsigned char)s[i]); i++)
		digits++;
	if (fraction && s[i] == '.')
		for (i++; isdigit((unsigned char)s[i]); i++)
			digits++;
	if (!digits)
		return 0;
	if (fraction && (s[i] == 'e' || s[i] == 'E')) {
		size_t j = i + 1;
		if (s[j] == '+' || s[j] == '-')
			j++;
		if (!isdigit((unsigned char)s[j]))
			return i;
		while (isdigit((unsigned char)s[j]))
			j++;
		i = j;
	}
	return i;
}

int skipper_parse_long(const char *s, long *out)
{
	char *end;
	long v;

	if (!decimal_len(s, 0) || s[decimal_len(s, 0)])
		return SKIPPER_ERR_CONFIG;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno)
		return SKIPPER_ERR_CONFIG;
	*out = v;
	return SKIPPER_OK;
}

int skipper_parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!decimal_len(s, 1) || s[decimal_len(s, 1)])
		return SKIPPER_ERR_CONFIG;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v))
		return SKIPPER_ERR_CONFIG;
	*out = v;
	return SKIPPER_OK;
}

static int parse_size(const char *s, double *out)
{
	static const char suffix[] = "KMGT";
	size_t n = decimal_len(s, 1);
	char num[64];
	double v;

	if (!n || n >= sizeof num)
		return SKIPPER_ERR_CONFIG;
	memcpy(num, s, n);
	num[n] = '\0';
	if (skipper_parse_double(num, &v) || v < 0)
		return SKIPPER_ERR_CONFIG;
	if (s[n]) {
		const char *p = strchr(suffix, s[n] & ~0x20);
		if (!p || !*p || s[n + 1])
			return SKIPPER_ERR_CONFIG;
		v *= pow(1024.0, (double)(p - suffix + 1));
	}
	*out = v;
	return SKIPPER_OK;
}

static const struct skipper_config_key *find_key(const char *section, const char *key, int *section_known)
{
	*section_known = 0;
	for (const struct skipper_config_key *k = skipper_config_keys; k->section; k++) {
		if (strcmp(k->section, section) != 0)
			continue;
		*section_known = 1;
		if (strcmp(k->key, key) == 0)
			return k;
	}
	return NULL;
}

int skipper_config_core_section(const char *section)
{
	int known;
	find_key(section, "", &known);
	return known;
}

static int where(const struct skipper_config_entry *e, char *buf, size_t cap)
{
	if (e->line)
		return snprintf(buf, cap, "%s:%d", e->file, e->line);
	return snprintf(buf, cap, "%s", e->file);
}

static int check_value(const struct skipper_config_key *k, const struct skipper_config_entry *e,
                       struct skipper_error *err)
{
	char at[512], cv[ECHO_MAX + 4];
	long l;
	double d;
	int b;

	where(e, at, sizeof at);
	switch (k->kind) {
	case SKIPPER_KEY_INT:
		if (k->choices && strcmp(e->value, k->choices) == 0)
			return SKIPPER_OK;
		if (skipper_parse_long(e->value, &l))
			return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: [%s] %s: '%s' is not an integer%s%s", at,
			                    e->section, e->key, cut(e->value, cv), k->choices ? " or " : "",
			                    k->choices ? k->choices : "");
		d = (double)l;
		break;
	case SKIPPER_KEY_DOUBLE:
		if (skipper_parse_double(e->value, &d))
			return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: [%s] %s: '%s' is not a number", at,
			                    e->section, e->key, cut(e->value, cv));
		break;
	case SKIPPER_KEY_BOOL:
		if (skipper_parse_bool(e->value, &b))
			return skipper_fail(err, SKIPPER_ERR_CONFIG,
			                    "%s: [%s] %s: '%s' is not a boolean (yes/no, true/false, on/off, 1/0)",
			                    at, e->section, e->key, cut(e->value, cv));
		return SKIPPER_OK;
	case SKIPPER_KEY_SIZE:
		if (parse_size(e->value, &d) || d < 1) /* 0 would read as "the default" downstream */
			return skipper_fail(err, SKIPPER_ERR_CONFIG,
			                    "%s: [%s] %s: '%s' is not a size of at least one byte (bytes, or a number "
			                    "with K, M, G, T)",
			                    at, e->section, e->key, cut(e->value, cv));
		return SKIPPER_OK;
	case SKIPPER_KEY_ENUM: {
		size_t n = strlen(e->value);
		for (const char *c = k->choices; c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
			if (strncmp(c, e->value, n) == 0 && (c[n] == ',' || c[n] == '\0') && n)
				return SKIPPER_OK;
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: [%s] %s: '%s' is not one of %s", at, e->section,
		                    e->key, cut(e->value, cv), k->choices);
	}
	default:
		return SKIPPER_OK;
	}
	if ((k->min || k->max) && (d < k->min || d > k->max))
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: [%s] %s: %s is out of range [%.15g, %.15g]", at,
		                    e->section, e->key, cut(e->value, cv), k->min, k->max);
	return SKIPPER_OK;
}

/* Keys whose values bound each other: lo's value may not exceed hi's. */
static const struct {
	const char *section, *lo, *hi;
} ordered_keys[] = {
	{ "lookup", "min_ngram", "max_ngram" },
};

static int check_order(const struct skipper_config *cfg, struct skipper_error *err)
{
	for (size_t i = 0; i < sizeof ordered_keys / sizeof ordered_keys[0]; i++) {
		const struct skipper_config_entry *lo = skipper_config_find(cfg, ordered_keys[i].section, ordered_keys[i].lo),
		                                  *hi = skipper_config_find(cfg, ordered_keys[i].section, ordered_keys[i].hi);
		long a, b;
		char at_lo[512], at_hi[512];
		if (!lo || !hi || skipper_parse_long(lo->value, &a) || skipper_parse_long(hi->value, &b) || a <= b)
			continue;
		where(lo, at_lo, sizeof at_lo);
		where(hi, at_hi, sizeof at_hi);
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: [%s] %s = %ld is above %s = %ld (%s)", at_lo,
		                    lo->section, lo->key, a, hi->key, b, at_hi);
	}
	return SKIPPER_OK;
}

int skipper_config_validate(const struct skipper_config *cfg, int (*is_policy)(const char *, void *), void *arg,
                            struct skipper_error *err)
{
	for (size_t i = 0; i < cfg->n; i++) {
		const struct skipper_config_entry *e = &cfg->e[i];
		int known;
		const struct skipper_config_key *k = find_key(e->section, e->key, &known);
		char at[512];
		int rc;

		where(e, at, sizeof at);
		if (k) {
			if ((rc = check_value(k, e, err)))
				return rc;
			continue;
		}
		if (known)
			return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: [%s] %s: unknown key", at, e->section, e->key);
		if (!is_policy || !is_policy(e->section, arg))
			return skipper_fail(err, SKIPPER_ERR_CONFIG,
			                    "%s: [%s]: unknown section (not a core section nor an installed policy)",
			                    at, e->section);
	}
	return check_order(cfg, err);
}

static int typed_entry(const struct skipper_config *cfg, const char *section, const char *key,
                       const struct skipper_config_entry **e, struct skipper_error *err)
{
	*e = skipper_config_find(cfg, section, key);
	if (!*e)
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "[%s] %s: not set", section, key);
	return SKIPPER_OK;
}

static int bad(const struct skipper_config_entry *e, const char *what, struct skipper_error *err)
{
	char at[512], cv[ECHO_MAX + 4];
	where(e, at, sizeof at);
	return skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: [%s] %s: '%s' is not %s", at, e->section, e->key,
	                    cut(e->value, cv), what);
}

int skipper_config_get_int(const struct skipper_config *cfg, const char *section, const char *key, long *out,
                           struct skipper_error *err)
{
	const struct skipper_config_entry *e;
	int rc = typed_entry(cfg, section, key, &e, err);
	if (rc)
		return rc;
	return skipper_parse_long(e->value, out) ? bad(e, "an integer", err) : SKIPPER_OK;
}

int skipper_config_get_double(const struct skipper_config *cfg, const char *section, const char *key,
                              double *out, struct skipper_error *err)
{
	const struct skipper_config_entry *e;
	int rc = typed_entry(cfg, section, key, &e, err);
	if (rc)
		return rc;
	return skipper_parse_double(e->value, out) ? bad(e, "a number", err) : SKIPPER_OK;
}

int skipper_config_get_size(const struct skipper_config *cfg, const char *section, const char *key,
                            long long *out, struct skipper_error *err)
{
	const struct skipper_config_entry *e;
	double d;
	int rc = typed_entry(cfg, section, key, &e, err);
	if (rc)
		return rc;
	if (parse_size(e->value, &d) || d >= 9.2e18)
		return bad(e, "a size (bytes, or a number with K, M, G, T)", err);
	*out = (long long)d;
	return SKIPPER_OK;
}

int skipper_config_get_bool(const struct skipper_config *cfg, const char *section, const char *key, int *out,
                            struct skipper_error *err)
{
	const struct skipper_config_entry *e;
	int rc = typed_entry(cfg, section, key, &e, err);
	if (rc)
		return rc;
	return skipper_parse_bool(e->value, out) ? bad(e, "a boolean", err) : SKIPPER_OK;
}
