/* Policy host: search path, every refusal with a clear message, ABI rules,
 * INI section pushed key by key, listing, and the checked hook wrappers. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "policy/policy_host.h"
#include "tap.h"

static char tmpdir[256];
static char plugdir[512];

static int has(const char *hay, const char *needle)
{
	int r = hay && strstr(hay, needle) != NULL;
	if (!r)
		diag("'%s' not in: %s", needle, hay ? hay : "(null)");
	return r;
}

static const char *testlib(const char *name)
{
	static char buf[8][1024];
	static int k;
	char *b = buf[k++ % 8];
	snprintf(b, sizeof buf[0], "%s/tests/plugins/.libs/%s.so", plugdir, name);
	return b;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(99);
	}
	fputs(text, f);
	fclose(f);
}

/* Load the file, expect refusal with status and a message holding both needles. */
static void refused(const char *what, const char *path, int status, const char *needle)
{
	struct skipper_policy_lib *lib = (void *)1;
	struct skipper_error err = { 0 };
	int rc = skipper_policy_load_file(path, &lib, &err);
	ok(rc == status && lib == NULL, "%s: refused (%d)", what, rc);
	ok(has(err.msg, path) && has(err.msg, needle), "%s: message names the file and the reason", what);
}

static struct skipper_config *config_from(const char *text, char *path, size_t size)
{
	static int n;
	struct skipper_config *cfg;
	struct skipper_error err = { 0 };
	snprintf(path, size, "%s/cfg%d.ini", tmpdir, n++);
	write_file(path, text);
	if (skipper_config_new(&cfg, &err) || skipper_config_load_file(cfg, path, 1, &err)) {
		diag("config: %s", err.msg);
		exit(99);
	}
	return cfg;
}

static int test_create(const struct skipper_host *h, void *ctx, void **state)
{
	*state = NULL;
	return SKIPPER_POLICY_OK;
}

static void test_destroy(void *state)
{
}

static const struct skipper_policy builtin_none = {
	.name = "none",
	.version = "1",
	.description = "built-in test",
	.create = test_create,
	.destroy = test_destroy,
};

int main(void)
{
	const char *bd = getenv("top_builddir");
	struct skipper_policy_lib *lib;
	struct skipper_error err = { 0 };
	struct skipper_policy_search search = { 0 };
	const struct skipper_policy *const builtins[] = { &builtin_none, NULL };
	char path[2048], cfgpath[1024];
	int rc;

	if (!bd)
		tap_skip_all("top_builddir not set (run through make check)");
	snprintf(plugdir, sizeof plugdir, "%s", bd);
	snprintf(tmpdir, sizeof tmpdir, "/tmp/t-policy-loader.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 99;

	/* --- missing file --- */
	search.plugin_dir = tmpdir;
	rc = skipper_policy_load("nosuch", &search, &lib, &err);
	ok(rc == SKIPPER_ERR_NOT_FOUND, "missing policy: not found");
	ok(has(err.msg, "skipper-policy-nosuch.so") && has(err.msg, tmpdir) && has(err.msg, SKIPPER_PLUGINDIR),
	   "missing policy: message names the file and every directory searched");
	snprintf(path, sizeof path, "%s/absent.so", tmpdir);
	refused("missing path", path, SKIPPER_ERR_NOT_FOUND, "not found");
	rc = skipper_policy_load("../evil", &search, &lib, &err);
	ok(rc == SKIPPER_ERR_NOT_FOUND, "a name with '/' is a path, never a search");
	ok(has(err.msg, "policy '../evil' is a path (a name with a '/'): ../evil: policy plugin not found"),
	   "and the error says it was taken for a path: %s", err.msg);
	/* As many "../" as the working directory is deep, so the path reaches /etc/passwd
	 * wherever the tests run (CI checks out deeper than a developer's tree). */
	char up[PATH_MAX] = "", cwd[PATH_MAX];
	if (getcwd(cwd, sizeof cwd))
		for (const char *c = cwd; *c; c++)
			if (*c == '/' && c[1] && strlen(up) + 4 < sizeof up - 16)
				strcat(up, "../");
	snprintf(path, sizeof path, "%setc/passwd", up);
	char want[PATH_MAX + 32];
	snprintf(want, sizeof want, "policy '%s' is a path", path);
	rc = skipper_policy_load(path, &search, &lib, &err);
	ok(rc == SKIPPER_ERR_PLUGIN && has(err.msg, want) && has(err.msg, "cannot load policy plugin"),
	   "--policy %s: a path, not a policy plugin: %s", path, err.msg);
	snprintf(path, sizeof path, "%s/fifo.so", tmpdir);
	mkfifo(path, 0600);
	alarm(20);
	rc = skipper_policy_load(path, &search, &lib, &err);
	alarm(0);
	ok(rc != SKIPPER_OK && has(err.msg, "not a regular file"),
	   "a FIFO named as a policy: refused before dlopen would block on it (%s)", err.msg);
	unlink(path);

	/* --- not an ELF --- */
	snprintf(path, sizeof path, "%s/skipper-policy-notelf.so", tmpdir);
	write_file(path, "this is not a shared object\n");
	rc = skipper_policy_load("notelf", &search, &lib, &err);
	ok(rc == SKIPPER_ERR_PLUGIN, "not an ELF: refused");
	ok(has(err.msg, path) && has(err.msg, "cannot load policy plugin"), "not an ELF: names file and dlopen reason");

	/* --- the ABI refusals --- */
	refused("no entry symbol", testlib("bad-nosym"), SKIPPER_ERR_PLUGIN, "no exported skipper_policy_init");
	refused("wrong major", testlib("bad-major"), SKIPPER_ERR_PLUGIN, "ABI major version 99");
	refused("newer minor", testlib("bad-minor"), SKIPPER_ERR_PLUGIN, "newer than this skipper");
	refused("tiny struct_size", testlib("bad-tiny"), SKIPPER_ERR_PLUGIN, "struct_size 16");
	refused("missing create", testlib("bad-nocreate"), SKIPPER_ERR_PLUGIN, "no create function");
	refused("unknown thread model", testlib("bad-threads"), SKIPPER_ERR_PLUGIN, "declares thread model 7");

	/* --- a plugin built for minor 1 knows no thread model: it is serialised --- */
	rc = skipper_policy_load_file(testlib("old-minor"), &lib, &err);
	ok(rc == SKIPPER_OK && skipper_policy_lib_desc(lib)->thread_model == SKIPPER_THREAD_MODEL_SERIALIZE_ALL,
	   "minor 1 plugin: loads, run as SKIPPER_THREAD_MODEL_SERIALIZE_ALL");
	if (rc == SKIPPER_OK)
		skipper_policy_unload(lib);

	/* --- an old plugin with a short descriptor loads; its tail reads as NULL --- */
	rc = skipper_policy_load_file(testlib("old-short"), &lib, &err);
	ok(rc == SKIPPER_OK, "short struct_size (older plugin): loads");
	if (rc == SKIPPER_OK) {
		struct skipper_policy_instance *inst;
		struct skipper_policy_env env = { .n_layer = 4, .n_vocab = 10 };
		uint8_t a[4], m[4];
		struct skipper_plan plan = { .n_layer = 4, .skip_attn = a, .skip_mlp = m, .max_draft = 5 };
		const struct skipper_policy *d = skipper_policy_lib_desc(lib);
		ok(d->select_draft == NULL && d->verify == NULL, "short struct_size: members past it are zero");
		ok(d->struct_size == sizeof *d, "host copy has the host's size");
		rc = skipper_policy_instance_new(lib, &env, NULL, &inst, &err);
		ok(rc == SKIPPER_OK, "short struct_size: instance created");
		if (rc == SKIPPER_OK) {
			rc = skipper_policy_select_draft(inst, &plan, &err);
			ok(rc == SKIPPER_OK && plan.max_draft == 0, "no select_draft: core default is no drafting");
			skipper_policy_instance_free(inst);
		}
		skipper_policy_unload(lib);
	} else {
		diag("%s", err.msg);
	}

	/* --- a plugin whose file name and descriptor name differ --- */
	snprintf(path, sizeof path, "%s/skipper-policy-other.so", tmpdir);
	if (symlink(testlib("bad-config"), path) != 0)
		return 99;
	rc = skipper_policy_load("other", &search, &lib, &err);
	ok(rc == SKIPPER_ERR_PLUGIN && has(err.msg, "calls itself 'testpol'"), "name mismatch refused");

	/* --- the good test plugin, by path --- */
	rc = skipper_policy_load_file(testlib("bad-config"), &lib, &err);
	ok(rc == SKIPPER_OK, "testpol loads by path");
	if (rc != SKIPPER_OK) {
		diag("%s", err.msg);
		return tap_done();
	}
	{
		struct skipper_policy_env env = { .n_layer = 4, .n_vocab = 10 };
		struct skipper_policy_instance *inst;
		struct skipper_config *cfg;

		/* unknown key, with file:line */
		cfg = config_from("[testpol]\nok = 1\nbogus = 1\n", cfgpath, sizeof cfgpath);
		rc = skipper_policy_instance_new(lib, &env, cfg, &inst, &err);
		snprintf(path, sizeof path, "%s:3: [testpol] bogus: unknown key", cfgpath);
		ok(rc == SKIPPER_ERR_CONFIG && has(err.msg, path), "unknown INI key: error with file:line");
		skipper_config_free(cfg);

		/* config() returning an error with its message */
		cfg = config_from("[testpol]\n\nspeed = slow\n", cfgpath, sizeof cfgpath);
		rc = skipper_policy_instance_new(lib, &env, cfg, &inst, &err);
		snprintf(path, sizeof path, "%s:3: [testpol] speed: speed must be 'fast', got 'slow'", cfgpath);
		ok(rc == SKIPPER_ERR_CONFIG && has(err.msg, path), "config() error: file:line and the plugin's message");
		skipper_config_free(cfg);

		/* a host parser's message reaches the user */
		cfg = config_from("[testpol]\ndraft = many\n", cfgpath, sizeof cfgpath);
		rc = skipper_policy_instance_new(lib, &env, cfg, &inst, &err);
		ok(rc == SKIPPER_ERR_CONFIG && has(err.msg, ":2: [testpol] draft: expected an integer in [0, 1000], got 'many'"),
		   "host parse_int message");
		skipper_config_free(cfg);

		/* an error with no message still says something */
		cfg = config_from("[testpol]\nsilent_error = 1\n", cfgpath, sizeof cfgpath);
		rc = skipper_policy_instance_new(lib, &env, cfg, &inst, &err);
		ok(rc == SKIPPER_ERR_CONFIG && has(err.msg, "silent_error: failed without a message"),
		   "silent config error");
		skipper_config_free(cfg);

		/* config_complete failing */
		cfg = config_from("[testpol]\nfail_complete = yes\n", cfgpath, sizeof cfgpath);
		rc = skipper_policy_instance_new(lib, &env, cfg, &inst, &err);
		ok(rc == SKIPPER_ERR_CONFIG && has(err.msg, "refusing to complete"), "config_complete error");
		skipper_config_free(cfg);

		/* configuration check without a model */
		cfg = config_from("[testpol]\nspeed = fast\n", cfgpath, sizeof cfgpath);
		rc = skipper_policy_check_config(lib, cfg, &err);
		ok(rc == SKIPPER_OK, "configuration check passes");
		skipper_config_free(cfg);

		/* hooks through the wrappers */
		cfg = config_from("[testpol]\nspeed = fast\ndraft = 100\n", cfgpath, sizeof cfgpath);
		rc = skipper_policy_instance_new(lib, &env, cfg, &inst, &err);
		skipper_config_free(cfg);
		ok(rc == SKIPPER_OK, "instance with a good section");
		if (rc == SKIPPER_OK) {
			uint8_t a[4], m[4];
			struct skipper_plan plan = { .n_layer = 4, .skip_attn = a, .skip_mlp = m, .max_draft = 8 };
			struct skipper_step step = { .index = 0 };
			int32_t toks[4] = { 1, 2, 3, 4 }, tt[8], tp[8], cn[8];
			struct skipper_draft d = { .n = 4, .tokens = toks };
			struct skipper_tree tree = { .capacity = 8, .tokens = tt, .parent = tp, .chain_node = cn };
			int stop;

			ok(skipper_policy_instance_needs(inst)->top_k == SKIPPER_TOPK_MAX, "needs.top_k clamped to the maximum");
			rc = skipper_policy_select_draft(inst, &plan, &err);
			ok(rc == SKIPPER_OK && plan.max_draft == 8, "select_draft: max_draft clamped to the engine cap");
			ok(m[0] == 1 && m[1] == 0 && m[2] == 1 && a[0] == 0, "select_draft: masks normalised to 0/1");
			rc = skipper_policy_should_exit(inst, &step, &stop, &err);
			ok(rc == SKIPPER_OK && stop == 0, "should_exit: continue");
			step.index = 1;
			rc = skipper_policy_should_exit(inst, &step, &stop, &err);
			ok(rc == SKIPPER_OK && stop == 1, "should_exit: stop");
			rc = skipper_policy_verify(inst, &d, &tree, &err);
			ok(rc == SKIPPER_OK && tree.n == 2 && cn[0] == -1, "verify: a valid tree passes");
			rc = skipper_policy_calibrate(inst, NULL, &err);
			ok(rc == SKIPPER_ERR_UNSUPPORTED && has(err.msg, "no offline calibration"), "calibrate: unsupported");
			ok(skipper_policy_instance_seconds(inst) >= 0.0, "hook time is accounted");
			skipper_policy_instance_free(inst);
		}

		cfg = config_from("[testpol]\nbad_tree = on\nfail_begin = on\n", cfgpath, sizeof cfgpath);
		rc = skipper_policy_instance_new(lib, &env, cfg, &inst, &err);
		skipper_config_free(cfg);
		if (rc == SKIPPER_OK) {
			int32_t toks[2] = { 1, 2 }, tt[4], tp[4];
			struct skipper_draft d = { .n = 2, .tokens = toks };
			struct skipper_tree tree = { .capacity = 4, .tokens = tt, .parent = tp };
			struct skipper_request req = { .n_prompt = 17 };
			rc = skipper_policy_verify(inst, &d, &tree, &err);
			ok(rc == SKIPPER_ERR_PLUGIN && has(err.msg, "node 1 has parent 1"), "verify: a bad tree is refused");
			rc = skipper_policy_begin(inst, &req, &err);
			ok(rc == SKIPPER_ERR_PLUGIN && has(err.msg, "policy testpol: begin: begin failed for a 17-token prompt"),
			   "hook error: policy name, hook and message");
			skipper_policy_instance_free(inst);
		} else {
			tap_skip(2, "instance failed");
		}
	}
	skipper_policy_unload(lib);

	/* --- search path: SKIPPER_PLUGIN_PATH (set by make check) finds fixed --- */
	search.plugin_dir = tmpdir;
	search.builtins = builtins;
	rc = skipper_policy_load("fixed", &search, &lib, &err);
	ok(rc == SKIPPER_OK, "fixed found through SKIPPER_PLUGIN_PATH");
	if (rc == SKIPPER_OK) {
		const struct skipper_policy *d = skipper_policy_lib_desc(lib);
		struct skipper_policy_lib *again;
		ok(has(skipper_policy_lib_path(lib), "skipper-policy-fixed.so"), "path recorded");
		/* fixed's descriptor names no ABI field: SKIPPER_POLICY_REGISTER fills them */
		ok(d->abi_major == SKIPPER_POLICY_ABI_MAJOR && d->abi_minor == SKIPPER_POLICY_ABI_MINOR &&
		       d->thread_model == SKIPPER_THREAD_MODEL_PARALLEL_INSTANCES,
		   "a plugin without ABI fields: filled by the register macro (ABI %u.%u)", d->abi_major, d->abi_minor);
		rc = skipper_policy_load_file(skipper_policy_lib_path(lib), &again, &err);
		ok(rc == SKIPPER_OK && again == lib, "a file loaded twice is one library (one lock)");
		if (rc == SKIPPER_OK)
			skipper_policy_unload(again);
		ok(strcmp(skipper_policy_lib_desc(lib)->name, "fixed") == 0, "one unload leaves the other load");
		skipper_policy_unload(lib);
	} else {
		diag("%s", err.msg);
	}
	rc = skipper_policy_load("none", &search, &lib, &err);
	ok(rc == SKIPPER_OK && strcmp(skipper_policy_lib_path(lib), "<built-in>") == 0, "built-in found first");
	if (rc == SKIPPER_OK) {
		ok(skipper_policy_lib_desc(lib)->abi_minor == SKIPPER_POLICY_ABI_MINOR,
		   "a built-in without ABI fields gets this header's");
		skipper_policy_unload(lib);
	}
	ok(skipper_policy_exists("fixed", &search) && skipper_policy_exists("none", &search) &&
	       !skipper_policy_exists("nosuch", &search) && !skipper_policy_exists("../x", &search),
	   "exists");
	ok(skipper_policy_exists_cb("fixed", &search), "exists_cb for config validation");

	/* --- listing --- */
	{
		struct skipper_policy_info *list;
		size_t n;
		int seen_fixed = 0, seen_bad = 0, first_none = 0, helps = 0, whole = 0;
		rc = skipper_policy_list(&search, &list, &n, &err);
		ok(rc == SKIPPER_OK && n >= 3, "listing");
		if (rc != SKIPPER_OK || n < 3)
			diag("rc %d, n %zu: %s", rc, rc ? (size_t)0 : n, err.msg);
		for (size_t i = 0; rc == SKIPPER_OK && i < n; i++) {
			if (i == 0 && strcmp(list[i].name, "none") == 0)
				first_none = 1;
			if (strcmp(list[i].name, "fixed") == 0 && !list[i].error && list[i].version[0] &&
			    has(list[i].config_help, "draft_length"))
				seen_fixed = 1;
			if (strcmp(list[i].name, "notelf") == 0 && list[i].error && has(list[i].error, "cannot load"))
				seen_bad = 1;
			/* the plugins' help comes from their key tables when they load:
			 * whole (the cost rule's table is in every one, last or next) */
			if (!list[i].error && strstr(list[i].path, "skipper-policy-") && list[i].config_help[0]) {
				size_t len = strlen(list[i].config_help);
				helps++;
				whole += strstr(list[i].config_help, "\ncosts = BOOL ") && list[i].config_help[len - 1] == '\n';
			}
		}
		ok(first_none, "listing: built-ins first");
		ok(seen_fixed, "listing: fixed with version and config help");
		ok(seen_bad, "listing: a broken plugin is listed with its reason");
		ok(helps >= 6 && whole == helps, "listing: the plugins' help, made from their key tables, whole (%d of %d)",
		   whole, helps);
		if (rc == SKIPPER_OK)
			skipper_policy_list_free(list, n);
	}

	/* --- a program using the loader exits non-zero with the reason on stderr --- */
	{
		static const char *const cases[][2] = {
			{ "bad-nosym", "no exported skipper_policy_init" },
			{ "bad-major", "ABI major version 99" },
			{ "bad-minor", "newer than this skipper" },
			{ "bad-tiny", "struct_size 16" },
			{ "bad-nocreate", "no create function" },
		};
		char cmd[4096], out[1024], errfile[600];
		snprintf(errfile, sizeof errfile, "%s/probe.err", tmpdir);
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			FILE *f;
			size_t got;
			snprintf(cmd, sizeof cmd, "'%s/tests/policy-probe' '%s' >/dev/null 2>'%s'", plugdir,
			         testlib(cases[i][0]), errfile);
			rc = system(cmd);
			out[0] = '\0';
			if ((f = fopen(errfile, "r"))) {
				got = fread(out, 1, sizeof out - 1, f);
				out[got] = '\0';
				fclose(f);
			}
			ok(WIFEXITED(rc) && WEXITSTATUS(rc) == 1 && has(out, cases[i][1]) && has(out, testlib(cases[i][0])),
			   "policy-probe %s: exit 1, file and reason on stderr", cases[i][0]);
		}
		snprintf(cmd, sizeof cmd, "'%s/tests/policy-probe' '%s' speed=slow >/dev/null 2>'%s'", plugdir,
		         testlib("bad-config"), errfile);
		rc = system(cmd);
		ok(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "policy-probe: config() error exits 1");
	}

	snprintf(path, sizeof path, "rm -rf '%s'", tmpdir);
	if (system(path) != 0)
		diag("cleanup failed");
	return tap_done();
}
