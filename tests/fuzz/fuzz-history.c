/* Fuzz target: the history file reader (core/engine/history.c, the file
 * that [lookup] history names), which anything may have damaged or
 * replaced.
 *
 * Each input is read twice: as it is, and with its last 32 bytes replaced
 * by the SHA-256 of the rest, so that the fuzzer reaches what comes after
 * the checksum (the ids, the append) rather than stopping at it.
 * Checked besides ASan/UBSan (abort on violation):
 * - an error is one of the statuses the reader gives, names the file, and
 *   leaves the history as it was;
 * - a history that loads holds at most its bound, proposes only ids of the
 *   model, and written back it loads again to the same number of tokens.
 * `make check` replays tests/fuzz/seeds/history/ (fuzz-main.c); `make fuzz`
 * runs it under libFuzzer (tests/fuzz/README). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/error.h"
#include "engine/history.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz-history: %s failed\n", #c); abort(); } } while (0)

/* the seeds' model */
#define SHA "aaaa000000000000000000000000000000000000000000000000000000000000"
#define N_VOCAB 1000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The spine after ctx: every id the model's. */
static void proposals_valid(struct skipper_history *h, const int32_t *ctx, int n)
{
	struct lookup_tree t;
	int match = 0, len;

	len = history_propose(h, ctx, n, 8, 16, 4, &t, &match);
	CHECK(len >= 0 && len <= 16 && t.n >= len && t.n <= LOOKUP_TREE_NODES);
	for (int i = 0; i < t.n; i++)
		CHECK(t.tok[i] >= 0 && t.tok[i] < N_VOCAB && t.parent[i] < i);
}

static void load_one(const uint8_t *data, size_t size)
{
	struct skipper_history *h, *again;
	struct skipper_error err;
	char path[64];
	int fd = memfd_create("fuzz-history", 0), rc;

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	CHECK(skipper_history_new(1 << 20, SHA, N_VOCAB, &h, &err) == SKIPPER_OK);
	skipper_history_add(h, (int32_t[]){ 5, 6, 7 }, 3);
	rc = skipper_history_load(h, path, 1 << 20, &err);
	if (rc) {
		CHECK(rc == SKIPPER_ERR_FORMAT || rc == SKIPPER_ERR_UNSUPPORTED || rc == SKIPPER_ERR_MISMATCH ||
		      rc == SKIPPER_ERR_CHECKSUM || rc == SKIPPER_ERR_IO || rc == SKIPPER_ERR_NOMEM);
		CHECK(rc == SKIPPER_ERR_NOMEM || strstr(err.msg, path));
		CHECK(skipper_history_tokens(h) == 4);
		skipper_history_free(h);
		close(fd);
		return;
	}
	CHECK(skipper_history_tokens(h) <= skipper_history_capacity(h));
	proposals_valid(h, (int32_t[]){ 5, 6 }, 2);
	proposals_valid(h, (int32_t[]){ 1, 2, 3 }, 3);
	/* written back (a temporary and a rename need a directory) and read again */
	char dir[] = "/tmp/fuzz-history-XXXXXX", out[64];
	CHECK(mkdtemp(dir));
	snprintf(out, sizeof out, "%s/h.hist", dir);
	CHECK(skipper_history_save(h, out, &err) == SKIPPER_OK);
	CHECK(skipper_history_new(1 << 20, SHA, N_VOCAB, &again, &err) == SKIPPER_OK);
	if (skipper_history_load(again, out, 1 << 20, &err)) {
		fprintf(stderr, "fuzz-history: written back, the history does not load: %s\n", err.msg);
		abort();
	}
	/* the reloaded one lacks only the separator a load adds before it */
	CHECK(skipper_history_tokens(again) + 1 >= skipper_history_tokens(h) &&
	      skipper_history_tokens(again) <= skipper_history_tokens(h) + 1);
	skipper_history_free(again);
	unlink(out);
	rmdir(dir);
	skipper_history_free(h);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;
	unsigned len = 0;
	EVP_MD_CTX *x;

	load_one(data, size);
	if (size < 32 || !(fixed = malloc(size)))
		return 0;
	memcpy(fixed, data, size);
	x = EVP_MD_CTX_new();
	CHECK(x && EVP_DigestInit_ex(x, EVP_sha256(), NULL) && EVP_DigestUpdate(x, fixed, size - 32) &&
	      EVP_DigestFinal_ex(x, fixed + size - 32, &len) && len == 32);
	EVP_MD_CTX_free(x);
	load_one(fixed, size);
	free(fixed);
	return 0;
}
