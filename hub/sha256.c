/* SHA-256 helpers on OpenSSL EVP. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/error.h"
#include "hub/hash.h"

void skipper_hub_hex(const unsigned char *bytes, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[bytes[i] >> 4];
		hex[2 * i + 1] = digits[bytes[i] & 15];
	}
	hex[2 * n] = '\0';
}

int skipper_hub_hash_fd(EVP_MD_CTX *ctx, EVP_MD_CTX *ctx2, int fd, long long limit, struct skipper_error *err)
{
	unsigned char buf[1 << 16];
	long long left = limit;

	while (limit < 0 || left > 0) {
		size_t want = sizeof buf;
		ssize_t n;
		if (limit >= 0 && (long long)want > left)
			want = (size_t)left;
		n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return skipper_fail(err, SKIPPER_ERR_IO, "read: %s", strerror(errno));
		if (n == 0)
			break;
		EVP_DigestUpdate(ctx, buf, (size_t)n);
		if (ctx2)
			EVP_DigestUpdate(ctx2, buf, (size_t)n);
		left -= n;
	}
	return SKIPPER_OK;
}

int skipper_hub_sha256_file(const char *path, char hex[65], struct skipper_error *err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[32];
	int fd, rc;

	if (!ctx)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		EVP_MD_CTX_free(ctx);
		return skipper_fail(err, errno == ENOENT ? SKIPPER_ERR_NOT_FOUND : SKIPPER_ERR_IO, "%s: %s", path,
		                    strerror(errno));
	}
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	rc = skipper_hub_hash_fd(ctx, NULL, fd, -1, err);
	close(fd);
	if (rc == SKIPPER_OK) {
		EVP_DigestFinal_ex(ctx, md, NULL);
		skipper_hub_hex(md, sizeof md, hex);
	} else {
		skipper_fail_prefix(err, "%s", path);
	}
	EVP_MD_CTX_free(ctx);
	return rc;
}
