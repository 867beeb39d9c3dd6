/* safetensors: an 8-byte little-endian header length, a JSON object
 * {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
 * then the data, offsets counted from its start. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/file.h"
#include "quant.h"
#include "safetensors.h"

struct skipper_safetensors {
	char *path;
	const uint8_t *base; /* the whole file */
	uint64_t size;
	int mapped;          /* base is our mapping (not a caller's buffer) */
	int64_t n;
	struct skipper_gguf_tensor *t;
	char **names;
};

static const struct { const char *name; int type; unsigned size; } dtypes[] = {
	{ "F32", SKIPPER_F32, 4 }, { "F16", SKIPPER_F16, 2 }, { "BF16", SKIPPER_BF16, 2 },
};

static int by_offset(const void *a, const void *b)
{
	const struct skipper_gguf_tensor *x = a, *y = b;
	return x->data < y->data ? -1 : x->data > y->data;
}

/* One header entry into t; the data region is [data, data + data_len). */
static int read_entry(const char *path, const char *name, json_t *e, const uint8_t *data, uint64_t data_len,
                      struct skipper_gguf_tensor *t, struct skipper_error *err)
{
	const char *dt = json_string_value(json_object_get(e, "dtype"));
	json_t *shape = json_object_get(e, "shape"), *offs = json_object_get(e, "data_offsets"), *v;
	unsigned esize = 0;
	size_t i;

	if (!json_is_object(e) || !dt || !json_is_array(shape) || !json_is_array(offs) || json_array_size(offs) != 2)
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "%s: tensor '%s': expected {\"dtype\": string, \"shape\": [...], \"data_offsets\": "
		                    "[begin, end]}", path, name);
	for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		if (strcmp(dt, dtypes[i].name) == 0) {
			t->type = dtypes[i].type;
			esize = dtypes[i].size;
		}
	if (!esize)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %.16s (F32, F16 and BF16 are read)",
		                    path, name, dt);
	size_t nd = json_array_size(shape);
	if (nd < 1 || nd > 4)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%s' has %zu dimensions (1 to 4 are read)", path,
		                    name, nd);
	uint64_t count = 1;
	t->n_dims = (int)nd;
	for (int d = 0; d < 4; d++)
		t->ne[d] = 1;
	json_array_foreach(shape, i, v) {
		json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
		if (x < 1 || x > ((json_int_t)1 << 40) || count > UINT64_MAX / (uint64_t)x / esize)
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': dimension %zu is not a size from 1 to 2^40",
			                    path, name, i);
		count *= (uint64_t)x;
		t->ne[nd - 1 - i] = x; /* the file's last dimension is contiguous: GGUF's ne[0] */
	}
	json_int_t b = json_integer_value(json_array_get(offs, 0)), e2 = json_integer_value(json_array_get(offs, 1));
	if (!json_is_integer(json_array_get(offs, 0)) || !json_is_integer(json_array_get(offs, 1)) || b < 0 || e2 < b ||
	    (uint64_t)e2 > data_len)
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "%s: tensor '%s': data_offsets [%lld, %lld] are not inside the %llu bytes of data", path,
		                    name, (long long)b, (long long)e2, (unsigned long long)data_len);
	if ((uint64_t)(e2 - b) != count * esize)
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "%s: tensor '%s': %lld bytes of data for %llu elements of %s (%llu expected)", path, name,
		                    (long long)(e2 - b), (unsigned long long)count, dt, (unsigned long long)(count * esize));
	t->data = data + b;
	t->nbytes = count * esize;
	return SKIPPER_OK;
}

int skipper_safetensors_parse(const void *buf, uint64_t len, const char *path, struct skipper_safetensors **out,
                              struct skipper_error *err)
{
	const uint8_t *p = buf;
	struct skipper_safetensors *s;
	json_error_t je;
	json_t *root = NULL, *e;
	const char *name;
	uint64_t hlen = 0;
	int rc = SKIPPER_OK;

	*out = NULL;
	if (len < 8)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: %llu bytes: too short for a safetensors file", path,
		                    (unsigned long long)len);
	for (int b = 0; b < 8; b++)
		hlen |= (uint64_t)p[b] << (8 * b);
	if (hlen < 2 || hlen > SKIPPER_SAFETENSORS_MAX_HEADER || hlen > len - 8)
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "%s: header length %llu is not between 2 and the file's %llu bytes (at most %u)", path,
		                    (unsigned long long)hlen, (unsigned long long)(len - 8), SKIPPER_SAFETENSORS_MAX_HEADER);
	if (!(s = calloc(1, sizeof *s)) || !(s->path = strdup(path))) {
		free(s);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
	}
	s->base = p;
	s->size = len;
	root = json_loadb((const char *)p + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(root)) {
		rc = root ? skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: the header is not a JSON object", path)
		          : skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: header: %s (line %d, column %d)", path, je.text,
		                         je.line, je.column);
		goto out;
	}
	size_t cap = json_object_size(root);
	s->t = calloc(cap ? cap : 1, sizeof *s->t);
	s->names = calloc(cap ? cap : 1, sizeof *s->names);
	if (!s->t || !s->names) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	json_object_foreach(root, name, e) {
		if (strcmp(name, "__metadata__") == 0)
			continue;
		struct skipper_gguf_tensor *t = &s->t[s->n];
		if (!*name || strlen(name) > 512) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: a tensor name is empty or longer than 512 bytes", path);
			goto out;
		}
		if ((rc = read_entry(path, name, e, p + 8 + hlen, len - 8 - hlen, t, err)))
			goto out;
		if (!(s->names[s->n] = strdup(name))) {
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
			goto out;
		}
		t->name.ptr = s->names[s->n];
		t->name.len = strlen(name);
		s->n++;
	}
	/* bytes shared by two tensors: a forged file whose data would be read
	 * as two things at once */
	struct skipper_gguf_tensor *sorted = malloc(sizeof *sorted * (size_t)(s->n ? s->n : 1));
	if (!sorted) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	memcpy(sorted, s->t, sizeof *sorted * (size_t)s->n);
	qsort(sorted, (size_t)s->n, sizeof *sorted, by_offset);
	for (int64_t i = 1; i < s->n; i++)
		if ((const uint8_t *)sorted[i - 1].data + sorted[i - 1].nbytes > (const uint8_t *)sorted[i].data) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", path,
			                  sorted[i - 1].name.ptr, sorted[i].name.ptr);
			break;
		}
	free(sorted);
out:
	json_decref(root);
	if (rc) {
		skipper_safetensors_close(s);
		return rc;
	}
	*out = s;
	return SKIPPER_OK;
}

int skipper_safetensors_open(const char *path, struct skipper_safetensors **out, struct skipper_error *err)
{
	const void *data;
	size_t len;
	int rc;

	*out = NULL;
	if ((rc = skipper_map_file(path, 0, "safetensors file", &data, &len, err)))
		return rc;
	if ((rc = skipper_safetensors_parse(data, len, path, out, err))) {
		skipper_unmap_file(data, len);
		return rc;
	}
	(*out)->mapped = 1;
	return SKIPPER_OK;
}

void skipper_safetensors_close(struct skipper_safetensors *s)
{
	if (!s)
		return;
	for (int64_t i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->t);
	if (s->mapped)
		skipper_unmap_file(s->base, (size_t)s->size);
	free(s->path);
	free(s);
}

const char *skipper_safetensors_path(const struct skipper_safetensors *s) { return s->path; }
uint64_t skipper_safetensors_size(const struct skipper_safetensors *s) { return s->size; }
int64_t skipper_safetensors_n_tensors(const struct skipper_safetensors *s) { return s->n; }

const struct skipper_gguf_tensor *skipper_safetensors_tensor(const struct skipper_safetensors *s, int64_t i)
{
	return i >= 0 && i < s->n ? &s->t[i] : NULL;
}

void skipper_safetensors_release(const struct skipper_safetensors *s, const void *p, uint64_t n)
{
	if (s && s->mapped)
		skipper_release_mapped(s->base, s->size, p, n);
}
