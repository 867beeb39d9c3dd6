/* One verified, resumable download. The partial file is hashed as it grows
 * (its existing bytes first, on resume), so the SHA-256 is known the moment
 * the last byte lands; only then is it renamed into blobs/. Everything that
 * touches the partial file happens under an exclusive flock, so concurrent
 * pulls of one file serialise and the second finds the blob already there. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/error.h"
#include "hub/cache.h"
#include "hub/download.h"
#include "base/sha256.h"
#include "hub/http.h"

struct sink {
	const struct skipper_hub_blob *b;
	int fd;
	long long off;   /* bytes in the partial file */
	long long limit; /* never write past this */
	EVP_MD_CTX *md;
	EVP_MD_CTX *oid; /* git blob SHA-1, only when checking a git_oid */
};

/* git hashes "blob SIZE\0" then the content. */
static void oid_start(EVP_MD_CTX *ctx, long long size)
{
	char head[40];
	int n = snprintf(head, sizeof head, "blob %lld", size);
	EVP_DigestInit_ex(ctx, EVP_sha1(), NULL);
	EVP_DigestUpdate(ctx, head, (size_t)n + 1);
}

static void oid_init(struct sink *s)
{
	if (s->oid)
		oid_start(s->oid, s->b->size);
}

static int restart_from_zero(struct sink *s, struct skipper_error *err)
{
	if (ftruncate(s->fd, 0) < 0 || lseek(s->fd, 0, SEEK_SET) < 0)
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", s->b->partial, strerror(errno));
	EVP_DigestInit_ex(s->md, EVP_sha256(), NULL);
	oid_init(s);
	s->off = 0;
	return SKIPPER_OK;
}

static int on_start(void *arg, long status, struct skipper_error *err)
{
	struct sink *s = arg;
	/* A 200 to a Range request is the whole file again: start over. */
	if (status != 206 && s->off > 0)
		return restart_from_zero(s, err);
	return SKIPPER_OK;
}

static int on_data(void *arg, const void *data, size_t n, struct skipper_error *err)
{
	struct sink *s = arg;
	const char *p = data;

	if (s->off + (long long)n > s->limit) {
		/* Keep nothing from a server that lies about sizes: a partial
		 * file of exactly the listed size would pass as complete. */
		restart_from_zero(s, err);
		return skipper_fail(err, SKIPPER_ERR_RANGE, "%s: the server sent more than the %lld bytes %s", s->b->file,
		                    s->limit, s->b->size >= 0 ? "listed" : "allowed ([hub] max_file_size)");
	}
	EVP_DigestUpdate(s->md, data, n);
	if (s->oid)
		EVP_DigestUpdate(s->oid, data, n);
	s->off += (long long)n;
	while (n) {
		ssize_t w = write(s->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", s->b->partial, strerror(errno));
		p += w;
		n -= (size_t)w;
	}
	return SKIPPER_OK;
}

/* Open the partial file and bring the hash up to its current end. */
static int open_partial(struct sink *s, struct skipper_error *err)
{
	struct stat st;
	int rc;

	s->fd = open(s->b->partial, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (s->fd < 0 || fstat(s->fd, &st) < 0)
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", s->b->partial, strerror(errno));
	EVP_DigestInit_ex(s->md, EVP_sha256(), NULL);
	oid_init(s);
	s->off = st.st_size;
	if (s->off > s->limit)
		return restart_from_zero(s, err);
	if ((rc = skipper_hash_fd(s->md, s->oid, s->fd, s->off, err)))
		return skipper_fail_prefix(err, "%s", s->b->partial);
	if (lseek(s->fd, s->off, SEEK_SET) < 0)
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", s->b->partial, strerror(errno));
	return SKIPPER_OK;
}

static int transfer(struct skipper_hub *hub, struct sink *s, struct skipper_error *err)
{
	const struct skipper_hub_blob *b = s->b;
	int rc = SKIPPER_OK;

	for (int attempt = 0;; attempt++) {
		struct skipper_hub_get g = {
			.url = b->url, .what = b->file, .range_from = s->off, .on_start = on_start, .on_data = on_data,
			.arg = s, .progress_file = b->file, .progress_base = s->off, .progress_total = b->size,
		};
		long status;
		int retryable;

		if (b->size >= 0 && s->off == b->size)
			return SKIPPER_OK; /* complete from an earlier run, or the last attempt */
		rc = skipper_hub_http_get(hub, &g, &status, &retryable, err);
		if (rc == SKIPPER_ERR_RANGE && status == 416) {
			/* Nothing left to send: done if we know no size to expect,
			 * else the partial is not what we think; start over (and
			 * fail if this was the last try: nothing is on disk). */
			long long had = s->off;
			if (b->size < 0 && s->off > 0)
				return SKIPPER_OK;
			if ((rc = restart_from_zero(s, err)))
				return rc;
			rc = skipper_fail(err, SKIPPER_ERR_NETWORK,
			                  "%s: the server has nothing past byte %lld of the %lld listed (HTTP 416)", b->file, had,
			                  b->size);
			retryable = 1;
		} else if (rc == SKIPPER_OK && b->size >= 0 && s->off != b->size) {
			rc = skipper_fail(err, SKIPPER_ERR_NETWORK, "%s: response ended after %lld of %lld bytes", b->file,
			                  s->off, b->size);
			retryable = 1;
		} else if (rc == SKIPPER_OK) {
			return SKIPPER_OK;
		}
		if (!retryable || attempt >= hub->retries) {
			if (retryable && attempt > 0)
				skipper_fail_prefix(err, "gave up after %d attempts (the partial download is kept and resumed next time)",
				                    attempt + 1);
			return rc;
		}
		if (skipper_hub_backoff(hub, attempt + 1, err))
			return skipper_fail(err, SKIPPER_ERR_INTERRUPTED, "%s: interrupted", b->file);
	}
}

static int finish(struct sink *s, char blob_name[65], struct skipper_error *err)
{
	const struct skipper_hub_blob *b = s->b;
	unsigned char md[32];
	char *dest;
	int rc = SKIPPER_OK;

	EVP_DigestFinal_ex(s->md, md, NULL);
	skipper_hex(md, sizeof md, blob_name);
	if (b->expected_sha[0] && strcmp(blob_name, b->expected_sha) != 0) {
		unlink(b->partial);
		return skipper_fail(err, SKIPPER_ERR_CHECKSUM,
		                    "%s: checksum mismatch: expected sha256 %s, got %s (download discarded, nothing stored)",
		                    b->file, b->expected_sha, blob_name);
	}
	if (!s->oid && !b->expected_sha[0] && b->git_oid && b->git_oid[0]) {
		/* no size was listed, so the blob id could not be hashed on the
		 * way in: hash the file now that its size is known */
		if (!(s->oid = EVP_MD_CTX_new()))
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		oid_start(s->oid, s->off);
		if (lseek(s->fd, 0, SEEK_SET) < 0 || (rc = skipper_hash_fd(s->oid, NULL, s->fd, s->off, err)))
			return rc ? skipper_fail_prefix(err, "%s", b->partial)
			          : skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", b->partial, strerror(errno));
	}
	if (s->oid) {
		char oid[41];
		EVP_DigestFinal_ex(s->oid, md, NULL);
		skipper_hex(md, 20, oid);
		if (strcmp(oid, b->git_oid) != 0) {
			unlink(b->partial);
			return skipper_fail(err, SKIPPER_ERR_CHECKSUM,
			                    "%s: checksum mismatch: expected git blob id %s, got %s (download discarded, nothing stored)",
			                    b->file, b->git_oid, oid);
		}
		/* huggingface_hub names such blobs by this id: so do we. */
		memcpy(blob_name, b->git_oid, 41);
	}
	if (fsync(s->fd) < 0)
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", b->partial, strerror(errno));
	dest = skipper_hub_pathf("%s/%s", b->blobs_dir, blob_name);
	if (!dest)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (rename(b->partial, dest) < 0)
		rc = skipper_fail(err, SKIPPER_ERR_IO, "cannot move %s to %s: %s", b->partial, dest, strerror(errno));
	free(dest);
	return rc;
}

int skipper_hub_fetch_blob(struct skipper_hub *hub, const struct skipper_hub_blob *b, char blob_name[65],
                           int *downloaded, struct skipper_error *err)
{
	struct sink s = {.b = b, .fd = -1, .limit = b->size >= 0 ? b->size : hub->max_file_size};
	const char *known = b->expected_sha[0] ? b->expected_sha : b->git_oid && b->size >= 0 ? b->git_oid : "";
	int lock_fd = -1, rc;
	char *existing = NULL;

	*downloaded = 0;
	if ((rc = skipper_hub_mkparent(b->lock, err)) || (rc = skipper_hub_mkparent(b->partial, err)) ||
	    (rc = skipper_hub_mkdirs(b->blobs_dir, err)))
		return rc;
	lock_fd = open(b->lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lock_fd < 0)
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", b->lock, strerror(errno));
	while (flock(lock_fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			rc = skipper_fail(err, SKIPPER_ERR_IO, "lock %s: %s", b->lock, strerror(errno));
			goto out;
		}
		if (skipper_hub_interrupted(hub)) {
			rc = skipper_fail(err, SKIPPER_ERR_INTERRUPTED, "%s: interrupted while another process holds %s",
			                  b->file, b->lock);
			goto out;
		}
	}
	if (known[0]) {
		existing = skipper_hub_pathf("%s/%s", b->blobs_dir, known);
		if (existing && skipper_hub_file_exists(existing)) {
			snprintf(blob_name, 65, "%s", known);
			goto out; /* someone else finished it while we waited */
		}
	}
	s.md = EVP_MD_CTX_new();
	/* Without a SHA-256 the git blob id is the only check the hub offers;
	 * it needs the size up front because git hashes it first. */
	if (!b->expected_sha[0] && b->git_oid && b->git_oid[0] && b->size >= 0 && !(s.oid = EVP_MD_CTX_new())) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!s.md) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((rc = open_partial(&s, err)) || (rc = transfer(hub, &s, err)) || (rc = finish(&s, blob_name, err)))
		goto out;
	*downloaded = 1;
	if (hub->progress)
		hub->progress(hub->progress_arg, b->file, s.off, s.off, 1);
out:
	if (s.fd >= 0)
		close(s.fd);
	EVP_MD_CTX_free(s.md);
	EVP_MD_CTX_free(s.oid);
	free(existing);
	close(lock_fd); /* releases the flock */
	return rc;
}
