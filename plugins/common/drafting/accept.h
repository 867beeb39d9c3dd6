/* Online per-token acceptance estimate for the geometric model of
 * core/econ/econ.h. A verdict that drafted k tokens and accepted m of them
 * shows m acceptances and, when m < k, one rejection (the (m+1)-th token);
 * the tokens after the first rejection were never tested, so they show
 * nothing. The estimate is acceptances / (acceptances + rejections) over
 * decayed counts: each drafted round first multiplies both by `decay`, so
 * old rounds (and the prior) fade and a change of acceptance shows within
 * about 1 / (1 - decay) rounds. Plain value type, owned by whoever embeds
 * it. */
#ifndef COMMON_DRAFTING_ACCEPT_H
#define COMMON_DRAFTING_ACCEPT_H

struct accept_est {
	double s, f;  /* decayed acceptances and rejections (prior included) */
	double decay;
};

/* Start from acceptance a held with the weight of w observations. */
static inline void accept_est_seed(struct accept_est *e, double a, double w)
{
	e->s = a * w;
	e->f = (1 - a) * w;
}

static inline void accept_est_init(struct accept_est *e, double a, double w, double decay)
{
	accept_est_seed(e, a, w);
	e->decay = decay;
}

/* A round that drafted nothing tested nothing: no update. */
static inline void accept_est_update(struct accept_est *e, int accepted, int drafted)
{
	if (drafted <= 0)
		return;
	if (accepted > drafted)
		accepted = drafted;
	e->s = e->decay * e->s + (accepted > 0 ? accepted : 0);
	e->f = e->decay * e->f + (accepted < drafted);
}

static inline double accept_est_rate(const struct accept_est *e)
{
	return e->s + e->f > 0 ? e->s / (e->s + e->f) : 0.0;
}

#endif
