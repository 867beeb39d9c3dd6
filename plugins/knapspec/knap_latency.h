/* KnapSpec's latency model and throughput objective (knapspec.md §3.1-3.3):
 * t_MLP = c1, t_Attn(n) = c2 * n + c3 for a context of n tokens, fitted by
 * least squares from sub-layer timings; integer knapsack weights from the
 * two costs; Tokens-per-Time of a draft. Pure functions, no allocation. */
#ifndef SKIPPER_KNAP_LATENCY_H
#define SKIPPER_KNAP_LATENCY_H

struct knap_latency {
	double c1;     /* MLP seconds */
	double c2, c3; /* attention seconds = c2 * n + c3 */
};

/* c1 = mean of t_mlp[km]; (c2, c3) = least-squares line through
 * (n[i], t_attn[i]), i < k. k >= 2 distinct n. Returns 0, or -1 when the
 * points do not determine a line or a time is not positive. */
int knap_latency_fit(const double *n, const double *t_attn, int k, const double *t_mlp, int km,
                     struct knap_latency *out);

/* t_Attn(n), floored at 1% of t_MLP: a negative intercept must not make
 * attention free at short contexts (knapspec.md §8 item 11). */
double knap_t_attn(const struct knap_latency *lat, int n);

/* w = min(round(t / min(t_attn, t_mlp)), cap); one of them is 1. */
void knap_weights(const struct knap_latency *lat, int n, int cap, int *w_attn, int *w_mlp);

/* TPT = (1 + a + ... + a^gamma) / (gamma * t_draft + t_target): t_target is the
 * verification's time (one full forward in the paper, see knap_pick.h). */
double knap_tpt(double alpha, int gamma, double t_draft, double t_target);

#endif
