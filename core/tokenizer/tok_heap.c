#include <stdlib.h>
#include <string.h>

#include "tok_heap.h"

#define AT(h, i) ((h)->a + (i) * (h)->size)

void tok_heap_init(struct tok_heap *h, size_t size, int (*first)(const void *, const void *))
{
	memset(h, 0, sizeof *h);
	h->size = size;
	h->first = first;
}

int tok_heap_push(struct tok_heap *h, const void *rec)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		unsigned char *a = realloc(h->a, cap * h->size);
		if (!a)
			return -1;
		h->a = a;
		h->cap = cap;
	}
	/* sift the hole up; rec is the caller's, so it cannot be overwritten */
	size_t i = h->n++;
	while (i && h->first(rec, AT(h, (i - 1) / 2))) {
		memcpy(AT(h, i), AT(h, (i - 1) / 2), h->size);
		i = (i - 1) / 2;
	}
	memcpy(AT(h, i), rec, h->size);
	return 0;
}

void tok_heap_pop(struct tok_heap *h, void *out)
{
	size_t i = 0, n = --h->n;
	const unsigned char *last = AT(h, n); /* sifting writes below n only */
	memcpy(out, AT(h, 0), h->size);
	for (;;) {
		size_t k = 2 * i + 1;
		if (k >= n)
			break;
		if (k + 1 < n && h->first(AT(h, k + 1), AT(h, k)))
			k++;
		if (!h->first(AT(h, k), last))
			break;
		memcpy(AT(h, i), AT(h, k), h->size);
		i = k;
	}
	if (n)
		memcpy(AT(h, i), last, h->size);
}

void tok_heap_free(struct tok_heap *h)
{
	free(h->a);
	h->a = NULL;
	h->n = h->cap = 0;
}
