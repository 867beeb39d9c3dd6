/* Ed25519 detached signatures for profile files (OpenSSL). A signature file
 * NAME.sig holds one line: base64 of the 64-byte Ed25519 signature over the
 * exact bytes of NAME. Keys are PEM (PKCS#8 private, SubjectPublicKeyInfo
 * public), the formats `openssl genpkey -algorithm ed25519` writes. */
#ifndef SKIPPER_HUB_SIGN_H
#define SKIPPER_HUB_SIGN_H

#include <stddef.h>

#include "skipper/status.h"

/* Write a new key pair: private key (mode 0600) and public key. Refuses to
 * overwrite an existing private key. */
int skipper_sign_keygen(const char *priv_path, const char *pub_path, struct skipper_error *err);

/* Sign file with the private key at key_path into sig_path (NULL: file.sig). */
int skipper_sign_file(const char *key_path, const char *file, const char *sig_path, struct skipper_error *err);

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
 * naming the first that does not (checked before anything is fetched). */
int skipper_sign_check_keys(const char *const *keys, size_t n, struct skipper_error *err);

/* Split a comma list of key paths (from [hub] trusted_keys) in place into
 * at most max entries; spaces around names are dropped. Returns the count. */
size_t skipper_sign_split_keys(char *list, const char **keys, size_t max);

#endif
