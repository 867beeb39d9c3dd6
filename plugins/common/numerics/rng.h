/* A small seeded generator (splitmix64) for the common algorithms, so they
 * are deterministic and usable outside a host (unit tests, other plugins).
 * The state is a plain value the caller owns. */
#ifndef COMMON_NUMERICS_RNG_H
#define COMMON_NUMERICS_RNG_H

#include <stdint.h>

struct splitmix {
	uint64_t s;
};

static inline void splitmix_seed(struct splitmix *r, uint64_t seed) { r->s = seed ^ UINT64_C(0x5851f42d4c957f2d); }

static inline uint64_t splitmix_u64(struct splitmix *r)
{
	uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double splitmix_double(struct splitmix *r) { return (double)(splitmix_u64(r) >> 11) * 0x1.0p-53; }

#endif
