/* `skipper profile publish`: how a team hosts its own profile hub. The tree
 * follows the hub's URL conventions literally (query strings are ignored by
 * static servers), so pulls against it work exactly as against the real
 * hub. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/atomic.h"
#include "base/error.h"
#include "base/file.h"
#include "base/sha256.h"
#include "hub/cache.h"
#include "hub/hub.h"
#include "hub/publish.h"

struct entry {
	char *path;
	long long size;
	char sha256[65];
};

/* nftw passes no user pointer, hence file-scope state (publish is a
 * one-shot command, never run concurrently in one process). */
static struct {
	size_t root_len;
	struct entry *e;
	size_t n, cap;
	int rc;
	int profiles_only;
	struct skipper_error *err;
} scan;

static int scan_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *rel = path + scan.root_len + 1;
	const char *base = path + ftw->base;

	if (ftw->level == 0)
		return 0;
	if (base[0] == '.') /* .git, editor droppings */
		return type == FTW_D ? FTW_SKIP_SUBTREE : 0;
	if (type == FTW_D)
		return 0;
	if (type != FTW_F || !S_ISREG(st->st_mode)) { /* nftw calls a FIFO a file: opening it would hang */
		scan.rc = skipper_fail(scan.err, SKIPPER_ERR_ARG, "%s: not a regular file (symlinks are not published)", path);
		return FTW_STOP;
	}
	if (!skipper_hub_path_ok(rel)) {
		scan.rc = skipper_fail(scan.err, SKIPPER_ERR_ARG,
		                       "%s: refusing to publish this name (not a safe path on a hub: no control "
		                       "characters, '\\' or ':', no empty, '.' or '..' parts)", rel);
		return FTW_STOP;
	}
	if (scan.profiles_only && !skipper_hub_profile_name_ok(rel)) {
		scan.rc = skipper_fail(scan.err, SKIPPER_ERR_ARG,
		                       "%s: refusing to publish this name (profile hubs carry .ini, .sig, .safetensors, .json, .txt, .md only)",
		                       rel);
		return FTW_STOP;
	}
	if (scan.n == scan.cap) {
		size_t cap = scan.cap ? scan.cap * 2 : 16;
		struct entry *e = realloc(scan.e, cap * sizeof *e);
		if (!e) {
			scan.rc = skipper_fail(scan.err, SKIPPER_ERR_NOMEM, "out of memory");
			return FTW_STOP;
		}
		scan.e = e;
		scan.cap = cap;
	}
	scan.e[scan.n].path = strdup(rel);
	scan.e[scan.n].size = (long long)st->st_size;
	if (!scan.e[scan.n].path) {
		scan.rc = skipper_fail(scan.err, SKIPPER_ERR_NOMEM, "out of memory");
		return FTW_STOP;
	}
	scan.n++;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static int copy_file(const char *from, const char *to, struct skipper_error *err)
{
	char buf[1 << 16];
	struct skipper_atomic *out;
	int in, rc = SKIPPER_OK;
	ssize_t n;

	/* a copy, never a hard link: the source stays editable, and an edit
	 * must not change what the listing already describes */
	if ((in = skipper_open_regular_fd(from, 0, NULL, NULL, err)) < 0)
		return err ? err->status : SKIPPER_ERR_IO;
	if (!(out = skipper_atomic_open(to, err))) {
		close(in);
		return err ? err->status : SKIPPER_ERR_IO;
	}
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (fwrite(buf, 1, (size_t)n, skipper_atomic_file(out)) != (size_t)n)
			break; /* the stream's error: commit reports it */
	if (n < 0) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "read %s: %s", from, strerror(errno));
		skipper_atomic_abort(out);
	} else {
		rc = skipper_atomic_commit(out, err);
	}
	close(in);
	return rc;
}

static int write_json(json_t *j, const char *path, struct skipper_error *err)
{
	struct skipper_atomic *a;
	int rc;

	if ((rc = skipper_hub_mkparent(path, err)))
		return rc;
	if (!(a = skipper_atomic_open(path, err)))
		return err ? err->status : SKIPPER_ERR_IO;
	if (json_dumpf(j, skipper_atomic_file(a), JSON_INDENT(1) | JSON_SORT_KEYS) != 0) {
		skipper_atomic_abort(a);
		return skipper_fail(err, SKIPPER_ERR_IO, "cannot write %s", path);
	}
	return skipper_atomic_commit(a, err);
}

static json_t *listing_json(const char *repo, const char *commit)
{
	json_t *root = json_object(), *sibs = json_array();

	json_object_set_new(root, "id", json_string(repo));
	json_object_set_new(root, "modelId", json_string(repo));
	json_object_set_new(root, "sha", json_string(commit));
	for (size_t i = 0; i < scan.n; i++) {
		json_t *s = json_object(), *lfs = json_object();
		json_object_set_new(s, "rfilename", json_string(scan.e[i].path));
		json_object_set_new(s, "size", json_integer(scan.e[i].size));
		json_object_set_new(lfs, "sha256", json_string(scan.e[i].sha256));
		json_object_set_new(lfs, "size", json_integer(scan.e[i].size));
		json_object_set_new(s, "lfs", lfs);
		json_array_append_new(sibs, s);
	}
	json_object_set_new(root, "siblings", sibs);
	return root;
}

static int hash_all(const char *src_dir, char commit[41], struct skipper_error *err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int rc = SKIPPER_OK;

	if (!ctx)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	/* The commit is a digest of the manifest: SHA-1 gives the familiar
	 * 40-digit shape; it names content here, it does not protect it. */
	EVP_DigestInit_ex(ctx, EVP_sha1(), NULL);
	for (size_t i = 0; i < scan.n && !rc; i++) {
		char *p = skipper_hub_pathf("%s/%s", src_dir, scan.e[i].path), line[128];
		if (!p)
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		else
			rc = skipper_sha256_file(p, scan.e[i].sha256, err);
		free(p);
		if (rc)
			break;
		snprintf(line, sizeof line, "%s %lld ", scan.e[i].sha256, scan.e[i].size);
		EVP_DigestUpdate(ctx, line, strlen(line));
		EVP_DigestUpdate(ctx, scan.e[i].path, strlen(scan.e[i].path) + 1);
	}
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	skipper_hex(md, 20, commit);
	return rc;
}

static int publish_files(const char *src_dir, const char *out_root, const char *repo, const char *revision,
                         const char *commit, struct skipper_error *err)
{
	char *link_path = skipper_hub_pathf("%s/%s/resolve/%s", out_root, repo, revision);
	char *target = NULL;
	int rc = SKIPPER_OK;
	size_t depth = 0;

	if (!link_path)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < scan.n && !rc; i++) {
		char *from = skipper_hub_pathf("%s/%s", src_dir, scan.e[i].path);
		char *to = skipper_hub_pathf("%s/%s/resolve/%s/%s", out_root, repo, commit, scan.e[i].path);
		if (!from || !to)
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		else if (!(rc = skipper_hub_mkparent(to, err)))
			rc = copy_file(from, to, err);
		free(from);
		free(to);
	}
	if (!rc && strcmp(revision, commit) != 0) {
		/* A revision with slashes (refs/pr/1) sits deeper than the commit
		 * directory; the link target climbs back up accordingly. */
		for (const char *p = revision; *p; p++)
			depth += *p == '/';
		target = malloc(3 * depth + strlen(commit) + 1);
		if (!target) {
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
			goto out;
		}
		target[0] = '\0';
		for (size_t i = 0; i < depth; i++)
			strcat(target, "../");
		strcat(target, commit);
		if ((rc = skipper_hub_mkparent(link_path, err)))
			goto out;
		rc = skipper_atomic_symlink(target, link_path, err);
	}
out:
	free(target);
	free(link_path);
	return rc;
}

int skipper_hub_publish(const char *src_dir, const char *out_root, const char *repo, const char *revision,
                        int profiles_only, char *commit_out, struct skipper_error *err)
{
	char commit[41];
	json_t *j = NULL;
	char *p1 = NULL, *p2 = NULL;
	int rc;

	if (!skipper_hub_repo_ok(repo))
		return skipper_fail(err, SKIPPER_ERR_ARG, "bad repository id \"%s\" (expected ORG/NAME)", repo);
	if (!revision)
		revision = "main";
	if (!skipper_hub_revision_ok(revision))
		return skipper_fail(err, SKIPPER_ERR_ARG, "bad revision \"%s\"", revision);
	memset(&scan, 0, sizeof scan);
	scan.root_len = strlen(src_dir);
	while (scan.root_len > 1 && src_dir[scan.root_len - 1] == '/')
		scan.root_len--;
	scan.profiles_only = profiles_only;
	scan.err = err;
	if (nftw(src_dir, scan_cb, 16, FTW_PHYS | FTW_ACTIONRETVAL) < 0) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", src_dir, strerror(errno));
		goto out;
	}
	if ((rc = scan.rc))
		goto out;
	if (scan.n == 0) {
		rc = skipper_fail(err, SKIPPER_ERR_ARG, "%s: nothing to publish", src_dir);
		goto out;
	}
	qsort(scan.e, scan.n, sizeof *scan.e, cmp_entry);
	if ((rc = hash_all(src_dir, commit, err)) || (rc = publish_files(src_dir, out_root, repo, revision, commit, err)))
		goto out;
	j = listing_json(repo, commit);
	p1 = skipper_hub_pathf("%s/api/models/%s/revision/%s", out_root, repo, commit);
	p2 = skipper_hub_pathf("%s/api/models/%s/revision/%s", out_root, repo, revision);
	if (!j || !p1 || !p2) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = write_json(j, p1, err)) || (strcmp(revision, commit) != 0 && (rc = write_json(j, p2, err))))
		goto out;
	if (commit_out)
		memcpy(commit_out, commit, 41);
out:
	json_decref(j);
	free(p1);
	free(p2);
	for (size_t i = 0; i < scan.n; i++)
		free(scan.e[i].path);
	free(scan.e);
	memset(&scan, 0, sizeof scan);
	return rc;
}
