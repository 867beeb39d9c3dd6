/* Ed25519 signing of profile files (see sign.h); checking signatures is
 * core/base/signature.c. Ed25519 signs the whole message in one call, so
 * the file is mapped, not streamed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base/atomic.h"
#include "base/error.h"
#include "base/file.h"
#include "hub/sign.h"

#define SIG_LEN 64

int skipper_sign_keygen(const char *priv_path, const char *pub_path, struct skipper_error *err)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	struct skipper_atomic *pub = NULL;
	FILE *f = NULL;
	int fd, ok, rc = SKIPPER_OK;

	if (!k)
		return skipper_fail(err, SKIPPER_ERR_INTERNAL, "Ed25519 key generation failed");
	/* O_EXCL: an existing private key is never overwritten (so it is not
	 * written through a temporary and a rename); made here, it is removed
	 * again if anything fails, so no half key is left */
	fd = open(priv_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", priv_path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(priv_path);
		}
		goto out;
	}
	ok = PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1;
	ok &= fflush(f) == 0 && fsync(fileno(f)) == 0;
	ok &= fclose(f) == 0;
	if (!ok) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: write failed", priv_path);
		unlink(priv_path);
		goto out;
	}
	if (!(pub = skipper_atomic_open(pub_path, err))) {
		rc = err ? err->status : SKIPPER_ERR_IO;
		unlink(priv_path);
		goto out;
	}
	if (PEM_write_PUBKEY(skipper_atomic_file(pub), k) != 1) {
		skipper_atomic_abort(pub);
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: write failed", pub_path);
		unlink(priv_path);
		goto out;
	}
	if ((rc = skipper_atomic_commit(pub, err)))
		unlink(priv_path);
out:
	EVP_PKEY_free(k);
	return rc;
}

int skipper_sign_file(const char *key_path, const char *file, const char *sig_path, struct skipper_error *err)
{
	EVP_PKEY *k = skipper_sign_read_key(key_path, 1, err);
	EVP_MD_CTX *ctx = NULL;
	unsigned char sig[SIG_LEN];
	const void *msg = NULL;
	char b64[4 * ((SIG_LEN + 2) / 3) + 2], *out = NULL;
	size_t siglen = sizeof sig, len = 0;
	int rc;

	if (!k)
		return err ? err->status : SKIPPER_ERR_CONFIG;
	if ((rc = skipper_map_file(file, 0, NULL, &msg, &len, err)))
		goto out;
	ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, msg, len) != 1 || siglen != SIG_LEN) {
		rc = skipper_fail(err, SKIPPER_ERR_INTERNAL, "%s: signing failed", file);
		goto out;
	}
	EVP_EncodeBlock((unsigned char *)b64, sig, SIG_LEN);
	strcat(b64, "\n");
	if (sig_path)
		out = strdup(sig_path);
	else if (asprintf(&out, "%s.sig", file) < 0)
		out = NULL;
	rc = out ? skipper_atomic_write(out, b64, strlen(b64), err) : skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
out:
	skipper_unmap_file(msg, len);
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	free(out);
	return rc;
}
