/* "Spine + leaf siblings" token trees (swift.md §4, SWIFT's [code]): depth j
 * holds chain token j and some of the other top-k candidates of draft step
 * j, all children of chain node j - 1 (or of the root); only chain nodes
 * have children. Used by swift and by fixed's tree mode. */
#ifndef COMMON_DRAFTING_SPINE_H
#define COMMON_DRAFTING_SPINE_H

#include "skipper/policy.h"

/* Depths whose widths a policy chooses; deeper chain tokens get no siblings. */
#define SPINE_MAX_DEPTH 64

/* Fill t with the chain of d and extra[j] siblings at depth j < n_extra
 * (the most probable non-chain candidates; ids < 0 are skipped). Room for
 * the rest of the spine is always kept, so a small capacity drops siblings,
 * never chain tokens; t->chain_node (when given) maps the chain. */
void spine_tree(const struct skipper_draft *d, const int *extra, int n_extra, struct skipper_tree *t);

#endif
