/* Resume journal of the skip-set search: every finished evaluation (the
 * relaxed point x and its objective y) is written at once to a
 * profile-format file beside the output, OUT.search, one section per search
 * (bo-static: [search.mask]; knn-router: [search.domain.NAME]). A later
 * calibrate with the same settings reads the evaluations back instead of
 * running them, so an interrupted search loses at most the evaluation under
 * way, and --iterations can be raised to extend a finished one or lowered to
 * finish with what is there. The host validates the file like any profile
 * (model hash, layer count). */
#ifndef COMMON_SELFSD_MASKJOURNAL_H
#define COMMON_SELFSD_MASKJOURNAL_H

#include "masksearch.h"

struct ssd_journal {
	struct skipper_profile *p; /* NULL: no journal */
	const char *path;
	char sec[128];
	int n;                     /* evaluations in the section */
};

/* Open s->journal (read it when it exists). A section written with other
 * settings (prompts, tokens, draft settings, objective, seed, probes) is an
 * error that says how to start over. */
int ssd_journal_open(const struct skipper_host *h, void *ctx, const struct ssd_search *s, struct ssd_journal *j);
/* Evaluation i (< j->n) into x[dim] and *y. */
int ssd_journal_get(const struct skipper_host *h, void *ctx, const struct ssd_journal *j, int i, double *x, int dim,
                    double *y);
/* Append an evaluation and rewrite the file (atomically, by the host). */
int ssd_journal_add(const struct skipper_host *h, void *ctx, struct ssd_journal *j, const double *x, int dim, double y);
void ssd_journal_close(const struct skipper_host *h, void *ctx, struct ssd_journal *j);

#endif
