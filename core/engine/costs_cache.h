/* The cost-curve cache file (struct skipper_costs of skipper/policy.h, one
 * per model, backend and machine under ~/.cache/skipper/costs): written by
 * skipper, but read as data from any source, since a cache is easy to
 * damage (a crash, a disk filling up, an edit, a link to a device); and
 * the rules every curve keeps. Kept apart from the measuring (costs.c) so
 * that tests and the fuzz target use them without an engine. Internal to
 * libskipper.
 *
 * The format, "key value" lines; '#' lines are comments:
 *   measured_for BACKEND ARCH ... (what the curve was measured for)
 *   step_seconds S       one decode step in seconds
 *   head H               share of a step outside the layers, in (0, 1]
 *   draft_head D         head share of a draft step, in (0, H]
 *   attn A / mlp M       share of one layer's sub-layer, in [0, 1]
 *   context C            the committed tokens all of it was measured after,
 *                        a whole number in [1, SKIPPER_COSTS_CTX_MAX]
 *   context_row R        steps each further token of context adds to a
 *                        pass of one row, in [0, 1]
 *   context_extra_row X  and to each further row of a pass, in [0, R]
 *   verify N V           a pass over N rows in steps: every N from 1 to the
 *                        curve's last row, in order, V(1) = 1, V never
 *                        falling and never above N (a pass over N rows costs
 *                        at most N steps: the backend could run them one by
 *                        one)
 * Every value is a decimal number (no hex, inf, nan) and every key comes
 * once. */
#ifndef SKIPPER_COSTS_CACHE_H
#define SKIPPER_COSTS_CACHE_H

#include "skipper/policy.h"
#include "skipper/status.h"

/* The file is a few hundred bytes; a line at most a measured_for. */
#define SKIPPER_COSTS_FILE_MAX (64u << 10)
#define SKIPPER_COSTS_LINE_MAX 512
/* a context the cache may name, at most (no model's is longer) */
#define SKIPPER_COSTS_CTX_MAX (1 << 24)

/* Read the curve at path into *c: SKIPPER_OK when it is a valid curve
 * measured_for id (NUL-terminated, as the engine words it) with rows 1 to
 * n_max. Else err names path (and the line, for what is wrong on one) and
 * the status says why: SKIPPER_ERR_NOT_FOUND no file; SKIPPER_ERR_MISMATCH
 * measured for something else; SKIPPER_ERR_IO not a regular file (a
 * directory, a FIFO or a device: refused without waiting) or unreadable;
 * SKIPPER_ERR_FORMAT anything else. *c is zeroed first. */
int skipper_costs_read(const char *path, const char *id, int n_max, struct skipper_costs *c,
                       struct skipper_error *err);

/* Make a measured curve keep the rules: each point at most the sum of two
 * smaller passes that make it up (subadditive), then non-decreasing. A
 * point above that bound was timed while something else ran (a test suite
 * on the other core once left a curve whose 6 rows cost 16.5 steps), so it
 * is lowered to it before the pooling, which would spread it. Points out
 * of order (noise where passes cost about the same: a GPU's first rows are
 * nearly free, and a curve measured on an H200 decreased) are pooled; the
 * last raise only mends what lowering a point again undid, so drafting
 * never sees a longer draft as cheaper than a shorter one. A curve read
 * from a cache gets the same (one skipper wrote is left as it was). */
void skipper_costs_bound(struct skipper_costs *c);

/* Write c (rows 1 to c->n_max) measured_for id to path atomically. */
int skipper_costs_write(const char *path, const char *id, const struct skipper_costs *c, struct skipper_error *err);

#endif
