/* Config layering and the exact error messages users see; the reader is
 * bounded (a device, a FIFO, an endless or huge file, a NUL byte refused,
 * never waited on) and numbers are decimal (no hex, inf, nan, blanks). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_keys.h"
#include "tap.h"

static char dir[] = "/tmp/skipper-t-config.XXXXXX";

static const char *write_file(const char *name, const char *text)
{
	static char path[4][512];
	static int k;
	char *p = path[k++ % 4];
	FILE *f;

	snprintf(p, 512, "%s/%s", dir, name);
	f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	return p;
}

static int only_swift(const char *name, void *arg) { return strcmp(name, "swift") == 0; }

/* Load text as one file, validate, and return the error message ("" if ok). */
static const char *load_msg(const char *text, struct skipper_error *err)
{
	struct skipper_config *cfg;
	const char *p = write_file("t.ini", text);
	int rc;

	skipper_config_new(&cfg, err);
	err->msg[0] = '\0';
	rc = skipper_config_load_file(cfg, p, 1, err);
	if (!rc)
		rc = skipper_config_validate(cfg, only_swift, NULL, err);
	skipper_config_free(cfg);
	if (!rc)
		err->msg[0] = '\0';
	return err->msg;
}

static void expect(const char *text, const char *suffix, const char *what)
{
	struct skipper_error err = { 0 };
	char want[1024];

	snprintf(want, sizeof want, "%s/t.ini%s", dir, suffix);
	is_str(load_msg(text, &err), want, "%s", what);
}

static void on_alarm(int sig)
{
	(void)sig;
	printf("Bail out! the configuration reader blocked or ran on\n");
	_exit(1);
}

/* Load path alone (must exist) and return the error message. */
static const char *load_path_msg(const char *path, struct skipper_error *err)
{
	struct skipper_config *cfg;
	skipper_config_new(&cfg, err);
	err->msg[0] = '\0';
	if (!skipper_config_load_file(cfg, path, 1, err))
		err->msg[0] = '\0';
	skipper_config_free(cfg);
	return err->msg;
}

/* The files no configuration is: each refused with its reason, in time. */
static void bounded_reader(void)
{
	struct skipper_error err = { 0 };
	char fifo[600], want[1024];
	FILE *f;

	signal(SIGALRM, on_alarm);
	alarm(20);
	is_str(load_path_msg("/dev/zero", &err), "/dev/zero: configuration file: not a regular file",
	       "-c /dev/zero: refused, not read forever");
	is_int(err.status, SKIPPER_ERR_CONFIG, "... as a configuration error");
	snprintf(fifo, sizeof fifo, "%s/fifo.ini", dir);
	mkfifo(fifo, 0600);
	snprintf(want, sizeof want, "%s: configuration file: not a regular file", fifo);
	is_str(load_path_msg(fifo, &err), want, "-c FIFO: refused without waiting for a writer");
	snprintf(want, sizeof want, "%s: configuration file: is a directory", dir);
	is_str(load_path_msg(dir, &err), want, "-c DIRECTORY: says so");

	snprintf(fifo, sizeof fifo, "%s/nul.ini", dir);
	f = fopen(fifo, "w");
	fwrite("[generate]\nmax_tokens = 4\0junk\n", 1, 32, f);
	fclose(f);
	snprintf(want, sizeof want, "%s:2: NUL byte in a text file", fifo);
	is_str(load_path_msg(fifo, &err), want, "a NUL byte: refused, naming the line");
	f = fopen(fifo, "w");
	fwrite("[generate]\nmax_tokens = 4\n\0", 1, 28, f);
	fclose(f);
	snprintf(want, sizeof want, "%s:3: NUL byte in a text file", fifo);
	is_str(load_path_msg(fifo, &err), want, "a NUL byte alone on the last line too");

	snprintf(fifo, sizeof fifo, "%s/big.ini", dir);
	f = fopen(fifo, "w");
	fputs("[generate]\n", f);
	for (int i = 0; i < 70000; i++)
		fputs("; a comment line of a configuration file\n", f);
	fclose(f);
	ok(strstr(load_path_msg(fifo, &err), "more than any valid one (1048576)") != NULL,
	   "a file of more than 1 MiB is not read: %s", err.msg);

	/* a long line of the last file: cut where it is too long, not parsed as a key */
	char line[400];
	memset(line, 'x', sizeof line - 1);
	line[sizeof line - 1] = '\0';
	char text[600];
	snprintf(text, sizeof text, "[generate]\n; %s max_tokens = 9\n", line);
	ok(strstr(load_msg(text, &err), "t.ini:2: line longer than") != NULL, "a line longer than inih's buffer: %s",
	   err.msg);
	alarm(0);
}

/* Numbers are decimal: what strtod and strtol accept besides is refused. */
static void strict_numbers(void)
{
	static const char *const bad_doubles[] = { "0x10", "0X1p4", "inf", "-inf", "nan", "infinity", " 0.5",
		                                   "0.5 ", "1e", "1e+", "e5", ".", "+", "", "1e999", "1,5", "0.5x" };
	static const char *const bad_longs[] = { "0x10", " 4", "4 ", "+", "1e3", "1.0", "99999999999999999999", "" };
	double d;
	long l;
	int all = 1;

	for (size_t i = 0; i < sizeof bad_doubles / sizeof *bad_doubles; i++)
		if (!skipper_parse_double(bad_doubles[i], &d)) {
			diag("'%s' read as %g", bad_doubles[i], d);
			all = 0;
		}
	ok(all, "not a number: hex, inf, nan, blanks around it, a cut exponent, overflow, junk after it");
	all = 1;
	for (size_t i = 0; i < sizeof bad_longs / sizeof *bad_longs; i++)
		if (!skipper_parse_long(bad_longs[i], &l)) {
			diag("'%s' read as %ld", bad_longs[i], l);
			all = 0;
		}
	ok(all, "not an integer: hex, blanks, an exponent, a fraction, overflow");
	ok(!skipper_parse_double("0.5", &d) && d == 0.5 && !skipper_parse_double("-1.5e-3", &d) && d == -1.5e-3 &&
	       !skipper_parse_double("+2", &d) && d == 2 && !skipper_parse_double(".5", &d) && d == 0.5 &&
	       !skipper_parse_double("1.", &d) && d == 1 && !skipper_parse_double("1E2", &d) && d == 100,
	   "decimal doubles read as ever");
	ok(!skipper_parse_long("-12", &l) && l == -12 && !skipper_parse_long("+7", &l) && l == 7 &&
	       !skipper_parse_long("007", &l) && l == 7,
	   "decimal integers read as ever");

	struct skipper_config *cfg;
	struct skipper_error err = { 0 };
	skipper_config_new(&cfg, &err);
	skipper_config_set(cfg, "generate.temperature=0x10", &err);
	ok(skipper_config_validate(cfg, NULL, NULL, &err) != 0 &&
	       !strcmp(err.msg, "--set: [generate] temperature: '0x10' is not a number"),
	   "--temperature 0x10 (once read as 16): %s", err.msg);
	skipper_config_free(cfg);
	expect("[hub]\nmax_file_size = 0x10G\n",
	       ":2: [hub] max_file_size: '0x10G' is not a size of at least one byte (bytes, or a number with K, M, G, T)",
	       "a hex size");
	expect("[hub]\nmax_file_size = infK\n",
	       ":2: [hub] max_file_size: 'infK' is not a size of at least one byte (bytes, or a number with K, M, G, T)",
	       "an infinite size");
}

/* --set values are bounded, and cut when echoed. */
static void long_set(void)
{
	struct skipper_config *cfg;
	struct skipper_error err = { 0 };
	char *big = malloc(5100);

	snprintf(big, 5100, "generate.chat_template=");
	memset(big + 23, 'x', 5000);
	big[5023] = '\0';
	skipper_config_new(&cfg, &err);
	int rc = skipper_config_set(cfg, big, &err);
	ok(rc != 0 && strstr(err.msg, "--set generate.chat_template=xxxx") &&
	       strstr(err.msg, ": a value of 5000 bytes, more than 1023") && strlen(err.msg) < 200,
	   "a 5000-byte --set value: refused, and cut in the message (%zu bytes: %s)", strlen(err.msg), err.msg);
	memset(big, 'y', 5000);
	big[5000] = '\0';
	rc = skipper_config_set(cfg, big, &err);
	ok(rc != 0 && strlen(err.msg) < 200 && strstr(err.msg, "expected section.key"),
	   "5000 bytes without '.' or '=': cut too (%zu bytes)", strlen(err.msg));
	snprintf(big, 5100, "generate.temperature=");
	memset(big + 21, '9', 900);
	strcpy(big + 921, "x");
	skipper_config_set(cfg, big, &err);
	rc = skipper_config_validate(cfg, NULL, NULL, &err);
	ok(rc != 0 && strlen(err.msg) < 200 && strstr(err.msg, "...'"),
	   "a 900-byte bad value is cut when named (%zu bytes)", strlen(err.msg));
	skipper_config_free(cfg);
	free(big);
}

int main(void)
{
	struct skipper_config *cfg;
	struct skipper_error err = { 0 };
	const struct skipper_config_entry *const *ents;
	long l;
	double d;
	int b;

	if (!mkdtemp(dir))
		return 1;

	/* defaults, layering, --set */
	ok(skipper_config_new(&cfg, &err) == 0, "new config");
	is_str(skipper_config_get(cfg, "policy", "name"), "none", "default policy is none");
	ok(skipper_config_get_int(cfg, "generate", "max_tokens", &l, &err) == 0 && l == 256, "default max_tokens");
	ok(skipper_config_load_file(cfg, write_file("a.ini", "[generate]\nmax_tokens = 32 ; comment\n"
	                                                     "[policy]\nname = swift\n[swift]\nr = 0.4\n"),
	                            1, &err) == 0,
	   "load a file");
	ok(skipper_config_load_file(cfg, write_file("b.ini", "[generate]\nmax_tokens = 64\n"), 1, &err) == 0,
	   "load a second file");
	ok(skipper_config_get_int(cfg, "generate", "max_tokens", &l, &err) == 0 && l == 64, "later file wins");
	ok(skipper_config_set(cfg, "generate.temperature=0.7", &err) == 0, "--set");
	ok(skipper_config_get_double(cfg, "generate", "temperature", &d, &err) == 0 && d == 0.7, "--set wins");
	ok(skipper_config_get_bool(cfg, "hub", "offline", &b, &err) == 0 && b == 0, "bool default");
	ok(skipper_config_validate(cfg, only_swift, NULL, &err) == 0, "policy section accepted: %s", err.msg);
	is_int(skipper_config_section(cfg, "swift", &ents), 1, "one swift key");
	is_str(ents[0]->value, "0.4", "swift r value");
	is_int(ents[0]->line, 6, "swift r line");
	ok(skipper_config_set(cfg, "generate", &err) != 0, "--set without a dot");
	is_str(err.msg, "--set generate: expected section.key=value", "--set error text");
	ok(skipper_config_load_file(cfg, "/nonexistent/x.ini", 0, &err) == 0, "optional missing file is fine");
	{
		/* every entry in the order added: defaults, a.ini, b.ini, --set */
		const struct skipper_config_entry *e, *last = NULL;
		size_t n = 0, n_def = 0;
		while (skipper_config_keys[n_def].section)
			n_def++;
		for (; (e = skipper_config_entry_at(cfg, n)); n++)
			last = e;
		e = skipper_config_entry_at(cfg, n_def);
		ok(n == n_def + 3 + 1 + 1 && e && strcmp(e->key, "max_tokens") == 0 && strcmp(e->value, "32") == 0 &&
		   e->line == 2 && last && strcmp(last->key, "temperature") == 0 && strcmp(last->file, "--set") == 0,
		   "entry_at: %zu entries, defaults first, --set last", n);
		ok(skipper_config_entry_at(cfg, (size_t)-1) == NULL, "entry_at past the end: NULL");
	}
	skipper_config_free(cfg);

	/* golden error messages */
	expect("[model]\nthreads = 2\nbogus = 1\n", ":3: [model] bogus: unknown key", "unknown key");
	expect("[modle]\npath = x\n", ":2: [modle]: unknown section (not a core section nor an installed policy)",
	       "unknown section");
	expect("[generate]\nmax_tokens = lots\n", ":2: [generate] max_tokens: 'lots' is not an integer", "bad number");
	expect("[generate]\ntemperature = 1e\n", ":2: [generate] temperature: '1e' is not a number", "bad double");
	expect("[generate]\nmax_tokens = 0\n", ":2: [generate] max_tokens: 0 is out of range [1, 1048576]",
	       "out of range");
	expect("[hub]\noffline = maybe\n",
	       ":2: [hub] offline: 'maybe' is not a boolean (yes/no, true/false, on/off, 1/0)", "bad bool");
	expect("[model]\nbackend = gpu\n", ":2: [model] backend: 'gpu' is not one of auto,cpu,cuda", "bad enum");
	expect("[model]\nthreads = 1\n[generate]\nseed = 1\n[model]\nctx = 9\n", ":6: duplicate section [model]",
	       "duplicate section");
	expect("[model]\nthreads = 1\nthreads = 2\n", ":3: [model] threads: duplicate key (first set on line 2)",
	       "duplicate key");
	expect("[model]\nthis is not ini\n", ":2: syntax error (expected [section], key = value or a comment)",
	       "syntax error");
	expect("threads = 1\n", ":1: key 'threads' outside of any [section]", "key outside section");
	/* inih goes on after a broken header: the key below must not be blamed */
	expect("[lookup\nmax_draft = 4\n", ":1: syntax error: section header without ']'", "header without ']'");
	expect("[hub]\nmax_file_size = 0\n",
	       ":2: [hub] max_file_size: '0' is not a size of at least one byte (bytes, or a number with K, M, G, T)",
	       "a size of 0 (which would read as the default)");
	{
		char want[1024];
		snprintf(want, sizeof want, "%s/t.ini:2: [lookup] min_ngram = 6 is above max_ngram = 2 (%s/t.ini:3)", dir,
		         dir);
		is_str(load_msg("[lookup]\nmin_ngram = 6\nmax_ngram = 2\n", &err), want, "keys that bound each other");
		is_str(load_msg("[lookup]\nmin_ngram = 4\nmax_ngram = 4\n", &err), "", "... equal is fine");
	}
	{
		struct skipper_config *c3;
		skipper_config_new(&c3, &err);
		ok(skipper_config_load_file(c3, write_file("ind.ini", "[model]\n  threads = 3\n  ; a note\n[generate]\n"
		                                                      "\tseed = 2\n"),
		                            1, &err) == 0 &&
		       !strcmp(skipper_config_get(c3, "model", "threads"), "3") &&
		       !strcmp(skipper_config_get(c3, "generate", "seed"), "2"),
		   "indented first keys of a section and indented comments load");
		skipper_config_free(c3);
	}
	expect("[model]\nthreads = 1\n  ctx = 9\n",
	       ":3: indented line: INI reads it as more of the value of the key above; write each key = value on one "
	       "line, without indentation",
	       "indented line after a key");

	{
		struct skipper_config *c2;
		skipper_config_new(&c2, &err);
		ok(skipper_config_load_file(c2, "/nonexistent/x.ini", 1, &err) != 0, "missing file fails");
		is_str(err.msg, "/nonexistent/x.ini: cannot open configuration file: No such file or directory",
		       "missing file message");
		skipper_config_free(c2);
	}
	/* conf/skipper.ini and skipper.ini(5) document every built-in key, and
	 * the file's commented defaults are the built-in ones. */
	{
		const char *src = getenv("top_srcdir");
		char path[1024], line[512], section[64] = "";
		FILE *f;
		int documented = 0, wrong = 0, n_keys = 0;
		if (!src)
			src = "..";
		snprintf(path, sizeof path, "%s/conf/skipper.ini", src);
		f = fopen(path, "r");
		ok(f != NULL, "conf/skipper.ini is readable");
		while (f && fgets(line, sizeof line, f)) {
			char key[64], val[256] = "";
			if (sscanf(line, "[%63[^]]]", section) == 1)
				continue;
			if (sscanf(line, ";%63[a-z_] = %255[^\n]", key, val) >= 1 && strchr(line, '=')) {
				int found = 0;
				for (const struct skipper_config_key *k = skipper_config_keys; k->section; k++)
					if (!strcmp(k->section, section) && !strcmp(k->key, key)) {
						found = 1;
						if (strcmp(k->def, val)) {
							diag("[%s] %s: file says '%s', default is '%s'", section, key, val, k->def);
							wrong++;
						}
					}
				documented += found;
				if (!found) {
					diag("[%s] %s documented but not a key", section, key);
					wrong++;
				}
			}
		}
		if (f)
			fclose(f);
		for (const struct skipper_config_key *k = skipper_config_keys; k->section; k++)
			n_keys++;
		is_int(documented, n_keys, "every built-in key is in conf/skipper.ini");
		is_int(wrong, 0, "conf/skipper.ini shows the built-in defaults");

		snprintf(path, sizeof path, "%s/man/skipper.ini.5", src);
		f = fopen(path, "r");
		{
			char *man = calloc(1, 1 << 20);
			size_t len = f ? fread(man, 1, (1 << 20) - 1, f) : 0;
			int missing = 0;
			man[len] = '\0';
			for (const struct skipper_config_key *k = skipper_config_keys; k->section; k++) {
				char want[128];
				snprintf(want, sizeof want, ".B %s\n", k->key);
				if (!strstr(man, want)) {
					diag("skipper.ini(5) lacks [%s] %s", k->section, k->key);
					missing++;
				}
			}
			is_int(missing, 0, "skipper.ini(5) documents every built-in key");
			free(man);
		}
		if (f)
			fclose(f);
	}
	bounded_reader();
	strict_numbers();
	long_set();
	{
		char cmd[600];
		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			diag("could not remove %s", dir);
	}
	return tap_done();
}
