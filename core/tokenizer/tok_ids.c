/* The growable id list both encoders append to (its own file so that the
 * encode driver, which calls the encoders, is not also their helper). */
#include <stdlib.h>

#include "tokenizer_impl.h"

int tok_ids_push(struct tok_ids *a, int32_t id)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		int32_t *v = realloc(a->v, cap * sizeof *v);
		if (!v)
			return -1;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = id;
	return 0;
}
