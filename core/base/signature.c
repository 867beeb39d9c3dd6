/* See signature.h. Ed25519 verifies the whole message in one call, so
 * files are mapped, not streamed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>

#include "error.h"
#include "file.h"
#include "signature.h"

#define SIG_LEN 64
/* base64 of 64 bytes: 88 characters, the last two '=' */
#define SIG_B64 88
/* the line, "\r\n" and room to see that more follows */
#define SIG_FILE_MAX (SIG_B64 + 2)
#define KEY_FILE_MAX (64u << 10)

EVP_PKEY *skipper_sign_read_key(const char *path, int private_key, struct skipper_error *err)
{
	struct skipper_error e = { 0 };
	FILE *f = skipper_open_regular(path, "r", KEY_FILE_MAX, NULL, &e);
	EVP_PKEY *k;

	if (!f) {
		skipper_fail(err, SKIPPER_ERR_CONFIG, "key %s", e.msg);
		return NULL;
	}
	k = private_key ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : PEM_read_PUBKEY(f, NULL, NULL, NULL);
	fclose(f);
	if (!k) {
		skipper_fail(err, SKIPPER_ERR_CONFIG, "key %s: not a PEM %s key", path, private_key ? "private" : "public");
		return NULL;
	}
	if (!EVP_PKEY_is_a(k, "ED25519")) {
		EVP_PKEY_free(k);
		skipper_fail(err, SKIPPER_ERR_CONFIG, "key %s: not an Ed25519 key", path);
		return NULL;
	}
	return k;
}

/* Read NAME.sig whole: one base64 line decoding to exactly 64 bytes, its
 * newline, and nothing after it. */
static int read_sig(const char *path, unsigned char sig[SIG_LEN], struct skipper_error *err)
{
	struct skipper_error e = { 0 };
	char text[SIG_FILE_MAX + 2];
	unsigned char raw[SIG_B64];
	FILE *f = skipper_open_regular(path, "r", SIG_FILE_MAX, NULL, &e);
	size_t n, line;
	int len;

	if (!f) {
		if (e.status == SKIPPER_ERR_NOT_FOUND)
			return skipper_fail(err, SKIPPER_ERR_SIGNATURE, "%s: signature file missing (profile is unsigned)",
			                    path);
		return skipper_fail(err, SKIPPER_ERR_SIGNATURE, "%s", e.msg);
	}
	n = fread(text, 1, sizeof text - 1, f); /* one byte more than a valid file: a file growing is seen */
	text[n] = '\0';
	if (ferror(f)) {
		fclose(f);
		return skipper_fail(err, SKIPPER_ERR_SIGNATURE, "%s: read error", path);
	}
	fclose(f);
	line = strcspn(text, "\r\n"); /* stops at a NUL byte too, which then fails below */
	if (line != SIG_B64 || strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") < line)
		return skipper_fail(err, SKIPPER_ERR_SIGNATURE,
		                    "%s: not a base64 Ed25519 signature (one line of %d characters)", path, SIG_B64);
	/* after the line: its end ("\n" or "\r\n", or none), then the file's */
	size_t end = line;
	if (end < n && text[end] == '\r')
		end++;
	if (end < n && text[end] == '\n')
		end++;
	if (end != n)
		return skipper_fail(err, SKIPPER_ERR_SIGNATURE,
		                    "%s: more than the signature line (a .sig holds one line of %d characters)", path,
		                    SIG_B64);
	len = EVP_DecodeBlock(raw, (const unsigned char *)text, SIG_B64);
	/* EVP_DecodeBlock counts the padding as data: 88 chars -> 66 bytes. */
	if (len != 66 || text[86] != '=' || text[87] != '=' || strchr(text, '=') != text + 86)
		return skipper_fail(err, SKIPPER_ERR_SIGNATURE, "%s: not a base64 Ed25519 signature", path);
	memcpy(sig, raw, SIG_LEN);
	return SKIPPER_OK;
}

static char *default_sig(const char *file, const char *sig_path)
{
	size_t n;
	char *p;
	if (sig_path)
		return strdup(sig_path);
	n = strlen(file) + 5;
	if ((p = malloc(n)))
		snprintf(p, n, "%s.sig", file);
	return p;
}

int skipper_sign_verify(const char *file, const char *sig_path, const char *const *pub_keys, size_t n, size_t *which,
                        struct skipper_error *err)
{
	unsigned char sig[SIG_LEN];
	const void *msg = NULL;
	size_t len = 0;
	char *sp = default_sig(file, sig_path);
	int rc;

	if (!sp)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	/* the file first: a missing one is not an unsigned one */
	if ((rc = skipper_map_file(file, 0, NULL, &msg, &len, err)) || (rc = read_sig(sp, sig, err)))
		goto out;
	rc = SKIPPER_ERR_SIGNATURE;
	for (size_t i = 0; i < n; i++) {
		struct skipper_error kerr = { 0 };
		EVP_PKEY *k = skipper_sign_read_key(pub_keys[i], 0, &kerr);
		EVP_MD_CTX *ctx;
		int good = 0;
		if (!k) {
			rc = skipper_fail(err, kerr.status, "%s", kerr.msg);
			goto out;
		}
		ctx = EVP_MD_CTX_new();
		good = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
		       EVP_DigestVerify(ctx, sig, SIG_LEN, msg, len) == 1;
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
	skipper_unmap_file(msg, len);
	free(sp);
	return rc;
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

int skipper_sign_check_keys(const char *const *keys, size_t n, struct skipper_error *err)
{
	for (size_t i = 0; i < n; i++) {
		EVP_PKEY *k = skipper_sign_read_key(keys[i], 0, err);
		if (!k)
			return err ? err->status : SKIPPER_ERR_CONFIG;
		EVP_PKEY_free(k);
	}
	return SKIPPER_OK;
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
