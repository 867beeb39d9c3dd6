/* safetensors files of F32 matrices beside skip profiles: written
 * atomically (core/base/atomic.h), read with every header field
 * checked against the file. */
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

/* Tensor name's bytes [begin, end) shared with no other tensor of the
 * header: overlapping ranges are a corrupt (or forged) file whose data
 * would be read shifted. */
static int check_disjoint(json_t *hdr, const char *name, uint64_t begin, uint64_t end, const char *path,
                          struct skipper_error *err)
{
	const char *other;
	json_t *t;

	json_object_foreach(hdr, other, t) {
		json_t *offs = json_object_get(t, "data_offsets");
		if (!strcmp(other, name) || !json_is_array(offs) || json_array_size(offs) != 2)
			continue;
		uint64_t b = (uint64_t)json_integer_value(json_array_get(offs, 0)),
		         e = (uint64_t)json_integer_value(json_array_get(offs, 1));
		if (b < end && begin < e)
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", path, name, other);
	}
	return SKIPPER_OK;
}

int skipper_tensor_read(const char *path, const char *name, float *out, size_t capacity, int *rows, int *cols,
                        struct skipper_error *err)
{
	FILE *fp = skipper_open_regular(path, "rb", 0, "tensor file", err);
	unsigned char len8[8];
	uint64_t hlen = 0, begin, end;
	long size;
	char *text = NULL;
	json_t *hdr = NULL, *t, *shape, *offs;
	json_error_t jerr;
	int rc = SKIPPER_OK;
	int64_t r, c;

	*rows = *cols = 0;
	if (!fp) /* NOT_FOUND is kept for a missing tensor */
		return err ? (err->status = SKIPPER_ERR_IO) : SKIPPER_ERR_IO;
	if (!little_endian()) {
		rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: safetensors needs a little-endian host", path);
		goto out;
	}
	if (fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0 ||
	    fread(len8, 1, 8, fp) != 8) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: not a safetensors file (too short)", path);
		goto out;
	}
	for (int b = 0; b < 8; b++)
		hlen |= (uint64_t)len8[b] << (8 * b);
	if (hlen == 0 || hlen > (uint64_t)size - 8 || hlen > (100u << 20)) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: header length %llu does not fit the file", path,
		                  (unsigned long long)hlen);
		goto out;
	}
	if (!(text = malloc(hlen))) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (fread(text, 1, hlen, fp) != hlen || !(hdr = json_loadb(text, hlen, 0, &jerr)) || !json_is_object(hdr)) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: bad safetensors header", path);
		goto out;
	}
	if (!(t = json_object_get(hdr, name))) {
		rc = skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s: no tensor '%s'", path, name);
		goto out;
	}
	shape = json_object_get(t, "shape");
	offs = json_object_get(t, "data_offsets");
	if (!json_is_string(json_object_get(t, "dtype")) || strcmp(json_string_value(json_object_get(t, "dtype")), "F32") ||
	    !json_is_array(shape) || json_array_size(shape) < 1 || json_array_size(shape) > 2 || !json_is_array(offs) ||
	    json_array_size(offs) != 2 || !json_is_integer(json_array_get(offs, 0)) ||
	    !json_is_integer(json_array_get(offs, 1))) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': expected F32 with a 1-D or 2-D shape", path,
		                  name);
		goto out;
	}
	r = json_array_size(shape) == 2 ? json_integer_value(json_array_get(shape, 0)) : 1;
	c = json_integer_value(json_array_get(shape, json_array_size(shape) - 1));
	begin = (uint64_t)json_integer_value(json_array_get(offs, 0));
	end = (uint64_t)json_integer_value(json_array_get(offs, 1));
	if (r <= 0 || c <= 0 || r > INT32_MAX || c > INT32_MAX || end < begin ||
	    end - begin != (uint64_t)r * (uint64_t)c * sizeof(float) || end > (uint64_t)size - 8 - hlen) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': shape and offsets disagree with the file",
		                  path, name);
		goto out;
	}
	if ((rc = check_disjoint(hdr, name, begin, end, path, err)))
		goto out;
	*rows = (int)r;
	*cols = (int)c;
	if (!out)
		goto out;
	if (capacity < (size_t)r * (size_t)c) {
		rc = skipper_fail(err, SKIPPER_ERR_RANGE, "%s: tensor '%s' has %lld floats, buffer holds %zu", path, name,
		                  (long long)(r * c), capacity);
		goto out;
	}
	if (fseek(fp, (long)(8 + hlen + begin), SEEK_SET) != 0 ||
	    fread(out, sizeof(float), (size_t)r * (size_t)c, fp) != (size_t)r * (size_t)c) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: read error", path);
		goto out;
	}
	/* what these files hold (anchors, labels) is never NaN or infinite:
	 * such a value would only turn every comparison made with it false */
	for (size_t i = 0; i < (size_t)r * (size_t)c; i++)
		if (!isfinite(out[i])) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': row %zu holds %g", path, name,
			                  i / (size_t)c, (double)out[i]);
			break;
		}
out:
	json_decref(hdr);
	free(text);
	fclose(fp);
	return rc;
}
