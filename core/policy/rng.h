/* xoshiro256** seeded through splitmix64: the one generator the engine
 * samples with and plugins draw from (host->rng_*), so a seed reproduces a
 * whole run. struct skipper_rng is public (skipper/policy.h). */
#ifndef SKIPPER_RNG_H
#define SKIPPER_RNG_H

#include <stdint.h>

#include "skipper/policy.h"

void skipper_rng_seed(struct skipper_rng *r, uint64_t seed);
uint64_t skipper_rng_u64(struct skipper_rng *r);
double skipper_rng_double(struct skipper_rng *r); /* [0, 1) with 53 random bits */

#endif
