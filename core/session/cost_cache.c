/* Where a session caches its cost curves: a file per model, machine,
 * backend, thread count, context and draft head (and skipper version), so
 * that a curve is measured once and every change that alters what passes
 * cost measures it again. */
#include "build-config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session.h"

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

char *session_cost_cache(struct skipper_session *s, const struct skipper_config *cfg, int draft_head)
{
	const char *isa = getenv("SKIPPER_CPU_ISA"), *huge = getenv("SKIPPER_CPU_HUGEPAGES"),
		   *pf = getenv("SKIPPER_CPU_PREFETCH"), *model = skipper_gguf_path(s->model->gguf);
	const char *file = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
	char dir[4096], what[8192], cpu[4096], *path;
	long threads = 0;
	uint64_t h = 1469598103934665603ull;

	if (skipper_cache_dir(dir, sizeof dir, "costs"))
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
	skipper_config_get_int(cfg, "model", "threads", &threads, NULL);
	cpu_identity(cpu, sizeof cpu);
	/* the version too: a new release's kernels cost differently */
	snprintf(what, sizeof what, "%s|%llu|%s|%s|%ld|%ld|%s|%s|%d%s%s|head %d", file,
	         (unsigned long long)skipper_gguf_file_size(s->model->gguf), cpu, s->be->ops->name,
	         threads ? threads : sysconf(_SC_NPROCESSORS_ONLN), (long)s->be->n_ctx, isa ? isa : "", PACKAGE_VERSION,
	         COST_CURVE_REVISION, huge && !strcmp(huge, "0") ? "|small pages" : "",
	         pf && !strcmp(pf, "0") ? "|no prefetch" : "", draft_head);
	/* the draft head in the name too: settings that alternate keep a curve each */
	for (const char *c = what; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	if (!(path = malloc(strlen(dir) + strlen(file) + 32)))
		return NULL;
	sprintf(path, "%s/%s-%08x.costs", dir, file, (unsigned)(h ^ (h >> 32)));
	return path;
}
