/* The seeded generators: xoshiro256** seeded through splitmix64, the one
 * generator the engine samples with and plugins draw from (host->rng_*),
 * so that a seed reproduces a whole run; and splitmix64 alone, the small
 * one plugins/common and the test models step directly (its stream is its
 * own: a different generator, kept as it is so that every seeded search
 * and generated model stays bit-identical). struct skipper_rng is public
 * (skipper/policy.h). */
#ifndef SKIPPER_RNG_H
#define SKIPPER_RNG_H

#include <stdint.h>

struct skipper_rng;

void skipper_rng_seed(struct skipper_rng *r, uint64_t seed);
uint64_t skipper_rng_u64(struct skipper_rng *r);
double skipper_rng_double(struct skipper_rng *r); /* [0, 1) with 53 random bits */

/* One step of splitmix64: advances *x and returns the next output. Inline,
 * so that plugins use it without linking anything. */
static inline uint64_t skipper_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

#endif
