/* Drafts from history (core/engine/history.c): what it proposes, what it
 * forgets past its bound, and its file (saved atomically, refused when
 * damaged, cut short, foreign or oversized, the history left as it was). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/history.h"
#include "tap.h"

static struct skipper_error err;
static const char *sha_a = "aaaa000000000000000000000000000000000000000000000000000000000000";
static const char *sha_b = "bbbb000000000000000000000000000000000000000000000000000000000000";

#define N_VOCAB 10000

static struct skipper_history *make_vocab(size_t mb, const char *sha, int32_t n_vocab)
{
	struct skipper_history *h;
	if (skipper_history_new(mb << 20, sha, n_vocab, &h, &err))
		BAIL(err.msg);
	return h;
}

static struct skipper_history *make(size_t mb, const char *sha) { return make_vocab(mb, sha, N_VOCAB); }

/* The spine of what h proposes after ctx, as text ("5 6 7"). */
static const char *spine(struct skipper_history *h, const int32_t *ctx, int n, int *match)
{
	static char buf[512];
	struct lookup_tree t;
	int m = history_propose(h, ctx, n, LOOKUP_MAX_NGRAM, 8, 4, &t, match), len = 0;
	buf[0] = 0;
	for (int i = 0; i < m; i++)
		len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%d", i ? " " : "", t.tok[i]);
	return buf;
}

static void proposals(void)
{
	struct skipper_history *h = make(1, sha_a);
	int32_t r1[] = { 1, 2, 3, 4, 5, 6, 7 }, r2[] = { 9, 3, 4, 8, 8 }, r3[] = { 20, 21, 22 };
	int match;

	skipper_history_add(h, r1, 7);
	is_str(spine(h, (int32_t[]){ 50, 3, 4 }, 3, &match), "5 6 7", "a pair seen before: what followed it");
	is_int(match, 2, "matched on the pair");
	skipper_history_add(h, r2, 5);
	is_str(spine(h, (int32_t[]){ 2, 3, 4 }, 3, &match), "5 6 7",
	       "the longest suffix wins: 2 3 4 was followed by 5 6 7, 3 4 lately by 8 8");
	is_int(match, 3, "matched on three tokens");
	is_str(spine(h, (int32_t[]){ 77, 3, 4 }, 3, &match), "8 8", "on the pair alone, the most recent continuation");
	is_str(spine(h, (int32_t[]){ 6, 7 }, 2, &match), "", "a continuation never crosses into the next request");
	skipper_history_add(h, r3, 3);
	is_str(spine(h, (int32_t[]){ 7, 9 }, 2, &match), "", "nor does a match: 7 ends one request, 9 starts the next");
	is_str(spine(h, (int32_t[]){ 4 }, 1, &match), "", "one token is too little to match");
	{
		/* counts: three requests went on the same way, one another way */
		struct skipper_history *c = make(1, sha_a);
		struct lookup_tree t;
		for (int i = 0; i < 3; i++)
			skipper_history_add(c, (int32_t[]){ 10, 11, 12, 13 }, 4);
		skipper_history_add(c, (int32_t[]){ 10, 11, 14 }, 3);
		int m = history_propose(c, (int32_t[]){ 10, 11 }, 2, LOOKUP_MAX_NGRAM, 8, 4, &t, &match);
		int sib = -1;
		for (int i = 0; i < t.n; i++)
			if (t.parent[i] == -1 && t.tok[i] == 14)
				sib = i;
		ok(m == 2 && t.tok[0] == 12 && t.count[0] == 3 && sib >= 0 && t.count[sib] == 1,
		   "continuations merge with counts (12 13 three times, 14 once)");
		skipper_history_free(c);
	}
	skipper_history_free(h);
}

static void bound(void)
{
	struct skipper_history *h = make(1, sha_a);
	size_t cap = skipper_history_capacity(h);
	int32_t req[100];
	int match;

	ok(cap == ((size_t)1 << 20) / HISTORY_BYTES_PER_TOKEN, "1 MiB holds %zu tokens", cap);
	skipper_history_add(h, (int32_t[]){ 900, 901, 902 }, 3);
	for (int k = 0; k < (int)(2 * cap / 100); k++) {
		for (int i = 0; i < 100; i++)
			req[i] = 1000 + (k * 100 + i) % 50000;
		skipper_history_add(h, req, 100);
	}
	ok(skipper_history_tokens(h) <= cap, "past its bound it holds at most its capacity (%zu)",
	   skipper_history_tokens(h));
	is_str(spine(h, (int32_t[]){ 900, 901 }, 2, &match), "", "the oldest request is forgotten");
	ok(strlen(spine(h, (int32_t[]){ req[10], req[11] }, 2, &match)) > 0, "the newest is proposed");
	skipper_history_free(h);
	ok(skipper_history_new(1000, sha_a, N_VOCAB, &h, &err) == SKIPPER_ERR_RANGE, "less than 1 MiB is refused: %s", err.msg);
}

static char dir[] = "/tmp/t-history-XXXXXX";

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		BAIL("cannot write a test file");
}

static char *read_bytes(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long len;
	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) || !(p = malloc((size_t)len)) ||
	    fread(p, 1, (size_t)len, f) != (size_t)len)
		BAIL("cannot read a test file");
	fclose(f);
	*n = (size_t)len;
	return p;
}

/* Loading path into a history holding one request fails with want and
 * leaves it as it was. */
static void refused(const char *path, size_t max, int want, const char *why)
{
	struct skipper_history *h = make(1, sha_a);
	int match;
	skipper_history_add(h, (int32_t[]){ 5, 6, 7 }, 3);
	int rc = skipper_history_load(h, path, max, &err);
	ok(rc == want && skipper_history_tokens(h) == 4 && !strcmp(spine(h, (int32_t[]){ 5, 6 }, 2, &match), "7"),
	   "%s: refused (%d), the history as it was: %s", why, rc, err.msg);
	skipper_history_free(h);
}

static void files(void)
{
	char path[512], bad[512], fifo[512];
	struct skipper_history *h = make(2, sha_a), *g = make(2, sha_a);
	int match;
	size_t n;

	if (!mkdtemp(dir))
		BAIL("mkdtemp");
	snprintf(path, sizeof path, "%s/h.hist", dir);
	for (int i = 0; i < 200; i++)
		skipper_history_add(h, (int32_t[]){ i, 7000 + i, 8000 + i, 9000 + i }, 4);
	ok(skipper_history_save(h, path, &err) == SKIPPER_OK, "saved");
	ok(skipper_history_load(g, path, 1 << 20, &err) == SKIPPER_OK, "loaded into a new history");
	is_int(skipper_history_tokens(g), skipper_history_tokens(h), "the same tokens");
	is_str(spine(g, (int32_t[]){ 150, 7150 }, 2, &match), "8150 9150", "the same proposals");
	{
		/* no temporary file is left beside it */
		char cmd[600];
		snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
		FILE *p = popen(cmd, "r");
		int files = 0, got = p && fscanf(p, "%d", &files) == 1;
		ok(got && files == 1, "only the history file is there (%d)", files);
		if (p)
			pclose(p);
	}
	char *bytes = read_bytes(path, &n);
	snprintf(bad, sizeof bad, "%s/bad.hist", dir);
	write_bytes(bad, bytes, n - 1);
	refused(bad, 1 << 20, SKIPPER_ERR_FORMAT, "cut short by a byte");
	bytes[n / 2] ^= 0x10;
	write_bytes(bad, bytes, n);
	refused(bad, 1 << 20, SKIPPER_ERR_CHECKSUM, "a bit flipped in a token");
	bytes[n / 2] ^= 0x10;
	bytes[0] = 'X';
	write_bytes(bad, bytes, n);
	refused(bad, 1 << 20, SKIPPER_ERR_FORMAT, "another kind of file");
	bytes[0] = 's';
	write_bytes(bad, bytes, 10);
	refused(bad, 1 << 20, SKIPPER_ERR_FORMAT, "ten bytes");
	refused(path, 1000, SKIPPER_ERR_FORMAT, "larger than the bound given");
	{
		struct skipper_history *other = make(1, sha_b);
		ok(skipper_history_load(other, path, 1 << 20, &err) == SKIPPER_ERR_MISMATCH &&
		       skipper_history_tokens(other) == 0,
		   "made for another model: refused, nothing loaded: %s", err.msg);
		skipper_history_free(other);
	}
	{
		/* sound, but from a model with more ids than this one */
		struct skipper_history *big = make_vocab(1, sha_a, 2 * N_VOCAB);
		skipper_history_add(big, (int32_t[]){ 1, 2, N_VOCAB + 5 }, 3);
		if (skipper_history_save(big, bad, &err))
			BAIL(err.msg);
		refused(bad, 1 << 20, SKIPPER_ERR_FORMAT, "an id outside the model's vocabulary");
		skipper_history_free(big);
	}
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	if (mkfifo(fifo, 0600) == 0)
		refused(fifo, 1 << 20, SKIPPER_ERR_IO, "a FIFO (not waited on)");
	else
		tap_skip(1, "mkfifo failed");
	refused(dir, 1 << 20, SKIPPER_ERR_IO, "a directory");
	snprintf(bad, sizeof bad, "%s/no/such/dir/h.hist", dir);
	ok(skipper_history_save(h, bad, &err) == SKIPPER_ERR_IO, "saving where it cannot be written fails: %s", err.msg);
	unlink(fifo);
	snprintf(bad, sizeof bad, "%s/bad.hist", dir);
	unlink(bad);
	unlink(path);
	rmdir(dir);
	free(bytes);
	skipper_history_free(h);
	skipper_history_free(g);
}

/* Requests of a server read it while finished ones are added. */
struct reader {
	struct skipper_history *h;
	int found;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	int match;
	for (int i = 0; i < 20000; i++)
		r->found += spine(r->h, (int32_t[]){ 3, 4 }, 2, &match)[0] != 0;
	return NULL;
}

static void threads(void)
{
	struct reader r = { make(1, sha_a), 0 };
	pthread_t t;
	if (pthread_create(&t, NULL, read_loop, &r))
		BAIL("pthread_create");
	for (int i = 0; i < 20000; i++)
		skipper_history_add(r.h, (int32_t[]){ 3, 4, i % 100 }, 3);
	pthread_join(t, NULL);
	ok(r.found > 0, "proposals read while requests are added (%d found)", r.found);
	skipper_history_free(r.h);
}

int main(void)
{
	proposals();
	bound();
	files();
	threads();
	return tap_done();
}
