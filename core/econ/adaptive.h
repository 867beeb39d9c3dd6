/* The Self-SD adaptive draft exit (Zhang et al. 2024, §3.3 of the paper;
 * the rule of skipper-policy-bo-static(5)). Drafting stops once the draft's
 * top probability falls below gamma, which moves after every verification
 * round that drafted:
 *
 *     AR_e  = accepted / drafted                 (bonus token not counted)
 *     AR    = first round of the request ? AR_e : beta1 * AR + (1 - beta1) * AR_e
 *     tmp   = AR <= alpha ? gamma + eps : gamma - eps
 *     gamma = beta2 * gamma + (1 - beta2) * tmp
 *
 * gamma carries over between requests; AR restarts with each. bo-static and
 * knn-router run it in their hooks, the engine in the trials' fixed plan
 * that their calibration measures. Plain value type, owned by whoever
 * embeds it; see econ.h for the library. */
#ifndef SKIPPER_ECON_ADAPTIVE_H
#define SKIPPER_ECON_ADAPTIVE_H

struct econ_adaptive {
	double gamma, ar;
	int rounds;                /* rounds counted in this request */
	double alpha, eps, beta1, beta2;
};

void econ_adaptive_init(struct econ_adaptive *a, double gamma0, double alpha, double eps, double beta1,
                        double beta2);

/* A request starts: its first counted round sets AR afresh. */
void econ_adaptive_begin(struct econ_adaptive *a);

/* One verification round. first: AR restarts with this round (a caller
 * that calls econ_adaptive_begin per request passes a->rounds == 0). A
 * round that drafted nothing says nothing about acceptance: no update. */
void econ_adaptive_update(struct econ_adaptive *a, int first, int accepted, int drafted);

#endif
