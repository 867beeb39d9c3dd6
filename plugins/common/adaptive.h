/* Self-SD adaptive draft exit (Zhang et al. 2024, §3.3 of the paper; the
 * rule of skipper-policy-bo-static(5)): after every verification round,
 *
 *     AR_e = accepted / drafted                 (bonus token not counted)
 *     AR   = first round of the request ? AR_e : beta1 * AR + (1 - beta1) * AR_e
 *     tmp  = AR <= alpha ? gamma + eps : gamma - eps
 *     gamma = beta2 * gamma + (1 - beta2) * tmp
 *
 * Drafting stops once the draft's top probability falls below gamma. gamma
 * carries over between requests; AR restarts with each request. Plain value
 * type, owned by whoever embeds it. */
#ifndef SKIPCOMMON_ADAPTIVE_H
#define SKIPCOMMON_ADAPTIVE_H

struct cm_adaptive {
	double gamma, ar;
	int rounds;                /* rounds seen in this request */
	double alpha, eps, beta1, beta2;
};

static inline void cm_adaptive_init(struct cm_adaptive *a, double gamma0, double alpha, double eps, double beta1,
                                    double beta2)
{
	a->gamma = gamma0;
	a->ar = 0;
	a->rounds = 0;
	a->alpha = alpha;
	a->eps = eps;
	a->beta1 = beta1;
	a->beta2 = beta2;
}

static inline void cm_adaptive_begin_request(struct cm_adaptive *a) { a->rounds = 0; }

/* A round that drafted nothing says nothing about acceptance: no update. */
static inline void cm_adaptive_update(struct cm_adaptive *a, int accepted, int drafted)
{
	double are, tmp;
	if (drafted <= 0)
		return;
	are = (double)accepted / drafted;
	a->ar = a->rounds == 0 ? are : a->beta1 * a->ar + (1 - a->beta1) * are;
	a->rounds++;
	tmp = a->ar <= a->alpha ? a->gamma + a->eps : a->gamma - a->eps;
	a->gamma = a->beta2 * a->gamma + (1 - a->beta2) * tmp;
}

#endif
