/* KnapSpec latency model; see knap_latency.h. */
#include <math.h>

#include "knap_latency.h"

int knap_latency_fit(const double *n, const double *t_attn, int k, const double *t_mlp, int km,
                     struct knap_latency *out)
{
	double mn = 0, mt = 0, sxx = 0, sxy = 0, c1 = 0;
	if (k < 2 || km < 1)
		return -1;
	for (int i = 0; i < km; i++) {
		if (!(t_mlp[i] > 0))
			return -1;
		c1 += t_mlp[i] / km;
	}
	for (int i = 0; i < k; i++) {
		if (!(t_attn[i] > 0))
			return -1;
		mn += n[i] / k;
		mt += t_attn[i] / k;
	}
	for (int i = 0; i < k; i++) {
		sxx += (n[i] - mn) * (n[i] - mn);
		sxy += (n[i] - mn) * (t_attn[i] - mt);
	}
	if (!(sxx > 0))
		return -1;
	out->c1 = c1;
	out->c2 = sxy / sxx;
	out->c3 = mt - out->c2 * mn;
	return 0;
}

double knap_t_attn(const struct knap_latency *lat, int n)
{
	double t = lat->c2 * n + lat->c3, floor = 0.01 * lat->c1;
	return t > floor ? t : floor;
}

void knap_weights(const struct knap_latency *lat, int n, int cap, int *w_attn, int *w_mlp)
{
	double ta = knap_t_attn(lat, n), tm = lat->c1, delta = ta < tm ? ta : tm;
	long wa = lround(ta / delta), wm = lround(tm / delta);
	if (cap > 0) {
		wa = wa < cap ? wa : cap;
		wm = wm < cap ? wm : cap;
	}
	*w_attn = wa < 1 ? 1 : (int)wa;
	*w_mlp = wm < 1 ? 1 : (int)wm;
}

double knap_tpt(double alpha, int gamma, double t_draft, double t_target)
{
	double tokens;
	if (alpha >= 1)
		tokens = gamma + 1;
	else if (alpha <= 0)
		tokens = 1;
	else
		tokens = (1 - pow(alpha, gamma + 1)) / (1 - alpha);
	return tokens / (gamma * t_draft + t_target);
}
