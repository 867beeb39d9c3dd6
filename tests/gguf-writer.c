/* Test-only GGUF writer; see gguf-writer.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf-writer.h"
#include "model/gguf.h"
#include "model/quant.h"

struct buf { uint8_t *p; size_t n, cap; };

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		abort(); /* test helper: no recovery worth having */
	return p;
}

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = xrealloc(b->p, b->cap);
	}
	if (n && p)
		memcpy(b->p + b->n, p, n);
	else if (n)
		memset(b->p + b->n, 0, n); /* room that a generated tensor fills */
	b->n += n;
}
static void put32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put64(struct buf *b, uint64_t v) { put(b, &v, 8); }
static void putstr(struct buf *b, const char *s) { put64(b, strlen(s)); put(b, s, strlen(s)); }

struct gw_t {
	char *name;
	int type, n_dims;
	int64_t ne[4];
	uint8_t *data;    /* NULL for a generated tensor */
	uint64_t nbytes, rows, row_bytes;
	gw_fill_fn fill;  /* generated: bytes made at build/write time */
	void *ctx;
};

struct gw {
	uint32_t version, alignment;
	struct buf kv;
	uint64_t n_kv;
	struct gw_t *t;
	size_t n_t;
	struct gw_layout lay;
};

struct gw *gw_new(void)
{
	struct gw *w = calloc(1, sizeof *w);
	if (!w)
		abort();
	w->version = 3;
	w->alignment = 32;
	return w;
}

void gw_free(struct gw *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n_t; i++) {
		free(w->t[i].name);
		free(w->t[i].data);
		free(w->t[i].ctx);
	}
	free(w->t);
	free(w->kv.p);
	free(w->lay.t);
	free(w);
}

void gw_set_version(struct gw *w, uint32_t version) { w->version = version; }

void gw_set_alignment(struct gw *w, uint32_t alignment)
{
	w->alignment = alignment;
	gw_u32(w, "general.alignment", alignment);
}

void gw_raw(struct gw *w, const char *key, uint32_t type, const void *val, size_t len)
{
	putstr(&w->kv, key);
	put32(&w->kv, type);
	put(&w->kv, val, len);
	w->n_kv++;
}

void gw_u8(struct gw *w, const char *key, uint8_t v) { gw_raw(w, key, GGUF_TYPE_UINT8, &v, 1); }
void gw_u32(struct gw *w, const char *key, uint32_t v) { gw_raw(w, key, GGUF_TYPE_UINT32, &v, 4); }
void gw_i32(struct gw *w, const char *key, int32_t v) { gw_raw(w, key, GGUF_TYPE_INT32, &v, 4); }
void gw_u64(struct gw *w, const char *key, uint64_t v) { gw_raw(w, key, GGUF_TYPE_UINT64, &v, 8); }
void gw_i64(struct gw *w, const char *key, int64_t v) { gw_raw(w, key, GGUF_TYPE_INT64, &v, 8); }
void gw_f32(struct gw *w, const char *key, float v) { gw_raw(w, key, GGUF_TYPE_FLOAT32, &v, 4); }
void gw_f64(struct gw *w, const char *key, double v) { gw_raw(w, key, GGUF_TYPE_FLOAT64, &v, 8); }
void gw_bool(struct gw *w, const char *key, int v) { uint8_t b = v != 0; gw_raw(w, key, GGUF_TYPE_BOOL, &b, 1); }

void gw_str(struct gw *w, const char *key, const char *v)
{
	putstr(&w->kv, key);
	put32(&w->kv, GGUF_TYPE_STRING);
	putstr(&w->kv, v);
	w->n_kv++;
}

void gw_arr_str(struct gw *w, const char *key, const char *const *v, size_t n)
{
	putstr(&w->kv, key);
	put32(&w->kv, GGUF_TYPE_ARRAY);
	put32(&w->kv, GGUF_TYPE_STRING);
	put64(&w->kv, n);
	for (size_t i = 0; i < n; i++)
		putstr(&w->kv, v[i]);
	w->n_kv++;
}

static size_t elem_size(int t)
{
	switch (t) {
	case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
	case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
	case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
	}
	return 4;
}

void gw_arr(struct gw *w, const char *key, int elem_type, const void *data, size_t n)
{
	putstr(&w->kv, key);
	put32(&w->kv, GGUF_TYPE_ARRAY);
	put32(&w->kv, (uint32_t)elem_type);
	put64(&w->kv, n);
	put(&w->kv, data, n * elem_size(elem_type));
	w->n_kv++;
}

static struct gw_t *add_tensor(struct gw *w, const char *name, int type, int n_dims, const int64_t *ne)
{
	struct gw_t t = { 0 };
	t.name = strdup(name);
	if (!t.name)
		abort();
	t.type = type;
	t.n_dims = n_dims;
	t.rows = 1;
	for (int d = 0; d < 4; d++) {
		t.ne[d] = d < n_dims ? ne[d] : 1;
		if (d > 0)
			t.rows *= (uint64_t)t.ne[d];
	}
	t.row_bytes = skipper_dtype_row_bytes(type, t.ne[0]);
	t.nbytes = t.row_bytes * t.rows;
	w->t = xrealloc(w->t, (w->n_t + 1) * sizeof *w->t);
	w->t[w->n_t] = t;
	return &w->t[w->n_t++];
}

void gw_tensor(struct gw *w, const char *name, int type, int n_dims, const int64_t *ne, const void *data)
{
	struct gw_t *t = add_tensor(w, name, type, n_dims, ne);
	t->data = calloc(1, t->nbytes ? t->nbytes : 1);
	if (!t->data)
		abort();
	if (data)
		memcpy(t->data, data, t->nbytes);
}

void gw_tensor_gen(struct gw *w, const char *name, int type, int n_dims, const int64_t *ne, gw_fill_fn fill,
                   void *ctx)
{
	struct gw_t *t = add_tensor(w, name, type, n_dims, ne);
	t->fill = fill;
	t->ctx = ctx;
}

static void pad_to(struct buf *b, uint64_t a)
{
	static const uint8_t zero[64];
	while (b->n % a) {
		size_t k = a - b->n % a;
		put(b, zero, k > sizeof zero ? sizeof zero : k);
	}
}

/* Everything before the data section; fills the layout, size included. */
static struct buf build_header(struct gw *w)
{
	struct buf b = { 0 };
	struct gw_layout *L = &w->lay;
	uint64_t off = 0;

	free(L->t);
	memset(L, 0, sizeof *L);
	L->t = xrealloc(NULL, (w->n_t ? w->n_t : 1) * sizeof *L->t);
	L->n = w->n_t;
	put(&b, "GGUF", 4);
	L->version = b.n;
	put32(&b, w->version);
	L->n_tensors = b.n;
	put64(&b, w->n_t);
	L->n_kv = b.n;
	put64(&b, w->n_kv);
	L->kv_start = b.n;
	put(&b, w->kv.p, w->kv.n);
	L->tensors_start = b.n;
	for (size_t i = 0; i < w->n_t; i++) {
		struct gw_t *t = &w->t[i];
		struct gw_tensor_layout *tl = &L->t[i];
		tl->info = b.n;
		putstr(&b, t->name);
		tl->n_dims = b.n;
		put32(&b, (uint32_t)t->n_dims);
		tl->dims = b.n;
		for (int d = 0; d < t->n_dims; d++)
			put64(&b, (uint64_t)t->ne[d]);
		tl->type = b.n;
		put32(&b, (uint32_t)t->type);
		tl->offset = b.n;
		put64(&b, off);
		tl->data_off = off;
		tl->nbytes = t->nbytes;
		off += t->nbytes;
		off = (off + w->alignment - 1) / w->alignment * w->alignment;
	}
	pad_to(&b, w->alignment);
	L->data_start = b.n;
	L->size = w->n_t ? L->data_start + L->t[w->n_t - 1].data_off + w->t[w->n_t - 1].nbytes : b.n;
	return b;
}

void gw_build(struct gw *w, uint8_t **out, size_t *len)
{
	struct buf b = build_header(w);
	for (size_t i = 0; i < w->n_t; i++) {
		struct gw_t *t = &w->t[i];
		if (t->fill) {
			put(&b, NULL, t->nbytes);
			t->fill(t->ctx, b.p + b.n - t->nbytes, 0, (int64_t)t->rows);
		} else {
			put(&b, t->data, t->nbytes);
		}
		if (i + 1 < w->n_t)
			pad_to(&b, w->alignment);
	}
	*out = b.p;
	*len = b.n;
}

const struct gw_layout *gw_layout(const struct gw *w) { return &w->lay; }

int gw_dump(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = fwrite(buf, 1, len, f);
	if (fclose(f) != 0 || n != len)
		return -1;
	return 0;
}

/* Streams: the header, then each tensor's bytes (generated ones a block of
 * rows at a time), so a file far larger than memory can be written. */
int gw_write_file(struct gw *w, const char *path)
{
	static const uint8_t zero[64];
	struct buf b = build_header(w);
	FILE *f = fopen(path, "wb");
	size_t cap = 64u << 20;
	uint8_t *chunk = NULL;
	int rc = f && fwrite(b.p, 1, b.n, f) == b.n ? 0 : -1;
	uint64_t at = b.n;

	free(b.p);
	for (size_t i = 0; i < w->n_t && rc == 0; i++) {
		struct gw_t *t = &w->t[i];
		if (!t->fill) {
			rc = fwrite(t->data, 1, t->nbytes, f) == t->nbytes ? 0 : -1;
		} else {
			uint64_t per = t->row_bytes && t->row_bytes < cap ? cap / t->row_bytes : 1;
			if (!chunk)
				chunk = xrealloc(NULL, cap > t->row_bytes ? cap : t->row_bytes);
			else if (t->row_bytes > cap)
				chunk = xrealloc(chunk, t->row_bytes);
			for (uint64_t r = 0; r < t->rows && rc == 0; r += per) {
				uint64_t k = t->rows - r < per ? t->rows - r : per;
				t->fill(t->ctx, chunk, (int64_t)r, (int64_t)k);
				rc = fwrite(chunk, 1, k * t->row_bytes, f) == k * t->row_bytes ? 0 : -1;
			}
		}
		at += t->nbytes;
		while (rc == 0 && i + 1 < w->n_t && at % w->alignment) {
			size_t k = w->alignment - at % w->alignment;
			k = k > sizeof zero ? sizeof zero : k;
			rc = fwrite(zero, 1, k, f) == k ? 0 : -1;
			at += k;
		}
	}
	free(chunk);
	if (f && fclose(f) != 0)
		rc = -1;
	return rc;
}
