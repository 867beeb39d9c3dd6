/* See module.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "file.h"
#include "module.h"

#ifndef SKIPPER_PLUGINDIR
#define SKIPPER_PLUGINDIR "/usr/local/lib/skipper/plugins"
#endif

int skipper_module_path_get(struct skipper_module_path *mp, const char *first)
{
	const char *envp = getenv("SKIPPER_PLUGIN_PATH");
	size_t cap = 2;

	memset(mp, 0, sizeof *mp);
	if (envp && *envp) {
		if (!(mp->buf_ = strdup(envp)))
			return SKIPPER_ERR_NOMEM;
		for (const char *c = envp; *c; c++)
			cap += *c == ':';
		cap++;
	}
	if (!(mp->dir = calloc(cap, sizeof *mp->dir))) {
		free(mp->buf_);
		mp->buf_ = NULL;
		return SKIPPER_ERR_NOMEM;
	}
	if (first && *first)
		mp->dir[mp->n++] = first;
	if (mp->buf_) {
		char *save = NULL;
		for (char *tok = strtok_r(mp->buf_, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
			mp->dir[mp->n++] = tok;
	}
	mp->dir[mp->n++] = SKIPPER_PLUGINDIR;
	return SKIPPER_OK;
}

void skipper_module_path_free(struct skipper_module_path *mp)
{
	free(mp->dir);
	free(mp->buf_);
	memset(mp, 0, sizeof *mp);
}

char *skipper_module_find(const struct skipper_module_path *mp, const char *file, char *tried, size_t tcap)
{
	size_t used = 0;

	if (tcap)
		tried[0] = '\0';
	for (size_t i = 0; i < mp->n; i++) {
		size_t len = strlen(mp->dir[i]) + strlen(file) + 2;
		char *p = malloc(len);
		if (!p)
			return NULL;
		snprintf(p, len, "%s/%s", mp->dir[i], file);
		if (access(p, F_OK) == 0)
			return p;
		free(p);
		if (used < tcap) {
			int k = snprintf(tried + used, tcap - used, "%s%s", used ? ", " : "", mp->dir[i]);
			used += k > 0 ? (size_t)k : 0;
		}
	}
	return NULL;
}

void *skipper_module_open(const char *path, const char *what, const char *entry, int resident, void (**fn)(void),
                          struct skipper_error *err)
{
	int fd = skipper_open_regular_fd(path, 0, what, NULL, err);
	const char *why;
	void *h, *sym;

	*fn = NULL;
	if (fd < 0)
		return NULL;
	close(fd);
	dlerror();
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | (resident ? RTLD_NODELETE : 0));
	if (!h) {
		why = dlerror();
		skipper_fail(err, SKIPPER_ERR_PLUGIN, "%s: cannot load %s: %s", path, what, why ? why : "unknown dlopen error");
		return NULL;
	}
	dlerror();
	if (!(sym = dlsym(h, entry))) {
		dlclose(h);
		skipper_fail(err, SKIPPER_ERR_PLUGIN, "%s: not a %s: no exported %s", path, what, entry);
		return NULL;
	}
	/* POSIX guarantees object/function pointer conversion for dlsym. */
	memcpy(fn, &sym, sizeof *fn);
	return h;
}
