/* Fuzz target: the layered INI configuration (core/config/config.c over
 * inih): the file loader, the key-table validator, the typed getters and
 * --set assignments, on arbitrary text. Configuration files are written by
 * hand and passed around, so their reader must survive anything.
 *
 * Checked besides ASan/UBSan (abort on violation):
 * - a file that loads gives entries on lines >= 1 that name the file, and
 *   written back as "[section]" and "key=value" lines it loads again to
 *   the same entries;
 * - the reader is bounded: a file with a NUL byte never loads;
 * - a value read as a number is a decimal one (digits, sign, point,
 *   exponent: no hex, inf, nan or blanks, which strtod would take);
 * - every error of the loader and of the validator names the file;
 * - each line of the input, as a --set assignment, either fails or reads
 *   back as set, and errors of the validator then name "--set";
 * - a section's entries are the effective ones of that section.
 * `make check` replays tests/fuzz/seeds/config-ini/ (fuzz-main.c); `make
 * fuzz` runs it under libFuzzer (tests/fuzz/README). */
#define _GNU_SOURCE
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/config.h"
#include "base/error.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz-config-ini: %s failed\n", #c); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Sections that are not built in pass as policy sections when they look
 * like a policy name, so that validation goes on to check the rest. */
static int is_policy(const char *name, void *arg)
{
	(void)arg;
	if (!*name)
		return 0;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
			return 0;
	return 1;
}

static int memfile(const void *data, size_t n, char *path, size_t cap)
{
	int fd = memfd_create("fuzz-config", 0);
	if (fd < 0)
		abort();
	if (n && write(fd, data, n) != (ssize_t)n)
		abort();
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return fd;
}

/* Index of the first entry that did not come with the defaults. */
static size_t n_defaults(void)
{
	static size_t n;
	if (!n) {
		struct skipper_config *cfg;
		struct skipper_error err;
		CHECK(skipper_config_new(&cfg, &err) == 0);
		while (skipper_config_entry_at(cfg, n))
			n++;
		/* the built-in defaults are valid */
		CHECK(skipper_config_validate(cfg, NULL, NULL, &err) == 0);
		skipper_config_free(cfg);
	}
	return n;
}

/* Validation, typed getters and section lists over everything cfg holds;
 * errors of the validator must name where: the file, or --set. */
static void exercise(struct skipper_config *cfg, const char *where)
{
	struct skipper_error err;
	int rc = skipper_config_validate(cfg, is_policy, NULL, &err);
	if (rc && rc != SKIPPER_ERR_NOMEM && !strstr(err.msg, where)) {
		fprintf(stderr, "fuzz-config-ini: validator error without %s: %s\n", where, err.msg);
		abort();
	}
	const struct skipper_config_entry *e, *prev = NULL;
	for (size_t i = 0; (e = skipper_config_entry_at(cfg, i)); prev = e, i++) {
		long l;
		double d;
		int b;
		/* the getters read the effective entry, the last one set */
		const struct skipper_config_entry *eff = skipper_config_find(cfg, e->section, e->key);
		if (!skipper_config_get_int(cfg, e->section, e->key, &l, &err))
			CHECK(eff->value[strspn(eff->value, "+-0123456789")] == '\0');
		if (!skipper_config_get_double(cfg, e->section, e->key, &d, &err))
			CHECK(eff->value[strspn(eff->value, "+-0123456789.eE")] == '\0' && isfinite(d));
		skipper_config_get_bool(cfg, e->section, e->key, &b, &err);
		CHECK(eff && strcmp(eff->section, e->section) == 0 && strcmp(eff->key, e->key) == 0);
		if (prev && strcmp(prev->section, e->section) == 0)
			continue; /* the section's list once per run of entries */
		const struct skipper_config_entry *const *list;
		size_t n = skipper_config_section(cfg, e->section, &list), found = 0;
		for (size_t k = 0; k < n; k++) {
			CHECK(strcmp(list[k]->section, e->section) == 0);
			CHECK(skipper_config_find(cfg, list[k]->section, list[k]->key) == list[k]);
			found += list[k] == eff;
		}
		CHECK(found == 1 || (n == 0 && !list)); /* !list: out of memory */
	}
}

/* Entries [first, ...) of cfg as an INI text: "[section]" when it changes,
 * then "key=value". malloc'ed. */
static char *write_back(const struct skipper_config *cfg, size_t first, size_t *len)
{
	size_t cap = 64, n = 0;
	const struct skipper_config_entry *e;
	for (size_t i = first; (e = skipper_config_entry_at(cfg, i)); i++)
		cap += strlen(e->section) + strlen(e->key) + strlen(e->value) + 8;
	char *s = malloc(cap);
	const char *sect = NULL;
	CHECK(s);
	for (size_t i = first; (e = skipper_config_entry_at(cfg, i)); i++) {
		if (!sect || strcmp(sect, e->section) != 0)
			n += (size_t)sprintf(s + n, "[%s]\n", e->section);
		sect = e->section;
		n += (size_t)sprintf(s + n, "%s=%s\n", e->key, e->value);
	}
	*len = n;
	return s;
}

static void load_file(const uint8_t *data, size_t size)
{
	struct skipper_config *cfg, *again;
	struct skipper_error err;
	char path[64], path2[64];
	size_t first = n_defaults();
	int fd = memfile(data, size, path, sizeof path);

	CHECK(skipper_config_new(&cfg, &err) == 0);
	int rc = skipper_config_load_file(cfg, path, 1, &err);
	if (rc) {
		if (rc != SKIPPER_ERR_NOMEM && !strstr(err.msg, path)) {
			fprintf(stderr, "fuzz-config-ini: loader error without the file name: %s\n", err.msg);
			abort();
		}
		skipper_config_free(cfg);
		close(fd);
		return;
	}
	const struct skipper_config_entry *e, *e2;
	CHECK(!memchr(data, 0, size));
	for (size_t i = first; (e = skipper_config_entry_at(cfg, i)); i++)
		CHECK(e->line >= 1 && strcmp(e->file, path) == 0);
	exercise(cfg, path);

	/* written back and read again: the same entries */
	size_t len;
	char *text = write_back(cfg, first, &len);
	int fd2 = memfile(text, len, path2, sizeof path2);
	CHECK(skipper_config_new(&again, &err) == 0);
	rc = skipper_config_load_file(again, path2, 1, &err);
	if (rc != SKIPPER_ERR_NOMEM) {
		if (rc) {
			fprintf(stderr, "fuzz-config-ini: written back, the file does not load: %s\n", err.msg);
			abort();
		}
		size_t i = first;
		for (; (e = skipper_config_entry_at(cfg, i)); i++) {
			e2 = skipper_config_entry_at(again, i);
			CHECK(e2 && strcmp(e->section, e2->section) == 0 && strcmp(e->key, e2->key) == 0 &&
			      strcmp(e->value, e2->value) == 0);
		}
		CHECK(!skipper_config_entry_at(again, i));
	}
	skipper_config_free(again);
	free(text);
	close(fd2);
	skipper_config_free(cfg);
	close(fd);
}

/* Each line (up to 64) as a --set assignment. */
static void set_lines(const uint8_t *data, size_t size)
{
	struct skipper_config *cfg;
	struct skipper_error err;
	char line[2048];
	int n = 0;

	CHECK(skipper_config_new(&cfg, &err) == 0);
	for (size_t a = 0; a < size && n < 64; n++) {
		size_t b = a;
		while (b < size && data[b] != '\n')
			b++;
		size_t len = b - a < sizeof line - 1 ? b - a : sizeof line - 1;
		memcpy(line, data + a, len);
		line[len] = 0;
		a = b + 1;
		if (skipper_config_set(cfg, line, &err) == 0) {
			/* section.key=value: the first '.' and the first '=' */
			const char *dot = strchr(line, '.'), *eq = strchr(line, '=');
			char section[2048], key[2048];
			CHECK(dot && eq && dot < eq);
			memcpy(section, line, (size_t)(dot - line));
			section[dot - line] = 0;
			memcpy(key, dot + 1, (size_t)(eq - dot - 1));
			key[eq - dot - 1] = 0;
			const char *got = skipper_config_get(cfg, section, key);
			CHECK(got && strcmp(got, eq + 1) == 0);
		}
	}
	exercise(cfg, "--set");
	skipper_config_free(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	load_file(data, size);
	set_lines(data, size);
	return 0;
}
