/* Internal: hashing helpers shared by downloads, publishing and signing. */
#ifndef SKIPPER_HUB_HASH_H
#define SKIPPER_HUB_HASH_H

#include <stddef.h>

#include <openssl/evp.h>

#include "hub/hub.h"

/* Lowercase hex of n bytes into hex (2n+1 bytes). */
void skipper_hub_hex(const unsigned char *bytes, size_t n, char *hex);

/* Feed up to limit bytes (< 0: to EOF) read from fd into ctx (and ctx2
 * unless NULL). */
int skipper_hub_hash_fd(EVP_MD_CTX *ctx, EVP_MD_CTX *ctx2, int fd, long long limit, struct skipper_error *err);

#endif
