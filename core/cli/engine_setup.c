/* What the CLI adds to a fresh engine: context lookup as configured, and
 * the cost curve of this model on this machine, measured once and cached
 * under the model cache ($SKIPPER_CACHE_DIR/costs). */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "base/error.h"

/* The processor, as far as the kernels' speed depends on it: the fields of
 * /proc/cpuinfo's first entry that name its make and instruction set, one
 * "key=value|" each (x86: model name, family, model, stepping, flags;
 * Arm: implementer, part, variant, features). The model name alone is not
 * enough: virtual machines call a Zen 3, a Zen 4 and a Zen 5 all "AMD
 * EPYC", and a verification pass of 8 rows on the 1.5B costs 3.5 decode
 * steps on the first (AVX2 only) and 1.5 on the last. */
static void cpu_identity(char *buf, size_t n)
{
	static const char *const keys[] = { "model name", "cpu family", "model", "stepping", "flags",
		                            "CPU implementer", "CPU part", "CPU variant", "Features" };
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	size_t len = 0;

	snprintf(buf, n, "unknown cpu");
	while (f && fgets(line, sizeof line, f) && line[0] != '\n') {
		char *c = strchr(line, ':');
		if (!c)
			continue;
		size_t k = (size_t)(c - line);
		while (k && (line[k - 1] == ' ' || line[k - 1] == '\t'))
			k--;
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (strlen(keys[i]) == k && !strncmp(line, keys[i], k) && len < n) {
				c[strcspn(c, "\n")] = 0;
				len += (size_t)snprintf(buf + len, n - len, "%s=%s|", keys[i], c[1] == ' ' ? c + 2 : c + 1);
			}
	}
	if (f)
		fclose(f);
}

/* Bump when a kernel's speed or the way curves are timed changes within a
 * release (a packed layout, a new ISA path, paired timing): curves cached by
 * the earlier build are then measured again rather than trusted. */
#define COST_CURVE_REVISION 19

/* $SKIPPER_CACHE_DIR/costs/NAME-XXXXXXXX.costs, the hash over everything
 * the costs depend on: model file, machine, backend, threads, context,
 * forced ISA, huge pages or prefetches off, skipper version and
 * COST_CURVE_REVISION.
 * The directory is made if needed. NULL when there is no writable cache. */
static char *cost_cache_path(const struct cli_session *s)
{
	const char *isa = getenv("SKIPPER_CPU_ISA"), *huge = getenv("SKIPPER_CPU_HUGEPAGES"),
		   *pf = getenv("SKIPPER_CPU_PREFETCH"), *model = skipper_gguf_path(s->model->gguf);
	const char *file = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
	char dir[4096], what[8192], cpu[4096], *path;
	long threads = 0;
	uint64_t h = 1469598103934665603ull;

	if (cli_cache_dir(dir, sizeof dir, "costs"))
		return NULL;
	if (mkdir(dir, 0777) && errno == ENOENT) {
		char parent[4096];
		snprintf(parent, sizeof parent, "%s", dir);
		*strrchr(parent, '/') = 0;
		mkdir(parent, 0777);
		mkdir(dir, 0777);
	}
	if (access(dir, W_OK) != 0)
		return NULL;
	skipper_config_get_int(s->cfg, "model", "threads", &threads, NULL);
	cpu_identity(cpu, sizeof cpu);
	/* the version too: a new release's kernels cost differently */
	snprintf(what, sizeof what, "%s|%llu|%s|%s|%ld|%ld|%s|%s|%d%s%s", file,
	         (unsigned long long)skipper_gguf_file_size(s->model->gguf), cpu, s->be->ops->name,
	         threads ? threads : sysconf(_SC_NPROCESSORS_ONLN), (long)s->be->n_ctx, isa ? isa : "", PACKAGE_VERSION,
	         COST_CURVE_REVISION, huge && !strcmp(huge, "0") ? "|small pages" : "",
	         pf && !strcmp(pf, "0") ? "|no prefetch" : "");
	/* the draft vocabulary is in the file's measured_for line: a change re-measures */
	for (const char *c = what; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	if (!(path = malloc(strlen(dir) + strlen(file) + 32)))
		return NULL;
	sprintf(path, "%s/%s-%08x.costs", dir, file, (unsigned)(h ^ (h >> 32)));
	return path;
}

int cli_engine_costs(struct cli_session *s, struct skipper_engine *e, const struct skipper_costs **out,
                     struct skipper_error *err)
{
	char *path = cost_cache_path(s);
	if (path && access(path, R_OK) != 0 && isatty(STDERR_FILENO))
		fprintf(stderr, "skipper: measuring what verification and drafting cost on this machine (once: %s)\n", path);
	int rc = skipper_engine_costs(e, path, out, err);
	free(path);
	return rc;
}

int cli_engine_setup(struct cli_session *s, const struct skipper_config *cfg, const char *policy,
                     struct skipper_engine *e)
{
	struct skipper_lookup_opts lk = { 0 };
	struct skipper_error err = { 0 };
	const struct skipper_costs *c;
	long v;
	int on = 0;

	skipper_config_get_bool(cfg, "policy", "lookup", &on, NULL);
	lk.enable = on || strcmp(policy, "lookup") == 0;
	lk.min_ngram = skipper_config_get_int(cfg, "lookup", "min_ngram", &v, NULL) ? 1 : (int)v;
	lk.max_ngram = skipper_config_get_int(cfg, "lookup", "max_ngram", &v, NULL) ? 4 : (int)v;
	lk.max_draft = skipper_config_get_int(cfg, "lookup", "max_draft", &v, NULL) ? 16 : (int)v;
	lk.branches = skipper_config_get_int(cfg, "lookup", "branches", &v, NULL) ? 8 : (int)v;
	skipper_engine_set_lookup(e, &lk);
	int guard = 1;
	skipper_config_get_bool(cfg, "policy", "guard", &guard, NULL);
	skipper_engine_set_guard(e, guard);
	int drafts = strcmp(policy, "none") != 0 && strcmp(policy, "lookup") != 0;
	int rc = cli_load_draft_vocab(s, cfg, drafts, e);
	if (rc || (lk.enable && (rc = cli_load_ngrams(s, cfg, e))))
		return rc;
	/* plain decoding needs no costs; everything that drafts sizes its
	 * drafts and guards itself with them */
	if ((lk.enable || strcmp(policy, "none") != 0) && cli_engine_costs(s, e, &c, &err)) {
		fprintf(stderr, "skipper: %s\n", err.msg);
		return EXIT_FAILURE_GENERIC;
	}
	return EXIT_OK;
}
