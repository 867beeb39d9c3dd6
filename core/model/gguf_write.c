/* GGUF v3 as gguf.c reads it: "GGUF", version, tensor and key counts; keys
 * (string name, u32 type, value); tensor infos (name, n_dims, ne[] as u64,
 * type, offset into the data); the data, each tensor 32-byte aligned. */
#include <stdlib.h>
#include <string.h>

#include "base/atomic.h"
#include "base/error.h"
#include "gguf.h"
#include "gguf_write.h"

#define ALIGN 32

struct out_tensor {
	char *name;
	int type, n_dims;
	int64_t ne[4];
	const void *data;
	uint64_t nbytes, offset;
};

struct skipper_gguf_out {
	uint8_t *kv;           /* the keys, serialised */
	size_t kv_len, kv_cap;
	uint64_t n_kv;
	struct out_tensor *t;
	size_t n_t, cap_t;
	int nomem;
};

struct skipper_gguf_out *skipper_gguf_out_new(void)
{
	return calloc(1, sizeof(struct skipper_gguf_out));
}

void skipper_gguf_out_free(struct skipper_gguf_out *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n_t; i++)
		free(o->t[i].name);
	free(o->t);
	free(o->kv);
	free(o);
}

static void put(struct skipper_gguf_out *o, const void *p, size_t n)
{
	if (o->nomem)
		return;
	if (o->kv_len + n > o->kv_cap) {
		size_t cap = o->kv_cap ? o->kv_cap : 4096;
		while (cap < o->kv_len + n)
			cap *= 2;
		uint8_t *k = realloc(o->kv, cap);
		if (!k) {
			o->nomem = 1;
			return;
		}
		o->kv = k;
		o->kv_cap = cap;
	}
	memcpy(o->kv + o->kv_len, p, n);
	o->kv_len += n;
}

static void put_u32(struct skipper_gguf_out *o, uint32_t v) { put(o, &v, 4); }
static void put_u64(struct skipper_gguf_out *o, uint64_t v) { put(o, &v, 8); }

static void put_str(struct skipper_gguf_out *o, const char *s, size_t len)
{
	put_u64(o, len);
	put(o, s, len);
}

static void key(struct skipper_gguf_out *o, const char *k, uint32_t type)
{
	put_str(o, k, strlen(k));
	put_u32(o, type);
	o->n_kv++;
}

void skipper_gguf_out_u32(struct skipper_gguf_out *o, const char *k, uint32_t v)
{
	key(o, k, GGUF_TYPE_UINT32);
	put_u32(o, v);
}

void skipper_gguf_out_i32(struct skipper_gguf_out *o, const char *k, int32_t v)
{
	key(o, k, GGUF_TYPE_INT32);
	put(o, &v, 4);
}

void skipper_gguf_out_f32(struct skipper_gguf_out *o, const char *k, float v)
{
	key(o, k, GGUF_TYPE_FLOAT32);
	put(o, &v, 4);
}

void skipper_gguf_out_bool(struct skipper_gguf_out *o, const char *k, int v)
{
	uint8_t b = v != 0;
	key(o, k, GGUF_TYPE_BOOL);
	put(o, &b, 1);
}

void skipper_gguf_out_str(struct skipper_gguf_out *o, const char *k, const char *v, size_t len)
{
	key(o, k, GGUF_TYPE_STRING);
	put_str(o, v, len);
}

void skipper_gguf_out_arr_str(struct skipper_gguf_out *o, const char *k, const char *const *v, const uint32_t *lens,
                              size_t n)
{
	key(o, k, GGUF_TYPE_ARRAY);
	put_u32(o, GGUF_TYPE_STRING);
	put_u64(o, n);
	for (size_t i = 0; i < n; i++)
		put_str(o, v[i], lens ? lens[i] : strlen(v[i]));
}

void skipper_gguf_out_arr(struct skipper_gguf_out *o, const char *k, int elem_type, const void *data, size_t n)
{
	key(o, k, GGUF_TYPE_ARRAY);
	put_u32(o, (uint32_t)elem_type);
	put_u64(o, n);
	put(o, data, n * 4); /* INT32 and FLOAT32: the types written */
}

void skipper_gguf_out_tensor(struct skipper_gguf_out *o, const char *name, int type, int n_dims, const int64_t *ne,
                             const void *data, uint64_t nbytes)
{
	if (o->nomem)
		return;
	if (o->n_t == o->cap_t) {
		size_t cap = o->cap_t ? 2 * o->cap_t : 64;
		struct out_tensor *t = realloc(o->t, cap * sizeof *t);
		if (!t) {
			o->nomem = 1;
			return;
		}
		o->t = t;
		o->cap_t = cap;
	}
	struct out_tensor *t = &o->t[o->n_t];
	memset(t, 0, sizeof *t);
	if (!(t->name = strdup(name))) {
		o->nomem = 1;
		return;
	}
	t->type = type;
	t->n_dims = n_dims;
	for (int d = 0; d < n_dims && d < 4; d++)
		t->ne[d] = ne[d];
	t->data = data;
	t->nbytes = nbytes;
	o->n_t++;
}

static void pad(FILE *f, uint64_t *pos)
{
	static const uint8_t zero[ALIGN];
	size_t n = (size_t)((ALIGN - *pos % ALIGN) % ALIGN);
	fwrite(zero, 1, n, f);
	*pos += n;
}

int skipper_gguf_out_write(struct skipper_gguf_out *o, const char *path, struct skipper_error *err)
{
	struct skipper_atomic *a;
	uint64_t off = 0, pos;
	FILE *f;

	/* the tensor infos go after the keys, so they are serialised last */
	size_t infos = o->kv_len;
	for (size_t i = 0; i < o->n_t; i++) {
		struct out_tensor *t = &o->t[i];
		t->offset = off;
		off += (t->nbytes + ALIGN - 1) / ALIGN * ALIGN;
		put_str(o, t->name, strlen(t->name));
		put_u32(o, (uint32_t)t->n_dims);
		for (int d = 0; d < t->n_dims; d++)
			put_u64(o, (uint64_t)t->ne[d]);
		put_u32(o, (uint32_t)t->type);
		put_u64(o, t->offset);
	}
	if (o->nomem) {
		o->kv_len = infos;
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
	}
	if (!(a = skipper_atomic_open(path, err))) {
		o->kv_len = infos;
		return err && err->status ? err->status : SKIPPER_ERR_IO;
	}
	f = skipper_atomic_file(a);
	uint32_t head[2] = { 0x46554747u /* "GGUF" */, 3 };
	uint64_t counts[2] = { o->n_t, o->n_kv };
	fwrite(head, 4, 2, f);
	fwrite(counts, 8, 2, f);
	fwrite(o->kv, 1, o->kv_len, f);
	pos = 24 + o->kv_len;
	pad(f, &pos);
	for (size_t i = 0; i < o->n_t; i++) {
		fwrite(o->t[i].data, 1, (size_t)o->t[i].nbytes, f);
		pos += o->t[i].nbytes;
		pad(f, &pos);
	}
	o->kv_len = infos; /* written again, the same, by another call */
	return skipper_atomic_commit(a, err);
}
