/* Fuzz target: the GGUF reader and the model loader (every architecture and
 * tensor type the loader knows), the first things to read a model file.
 * `make check` replays tests/fuzz/seeds/gguf/ (fuzz-main.c, with
 * tests/t-fuzz-gguf.sh adding truncations and byte flips of a generated
 * model); `make fuzz` runs it under libFuzzer (tests/fuzz/README).
 *
 * The reader takes a path: each input goes to an in-memory file. Checked
 * besides ASan/UBSan: every error names the file. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/gguf.h"
#include "model/model.h"
#include "model/quant.h"

static void exercise(const struct skipper_gguf *g)
{
	/* touch everything the reader hands out, so ASan sees any bad bound */
	volatile uint64_t sink = 0;
	for (int64_t i = 0; i < skipper_gguf_n_keys(g); i++) {
		struct skipper_gguf_str k = skipper_gguf_key_name(g, i), s;
		char key[256];
		int et;
		uint64_t n;
		if (k.len >= sizeof key)
			continue;
		memcpy(key, k.ptr, k.len);
		key[k.len] = 0;
		if (skipper_gguf_get_str(g, key, &s) == 0 && s.len)
			sink += (uint8_t)s.ptr[s.len - 1];
		if (skipper_gguf_get_arr(g, key, &et, &n) == 0) {
			const void *d;
			if (et == GGUF_TYPE_STRING && n) {
				skipper_gguf_arr_str(g, key, n - 1, &s);
				sink += s.len ? (uint8_t)s.ptr[s.len - 1] : 0;
			} else if (n && skipper_gguf_arr_data(g, key, &d) == 0) {
				sink += ((const uint8_t *)d)[0];
			}
		}
	}
	for (int64_t i = 0; i < skipper_gguf_n_tensors(g); i++) {
		const struct skipper_gguf_tensor *t = skipper_gguf_tensor(g, i);
		if (t->ne[0] <= 4096) {
			float row[4096];
			skipper_dequant_row(t->type, t->data, row, t->ne[0]);
			sink += (uint64_t)(row[0] != 0);
		}
		sink += ((const uint8_t *)t->data)[t->nbytes - 1];
	}
	(void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct skipper_error err;
	struct skipper_gguf *g;
	struct skipper_model *m;
	char path[64];
	int fd = memfd_create("fuzz-gguf", 0);

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (skipper_gguf_open(path, &g, &err) == 0) {
		exercise(g);
		skipper_gguf_close(g);
	} else if (!strstr(err.msg, path)) {
		fprintf(stderr, "fuzz-gguf: error without the file name: %s\n", err.msg);
		abort();
	}
	if (skipper_model_load(path, &m, &err) == 0) {
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			skipper_model_print_info(m, null);
			fclose(null);
		}
		skipper_model_free(m);
	}
	close(fd);
	return 0;
}
