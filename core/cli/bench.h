/* skipper bench: data shared by the runner and the report writer. */
#ifndef SKIPPER_BENCH_H
#define SKIPPER_BENCH_H

#include <stdio.h>

#include "engine/engine.h"

struct bench_prompt {
	char *id, *category, *text;
};

/* Sums over the measured prompts of one (policy, category) cell. */
struct bench_cell {
	int n_prompts, n_generated, rounds, drafted, accepted;
	int n_decoded;  /* generated after each prompt's first token (which prefill produces) */
	double seconds, prefill, draft, verify, policy; /* decode seconds exclude prefill */
	int mismatches;                                 /* greedy outputs differing from `none` */
};

struct bench_report {
	int n_policies, n_categories;
	char **policies;      /* labels */
	char **categories;    /* in first-seen order */
	struct bench_cell *cells; /* [n_policies][n_categories + 1]; last column = all */
	int baseline;         /* index of `none`, -1 if absent */
};

/* Load prompts from JSONL: the first element of "turns" (Spec-Bench), else
 * "prompt", "text" or "instruction"; "category" (default "all") and
 * "question_id"/"id". Errors name file and line. */
int bench_load_prompts(const char *path, struct bench_prompt **out, int *n, char *errbuf, size_t errlen);
void bench_free_prompts(struct bench_prompt *p, int n);

/* Markdown table: per category and policy tokens/s, speedup vs `none`, M,
 * alpha and the time split. */
void bench_write_markdown(const struct bench_report *r, FILE *f);
/* Speedup chart with gnuplot (SVG); returns 0 if written, -1 if gnuplot is
 * missing or failed. */
int bench_write_chart(const struct bench_report *r, const char *svg_path);

#endif
