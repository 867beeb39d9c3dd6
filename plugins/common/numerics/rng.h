/* A small seeded generator (splitmix64, core/base/rng.h) for the common
 * algorithms, so they are deterministic and usable outside a host (unit
 * tests, other plugins). The state is a plain value the caller owns. */
#ifndef COMMON_NUMERICS_RNG_H
#define COMMON_NUMERICS_RNG_H

#include <stdint.h>

#include "base/rng.h"

struct splitmix {
	uint64_t s;
};

static inline void splitmix_seed(struct splitmix *r, uint64_t seed) { r->s = seed ^ UINT64_C(0x5851f42d4c957f2d); }

static inline uint64_t splitmix_u64(struct splitmix *r) { return skipper_splitmix64(&r->s); }

/* Uniform in [0, 1) with 53 random bits. */
static inline double splitmix_double(struct splitmix *r) { return (double)(splitmix_u64(r) >> 11) * 0x1.0p-53; }

#endif
