/* Fuzz target for the GGUF reader and the llama loader.
 *
 * libFuzzer build (from the source tree, after ./configure && make):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -DSKIPPER_LIBFUZZER \
 *     -Icore -I. tests/fuzz-gguf.c core/model/gguf.c core/model/quant.c core/model/model.c core/error.c \
 *     -lcrypto -lm -o fuzz-gguf
 *   ./fuzz-gguf -max_len=4096 tests/data/fuzz-gguf/
 * Without -DSKIPPER_LIBFUZZER this file has a main() that runs the target
 * once over each file named on the command line (used by `make check`).
 *
 * The reader takes a path, so each input is written to one scratch file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gguf.h"
#include "model/model.h"
#include "model/quant.h"

static char scratch[256];

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct skipper_error err;
	struct skipper_gguf *g;
	struct skipper_model *m;

	if (!scratch[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(scratch, sizeof scratch, "%s/fuzz-gguf.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		int fd = mkstemp(scratch);
		if (fd < 0)
			abort();
		close(fd);
	}
	FILE *f = fopen(scratch, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	if (skipper_gguf_open(scratch, &g, &err) == 0) {
		exercise(g);
		skipper_gguf_close(g);
	} else if (!strstr(err.msg, scratch)) {
		abort(); /* every error must name the file */
	}
	if (skipper_model_load(scratch, &m, &err) == 0) {
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			skipper_model_print_info(m, null);
			fclose(null);
		}
		skipper_model_free(m);
	}
	return 0;
}

#ifndef SKIPPER_LIBFUZZER
int main(int argc, char **argv)
{
	int n = 0;
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			fprintf(stderr, "fuzz-gguf: cannot open %s\n", argv[i]);
			return 2;
		}
		uint8_t *buf = NULL;
		size_t len = 0, cap = 0, r;
		do {
			if (len == cap) {
				cap = cap ? cap * 2 : 65536;
				buf = realloc(buf, cap);
				if (!buf)
					return 2;
			}
			r = fread(buf + len, 1, cap - len, f);
			len += r;
		} while (r > 0);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		free(buf);
		n++;
	}
	if (scratch[0])
		unlink(scratch);
	printf("fuzz-gguf: %d inputs, no crash\n", n);
	return 0;
}
#endif
