/* Fuzz target: the cost-curve cache reader (core/engine/costs_cache.c),
 * whose file under ~/.cache/skipper/costs anything may have damaged or
 * replaced.
 *
 * Checked besides ASan/UBSan (abort on violation):
 * - an error names the file and is one of the statuses the reader gives;
 * - a curve that reads is a valid one: rows 1 to 32, verify 1 = 1, never
 *   falling, verify n at most n, every value finite, a step of (0, 3600]
 *   seconds, head in (0, 1], draft head at most head, attn and mlp in
 *   [0, 1];
 * - bounded (skipper_costs_bound, as the engine does), it still is, and
 *   written back (skipper_costs_write) it reads again.
 * `make check` replays tests/fuzz/seeds/costs/ (fuzz-main.c); `make fuzz`
 * runs it under libFuzzer (tests/fuzz/README). */
#define _GNU_SOURCE
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/error.h"
#include "engine/costs_cache.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz-costs: %s failed\n", #c); abort(); } } while (0)

/* the measured_for of the seeds: a CPU backend, SmolLM2's shape */
#define ID "cpu llama 30 layers 576 embd 49152 vocab 77138304 bytes draft vocab 0"
#define ROWS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void valid(const struct skipper_costs *c)
{
	CHECK(c->n_max == ROWS && c->verify[1] == 1);
	for (int n = 2; n <= c->n_max; n++)
		CHECK(isfinite(c->verify[n]) && c->verify[n] >= c->verify[n - 1] && c->verify[n] <= n);
	CHECK(isfinite(c->step_seconds) && c->step_seconds > 0 && c->step_seconds <= 3600);
	CHECK(c->head > 0 && c->head <= 1 && c->draft_head > 0 && c->draft_head <= c->head);
	CHECK(c->attn >= 0 && c->attn <= 1 && c->mlp >= 0 && c->mlp <= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct skipper_costs c, again;
	struct skipper_error err;
	char path[64], out[64];
	int fd = memfd_create("fuzz-costs", 0), rc;

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	rc = skipper_costs_read(path, ID, ROWS, &c, &err);
	if (rc) {
		CHECK(rc == SKIPPER_ERR_FORMAT || rc == SKIPPER_ERR_MISMATCH || rc == SKIPPER_ERR_IO ||
		      rc == SKIPPER_ERR_NOMEM);
		CHECK(rc == SKIPPER_ERR_NOMEM || strstr(err.msg, path));
		close(fd);
		return 0;
	}
	valid(&c);
	skipper_costs_bound(&c);
	valid(&c);
	/* written back (beside the other memfd: a temporary and a rename need
	 * a directory) and read again */
	char dir[] = "/tmp/fuzz-costs-XXXXXX";
	CHECK(mkdtemp(dir));
	snprintf(out, sizeof out, "%s/c.costs", dir);
	CHECK(skipper_costs_write(out, ID, &c, &err) == SKIPPER_OK);
	rc = skipper_costs_read(out, ID, ROWS, &again, &err);
	if (rc) {
		fprintf(stderr, "fuzz-costs: written back, the curve does not read: %s\n", err.msg);
		abort();
	}
	valid(&again);
	unlink(out);
	rmdir(dir);
	close(fd);
	return 0;
}
