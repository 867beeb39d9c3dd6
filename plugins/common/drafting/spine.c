/* Spine + leaf-sibling trees; see spine.h. */
#include "spine.h"

void spine_tree(const struct skipper_draft *d, const int *extra, int n_extra, struct skipper_tree *t)
{
	int n = 0, parent = -1;

	for (int j = 0; j < d->n && n < t->capacity; j++) {
		int spine = n, room = t->capacity - n - (d->n - j); /* siblings that still fit */
		int ex = j < n_extra ? extra[j] : 0;
		if (ex > room)
			ex = room;
		t->tokens[n] = d->tokens[j];
		t->parent[n] = parent;
		if (t->chain_node)
			t->chain_node[j] = n;
		n++;
		for (int k = 0; k < d->top_k && ex > 0; k++) {
			int32_t id = d->top_ids[(size_t)j * d->top_k + k];
			if (id < 0 || id == d->tokens[j])
				continue;
			t->tokens[n] = id;
			t->parent[n] = parent;
			n++;
			ex--;
		}
		parent = spine;
	}
	t->n = n;
}
