/* SHA-256 (and other digests) of files on OpenSSL EVP: the one
 * implementation behind the model's hash (profiles name it), the hub's
 * checks of what it downloads and the manifests it publishes. */
#ifndef SKIPPER_SHA256_H
#define SKIPPER_SHA256_H

#include <stddef.h>

#include <openssl/evp.h>

#include "skipper/status.h"

/* Lowercase hex of n bytes into hex (2n + 1 bytes). */
void skipper_hex(const unsigned char *bytes, size_t n, char *hex);

/* SHA-256 of a[0..na) followed by b[0..nb) (b may be NULL with nb 0)
 * into md. -1 when OpenSSL fails. */
int skipper_sha256(const void *a, size_t na, const void *b, size_t nb, unsigned char md[32]);

/* Feed up to limit bytes (< 0: to the end) read from fd into ctx (and
 * ctx2 unless NULL). err says "read: why"; callers prefix the file. */
int skipper_hash_fd(EVP_MD_CTX *ctx, EVP_MD_CTX *ctx2, int fd, long long limit, struct skipper_error *err);

/* SHA-256 of the whole file at path (a regular file: a FIFO is refused,
 * not waited on) as 64 lowercase hex digits. */
int skipper_sha256_file(const char *path, char hex[65], struct skipper_error *err);

#endif
