/* Fuzz target: the hub listing parser (untrusted JSON from any hub).
 * `make check` replays tests/fuzz/seeds/hub-listing/ (fuzz-main.c); `make
 * fuzz` runs it under libFuzzer (tests/fuzz/README). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>

#include "hub/hub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct skipper_hub_listing l;
	struct skipper_error err;

	if (skipper_hub_listing_parse((const char *)data, size, 1LL << 30, &l, &err) == SKIPPER_OK)
		skipper_hub_listing_free(&l);
	return 0;
}
