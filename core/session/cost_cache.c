/* Where a session caches its cost curves: a file per model, backend
 * identity (what the backend says its speed depends on: the processor or
 * device, kernels, threads, settings), context and draft head (and skipper
 * version), so that a curve is measured once and every change that alters
 * what passes cost measures it again. */
#include "build-config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "model/quant.h"
#include "session.h"

/* Bump when a kernel's speed or the way curves are timed changes within a
 * release (a packed layout, a new ISA path, paired timing): curves cached by
 * the earlier build are then measured again rather than trusted. */
#define COST_CURVE_REVISION 21

char *session_cost_cache(struct skipper_session *s, int draft_head)
{
	char file[512], dir[4096], what[8192], backend[4096], *path;
	uint64_t h = 1469598103934665603ull;

	skipper_model_stem(s->model, file, sizeof file);
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
	skipper_backend_identity(s->be, backend, sizeof backend);
	/* the version too: a new release's kernels cost differently */
	snprintf(what, sizeof what, "%s|%llu|%s|%s|%ld|%s|%d|head %d%s%s", file,
	         (unsigned long long)skipper_model_file_size(s->model), s->be->ops->name, backend,
	         (long)s->be->n_ctx, PACKAGE_VERSION, COST_CURVE_REVISION, draft_head,
	         s->model->quantized >= 0 ? "|quantize " : "",
	         s->model->quantized >= 0 ? skipper_dtype_name(s->model->quantized) : "");
	/* the draft head in the name too: settings that alternate keep a curve each */
	for (const char *c = what; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	if (!(path = malloc(strlen(dir) + strlen(file) + 32)))
		return NULL;
	sprintf(path, "%s/%s-%08x.costs", dir, file, (unsigned)(h ^ (h >> 32)));
	return path;
}
