/* Where a session keeps and finds files: the skipper cache directory, the
 * data that goes with one model (profiles/DIR/ under the cache,
 * $SKIPPER_DATA_PATH and the installed data, DIR named by the model's
 * hash or its file's stem, or holding profiles made for its hash), and the
 * skip profile a policy uses when none is configured (those directories,
 * then the hub cache). */
#define _GNU_SOURCE /* asprintf */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "build-config.h"
#include "hub/hub.h"
#include "policy/profile.h"
#include "session.h"

int skipper_cache_dir(char *buf, size_t n, const char *sub)
{
	const char *base = getenv("SKIPPER_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int len;

	if (base && *base)
		len = snprintf(buf, n, "%s%s%s", base, *sub ? "/" : "", sub);
	else if (xdg && *xdg)
		len = snprintf(buf, n, "%s/skipper%s%s", xdg, *sub ? "/" : "", sub);
	else
		len = snprintf(buf, n, "%s/.cache/skipper%s%s", home && *home ? home : ".", *sub ? "/" : "", sub);
	return len < 0 || (size_t)len >= n ? -1 : 0;
}

typedef int (*accept_fn)(const char *path, void *arg);

static int readable(const char *path, void *arg)
{
	(void)arg;
	return access(path, R_OK) == 0;
}

/* "CACHE:$SKIPPER_DATA_PATH:DATADIR", the roots of per-model data, to
 * split with strtok_r; malloc'ed (the caller frees it), NULL: no memory. */
static char *data_roots(void)
{
	const char *env = getenv("SKIPPER_DATA_PATH");
	char cache[4096], *roots;
	size_t len;

	if (skipper_cache_dir(cache, sizeof cache, ""))
		cache[0] = 0;
	len = strlen(cache) + (env ? strlen(env) : 0) + strlen(SKIPPER_DATADIR) + 3;
	if ((roots = malloc(len)))
		snprintf(roots, len, "%s:%s:%s", cache, env ? env : "", SKIPPER_DATADIR);
	return roots;
}

/* The first ROOT/profiles/DIR/name that accept() takes, for ROOT = the
 * cache, each entry of $SKIPPER_DATA_PATH, the installed data, and DIR =
 * sha (when given), then the model's stem (skipper_model_stem). */
static char *search_model_dirs(struct skipper_session *s, const char *name, const char *sha, accept_fn ok,
                               void *arg)
{
	char stem[512], *roots, *path;

	skipper_model_stem(s->model, stem, sizeof stem);
	if (!(roots = data_roots()))
		return NULL;
	for (char *save = NULL, *d = strtok_r(roots, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		const char *dirs[2] = { sha, stem };
		for (int i = 0; i < 2; i++) {
			if (!*d || !dirs[i] || !(path = malloc(strlen(d) + strlen(dirs[i]) + strlen(name) + 16)))
				continue;
			sprintf(path, "%s/profiles/%s/%s", d, dirs[i], name);
			if (ok(path, arg)) {
				free(roots);
				return path;
			}
			free(path);
		}
	}
	free(roots);
	return NULL;
}

const char *session_model_sha256(struct skipper_session *s, struct skipper_error *err)
{
	if (!s->sha256[0] && skipper_model_sha256(s->model, s->sha256, err))
		return NULL;
	return s->sha256;
}

/* Does dir hold a profile made for the model of hash sha? */
static int dir_for_model(const char *dir, const char *sha)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int yes = 0;

	while (d && !yes && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		struct skipper_profile *p;
		struct skipper_error err = { 0 };
		char *path;
		if (n < 5 || strcmp(de->d_name + n - 4, ".ini") || asprintf(&path, "%s/%s", dir, de->d_name) < 0)
			continue;
		if (!skipper_profile_read(path, &p, &err)) {
			const char *h = skipper_profile_get(p, "profile", "model_sha256");
			yes = h && !strcasecmp(h, sha);
			skipper_profile_free(p);
		}
		free(path);
	}
	if (d)
		closedir(d);
	return yes;
}

/* ROOT/profiles/DIR/name for a DIR whose profiles were made for sha: the
 * model's data under another file name than the one it was shipped for. */
static char *search_by_content(const char *name, const char *sha)
{
	char *roots, *found = NULL;

	if (!(roots = data_roots()))
		return NULL;
	for (char *save = NULL, *r = strtok_r(roots, ":", &save); r && !found; r = strtok_r(NULL, ":", &save)) {
		char *top, *dir, *path;
		DIR *d;
		struct dirent *de;
		if (!*r || asprintf(&top, "%s/profiles", r) < 0)
			continue;
		for (d = opendir(top); d && !found && (de = readdir(d));) {
			if (de->d_name[0] == '.' || asprintf(&dir, "%s/%s", top, de->d_name) < 0)
				continue;
			if (asprintf(&path, "%s/%s", dir, name) >= 0) {
				if (access(path, R_OK) == 0 && dir_for_model(dir, sha))
					found = path;
				else
					free(path);
			}
			free(dir);
		}
		if (d)
			closedir(d);
		free(top);
	}
	free(roots);
	return found;
}

char *session_model_data_file(struct skipper_session *s, const char *name)
{
	struct skipper_error err = { 0 };
	const char *sha;
	char *path = search_model_dirs(s, name, NULL, readable, NULL);

	if (path || !(sha = session_model_sha256(s, &err)))
		return path;
	/* the same weights under another name: found by their hash */
	if (!(path = search_model_dirs(s, name, sha, readable, NULL)))
		path = search_by_content(name, sha);
	if (path)
		session_log(s, SKIPPER_LOG_INFO, "%s: found for this model by its SHA-256", path);
	return path;
}

struct wanted {
	struct skipper_session *s;
	const char *sha, *method;
	int n_layer;
	int tell;    /* keep the first misfit (the model directories: the hub cache holds other models') */
	char *other; /* that misfit, and why */
};

/* A profile made for this model (hash and layer count) and this method. */
static int profile_fits(const char *path, void *arg)
{
	struct wanted *w = arg;
	struct skipper_profile *p;
	struct skipper_error err = { 0 };
	const char *sha, *method;
	int fits;

	if (access(path, R_OK) != 0)
		return 0;
	if (skipper_profile_read(path, &p, &err)) {
		/* a broken file where profiles are looked for is passed over, but
		 * not silently: the user put it there for a reason */
		session_log(w->s, SKIPPER_LOG_WARN, "warning: %s (skipped)", err.msg);
		return 0;
	}
	sha = skipper_profile_get(p, "profile", "model_sha256");
	method = skipper_profile_get(p, "profile", "method");
	fits = sha && method && !strcasecmp(sha, w->sha) && !strcmp(method, w->method) &&
	       skipper_profile_n_layers(p) == w->n_layer;
	if (!fits && w->tell && !w->other && asprintf(&w->other, "%s: made for %s%.12s, method %s, %d layers (this model: sha256 "
	                                              "%.12s, %d layers)",
	                                   path, sha ? "sha256 " : "", sha ? sha : "no model", method ? method : "none",
	                                   skipper_profile_n_layers(p), w->sha, w->n_layer) < 0)
		w->other = NULL;
	skipper_profile_free(p);
	return fits;
}

/* The newest fitting NAME under dir (a hub cache: REPO/snapshots/COMMIT/...),
 * at most depth levels down; *best and *mtime carry the pick. */
static void scan_hub(const char *dir, int depth, const char *name, struct wanted *w, char **best, time_t *mtime)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char *path;
		struct stat st;
		if (de->d_name[0] == '.' || !(path = malloc(strlen(dir) + strlen(de->d_name) + 2)))
			continue;
		sprintf(path, "%s/%s", dir, de->d_name);
		if (stat(path, &st) != 0) {
			free(path);
			continue;
		}
		if (S_ISDIR(st.st_mode) && depth > 0) {
			/* blobs/ holds the same files under hashed names */
			if (strcmp(de->d_name, "blobs") != 0)
				scan_hub(path, depth - 1, name, w, best, mtime);
		} else if (S_ISREG(st.st_mode) && !strcmp(de->d_name, name) && (!*best || st.st_mtime > *mtime) &&
		           profile_fits(path, w)) {
			free(*best);
			*best = path;
			*mtime = st.st_mtime;
			continue;
		}
		free(path);
	}
	if (d)
		closedir(d);
}

char *session_find_profile(struct skipper_session *s, const char *method)
{
	struct skipper_error err = { 0 };
	const char *sha = session_model_sha256(s, &err);
	struct wanted w = { s, sha, method, s->model->view.hp.n_layer, 1, NULL };
	const char *hub_dir = skipper_config_get(s->cfg, "hub", "cache_dir");
	char name[256], *path, *dflt = NULL;
	time_t mtime = 0;

	if (!sha || snprintf(name, sizeof name, "%s.ini", method) >= (int)sizeof name)
		return NULL;
	path = search_model_dirs(s, name, sha, profile_fits, &w);
	w.tell = 0;
	if (!path) {
		if (!hub_dir || !*hub_dir)
			hub_dir = dflt = skipper_hub_default_cache_dir();
		if (hub_dir)
			scan_hub(hub_dir, 6, name, &w, &path, &mtime);
		free(dflt);
	}
	if (!path && w.other)
		session_log(s, SKIPPER_LOG_WARN, "note: %s: not used", w.other);
	free(w.other);
	return path;
}
