/* The Self-SD adaptive draft exit; see adaptive.h. */
#include "adaptive.h"

void econ_adaptive_init(struct econ_adaptive *a, double gamma0, double alpha, double eps, double beta1,
                        double beta2)
{
	*a = (struct econ_adaptive){ .gamma = gamma0, .alpha = alpha, .eps = eps, .beta1 = beta1, .beta2 = beta2 };
}

void econ_adaptive_begin(struct econ_adaptive *a)
{
	a->rounds = 0;
}

void econ_adaptive_update(struct econ_adaptive *a, int first, int accepted, int drafted)
{
	double are, tmp;
	if (drafted <= 0)
		return;
	are = (double)accepted / drafted;
	a->ar = first ? are : a->beta1 * a->ar + (1 - a->beta1) * are;
	a->rounds++;
	tmp = a->ar <= a->alpha ? a->gamma + a->eps : a->gamma - a->eps;
	a->gamma = a->beta2 * a->gamma + (1 - a->beta2) * tmp;
}
