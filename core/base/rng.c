/* See rng.h. */
#include "rng.h"
#include "skipper/policy.h"

void skipper_rng_seed(struct skipper_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = skipper_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** */
uint64_t skipper_rng_u64(struct skipper_rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double skipper_rng_double(struct skipper_rng *r) { return (double)(skipper_rng_u64(r) >> 11) * 0x1.0p-53; }
