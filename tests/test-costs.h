/* Cost curves the arithmetic tests price drafts with (t-econ,
 * t-common-drafting): header-only, one copy per test program. */
#ifndef TESTS_TEST_COSTS_H
#define TESTS_TEST_COSTS_H

#include <math.h>
#include <string.h>

#include "skipper/policy.h"

#define NEAR(x, y) (fabs((x) - (y)) < 1e-9)

/* verify[n] = 1 + slope (n - 1) for n <= n_max */
static inline void linear(struct skipper_costs *c, double slope, int n_max)
{
	memset(c, 0, sizeof *c);
	c->n_max = n_max;
	for (int n = 1; n <= n_max; n++)
		c->verify[n] = 1 + slope * (n - 1);
	c->step_seconds = 0.1;
	c->head = c->draft_head = 0.1;
	c->attn = 0.01;
	c->mlp = 0.02;
}

/* The Qwen2.5-Coder-1.5B curve on a 2-core CPU (rows 1..8). */
static inline void cpu_qwen(struct skipper_costs *c)
{
	static const double v[9] = { 0, 1, 1.14, 1.39, 1.39, 1.53, 1.74, 1.91, 2.08 };
	memset(c, 0, sizeof *c);
	c->n_max = 8;
	memcpy(c->verify, v, sizeof v);
	c->step_seconds = 0.1;
}

#endif
