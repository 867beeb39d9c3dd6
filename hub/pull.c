/* skipper_hub_pull: revision -> commit -> files in the snapshot. The cache is
 * consulted first so that a fully cached request makes no request at all;
 * offline mode stops there and names what is missing. */
#include <errno.h>
#include <fnmatch.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/error.h"
#include "hub/cache.h"
#include "hub/download.h"
#include "base/sha256.h"
#include "hub/http.h"

#define SKIPPER_HUB_MAX_LISTING (64L << 20)

static int is_commit_id(const char *rev)
{
	return strlen(rev) == 40 && strspn(rev, "0123456789abcdef") == 40;
}

struct membuf {
	char *data;
	size_t len, cap;
	const char *what;
};

static int mem_start(void *arg, long status, struct skipper_error *err)
{
	((struct membuf *)arg)->len = 0;
	return SKIPPER_OK;
}

static int mem_data(void *arg, const void *data, size_t n, struct skipper_error *err)
{
	struct membuf *m = arg;
	if (m->len + n + 1 > SKIPPER_HUB_MAX_LISTING)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "%s: reply larger than %ld bytes", m->what,
		                    SKIPPER_HUB_MAX_LISTING);
	if (m->len + n + 1 > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;
		char *p;
		while (cap < m->len + n + 1)
			cap *= 2;
		p = realloc(m->data, cap);
		if (!p)
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		m->data = p;
		m->cap = cap;
	}
	memcpy(m->data + m->len, data, n);
	m->len += n;
	m->data[m->len] = '\0';
	return SKIPPER_OK;
}

static int fetch_listing(struct skipper_hub *hub, const char *repo, const char *rev, struct skipper_hub_listing *l,
                         struct skipper_error *err)
{
	char *erev = skipper_hub_url_encode(rev, 0), *url = NULL, what[512];
	struct membuf m = {0};
	int rc;

	snprintf(what, sizeof what, "repository %s revision %s", repo, rev);
	m.what = what;
	url = erev ? skipper_hub_pathf("%s/api/models/%s/revision/%s?blobs=true", hub->endpoint, repo, erev) : NULL;
	if (!url) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int attempt = 0;; attempt++) {
		struct skipper_hub_get g = {.url = url, .what = what, .on_start = mem_start, .on_data = mem_data, .arg = &m};
		long status;
		int retryable;
		m.len = 0;
		rc = skipper_hub_http_get(hub, &g, &status, &retryable, err);
		if (rc == SKIPPER_OK || !retryable || attempt >= hub->retries) {
			if (rc && retryable && attempt > 0)
				skipper_fail_prefix(err, "gave up after %d attempts", attempt + 1);
			break;
		}
		if (skipper_hub_backoff(hub, attempt + 1, err)) {
			rc = skipper_fail(err, SKIPPER_ERR_INTERRUPTED, "%s: interrupted", what);
			break;
		}
	}
	if (rc == SKIPPER_OK) {
		rc = skipper_hub_listing_parse(m.data ? m.data : "", m.len, hub->max_file_size, l, err);
		if (rc)
			skipper_fail_prefix(err, "%s", what);
	}
out:
	free(m.data);
	free(url);
	free(erev);
	return rc;
}

/* Collect the files of a cached snapshot (offline pulls of a whole repo).
 * nftw passes no user pointer, hence file-scope state: pulls of a whole
 * repository offline are not thread-safe (nothing in skipper runs two). */
static struct {
	size_t root_len;
	char **names;
	size_t n, cap;
	int nomem;
} walk;

static int walk_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	char **p;
	if (type != FTW_F)
		return 0;
	if (walk.n == walk.cap) {
		walk.cap = walk.cap ? walk.cap * 2 : 16;
		p = realloc(walk.names, walk.cap * sizeof *p);
		if (!p) {
			walk.nomem = 1;
			return 1;
		}
		walk.names = p;
	}
	if (!(walk.names[walk.n] = strdup(path + walk.root_len + 1))) {
		walk.nomem = 1;
		return 1;
	}
	walk.n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk_free(void)
{
	for (size_t i = 0; i < walk.n; i++)
		free(walk.names[i]);
	free(walk.names);
	memset(&walk, 0, sizeof walk);
}

static int selected(const struct skipper_hub_request *req, const char *name)
{
	if (req->n_files) {
		for (size_t i = 0; i < req->n_files; i++)
			if (strcmp(req->files[i], name) == 0)
				return 1;
		return 0;
	}
	if (req->filter && !req->filter(name))
		return 0;
	return !req->include || fnmatch(req->include, name, 0) == 0;
}

static int pull_offline(struct skipper_hub *hub, const struct skipper_hub_request *req, const char *rev,
                        const char *repo_dir, const char *commit, skipper_hub_file_fn fn, void *arg,
                        struct skipper_error *err)
{
	char missing[600] = "";
	size_t n_missing = 0;
	char *snapdir;
	int rc = SKIPPER_OK;

	if (!commit)
		return skipper_fail(err, SKIPPER_ERR_OFFLINE,
		                    "offline mode: %s@%s is not in the cache (no refs/%s under %s); pull it while online",
		                    req->repo, rev, rev, repo_dir);
	snapdir = skipper_hub_pathf("%s/snapshots/%s", repo_dir, commit);
	if (!snapdir)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (req->n_files) {
		for (size_t i = 0; i < req->n_files; i++) {
			char *p = skipper_hub_pathf("%s/%s", snapdir, req->files[i]);
			if (!p) {
				rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
				break;
			}
			if (skipper_hub_file_exists(p)) {
				if (fn)
					fn(arg, req->files[i], p, 0);
			} else {
				size_t o = strlen(missing);
				if (o + strlen(req->files[i]) + 8 < sizeof missing)
					snprintf(missing + o, sizeof missing - o, "%s%s", n_missing ? ", " : "", req->files[i]);
				n_missing++;
			}
			free(p);
		}
		if (!rc && n_missing)
			rc = skipper_fail(err, SKIPPER_ERR_OFFLINE,
			                  "offline mode: %zu file%s of %s@%s not in the cache: %s; pull while online",
			                  n_missing, n_missing == 1 ? "" : "s", req->repo, rev, missing);
	} else {
		walk.root_len = strlen(snapdir);
		if (nftw(snapdir, walk_cb, 16, 0) != 0 || walk.nomem) {
			rc = walk.nomem ? skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory")
			                : skipper_fail(err, SKIPPER_ERR_OFFLINE, "offline mode: cannot read snapshot %s: %s",
			                               snapdir, strerror(errno));
		} else {
			qsort(walk.names, walk.n, sizeof *walk.names, cmp_str);
			for (size_t i = 0; i < walk.n && !rc; i++) {
				char *p;
				if (!selected(req, walk.names[i]))
					continue;
				p = skipper_hub_pathf("%s/%s", snapdir, walk.names[i]);
				if (!p)
					rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
				else if (fn)
					fn(arg, walk.names[i], p, 0);
				free(p);
			}
		}
		walk_free();
	}
	free(snapdir);
	return rc;
}

/* Every requested file already in the snapshot? Then no request is needed. */
static int all_cached(const struct skipper_hub_request *req, const char *repo_dir, const char *commit)
{
	if (!commit || req->n_files == 0)
		return 0;
	for (size_t i = 0; i < req->n_files; i++) {
		char *p = skipper_hub_pathf("%s/snapshots/%s/%s", repo_dir, commit, req->files[i]);
		int ok = p && skipper_hub_file_exists(p);
		free(p);
		if (!ok)
			return 0;
	}
	return 1;
}

static int key_for(const struct skipper_hub_file *f, const char *commit, char key[65])
{
	unsigned char md[32];
	unsigned int n = 0;
	EVP_MD_CTX *ctx;

	if (f->sha256[0]) {
		memcpy(key, f->sha256, 65);
		return 0;
	}
	/* Unknown content hash: name the partial after commit and path. */
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -1;
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	EVP_DigestUpdate(ctx, commit, strlen(commit));
	EVP_DigestUpdate(ctx, "/", 1);
	EVP_DigestUpdate(ctx, f->path, strlen(f->path));
	EVP_DigestFinal_ex(ctx, md, &n);
	EVP_MD_CTX_free(ctx);
	skipper_hex(md, sizeof md, key);
	return 0;
}

static int ensure_file(struct skipper_hub *hub, const char *repo, const char *repo_dir, const char *commit,
                       const struct skipper_hub_file *f, skipper_hub_file_fn fn, void *arg, struct skipper_error *err)
{
	char *snap = skipper_hub_pathf("%s/snapshots/%s/%s", repo_dir, commit, f->path);
	char *blobs = skipper_hub_pathf("%s/blobs", repo_dir);
	char *base = strrchr(repo_dir, '/');
	char *lockdir = skipper_hub_pathf("%s/.locks/%s", hub->cache_dir, base ? base + 1 : repo_dir);
	char *blob = NULL, *partial = NULL, *lock = NULL, *efile = NULL, *url = NULL;
	char key[65], name[65];
	int rc = SKIPPER_OK, downloaded = 0;

	if (!snap || !blobs || !lockdir) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (skipper_hub_file_exists(snap))
		goto done;
	if (f->sha256[0] || f->git_oid[0]) {
		/* Content another revision (or tool) already stored. */
		const char *known = f->sha256[0] ? f->sha256 : f->git_oid;
		blob = skipper_hub_pathf("%s/%s", blobs, known);
		if (blob && skipper_hub_file_exists(blob)) {
			rc = skipper_hub_link_snapshot(repo_dir, commit, f->path, known, err);
			goto done;
		}
	}
	if (key_for(f, commit, key) < 0 || !(efile = skipper_hub_url_encode(f->path, 1))) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	partial = skipper_hub_pathf("%s/%s.incomplete", lockdir, key);
	lock = skipper_hub_pathf("%s/%s.lock", lockdir, key);
	url = skipper_hub_pathf("%s/%s/resolve/%s/%s", hub->endpoint, repo, commit, efile);
	if (!partial || !lock || !url) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	{
		struct skipper_hub_blob b = {.url = url, .file = f->path, .expected_sha = f->sha256, .git_oid = f->git_oid,
		                             .size = f->size,
		                             .partial = partial, .lock = lock, .blobs_dir = blobs};
		rc = skipper_hub_fetch_blob(hub, &b, name, &downloaded, err);
	}
	if (rc == SKIPPER_OK)
		rc = skipper_hub_link_snapshot(repo_dir, commit, f->path, name, err);
done:
	if (rc == SKIPPER_OK && fn)
		fn(arg, f->path, snap, downloaded);
out:
	free(snap);
	free(blobs);
	free(lockdir);
	free(blob);
	free(partial);
	free(lock);
	free(efile);
	free(url);
	return rc;
}

int skipper_hub_pull(struct skipper_hub *hub, const struct skipper_hub_request *req, skipper_hub_file_fn fn,
                     void *arg, struct skipper_error *err)
{
	const char *rev = req->revision ? req->revision : "main";
	struct skipper_hub_listing l = {0};
	char *repo_dir = NULL, *commit = NULL;
	int rc = SKIPPER_OK;

	if (!skipper_hub_repo_ok(req->repo))
		return skipper_fail(err, SKIPPER_ERR_ARG, "bad repository id \"%s\" (expected ORG/NAME)", req->repo);
	if (!skipper_hub_revision_ok(rev))
		return skipper_fail(err, SKIPPER_ERR_ARG, "bad revision \"%s\"", rev);
	for (size_t i = 0; i < req->n_files; i++)
		if (!skipper_hub_path_ok(req->files[i]))
			return skipper_fail(err, SKIPPER_ERR_ARG, "bad file name \"%s\"", req->files[i]);
	repo_dir = skipper_hub_repo_dir(hub->cache_dir, req->repo);
	if (!repo_dir)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	commit = is_commit_id(rev) ? strdup(rev) : skipper_hub_read_ref(repo_dir, rev);
	if (hub->offline || (!req->refresh && all_cached(req, repo_dir, commit))) {
		rc = pull_offline(hub, req, rev, repo_dir, commit, fn, arg, err);
		goto out;
	}
	if ((rc = fetch_listing(hub, req->repo, rev, &l, err)))
		goto out;
	/* a pinned commit is a promise about content: a hub that answers
	 * with another one is not believed (nor recorded as a ref) */
	if (is_commit_id(rev) && strcmp(rev, l.commit) != 0) {
		rc = skipper_fail(err, SKIPPER_ERR_CHECKSUM, "%s: asked for commit %s, the hub answered with commit %s",
		                  req->repo, rev, l.commit);
		goto out;
	}
	if (strcmp(rev, l.commit) != 0 && (rc = skipper_hub_write_ref(repo_dir, rev, l.commit, err)))
		goto out;
	for (size_t i = 0; i < req->n_files; i++) {
		size_t j;
		for (j = 0; j < l.n_files && strcmp(l.files[j].path, req->files[i]) != 0; j++)
			;
		if (j == l.n_files) {
			rc = skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s is not in %s@%s (commit %s)", req->files[i],
			                  req->repo, rev, l.commit);
			goto out;
		}
	}
	for (size_t j = 0; j < l.n_files && rc == SKIPPER_OK; j++)
		if (selected(req, l.files[j].path))
			rc = ensure_file(hub, req->repo, repo_dir, l.commit, &l.files[j], fn, arg, err);
out:
	skipper_hub_listing_free(&l);
	free(repo_dir);
	free(commit);
	return rc;
}
