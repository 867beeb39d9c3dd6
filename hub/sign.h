/* Making Ed25519 detached signatures for profile files (OpenSSL): the key
 * pair and NAME.sig, whose format and checking are core/base/signature.h.
 * Keys are PEM (PKCS#8 private, SubjectPublicKeyInfo public), the formats
 * `openssl genpkey -algorithm ed25519` writes. */
#ifndef SKIPPER_HUB_SIGN_H
#define SKIPPER_HUB_SIGN_H

#include <stddef.h>

#include "skipper/status.h"

/* Write a new key pair: private key (mode 0600) and public key. Refuses to
 * overwrite an existing private key. */
int skipper_sign_keygen(const char *priv_path, const char *pub_path, struct skipper_error *err);

/* Sign file with the private key at key_path into sig_path (NULL: file.sig). */
int skipper_sign_file(const char *key_path, const char *file, const char *sig_path, struct skipper_error *err);

/* Checking signatures, the trust rule and [hub] trusted_keys: */
#include "base/signature.h"

#endif
