/* Fuzz target: the skip-profile reader (core/policy/profile.c) and its layer
 * lists; profiles come from hubs, so their parser sees untrusted bytes.
 * `make check` replays tests/fuzz/seeds/profile-ini/ (fuzz-main.c); `make
 * fuzz` runs it under libFuzzer (tests/fuzz/README). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct skipper_profile *p = NULL;
	struct skipper_error err;
	const char *section, *key, *value;
	char path[64];
	uint8_t mask[64];
	/* The reader takes a path: an in-memory file keeps runs fast. */
	int fd = memfd_create("fuzz-profile", 0);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (skipper_profile_read(path, &p, &err) == SKIPPER_OK) {
		for (int i = 0; skipper_profile_entry(p, i, &section, &key, &value) == 0; i++)
			skipper_layers_parse(value, mask, 64, &err);
		skipper_profile_validate(p, NULL, 64, &err);
		skipper_profile_free(p);
	}
	close(fd);
	return 0;
}
