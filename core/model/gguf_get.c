/* GGUF accessors: file facts, typed metadata getters (integers widened or
 * narrowed only when the value fits) and tensor lookup, over the tables
 * gguf.c built and checked. */
#include <string.h>

#include "base/error.h"
#include "gguf.h"
#include "gguf_impl.h"

const char *skipper_gguf_path(const struct skipper_gguf *g) { return g->path; }
uint32_t skipper_gguf_version(const struct skipper_gguf *g) { return g->version; }
uint64_t skipper_gguf_file_size(const struct skipper_gguf *g) { return g->size; }
int64_t skipper_gguf_n_keys(const struct skipper_gguf *g) { return g->n_kv; }
int64_t skipper_gguf_n_tensors(const struct skipper_gguf *g) { return g->n_tensors; }

int64_t skipper_gguf_find_key(const struct skipper_gguf *g, const char *key)
{
	return gguf_table_lookup(g, g->kv_hash, g->kv_cap, gguf_kv_name, key, strlen(key));
}

struct skipper_gguf_str skipper_gguf_key_name(const struct skipper_gguf *g, int64_t i)
{
	struct skipper_gguf_str none = { "", 0 };
	return (i >= 0 && i < g->n_kv) ? g->kv[i].name : none;
}

int skipper_gguf_key_type(const struct skipper_gguf *g, int64_t i)
{
	return (i >= 0 && i < g->n_kv) ? g->kv[i].type : -1;
}

static const struct gguf_kv *get(const struct skipper_gguf *g, const char *key)
{
	int64_t i = skipper_gguf_find_key(g, key);
	return i < 0 ? NULL : &g->kv[i];
}

/* Any integer-typed value, widened; *neg set for negative signed values. */
static int get_int(const struct gguf_kv *kv, uint64_t *mag, int *neg)
{
	const uint8_t *p = kv->val;
	*neg = 0;
	switch (kv->type) {
	case GGUF_TYPE_UINT8: *mag = p[0]; return 0;
	case GGUF_TYPE_INT8: { int8_t v; memcpy(&v, p, 1); *neg = v < 0; *mag = (uint64_t)(v < 0 ? -(int64_t)v : v); return 0; }
	case GGUF_TYPE_UINT16: { uint16_t v; memcpy(&v, p, 2); *mag = v; return 0; }
	case GGUF_TYPE_INT16: { int16_t v; memcpy(&v, p, 2); *neg = v < 0; *mag = (uint64_t)(v < 0 ? -(int64_t)v : v); return 0; }
	case GGUF_TYPE_UINT32: { uint32_t v; memcpy(&v, p, 4); *mag = v; return 0; }
	case GGUF_TYPE_INT32: { int32_t v; memcpy(&v, p, 4); *neg = v < 0; *mag = (uint64_t)(v < 0 ? -(int64_t)v : v); return 0; }
	case GGUF_TYPE_UINT64: memcpy(mag, p, 8); return 0;
	case GGUF_TYPE_INT64: {
		int64_t v;
		memcpy(&v, p, 8);
		*neg = v < 0;
		*mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
		return 0;
	}
	}
	return -1;
}

int skipper_gguf_get_u32(const struct skipper_gguf *g, const char *key, uint32_t *out)
{
	const struct gguf_kv *kv = get(g, key);
	uint64_t m;
	int neg;
	if (!kv)
		return SKIPPER_ERR_NOT_FOUND;
	if (get_int(kv, &m, &neg) || neg || m > UINT32_MAX)
		return SKIPPER_ERR_FORMAT;
	*out = (uint32_t)m;
	return SKIPPER_OK;
}

int skipper_gguf_get_i64(const struct skipper_gguf *g, const char *key, int64_t *out)
{
	const struct gguf_kv *kv = get(g, key);
	uint64_t m;
	int neg;
	if (!kv)
		return SKIPPER_ERR_NOT_FOUND;
	if (get_int(kv, &m, &neg))
		return SKIPPER_ERR_FORMAT;
	if (neg) {
		if (m > (uint64_t)INT64_MAX + 1)
			return SKIPPER_ERR_FORMAT;
		*out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
	} else {
		if (m > (uint64_t)INT64_MAX)
			return SKIPPER_ERR_FORMAT;
		*out = (int64_t)m;
	}
	return SKIPPER_OK;
}

int skipper_gguf_get_f32(const struct skipper_gguf *g, const char *key, float *out)
{
	const struct gguf_kv *kv = get(g, key);
	if (!kv)
		return SKIPPER_ERR_NOT_FOUND;
	if (kv->type == GGUF_TYPE_FLOAT32) {
		memcpy(out, kv->val, 4);
		return SKIPPER_OK;
	}
	if (kv->type == GGUF_TYPE_FLOAT64) {
		double d;
		memcpy(&d, kv->val, 8);
		*out = (float)d;
		return SKIPPER_OK;
	}
	return SKIPPER_ERR_FORMAT;
}

int skipper_gguf_get_bool(const struct skipper_gguf *g, const char *key, int *out)
{
	const struct gguf_kv *kv = get(g, key);
	if (!kv)
		return SKIPPER_ERR_NOT_FOUND;
	if (kv->type != GGUF_TYPE_BOOL)
		return SKIPPER_ERR_FORMAT;
	*out = kv->val[0] != 0;
	return SKIPPER_OK;
}

/* A string whose length field sits at file offset off (already validated). */
static struct skipper_gguf_str str_at(const struct skipper_gguf *g, const uint8_t *p)
{
	struct skipper_gguf_str s;
	memcpy(&s.len, p, 8);
	s.ptr = (const char *)p + 8;
	return s;
}

int skipper_gguf_get_str(const struct skipper_gguf *g, const char *key, struct skipper_gguf_str *out)
{
	const struct gguf_kv *kv = get(g, key);
	if (!kv)
		return SKIPPER_ERR_NOT_FOUND;
	if (kv->type != GGUF_TYPE_STRING)
		return SKIPPER_ERR_FORMAT;
	*out = str_at(g, kv->val);
	return SKIPPER_OK;
}

int skipper_gguf_get_arr(const struct skipper_gguf *g, const char *key, int *elem_type, uint64_t *count)
{
	const struct gguf_kv *kv = get(g, key);
	if (!kv)
		return SKIPPER_ERR_NOT_FOUND;
	if (kv->type != GGUF_TYPE_ARRAY)
		return SKIPPER_ERR_FORMAT;
	if (elem_type)
		*elem_type = kv->elem_type;
	if (count)
		*count = kv->count;
	return SKIPPER_OK;
}

int skipper_gguf_arr_str(const struct skipper_gguf *g, const char *key, uint64_t i, struct skipper_gguf_str *out)
{
	const struct gguf_kv *kv = get(g, key);
	if (!kv)
		return SKIPPER_ERR_NOT_FOUND;
	if (kv->type != GGUF_TYPE_ARRAY || kv->elem_type != GGUF_TYPE_STRING)
		return SKIPPER_ERR_FORMAT;
	if (i >= kv->count)
		return SKIPPER_ERR_RANGE;
	*out = str_at(g, g->base + kv->str_off[i]);
	return SKIPPER_OK;
}

int skipper_gguf_arr_data(const struct skipper_gguf *g, const char *key, const void **data)
{
	const struct gguf_kv *kv = get(g, key);
	if (!kv)
		return SKIPPER_ERR_NOT_FOUND;
	if (kv->type != GGUF_TYPE_ARRAY || kv->elem_type == GGUF_TYPE_STRING)
		return SKIPPER_ERR_FORMAT;
	*data = kv->val;
	return SKIPPER_OK;
}

/* Element i of a numeric array as a widened value; 0 on success. */
static int arr_elem(const struct skipper_gguf *g, const char *key, uint64_t i, int64_t *iv, double *fv, int *is_float)
{
	const struct gguf_kv *kv = get(g, key);
	if (!kv)
		return SKIPPER_ERR_NOT_FOUND;
	if (kv->type != GGUF_TYPE_ARRAY || kv->elem_type == GGUF_TYPE_STRING)
		return SKIPPER_ERR_FORMAT;
	if (i >= kv->count)
		return SKIPPER_ERR_RANGE;
	size_t sz = gguf_scalar_size(kv->elem_type);
	const uint8_t *p = kv->val + i * sz;
	*is_float = 0;
	switch (kv->elem_type) {
	case GGUF_TYPE_UINT8: case GGUF_TYPE_BOOL: *iv = p[0]; break;
	case GGUF_TYPE_INT8: *iv = (int8_t)p[0]; break;
	case GGUF_TYPE_UINT16: { uint16_t v; memcpy(&v, p, 2); *iv = v; break; }
	case GGUF_TYPE_INT16: { int16_t v; memcpy(&v, p, 2); *iv = v; break; }
	case GGUF_TYPE_UINT32: { uint32_t v; memcpy(&v, p, 4); *iv = v; break; }
	case GGUF_TYPE_INT32: { int32_t v; memcpy(&v, p, 4); *iv = v; break; }
	case GGUF_TYPE_INT64: memcpy(iv, p, 8); break;
	case GGUF_TYPE_UINT64: {
		uint64_t v;
		memcpy(&v, p, 8);
		if (v > (uint64_t)INT64_MAX)
			return SKIPPER_ERR_FORMAT;
		*iv = (int64_t)v;
		break;
	}
	case GGUF_TYPE_FLOAT32: { float v; memcpy(&v, p, 4); *fv = v; *is_float = 1; break; }
	case GGUF_TYPE_FLOAT64: memcpy(fv, p, 8); *is_float = 1; break;
	default: return SKIPPER_ERR_FORMAT;
	}
	if (!*is_float)
		*fv = (double)*iv;
	return SKIPPER_OK;
}

int skipper_gguf_arr_get_i64(const struct skipper_gguf *g, const char *key, uint64_t i, int64_t *out)
{
	int64_t iv;
	double fv;
	int isf, rc = arr_elem(g, key, i, &iv, &fv, &isf);
	if (rc)
		return rc;
	if (isf)
		return SKIPPER_ERR_FORMAT;
	*out = iv;
	return SKIPPER_OK;
}

int skipper_gguf_arr_get_f32(const struct skipper_gguf *g, const char *key, uint64_t i, float *out)
{
	int64_t iv;
	double fv;
	int isf, rc = arr_elem(g, key, i, &iv, &fv, &isf);
	if (rc)
		return rc;
	*out = (float)fv;
	return SKIPPER_OK;
}

const struct skipper_gguf_tensor *skipper_gguf_tensor(const struct skipper_gguf *g, int64_t i)
{
	return (i >= 0 && i < g->n_tensors) ? &g->tensors[i] : NULL;
}

const struct skipper_gguf_tensor *skipper_gguf_find_tensor(const struct skipper_gguf *g, const char *name)
{
	int64_t i = gguf_table_lookup(g, g->t_hash, g->t_cap, gguf_tensor_name, name, strlen(name));
	return i < 0 ? NULL : &g->tensors[i];
}
