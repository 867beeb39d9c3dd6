/* Fuzz target: the safetensors readers: the one for the float matrices
 * that come with skip profiles (core/policy/tensor_file.c: knn-router's
 * anchors and labels, downloaded from hubs with the profile), and the
 * model loader's (core/model/safetensors.c: checkpoints' weights).
 *
 * Checked besides ASan/UBSan (abort on violation): every error names the
 * file; a tensor whose shape reads fine also reads into a buffer of exactly
 * rows * cols floats, with the same shape (or is refused for a value that
 * is not finite, naming the file), and is refused (without a write past
 * the end) by a buffer one float short. A header the model loader's reader
 * takes describes tensors that lie inside the data, each of exactly the
 * bytes its shape and dtype take, no two sharing a byte. `make check` replays
 * tests/fuzz/seeds/safetensors/ (fuzz-main.c); `make fuzz` runs it under
 * libFuzzer (tests/fuzz/README). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/error.h"
#include "model/quant.h"
#include "model/safetensors.h"
#include "policy/tensor_file.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz-safetensors: %s failed\n", #c); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void named(const char *path, const char *name)
{
	struct skipper_error err;
	int rows = -1, cols = -1, r2 = -1, c2 = -1;
	int rc = skipper_tensor_read(path, name, NULL, 0, &rows, &cols, &err);
	if (rc) {
		CHECK(rc == SKIPPER_ERR_NOMEM || strstr(err.msg, path));
		return;
	}
	CHECK(rows > 0 && cols > 0);
	size_t n = (size_t)rows * (size_t)cols;
	float *out = malloc(n * sizeof *out); /* bounded: the floats are in the file */
	CHECK(out);
	rc = skipper_tensor_read(path, name, out, n, &r2, &c2, &err);
	CHECK(r2 == rows && c2 == cols);
	CHECK(rc == 0 || (rc == SKIPPER_ERR_FORMAT && strstr(err.msg, path) && strstr(err.msg, "holds")));
	free(out);
	float *shorter = malloc((n - 1 ? n - 1 : 1) * sizeof *shorter);
	CHECK(shorter);
	rc = skipper_tensor_read(path, name, shorter, n - 1, &r2, &c2, &err);
	CHECK(rc != 0 && strstr(err.msg, path));
	free(shorter);
}

static void model_reader(const uint8_t *data, size_t size)
{
	struct skipper_error err;
	struct skipper_safetensors *s;
	int rc = skipper_safetensors_parse(data, size, "fuzz.safetensors", &s, &err);
	if (rc) {
		CHECK(rc == SKIPPER_ERR_NOMEM || strstr(err.msg, "fuzz.safetensors"));
		return;
	}
	CHECK(skipper_safetensors_size(s) == size);
	for (int64_t i = 0; i < skipper_safetensors_n_tensors(s); i++) {
		const struct skipper_gguf_tensor *t = skipper_safetensors_tensor(s, i);
		const uint8_t *p = t->data;
		uint64_t count = 1;
		for (int d = 0; d < 4; d++)
			count *= (uint64_t)t->ne[d];
		CHECK(t->name.len > 0 && t->name.ptr[t->name.len] == 0);
		CHECK(p >= data + 8 && p + t->nbytes <= data + size);
		CHECK(t->nbytes == count * (t->type == SKIPPER_F32 ? 4 : 2));
		for (int64_t j = 0; j < skipper_safetensors_n_tensors(s); j++) {
			const struct skipper_gguf_tensor *u = skipper_safetensors_tensor(s, j);
			const uint8_t *q = u->data;
			CHECK(i == j || p + t->nbytes <= q || q + u->nbytes <= p);
		}
	}
	skipper_safetensors_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	model_reader(data, size);
	char path[64];
	int fd = memfd_create("fuzz-safetensors", 0);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	named(path, "anchors");
	named(path, "labels");
	close(fd);
	return 0;
}
