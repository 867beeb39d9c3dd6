/* Ed25519 signing and verification of profile files (see sign.h). Ed25519
 * signs the whole message in one call, so files are mapped, not streamed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base/error.h"
#include "hub/sign.h"

#define SIG_LEN 64

struct mapped {
	void *p;
	size_t n;
};

static const unsigned char empty_msg[1];

static int map_file(const char *path, struct mapped *m, struct skipper_error *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	m->p = NULL;
	m->n = 0;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return skipper_fail(err, e == ENOENT ? SKIPPER_ERR_NOT_FOUND : SKIPPER_ERR_IO, "%s: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: not a regular file", path);
	}
	m->n = (size_t)st.st_size;
	if (m->n) {
		m->p = mmap(NULL, m->n, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m->p == MAP_FAILED) {
			m->p = NULL;
			close(fd);
			return skipper_fail(err, SKIPPER_ERR_IO, "%s: mmap: %s", path, strerror(errno));
		}
	}
	close(fd);
	return SKIPPER_OK;
}

static void unmap_file(struct mapped *m)
{
	if (m->p)
		munmap(m->p, m->n);
}

static const unsigned char *bytes_of(const struct mapped *m)
{
	return m->p ? m->p : empty_msg;
}

static EVP_PKEY *read_key(const char *path, int private, struct skipper_error *err)
{
	FILE *f = fopen(path, "r");
	EVP_PKEY *k;

	if (!f) {
		skipper_fail(err, SKIPPER_ERR_CONFIG, "key %s: %s", path, strerror(errno));
		return NULL;
	}
	k = private ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : PEM_read_PUBKEY(f, NULL, NULL, NULL);
	fclose(f);
	if (!k) {
		skipper_fail(err, SKIPPER_ERR_CONFIG, "key %s: not a PEM %s key", path, private ? "private" : "public");
		return NULL;
	}
	if (!EVP_PKEY_is_a(k, "ED25519")) {
		EVP_PKEY_free(k);
		skipper_fail(err, SKIPPER_ERR_CONFIG, "key %s: not an Ed25519 key", path);
		return NULL;
	}
	return k;
}

int skipper_sign_keygen(const char *priv_path, const char *pub_path, struct skipper_error *err)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	FILE *f = NULL;
	int fd, ok, rc = SKIPPER_OK;

	if (!k)
		return skipper_fail(err, SKIPPER_ERR_INTERNAL, "Ed25519 key generation failed");
	fd = open(priv_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", priv_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	ok = PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1;
	ok &= fclose(f) == 0;
	if (!ok) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: write failed", priv_path);
		goto out;
	}
	f = fopen(pub_path, "w");
	if (!f) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", pub_path, strerror(errno));
		goto out;
	}
	ok = PEM_write_PUBKEY(f, k) == 1;
	ok &= fclose(f) == 0;
	if (!ok)
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: write failed", pub_path);
out:
	EVP_PKEY_free(k);
	return rc;
}

static char *default_sig(const char *file, const char *sig_path)
{
	char *p;
	if (sig_path)
		return strdup(sig_path);
	return asprintf(&p, "%s.sig", file) < 0 ? NULL : p;
}

int skipper_sign_file(const char *key_path, const char *file, const char *sig_path, struct skipper_error *err)
{
	EVP_PKEY *k = read_key(key_path, 1, err);
	EVP_MD_CTX *ctx = NULL;
	struct mapped m = {0};
	unsigned char sig[SIG_LEN];
	char b64[4 * ((SIG_LEN + 2) / 3) + 2], *out = NULL, *tmp = NULL;
	size_t siglen = sizeof sig;
	FILE *f;
	int rc, bad;

	if (!k)
		return err ? err->status : SKIPPER_ERR_CONFIG;
	if ((rc = map_file(file, &m, err)))
		goto out;
	ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, bytes_of(&m), m.n) != 1 || siglen != SIG_LEN) {
		rc = skipper_fail(err, SKIPPER_ERR_INTERNAL, "%s: signing failed", file);
		goto out;
	}
	EVP_EncodeBlock((unsigned char *)b64, sig, SIG_LEN);
	out = default_sig(file, sig_path);
	if (!out || asprintf(&tmp, "%s.tmp", out) < 0) {
		tmp = NULL;
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	f = fopen(tmp, "w");
	if (!f) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	bad = fprintf(f, "%s\n", b64) < 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, out) < 0) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", out, strerror(errno));
		unlink(tmp);
	}
out:
	unmap_file(&m);
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	free(out);
	free(tmp);
	return rc;
}

/* Read NAME.sig: one base64 line decoding to exactly 64 bytes. */
static int read_sig(const char *path, unsigned char sig[SIG_LEN], struct skipper_error *err)
{
	char line[256];
	unsigned char raw[256];
	size_t n;
	FILE *f = fopen(path, "r");
	int len;

	if (!f)
		return skipper_fail(err, SKIPPER_ERR_SIGNATURE, "%s: %s", path,
		                    errno == ENOENT ? "signature file missing (profile is unsigned)" : strerror(errno));
	n = fread(line, 1, sizeof line - 1, f);
	fclose(f);
	line[n] = '\0';
	n = strcspn(line, "\r\n");
	line[n] = '\0';
	if (n != 88 || strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != n)
		return skipper_fail(err, SKIPPER_ERR_SIGNATURE, "%s: not a base64 Ed25519 signature", path);
	len = EVP_DecodeBlock(raw, (const unsigned char *)line, (int)n);
	/* EVP_DecodeBlock counts the padding as data: 88 chars -> 66 bytes. */
	if (len != 66 || line[86] != '=' || line[87] != '=')
		return skipper_fail(err, SKIPPER_ERR_SIGNATURE, "%s: not a base64 Ed25519 signature", path);
	memcpy(sig, raw, SIG_LEN);
	return SKIPPER_OK;
}

int skipper_sign_verify(const char *file, const char *sig_path, const char *const *pub_keys, size_t n, size_t *which,
                        struct skipper_error *err)
{
	unsigned char sig[SIG_LEN];
	struct mapped m = {0};
	char *sp = default_sig(file, sig_path);
	int rc;

	if (!sp)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if ((rc = read_sig(sp, sig, err)) || (rc = map_file(file, &m, err)))
		goto out;
	rc = SKIPPER_ERR_SIGNATURE;
	for (size_t i = 0; i < n; i++) {
		struct skipper_error kerr;
		EVP_PKEY *k = read_key(pub_keys[i], 0, &kerr);
		EVP_MD_CTX *ctx;
		int good = 0;
		if (!k) {
			rc = skipper_fail(err, kerr.status, "%s", kerr.msg);
			goto out;
		}
		ctx = EVP_MD_CTX_new();
		good = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
		       EVP_DigestVerify(ctx, sig, SIG_LEN, bytes_of(&m), m.n) == 1;
		EVP_MD_CTX_free(ctx);
		EVP_PKEY_free(k);
		if (good) {
			if (which)
				*which = i;
			rc = SKIPPER_OK;
			break;
		}
	}
	if (rc)
		skipper_fail(err, rc, "%s: signature %s does not verify with any of the %zu trusted key%s", file, sp, n,
		             n == 1 ? "" : "s");
out:
	unmap_file(&m);
	free(sp);
	return rc;
}

size_t skipper_sign_split_keys(char *list, const char **keys, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *t = strtok_r(list, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) {
		char *e;
		while (*t == ' ' || *t == '\t')
			t++;
		e = t + strlen(t);
		while (e > t && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (*t)
			keys[n++] = t;
	}
	return n;
}

int skipper_sign_check_keys(const char *const *keys, size_t n, struct skipper_error *err)
{
	for (size_t i = 0; i < n; i++) {
		EVP_PKEY *k = read_key(keys[i], 0, err);
		if (!k)
			return err ? err->status : SKIPPER_ERR_CONFIG;
		EVP_PKEY_free(k);
	}
	return SKIPPER_OK;
}

int skipper_sign_check_trusted(const char *file, const char *const *keys, size_t n, struct skipper_error *err)
{
	int rc;

	if (n == 0)
		return SKIPPER_OK;
	rc = skipper_sign_verify(file, NULL, keys, n, NULL, err);
	if (rc == SKIPPER_ERR_SIGNATURE)
		skipper_fail_prefix(err, "profile refused ([hub] trusted_keys is set)");
	return rc;
}
