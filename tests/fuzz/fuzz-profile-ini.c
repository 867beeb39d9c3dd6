/* Fuzz target: the profile INI parser and layer lists (profiles come from hubs). */
#include <stddef.h>
#include <stdint.h>

#include "hub/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct skipper_hub_profile_doc d;
	struct skipper_error err;

	if (skipper_hub_profile_parse("fuzz.ini", (const char *)data, size, &d, &err) == SKIPPER_OK) {
		for (size_t i = 0; i < d.n; i++) {
			int count;
			skipper_hub_profile_parse_layers(d.kv[i].value, 64, NULL, &count);
		}
		skipper_hub_profile_doc_free(&d);
	}
	return 0;
}
