/* The cache layout of huggingface_hub, so files other tools downloaded are
 * found and ours are usable by them:
 *   CACHE/models--ORG--NAME/blobs/<sha256>            the content (named by the
 *                                                     git blob id for small non-LFS files)
 *   CACHE/models--ORG--NAME/snapshots/<commit>/<path> relative symlink to the blob
 *   CACHE/models--ORG--NAME/refs/<revision>           the commit, no newline
 * Partial downloads and locks live under CACHE/.locks/models--ORG--NAME/,
 * never in blobs/ or snapshots/, so those only ever hold complete files. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/error.h"
#include "base/file.h"
#include "hub/cache.h"

char *skipper_hub_repo_dir(const char *cache_dir, const char *repo)
{
	char *out, *o;
	size_t n = strlen(cache_dir) + strlen(repo) * 2 + 16;

	out = malloc(n);
	if (!out)
		return NULL;
	o = out + snprintf(out, n, "%s/models--", cache_dir);
	for (const char *p = repo; *p; p++) {
		if (*p == '/') {
			*o++ = '-';
			*o++ = '-';
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return out;
}

char *skipper_hub_default_cache_dir(void)
{
	const char *v = getenv("HF_HUB_CACHE"), *home;
	char *out;

	if (v && *v)
		return strdup(v);
	v = getenv("HF_HOME");
	if (v && *v)
		return asprintf(&out, "%s/hub", v) < 0 ? NULL : out;
	home = getenv("HOME");
	if (!home || !*home)
		home = ".";
	return asprintf(&out, "%s/.cache/huggingface/hub", home) < 0 ? NULL : out;
}

char *skipper_hub_pathf(const char *fmt, ...)
{
	va_list ap;
	char *out;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&out, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : out;
}

int skipper_hub_mkdirs(const char *dir, struct skipper_error *err)
{
	char buf[PATH_MAX];
	size_t n = strlen(dir);

	if (n >= sizeof buf)
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: path too long", dir);
	memcpy(buf, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return skipper_fail(err, SKIPPER_ERR_IO, "cannot create %s: %s", buf, strerror(errno));
		buf[i] = i == n ? '\0' : '/';
	}
	return SKIPPER_OK;
}

int skipper_hub_mkparent(const char *path, struct skipper_error *err)
{
	char buf[PATH_MAX];
	char *slash;

	if (strlen(path) >= sizeof buf)
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: path too long", path);
	strcpy(buf, path);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return SKIPPER_OK;
	*slash = '\0';
	return skipper_hub_mkdirs(buf, err);
}

char *skipper_hub_read_ref(const char *repo_dir, const char *revision)
{
	char *path = skipper_hub_pathf("%s/refs/%s", repo_dir, revision), buf[160];
	FILE *f;
	size_t n;

	if (!path)
		return NULL;
	/* written by other tools too: a FIFO there is refused, not waited on */
	f = skipper_open_regular(path, "r", 0, NULL, NULL);
	free(path);
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	/* refs/ is written by other tools too; only trust a plain commit id. */
	if (buf[0] == '\0' || strspn(buf, "0123456789abcdefABCDEFghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ") != strlen(buf))
		return NULL;
	return strdup(buf);
}

int skipper_hub_write_ref(const char *repo_dir, const char *revision, const char *commit, struct skipper_error *err)
{
	/* a revision like "refs/pr/1" nests */
	char *path = skipper_hub_pathf("%s/refs/%s", repo_dir, revision);
	int rc;

	if (!path)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (!(rc = skipper_hub_mkparent(path, err)))
		rc = skipper_atomic_write(path, commit, strlen(commit), err);
	free(path);
	return rc;
}

int skipper_hub_link_snapshot(const char *repo_dir, const char *commit, const char *file, const char *blob_name,
                              struct skipper_error *err)
{
	char *snap = skipper_hub_pathf("%s/snapshots/%s/%s", repo_dir, commit, file);
	char *target = NULL;
	size_t depth = 0;
	int rc;

	if (!snap)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	/* Relative target like huggingface_hub: ../../blobs/X from
	 * snapshots/<commit>/, one more ../ per directory level in file. */
	for (const char *p = file; *p; p++)
		depth += *p == '/';
	target = malloc(3 * (depth + 2) + strlen(blob_name) + 8);
	if (!target) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	target[0] = '\0';
	for (size_t i = 0; i < depth + 2; i++)
		strcat(target, "../");
	strcat(target, "blobs/");
	strcat(target, blob_name);
	if (!(rc = skipper_hub_mkparent(snap, err)))
		rc = skipper_atomic_symlink(target, snap, err);
out:
	free(snap);
	free(target);
	return rc;
}

int skipper_hub_file_exists(const char *path)
{
	struct stat st;
	/* stat follows the snapshot symlink: a dangling link is "missing". */
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
