/* Drafts from history (history.h): the token buffer, its hash chains, the
 * proposals, and the file that keeps them. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/error.h"
#include "base/file.h"
#include "base/sha256.h"
#include "history.h"

/* Earlier occurrences examined per proposal at most, the most recent
 * first (a bounded cost per round, however often a pair recurs). */
#define HISTORY_SCAN 256
/* A -1 separates requests: no match or continuation crosses it. */
#define SEP (-1)

struct skipper_history {
	pthread_mutex_t mu;
	int32_t *tok;            /* [cap] the text, oldest first */
	uint32_t *prev;          /* [cap] the previous position of the pair ending at i, + 1 (0: none) */
	uint32_t *head;          /* [hmask + 1] the last position of each pair's hash, + 1 */
	size_t n, cap, hmask;
	int32_t n_vocab;         /* every token id is below it */
	char sha[65];            /* the model's */
};

static uint32_t pair_hash(int32_t a, int32_t b, size_t mask)
{
	uint64_t x = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) * UINT64_C(0x9e3779b97f4a7c15);
	return (uint32_t)((x >> 29) & mask);
}

/* Index the pair ending at i. */
static void link_at(struct skipper_history *h, size_t i)
{
	if (i < 1 || h->tok[i] < 0 || h->tok[i - 1] < 0) {
		h->prev[i] = 0;
		return;
	}
	uint32_t k = pair_hash(h->tok[i - 1], h->tok[i], h->hmask);
	h->prev[i] = h->head[k];
	h->head[k] = (uint32_t)i + 1;
}

int skipper_history_new(size_t max_bytes, const char *model_sha, int32_t n_vocab, struct skipper_history **out,
                        struct skipper_error *err)
{
	struct skipper_history *h;
	size_t cap = max_bytes / HISTORY_BYTES_PER_TOKEN, hs = 1;

	*out = NULL;
	if (max_bytes < ((size_t)1 << 20) || cap > UINT32_MAX - 1)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "a history of %zu bytes (1 MiB to %zu MiB)", max_bytes,
		                    (size_t)(UINT32_MAX / 2 / (1 << 20)) * HISTORY_BYTES_PER_TOKEN);
	while (hs < cap / 2)
		hs <<= 1;
	if (!(h = calloc(1, sizeof *h)) || !(h->tok = malloc(sizeof *h->tok * cap)) ||
	    !(h->prev = malloc(sizeof *h->prev * cap)) || !(h->head = calloc(hs, sizeof *h->head))) {
		skipper_history_free(h);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory (a history of %zu MiB)", max_bytes >> 20);
	}
	pthread_mutex_init(&h->mu, NULL);
	h->cap = cap;
	h->hmask = hs - 1;
	h->n_vocab = n_vocab;
	snprintf(h->sha, sizeof h->sha, "%s", model_sha ? model_sha : "");
	*out = h;
	return SKIPPER_OK;
}

void skipper_history_free(struct skipper_history *h)
{
	if (!h)
		return;
	if (h->cap)
		pthread_mutex_destroy(&h->mu);
	free(h->tok);
	free(h->prev);
	free(h->head);
	free(h);
}

size_t skipper_history_tokens(const struct skipper_history *h) { return h->n; }

size_t skipper_history_capacity(const struct skipper_history *h) { return h->cap; }

/* Room for need more tokens: the oldest half goes (or all but need), the
 * index is built again (rarely: once per half a buffer added). */
static void make_room(struct skipper_history *h, size_t need)
{
	if (h->n + need <= h->cap)
		return;
	size_t keep = h->n / 2;
	if (keep + need > h->cap)
		keep = need < h->cap ? h->cap - need : 0;
	memmove(h->tok, h->tok + h->n - keep, sizeof *h->tok * keep);
	h->n = keep;
	memset(h->head, 0, sizeof *h->head * (h->hmask + 1));
	for (size_t i = 0; i < h->n; i++)
		link_at(h, i);
}

/* Append under the lock. */
static void append(struct skipper_history *h, const int32_t *tok, size_t n)
{
	if (n + 1 > h->cap) { /* only the end of an enormous request fits */
		tok += n + 1 - h->cap;
		n = h->cap - 1;
	}
	make_room(h, n + 1);
	h->tok[h->n] = SEP;
	link_at(h, h->n++);
	for (size_t i = 0; i < n; i++) {
		h->tok[h->n] = tok[i] < 0 ? SEP : tok[i];
		link_at(h, h->n++);
	}
}

int skipper_history_add(struct skipper_history *h, const int32_t *tok, int n)
{
	if (n <= 0)
		return SKIPPER_OK;
	pthread_mutex_lock(&h->mu);
	append(h, tok, (size_t)n);
	pthread_mutex_unlock(&h->mu);
	return SKIPPER_OK;
}

int history_propose(struct skipper_history *h, const int32_t *ctx, int n, int max_match, int max_out, int branches,
                    struct lookup_tree *t, int *match)
{
	struct lookup_collect c;
	int spine = 0;

	t->n = t->spine = 0;
	*match = 0;
	if (n < HISTORY_MIN_MATCH || ctx[n - 1] < 0 || ctx[n - 2] < 0)
		return 0;
	if (max_match > LOOKUP_MAX_NGRAM)
		max_match = LOOKUP_MAX_NGRAM;
	pthread_mutex_lock(&h->mu);
	uint32_t k = pair_hash(ctx[n - 2], ctx[n - 1], h->hmask), ends[HISTORY_SCAN];
	int n_ends = 0;
	/* the pair's occurrences, the most recent first, that continue */
	for (uint32_t p = h->head[k]; p && n_ends < HISTORY_SCAN; p = h->prev[p - 1])
		if (p < h->n && h->tok[p - 1] == ctx[n - 1] && p >= 2 && h->tok[p - 2] == ctx[n - 2])
			ends[n_ends++] = p - 1;
	/* the longest suffix that any of them ends with */
	for (int g = max_match < n ? max_match : n; g >= HISTORY_MIN_MATCH && !spine; g--) {
		lookup_collect_init(&c, h->tok, (int)h->n, ctx, n, g, max_out, branches);
		c.by_count = 1;
		for (int i = 0; i < n_ends; i++) {
			int j = (int)ends[i] - g + 1;
			if (j >= 0 && !memcmp(h->tok + j, ctx + n - g, sizeof *ctx * (size_t)g))
				lookup_collect_add(&c, j);
		}
		if ((spine = lookup_collect_tree(&c, t)))
			*match = g;
	}
	pthread_mutex_unlock(&h->mu);
	return spine;
}

/* ---- the file ---- */

#define MAGIC "skipper history\n"
#define VERSION 1

struct file_header {
	char magic[16];
	uint32_t version;
	uint32_t reserved;
	char sha[64];       /* the model's SHA-256, hex; zeros: not given */
	uint64_t n;         /* tokens */
};


int skipper_history_save(struct skipper_history *h, const char *path, struct skipper_error *err)
{
	struct file_header hd = { .version = VERSION };
	unsigned char md[32];
	struct skipper_atomic *a;
	FILE *f;
	int rc = SKIPPER_OK;

	memcpy(hd.magic, MAGIC, sizeof hd.magic);
	memcpy(hd.sha, h->sha, strlen(h->sha) < 64 ? strlen(h->sha) : 64);
	if (!(a = skipper_atomic_open(path, err)))
		return err->status;
	f = skipper_atomic_file(a);
	pthread_mutex_lock(&h->mu);
	hd.n = h->n;
	if (skipper_sha256(&hd, sizeof hd, h->tok, sizeof *h->tok * h->n, md))
		rc = skipper_fail(err, SKIPPER_ERR_INTERNAL, "%s: cannot compute its SHA-256", path);
	else {
		fwrite(&hd, sizeof hd, 1, f);
		fwrite(h->tok, sizeof *h->tok, h->n, f);
		fwrite(md, sizeof md, 1, f);
	}
	pthread_mutex_unlock(&h->mu);
	if (rc) {
		skipper_atomic_abort(a);
		return rc;
	}
	return skipper_atomic_commit(a, err);
}

int skipper_history_load(struct skipper_history *h, const char *path, size_t max_file, struct skipper_error *err)
{
	struct file_header hd;
	unsigned char md[32], want[32];
	uint64_t size = 0;
	int32_t *tok = NULL;
	int fd = skipper_open_regular_fd(path, max_file, "history", &size, err), rc = SKIPPER_OK;
	FILE *f;

	if (fd < 0)
		return err->status;
	if (!(f = fdopen(fd, "rb"))) {
		close(fd);
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", path, strerror(errno));
	}
	if (size < sizeof hd + sizeof md || fread(&hd, sizeof hd, 1, f) != 1 || memcmp(hd.magic, MAGIC, sizeof hd.magic))
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: not a skipper history file", path);
	else if (hd.version != VERSION)
		rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: history format %u (this skipper reads %d)", path,
		                  hd.version, VERSION);
	else if (hd.n != (size - sizeof hd - sizeof md) / sizeof *tok || (size - sizeof hd - sizeof md) % sizeof *tok)
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: %llu bytes for %llu tokens (cut short or damaged)", path,
		                  (unsigned long long)size, (unsigned long long)hd.n);
	else if (h->sha[0] && hd.sha[0] && strncmp(hd.sha, h->sha, 64))
		rc = skipper_fail(err, SKIPPER_ERR_MISMATCH, "%s: made for another model (sha256 %.12s, this one %.12s)",
		                  path, hd.sha, h->sha);
	else if (!(tok = malloc(sizeof *tok * (hd.n ? hd.n : 1))))
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory (%s)", path);
	else if (fread(tok, sizeof *tok, hd.n, f) != hd.n || fread(md, sizeof md, 1, f) != 1 ||
	         skipper_sha256(&hd, sizeof hd, tok, sizeof *tok * hd.n, want) || memcmp(md, want, sizeof md))
		rc = skipper_fail(err, SKIPPER_ERR_CHECKSUM, "%s: its SHA-256 does not match its content (damaged)", path);
	/* a sound file may still come from elsewhere: every id must be the model's */
	for (size_t i = 0; !rc && i < hd.n; i++)
		if (tok[i] != SEP && (tok[i] < 0 || tok[i] >= h->n_vocab))
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: token %zu is %d, not an id of the model's %d", path, i,
			                  (int)tok[i], (int)h->n_vocab);
	fclose(f);
	if (!rc) {
		pthread_mutex_lock(&h->mu);
		/* the file is requests separated by -1: appended as they were */
		size_t start = 0;
		while (start < hd.n && tok[start] == SEP)
			start++;
		append(h, tok + start, hd.n - start);
		pthread_mutex_unlock(&h->mu);
	}
	free(tok);
	return rc;
}
