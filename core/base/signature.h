/* Checking Ed25519 detached signatures (OpenSSL): the trust rule of [hub]
 * trusted_keys, which the hub client applies to what it fetches and the
 * policy host to every profile a policy reads. A signature file NAME.sig
 * holds one line: base64 of the 64-byte Ed25519 signature over the exact
 * bytes of NAME (88 characters and a newline, nothing else). Keys are PEM
 * (SubjectPublicKeyInfo), as `openssl genpkey -algorithm ed25519` and
 * `skipper profile keygen` write them. Making signatures is hub/sign.h. */
#ifndef SKIPPER_SIGNATURE_H
#define SKIPPER_SIGNATURE_H

#include <stddef.h>

#include <openssl/evp.h>

#include "skipper/status.h"

/* Verify file against sig_path (NULL: file.sig) with any of the n public
 * keys. Returns SKIPPER_OK and sets *which (if non-NULL) to the index of the
 * key that verified; SKIPPER_ERR_SIGNATURE if the signature is missing,
 * malformed or matches none. A key file that cannot be read is
 * SKIPPER_ERR_CONFIG. */
int skipper_sign_verify(const char *file, const char *sig_path, const char *const *pub_keys, size_t n, size_t *which,
                        struct skipper_error *err);

/* The trust rule for profiles: with no trusted keys every profile is
 * accepted (its signature is not looked at); with keys, file must carry a
 * NAME.sig that verifies with one of them, else SKIPPER_ERR_SIGNATURE with a
 * message saying refused and why. */
int skipper_sign_check_trusted(const char *file, const char *const *keys, size_t n, struct skipper_error *err);

/* Each of keys[0..n) reads as an Ed25519 public key: SKIPPER_ERR_CONFIG
 * naming the first that does not ("key PATH: No such file or directory"). */
int skipper_sign_check_keys(const char *const *keys, size_t n, struct skipper_error *err);

/* Split a comma list of key paths (from [hub] trusted_keys) in place into
 * at most max entries; spaces around names are dropped. Returns the count. */
size_t skipper_sign_split_keys(char *list, const char **keys, size_t max);

/* Read the PEM key at path (private or public), checked to be Ed25519: an
 * EVP_PKEY the caller frees, or NULL with err SKIPPER_ERR_CONFIG. */
EVP_PKEY *skipper_sign_read_key(const char *path, int private_key, struct skipper_error *err);

#endif
