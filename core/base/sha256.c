/* See sha256.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "file.h"
#include "sha256.h"

void skipper_hex(const unsigned char *bytes, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[bytes[i] >> 4];
		hex[2 * i + 1] = digits[bytes[i] & 15];
	}
	hex[2 * n] = '\0';
}

int skipper_sha256(const void *a, size_t na, const void *b, size_t nb, unsigned char md[32])
{
	EVP_MD_CTX *x = EVP_MD_CTX_new();
	unsigned len = 0;
	int ok = x && EVP_DigestInit_ex(x, EVP_sha256(), NULL) && EVP_DigestUpdate(x, a, na) &&
	         (!nb || EVP_DigestUpdate(x, b, nb)) && EVP_DigestFinal_ex(x, md, &len) && len == 32;
	EVP_MD_CTX_free(x);
	return ok ? 0 : -1;
}

int skipper_hash_fd(EVP_MD_CTX *ctx, EVP_MD_CTX *ctx2, int fd, long long limit, struct skipper_error *err)
{
	/* 1 MiB reads: a model is gigabytes, read() streams it without
	 * faulting a mapping of it into the process */
	enum { CHUNK = 1 << 20 };
	unsigned char *buf = malloc(CHUNK);
	long long left = limit;
	int rc = SKIPPER_OK;

	if (!buf)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	while (limit < 0 || left > 0) {
		size_t want = CHUNK;
		ssize_t n;
		if (limit >= 0 && (long long)want > left)
			want = (size_t)left;
		n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = skipper_fail(err, SKIPPER_ERR_IO, "read: %s", strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (!EVP_DigestUpdate(ctx, buf, (size_t)n) || (ctx2 && !EVP_DigestUpdate(ctx2, buf, (size_t)n))) {
			rc = skipper_fail(err, SKIPPER_ERR_INTERNAL, "digest update failed");
			break;
		}
		left -= n;
	}
	free(buf);
	return rc;
}

int skipper_sha256_file(const char *path, char hex[65], struct skipper_error *err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int fd, rc;

	if (!ctx)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if ((fd = skipper_open_regular_fd(path, 0, NULL, NULL, err)) < 0) {
		EVP_MD_CTX_free(ctx);
		return err ? err->status : SKIPPER_ERR_IO;
	}
	if (!EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		rc = skipper_fail(err, SKIPPER_ERR_INTERNAL, "SHA-256: cannot set up");
	else
		rc = skipper_hash_fd(ctx, NULL, fd, -1, err);
	close(fd);
	if (rc == SKIPPER_OK && (!EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen != 32))
		rc = skipper_fail(err, SKIPPER_ERR_INTERNAL, "SHA-256: final failed");
	if (rc == SKIPPER_OK)
		skipper_hex(md, 32, hex);
	else
		skipper_fail_prefix(err, "%s", path);
	EVP_MD_CTX_free(ctx);
	return rc;
}
