/* safetensors files of F32 matrices beside skip profiles: written
 * atomically (core/base/atomic.h), read through the model loader's
 * reader (core/model/safetensors.c). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/error.h"
#include "base/file.h"
#include "model/quant.h"
#include "model/safetensors.h"
#include "tensor_file.h"

static int little_endian(void)
{
	const uint16_t one = 1;
	return *(const uint8_t *)&one == 1;
}

int skipper_tensors_write(const char *path, int n, const char *const *names, const float *const *data,
                          const int *rows, const int *cols, struct skipper_error *err)
{
	json_t *hdr = json_object();
	struct skipper_atomic *a;
	char *text = NULL;
	uint64_t off = 0, hlen;
	size_t tlen;
	unsigned char len8[8];
	FILE *fp;
	int rc = SKIPPER_OK;

	if (!little_endian())
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: safetensors needs a little-endian host", path);
	if (!hdr)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		uint64_t bytes = (uint64_t)rows[i] * (uint64_t)cols[i] * sizeof(float);
		json_t *t;
		if (!names[i] || !names[i][0] || rows[i] <= 0 || cols[i] <= 0 || json_object_get(hdr, names[i])) {
			rc = skipper_fail(err, SKIPPER_ERR_ARG, "%s: tensor %d: empty or repeated name, or empty shape", path, i);
			goto out;
		}
		t = json_pack("{s:s, s:[i,i], s:[I,I]}", "dtype", "F32", "shape", rows[i], cols[i], "data_offsets",
		              (json_int_t)off, (json_int_t)(off + bytes));
		if (!t || json_object_set_new(hdr, names[i], t)) {
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
			goto out;
		}
		off += bytes;
	}
	if (!(text = json_dumps(hdr, JSON_COMPACT))) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* Pad the header with blanks so the data starts 8-byte aligned. */
	tlen = strlen(text);
	hlen = (tlen + 7) & ~(uint64_t)7;
	for (int b = 0; b < 8; b++)
		len8[b] = (unsigned char)(hlen >> (8 * b));
	if (!(a = skipper_atomic_open(path, err))) {
		rc = err ? err->status : SKIPPER_ERR_IO;
		goto out;
	}
	fp = skipper_atomic_file(a);
	fwrite(len8, 1, 8, fp);
	fwrite(text, 1, tlen, fp);
	for (uint64_t k = tlen; k < hlen; k++)
		fputc(' ', fp);
	for (int i = 0; i < n; i++)
		fwrite(data[i], sizeof(float), (size_t)rows[i] * (size_t)cols[i], fp);
	rc = skipper_atomic_commit(a, err);
out:
	free(text);
	json_decref(hdr);
	return rc;
}

int skipper_tensor_read(const char *path, const char *name, float *out, size_t capacity, int *rows, int *cols,
                        struct skipper_error *err)
{
	struct skipper_safetensors *st;
	const struct skipper_gguf_tensor *t = NULL;
	int rc;

	*rows = *cols = 0;
	if (!little_endian())
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: safetensors needs a little-endian host", path);
	/* the model loader's reader: every header field checked against the
	 * file, no two tensors sharing bytes */
	if ((rc = skipper_safetensors_open(path, &st, err)))
		/* NOT_FOUND is kept for a missing tensor */
		return rc == SKIPPER_ERR_NOT_FOUND && err ? (err->status = SKIPPER_ERR_IO) : rc;
	for (int64_t i = 0; i < skipper_safetensors_n_tensors(st) && !t; i++)
		if (strcmp(skipper_safetensors_tensor(st, i)->name.ptr, name) == 0)
			t = skipper_safetensors_tensor(st, i);
	if (!t) {
		rc = skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s: no tensor '%s'", path, name);
		goto out;
	}
	if (t->type != SKIPPER_F32 || t->n_dims > 2 || t->ne[0] > INT32_MAX || t->ne[1] > INT32_MAX) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': expected F32 with a 1-D or 2-D shape", path,
		                  name);
		goto out;
	}
	*rows = (int)t->ne[1]; /* 1 for a 1-D tensor */
	*cols = (int)t->ne[0];
	size_t n = (size_t)*rows * (size_t)*cols;
	if (!out)
		goto out;
	if (capacity < n) {
		rc = skipper_fail(err, SKIPPER_ERR_RANGE, "%s: tensor '%s' has %zu floats, buffer holds %zu", path, name, n,
		                  capacity);
		goto out;
	}
	memcpy(out, t->data, n * sizeof *out);
	/* what these files hold (anchors, labels) is never NaN or infinite:
	 * such a value would only turn every comparison made with it false */
	for (size_t i = 0; i < n; i++)
		if (!isfinite(out[i])) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': row %zu holds %g", path, name,
			                  i / (size_t)*cols, (double)out[i]);
			break;
		}
out:
	skipper_safetensors_close(st);
	return rc;
}
