/* The merge queue of both BPE encoders (tokenizer_bpe.c, tokenizer_spm.c):
 * a binary min-heap of fixed-size records ordered by a caller's "pops
 * first" test. Records are copied in and out, so each encoder keeps its own
 * record type and tie-break rule. */
#ifndef SKIPPER_TOK_HEAP_H
#define SKIPPER_TOK_HEAP_H

#include <stddef.h>

struct tok_heap {
	unsigned char *a;  /* n records of size bytes */
	size_t n, cap, size;
	int (*first)(const void *a, const void *b); /* non-zero: a pops before b */
};

/* Empty heap of records of `size` bytes; allocates on first push. */
void tok_heap_init(struct tok_heap *h, size_t size, int (*first)(const void *, const void *));
/* Copy *rec in; -1 when out of memory (the heap is unchanged). */
int tok_heap_push(struct tok_heap *h, const void *rec);
/* Copy the first record to *out and remove it; h->n must be > 0. */
void tok_heap_pop(struct tok_heap *h, void *out);
void tok_heap_free(struct tok_heap *h);

#endif
