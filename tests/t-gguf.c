/* GGUF reader and model loader against well-formed and corrupted files. The
 * files are made by tests/gguf-writer and then patched at recorded offsets,
 * so every corruption hits exactly the field it names. Every failure must be
 * a clean error whose message names the file and the key/tensor at fault. */
#define _GNU_SOURCE /* memmem */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf-writer.h"
#include "model/gguf.h"
#include "model/model.h"
#include "model/quant.h"
#include "tap.h"
#include "tokenizer/tokenizer.h"
#include "testmodel.h"

static char dir[256], path[512];

static void p64(uint8_t *b, size_t off, uint64_t v) { memcpy(b + off, &v, 8); }
static void p32(uint8_t *b, size_t off, uint32_t v) { memcpy(b + off, &v, 4); }

/* Open buf as a file; expect failure with status want (0 = any error) and a
 * message holding the path and every needle. */
static void expect_fail(const uint8_t *buf, size_t len, int want, const char *what, const char *n1, const char *n2)
{
	struct skipper_gguf *g = NULL;
	struct skipper_error err = { 0 };
	gw_dump(path, buf, len);
	int rc = skipper_gguf_open(path, &g, &err);
	int good = rc != 0 && g == NULL && (want == 0 || rc == want) && strstr(err.msg, path) &&
	           (!n1 || strstr(err.msg, n1)) && (!n2 || strstr(err.msg, n2));
	if (!ok(good, "%s", what))
		diag("rc %d, message: %s", rc, err.msg);
	skipper_gguf_close(g);
}

/* A small but complete file: keys of several types, a string array, three
 * tensors of different types. */
static struct gw *base_writer(void)
{
	struct gw *w = gw_new();
	static const char *words[] = { "zero", "one", "", "three", "four\xe2\x96\x81" };
	int32_t ints[4] = { -1, 2, -3, 4 };
	gw_str(w, "general.architecture", "test");
	gw_u32(w, "t.u32", 7);
	gw_i32(w, "t.neg", -5);
	gw_u64(w, "t.big", 1ull << 40);
	gw_f32(w, "t.f32", 0.25f);
	gw_f64(w, "t.f64", 0.5);
	gw_bool(w, "t.bool", 1);
	gw_u8(w, "t.u8", 200);
	gw_arr_str(w, "t.words", words, 5);
	gw_arr(w, "t.ints", GGUF_TYPE_INT32, ints, 4);
	float f[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	int64_t ne1[1] = { 8 };
	gw_tensor(w, "a.f32", SKIPPER_F32, 1, ne1, f);
	uint8_t q8[2 * 34];
	float x[64];
	for (int i = 0; i < 64; i++)
		x[i] = (float)(i - 32) / 8;
	skipper_quantize_row(SKIPPER_Q8_0, x, q8, 64);
	int64_t ne2[2] = { 32, 2 };
	gw_tensor(w, "b.q8_0", SKIPPER_Q8_0, 2, ne2, q8);
	uint16_t h[6];
	for (int i = 0; i < 6; i++)
		h[i] = skipper_f32_to_fp16((float)i);
	int64_t ne3[3] = { 3, 1, 2 };
	gw_tensor(w, "c.f16", SKIPPER_F16, 3, ne3, h);
	return w;
}

static void test_good(void)
{
	struct gw *w = base_writer();
	struct skipper_gguf *g;
	struct skipper_error err = { 0 };
	uint8_t *buf;
	size_t len;

	gw_build(w, &buf, &len);
	gw_dump(path, buf, len);
	int rc = skipper_gguf_open(path, &g, &err);
	if (!ok(rc == 0, "well-formed v3 file opens")) {
		diag("%s", err.msg);
		exit(tap_done());
	}
	is_int(skipper_gguf_version(g), 3, "version");
	is_int(skipper_gguf_n_keys(g), 10, "key count");
	is_int(skipper_gguf_n_tensors(g), 3, "tensor count");
	is_int(skipper_gguf_file_size(g), len, "file size");
	uint32_t u;
	int64_t i64;
	float f;
	int b;
	struct skipper_gguf_str s;
	ok(skipper_gguf_get_u32(g, "t.u32", &u) == 0 && u == 7, "u32");
	ok(skipper_gguf_get_u32(g, "t.u8", &u) == 0 && u == 200, "u8 widened to u32");
	ok(skipper_gguf_get_u32(g, "t.neg", &u) == SKIPPER_ERR_FORMAT, "negative value refused as u32");
	ok(skipper_gguf_get_u32(g, "t.big", &u) == SKIPPER_ERR_FORMAT, "2^40 refused as u32");
	ok(skipper_gguf_get_i64(g, "t.neg", &i64) == 0 && i64 == -5, "i32 as i64");
	ok(skipper_gguf_get_i64(g, "t.big", &i64) == 0 && i64 == 1ll << 40, "u64 as i64");
	ok(skipper_gguf_get_f32(g, "t.f32", &f) == 0 && f == 0.25f, "f32");
	ok(skipper_gguf_get_f32(g, "t.f64", &f) == 0 && f == 0.5f, "f64 as f32");
	ok(skipper_gguf_get_f32(g, "t.u32", &f) == SKIPPER_ERR_FORMAT, "integer is not a float");
	ok(skipper_gguf_get_bool(g, "t.bool", &b) == 0 && b == 1, "bool");
	ok(skipper_gguf_get_str(g, "general.architecture", &s) == 0 && s.len == 4 && !memcmp(s.ptr, "test", 4), "string");
	ok(skipper_gguf_get_str(g, "t.u32", &s) == SKIPPER_ERR_FORMAT, "u32 is not a string");
	ok(skipper_gguf_get_u32(g, "nope", &u) == SKIPPER_ERR_NOT_FOUND && skipper_gguf_find_key(g, "nope") < 0, "absent key");
	int et;
	uint64_t n;
	ok(skipper_gguf_get_arr(g, "t.words", &et, &n) == 0 && et == GGUF_TYPE_STRING && n == 5, "string array type and count");
	ok(skipper_gguf_arr_str(g, "t.words", 4, &s) == 0 && s.len == 7 && !memcmp(s.ptr, "four\xe2\x96\x81", 7), "string array element 4");
	ok(skipper_gguf_arr_str(g, "t.words", 2, &s) == 0 && s.len == 0, "empty string element");
	ok(skipper_gguf_arr_str(g, "t.words", 5, &s) == SKIPPER_ERR_RANGE, "index past the end");
	const void *d;
	int32_t e2 = 0;
	if (skipper_gguf_arr_data(g, "t.ints", &d) == 0)
		memcpy(&e2, (const char *)d + 8, 4); /* metadata is packed: no alignment promised */
	ok(e2 == -3, "numeric array data");
	int64_t ev;
	float fv;
	ok(skipper_gguf_arr_get_i64(g, "t.ints", 2, &ev) == 0 && ev == -3 && skipper_gguf_arr_get_i64(g, "t.ints", 4, &ev) == SKIPPER_ERR_RANGE &&
	   skipper_gguf_arr_get_f32(g, "t.ints", 3, &fv) == 0 && fv == 4.0f && skipper_gguf_arr_get_i64(g, "t.words", 0, &ev) == SKIPPER_ERR_FORMAT,
	   "array elements by index");
	ok(skipper_gguf_arr_data(g, "t.words", &d) == SKIPPER_ERR_FORMAT, "string array has no packed data");
	int64_t k = skipper_gguf_find_key(g, "t.f64");
	ok(k >= 0 && skipper_gguf_key_type(g, k) == GGUF_TYPE_FLOAT64 && skipper_gguf_key_name(g, k).len == 5, "key by index");

	const struct skipper_gguf_tensor *t = skipper_gguf_find_tensor(g, "b.q8_0");
	ok(t && t->n_dims == 2 && t->ne[0] == 32 && t->ne[1] == 2 && t->ne[2] == 1 && t->nbytes == 68 && t->type == SKIPPER_Q8_0,
	   "Q8_0 tensor info");
	float row[64];
	if (t) {
		skipper_dequant_row(t->type, t->data, row, 64);
		ok(fabsf(row[0] + 4.0f) < 1e-3f && row[63] > 3.87f && row[63] < 3.88f, "Q8_0 tensor data reads back (%g %g)", row[0], row[63]);
		ok(((uintptr_t)t->data % 32) == 0, "tensor data aligned to 32");
	} else {
		tap_skip(2, "no tensor");
	}
	t = skipper_gguf_find_tensor(g, "c.f16");
	ok(t && t->n_dims == 3 && t->ne[2] == 2 && skipper_fp16_to_f32(((const uint16_t *)t->data)[5]) == 5.0f, "F16 3-D tensor"); /* aligned: data offsets are */
	ok(skipper_gguf_find_tensor(g, "zzz") == NULL && skipper_gguf_tensor(g, 3) == NULL && skipper_gguf_tensor(g, -1) == NULL,
	   "absent tensor");
	skipper_gguf_close(g);

	/* v2 has the same layout */
	p32(buf, gw_layout(w)->version, 2);
	gw_dump(path, buf, len);
	ok(skipper_gguf_open(path, &g, &err) == 0 && skipper_gguf_version(g) == 2, "version 2 opens");
	skipper_gguf_close(g);
	free(buf);
	gw_free(w);
}

/* skipper_gguf_release: the pages of a tensor a backend has copied leave
 * the resident set, and reading them again gives the file's bytes. */
static void test_release(void)
{
	enum { N = 5 * 4096 };
	struct gw *w = gw_new();
	float *f = malloc(sizeof(float) * N);
	int64_t ne[1] = { N };
	struct skipper_gguf *g;
	struct skipper_error err = { 0 };
	uint8_t *buf;
	size_t len;
	for (int i = 0; i < N; i++)
		f[i] = (float)i;
	gw_str(w, "general.architecture", "test");
	gw_tensor(w, "big", SKIPPER_F32, 1, ne, f);
	gw_build(w, &buf, &len);
	gw_dump(path, buf, len);
	if (!ok(skipper_gguf_open(path, &g, &err) == 0, "a file of 80 KiB opens")) {
		diag("%s", err.msg);
		free(f), free(buf), gw_free(w);
		return;
	}
	const struct skipper_gguf_tensor *t = skipper_gguf_find_tensor(g, "big");
	skipper_gguf_release(g, t->data, t->nbytes);
	ok(!memcmp(t->data, f, sizeof(float) * N), "released pages read back as the file's bytes");
	float local = 1;
	skipper_gguf_release(g, &local, sizeof local);          /* not in the mapping */
	skipper_gguf_release(g, t->data, t->nbytes + (1u << 30)); /* runs past its end */
	skipper_gguf_release(NULL, t->data, t->nbytes);
	ok(local == 1 && !memcmp(t->data, f, sizeof(float) * N), "ranges outside the mapping are left alone");
	skipper_gguf_close(g);
	free(f);
	free(buf);
	gw_free(w);
}

static void test_truncated(void)
{
	struct gw *w = base_writer();
	uint8_t *buf;
	size_t len;
	int all = 1, named = 1;
	char first[SKIPPER_ERROR_MAX] = "";

	gw_build(w, &buf, &len);
	/* every prefix: the last tensor ends at end of file, so all must fail */
	for (size_t n = 0; n < len; n++) {
		struct skipper_gguf *g = NULL;
		struct skipper_error err = { 0 };
		gw_dump(path, buf, n);
		int rc = skipper_gguf_open(path, &g, &err);
		if (rc == 0 || g) {
			all = 0;
			diag("prefix of %zu bytes opened", n);
			skipper_gguf_close(g);
		} else if (!strstr(err.msg, path)) {
			named = 0;
			diag("prefix %zu: %s", n, err.msg);
		}
		if (n == gw_layout(w)->tensors_start + 5)
			snprintf(first, sizeof first, "%s", err.msg);
	}
	ok(all, "every one of the %zu truncations fails", len);
	ok(named, "every truncation error names the file");
	ok(strstr(first, "truncated") && strstr(first, "tensor name"), "a cut inside a tensor name says so: %s", first);
	free(buf);
	gw_free(w);
}

static void test_corrupt(void)
{
	struct gw *w = base_writer();
	const struct gw_layout *L;
	uint8_t *buf, *c;
	size_t len;

	gw_build(w, &buf, &len);
	L = gw_layout(w);
	c = malloc(len);
#define RESET() memcpy(c, buf, len)
	RESET();
	c[0] = 'G'; c[1] = 'G'; c[2] = 'M'; c[3] = 'L';
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "bad magic", "magic", NULL);
	RESET();
	p32(c, L->version, 1);
	expect_fail(c, len, SKIPPER_ERR_UNSUPPORTED, "version 1 refused", "version 1", NULL);
	RESET();
	p32(c, L->version, 4);
	expect_fail(c, len, 0, "version 4 refused", "version 4", NULL);
	RESET();
	p32(c, L->version, 0x03000000u);
	expect_fail(c, len, SKIPPER_ERR_UNSUPPORTED, "big-endian file refused", "big-endian", NULL);
	RESET();
	p64(c, L->n_tensors, 1ull << 40);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "absurd tensor count refused before allocating", "tensor count", NULL);
	RESET();
	p64(c, L->n_kv, UINT64_MAX);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "absurd metadata count refused", "metadata count", NULL);
	RESET();
	p64(c, L->n_kv, 11); /* one more key than there is: the tensor infos are read as a key */
	expect_fail(c, len, 0, "metadata count one too high fails", NULL, NULL);
	RESET();
	p64(c, L->kv_start, 1ull << 62);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "key length past end of file", "string length", NULL);
	RESET();
	p64(c, L->t[0].info, 200);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "tensor name length 200", "name length", NULL);
	RESET();
	p32(c, L->t[1].n_dims, 5);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "n_dims 5", "b.q8_0", "n_dims");
	RESET();
	p32(c, L->t[1].n_dims, 0);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "n_dims 0", "b.q8_0", "n_dims");
	RESET();
	p64(c, L->t[0].dims, 0);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "zero dimension", "a.f32", "dimension");
	RESET();
	p64(c, L->t[2].dims, 1ull << 62); /* c.f16: 3 x 1 x 2 -> 2^62 x 1 x 2 overflows int64 */
	p64(c, L->t[2].dims + 16, 1ull << 62);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "overflowing element count", "c.f16", "overflow");
	RESET();
	p64(c, L->t[2].dims, 1ull << 40);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "huge tensor larger than the file", "c.f16", "bytes");
	RESET();
	p64(c, L->t[1].dims, 16);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "Q8_0 row not a multiple of 32", "b.q8_0", "block");
	RESET();
	p32(c, L->t[1].type, 10);
	expect_fail(c, len, SKIPPER_ERR_UNSUPPORTED, "unsupported type Q2_K", "b.q8_0", "Q2_K");
	RESET();
	p32(c, L->t[1].type, 999);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "invalid type 999", "b.q8_0", "999");
	RESET();
	p64(c, L->t[1].offset, L->t[1].data_off + 4);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "misaligned offset", "b.q8_0", "alignment");
	RESET();
	p64(c, L->t[2].offset, L->t[2].data_off + 32);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "data past end of file", "c.f16", "outside");
	RESET();
	p64(c, L->t[2].offset, UINT64_MAX - 31);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "offset near 2^64 does not wrap", "c.f16", "outside");
	RESET();
	p64(c, L->t[1].offset, L->t[0].data_off);
	expect_fail(c, len, SKIPPER_ERR_FORMAT, "overlapping tensors", "overlap", "a.f32");
	free(c);
	free(buf);
	gw_free(w);

	/* built-in malformations */
	struct { const char *what, *n1, *n2; int st; } cases[] = {
		{ "duplicate key", "duplicate metadata key", "t.dup", SKIPPER_ERR_FORMAT },
		{ "duplicate tensor", "duplicate tensor name", "x.w", SKIPPER_ERR_FORMAT },
		{ "alignment 48", "general.alignment", "power of two", SKIPPER_ERR_FORMAT },
		{ "alignment as int32", "general.alignment", "uint32", SKIPPER_ERR_FORMAT },
		{ "nested array", "t.nest", "nested", SKIPPER_ERR_UNSUPPORTED },
		{ "unknown value type", "t.odd", "type 99", SKIPPER_ERR_FORMAT },
		{ "string array count past EOF", "t.sa", "string array", SKIPPER_ERR_FORMAT },
		{ "numeric array past EOF", "t.na", "past the end", SKIPPER_ERR_FORMAT },
		{ "string element past EOF", "t.se", "element 1", SKIPPER_ERR_FORMAT },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		w = gw_new();
		int64_t ne = 32;
		switch (i) {
		case 0: gw_u32(w, "t.dup", 1); gw_u32(w, "t.x", 1); gw_str(w, "t.dup", "again"); break;
		case 1: gw_tensor(w, "x.w", SKIPPER_F32, 1, &ne, NULL); gw_tensor(w, "x.w", SKIPPER_F32, 1, &ne, NULL); break;
		case 2: gw_set_alignment(w, 48); gw_tensor(w, "x.w", SKIPPER_F32, 1, &ne, NULL); break;
		case 3: gw_i32(w, "general.alignment", 32); break;
		case 4: { uint8_t v[12] = { GGUF_TYPE_ARRAY, 0, 0, 0, 1 }; gw_raw(w, "t.nest", GGUF_TYPE_ARRAY, v, 12); break; }
		case 5: { uint32_t v = 0; gw_raw(w, "t.odd", 99, &v, 4); break; }
		case 6: { uint8_t v[12] = { GGUF_TYPE_STRING }; p64(v, 4, 1ull << 50); gw_raw(w, "t.sa", GGUF_TYPE_ARRAY, v, 12); break; }
		case 7: { uint8_t v[16] = { GGUF_TYPE_UINT64 }; p64(v, 4, 1ull << 61); gw_raw(w, "t.na", GGUF_TYPE_ARRAY, v, 16); break; }
		case 8: {
			uint8_t v[4 + 8 + 8 + 1 + 8] = { GGUF_TYPE_STRING };
			p64(v, 4, 2);       /* two strings */
			p64(v, 12, 1);      /* "a" */
			v[20] = 'a';
			p64(v, 21, 1000);   /* second string runs off the end */
			gw_raw(w, "t.se", GGUF_TYPE_ARRAY, v, sizeof v);
			break;
		}
		}
		gw_build(w, &buf, &len);
		expect_fail(buf, len, cases[i].st, cases[i].what, cases[i].n1, cases[i].n2);
		free(buf);
		gw_free(w);
	}

	/* files that are not there or not files */
	struct skipper_gguf *g = NULL;
	struct skipper_error err = { 0 };
	char missing[600];
	snprintf(missing, sizeof missing, "%s/missing.gguf", dir);
	ok(skipper_gguf_open(missing, &g, &err) == SKIPPER_ERR_NOT_FOUND && strstr(err.msg, missing), "missing file: %s", err.msg);
	ok(skipper_gguf_open(dir, &g, &err) == SKIPPER_ERR_IO && strstr(err.msg, "directory"), "directory: %s", err.msg);
	gw_dump(path, "", 0);
	expect_fail((const uint8_t *)"", 0, SKIPPER_ERR_FORMAT, "empty file", "truncated", NULL);
}

/* ---- model level -------------------------------------------------------- */

static uint8_t *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	uint8_t *b;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	b = malloc(*len);
	if (fread(b, 1, *len, f) != *len) {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static size_t find(const uint8_t *b, size_t len, const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i + n <= len; i++)
		if (!memcmp(b + i, s, n))
			return i;
	return (size_t)-1;
}

static void expect_model_fail(const uint8_t *buf, size_t len, int want, const char *what, const char *n1, const char *n2)
{
	struct skipper_model *m = NULL;
	struct skipper_error err = { 0 };
	gw_dump(path, buf, len);
	int rc = skipper_model_load(path, &m, &err);
	int good = rc != 0 && !m && (!want || rc == want) && strstr(err.msg, path) && (!n1 || strstr(err.msg, n1)) &&
	           (!n2 || strstr(err.msg, n2));
	if (!ok(good, "%s", what))
		diag("rc %d: %s", rc, err.msg);
	skipper_model_free(m);
}

/* File offset of a tensor's data in buf (its first bytes are random enough
 * to be unique). */
static size_t data_at(const uint8_t *buf, size_t len, const char *name)
{
	struct skipper_gguf *g = NULL;
	struct skipper_error err = { 0 };
	size_t at = 0;
	if (skipper_gguf_open(path, &g, &err) == 0) {
		const struct skipper_gguf_tensor *t = skipper_gguf_find_tensor(g, name);
		const uint8_t *hit = t ? memmem(buf, len, t->data, 64) : NULL;
		at = hit ? (size_t)(hit - buf) : 0;
		skipper_gguf_close(g);
	}
	return at;
}

/* qwen2 / qwen3 files: what loads, and what a damaged one says. */
static void test_qwen_models(void)
{
	struct skipper_test_model_opts o;
	struct skipper_model *m;
	struct skipper_error err = { 0 };

	skipper_test_model_defaults(&o);
	o.arch = "qwen2";
	o.dtype = SKIPPER_Q4_K;
	o.n_embd = 256;
	o.n_ff = 512;
	o.n_layer = 2;
	if (skipper_test_model_write(path, &o) || skipper_model_load(path, &m, &err)) {
		ok(0, "generated qwen2 Q4_K model loads: %s", err.msg);
		return;
	}
	ok(m->view.arch_id == SKIPPER_ARCH_QWEN2 && !strcmp(m->view.arch, "qwen2") && m->view.hp.rope_style == SKIPPER_ROPE_HALVES &&
	   m->view.layers[1].bq.data && m->view.layers[1].bq.ne0 == 256 && m->view.layers[1].bv.ne0 == 128 && !m->view.layers[1].q_norm.data &&
	   m->view.layers[0].wq.type == SKIPPER_Q4_K,
	   "generated qwen2 Q4_K model: biases bound, NeoX rope, no q/k norms");
	skipper_model_free(m);

	size_t len, at;
	uint8_t *b = slurp(path, &len), *c = malloc(len);
	memcpy(c, b, len);
	at = find(c, len, "qwen2.block_count");
	c[at + 6] = 'X';
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "qwen2: missing hyper-parameter", "qwen2.block_count", NULL);
	memcpy(c, b, len);
	at = find(c, len, "blk.1.attn_v.bias");
	c[at + 16] = 'X';
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "qwen2: missing bias", "blk.1.attn_v.bias", "missing tensor");
	memcpy(c, b, len);
	at = find(c, len, "blk.0.attn_q.bias") + strlen("blk.0.attn_q.bias") + 4;
	p64(c, at, 128);
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "qwen2: wrong bias shape", "blk.0.attn_q.bias",
	                  "[128], expected [256]");
	memcpy(c, b, len);
	at = data_at(b, len, "blk.1.ffn_up.weight") + 5 * 144; /* d of super-block 5 */
	c[at] = 0x00;
	c[at + 1] = 0x7e; /* NaN */
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "qwen2: a Q4_K block with a NaN scale", "blk.1.ffn_up.weight",
	                  "block 5 (row 5) has a non-finite scale");
	memcpy(c, b, len);
	at = find(c, len, "blk.0.ffn_gate.weight") + strlen("blk.0.ffn_gate.weight") + 4;
	p64(c, at, 128);
	p64(c, at + 8, 1024);
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "qwen2: Q4_K rows of 128 elements", "blk.0.ffn_gate.weight", "256");
	expect_model_fail(b, len - 100, SKIPPER_ERR_FORMAT, "qwen2: truncated K-quant file", "blk.1.ffn_down.weight",
	                  "outside the file");
	memcpy(c, b, len);
	at = find(c, len, "general.architecture") + strlen("general.architecture") + 4 + 8;
	memcpy(c + at, "llama", 5);
	for (size_t k = find(c, len, "qwen2."); k != (size_t)-1; k = find(c, len, "qwen2."))
		memcpy(c + k, "llama", 5); /* every qwen2.* key becomes llama.* */
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "a qwen2 file claiming llama: its biases are foreign",
	                  "blk.0.attn_q.bias", "does not belong to architecture llama");
	free(b);
	free(c);

	skipper_test_model_defaults(&o);
	o.arch = "qwen3";
	o.dtype = SKIPPER_Q6_K;
	o.n_embd = 256;
	o.n_ff = 512;
	o.n_layer = 2;
	o.head_dim = 128; /* 4 x 128 = 512 != embedding, as in Qwen3 */
	if (skipper_test_model_write(path, &o) || skipper_model_load(path, &m, &err)) {
		ok(0, "generated qwen3 Q6_K model loads: %s", err.msg);
		return;
	}
	ok(m->view.arch_id == SKIPPER_ARCH_QWEN3 && m->view.hp.head_dim == 128 && m->view.layers[0].wq.ne1 == 512 &&
	   m->view.layers[0].wo.ne0 == 512 && m->view.layers[1].k_norm.data && m->view.layers[1].k_norm.ne0 == 128 &&
	   !m->view.layers[1].bq.data,
	   "generated qwen3 Q6_K model: head dim 128 from key_length, q/k norms bound, no biases");
	skipper_model_free(m);
	b = slurp(path, &len);
	c = malloc(len);
	memcpy(c, b, len);
	at = find(c, len, "blk.0.attn_k_norm.weight");
	c[at + 12] = 'X';
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "qwen3: missing k norm", "blk.0.attn_k_norm.weight", "missing tensor");
	memcpy(c, b, len);
	at = find(c, len, "general.architecture") + strlen("general.architecture") + 4 + 8;
	memcpy(c + at, "qwen2", 5);
	for (size_t k = find(c, len, "qwen3."); k != (size_t)-1; k = find(c, len, "qwen3."))
		c[k + 4] = '2'; /* every qwen3.* key becomes qwen2.* */
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "a qwen3 file claiming qwen2: the biases are missing",
	                  "blk.0.attn_q.bias", "missing tensor");
	free(b);
	free(c);
}

static void test_models(void)
{
	static const int dtypes[] = { SKIPPER_F32, SKIPPER_F16, SKIPPER_BF16, SKIPPER_Q8_0, SKIPPER_Q4_0, SKIPPER_Q4_1,
		                      SKIPPER_Q5_0, SKIPPER_Q5_1 };
	struct skipper_test_model_opts o;
	struct skipper_model *m;
	struct skipper_error err = { 0 };

	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
		skipper_test_model_defaults(&o);
		o.dtype = dtypes[i];
		o.tied = i % 2;
		o.tokenizer = i == 5 ? SKIPPER_TEST_TOK_SPM : SKIPPER_TEST_TOK_BYTES;
		if (skipper_test_model_write(path, &o) != 0 || skipper_model_load(path, &m, &err) != 0) {
			ok(0, "generated %s model loads: %s", skipper_dtype_name(dtypes[i]), err.msg);
			continue;
		}
		const struct skipper_hparams *hp = &m->view.hp;
		ok(hp->n_layer == 4 && hp->n_embd == 64 && hp->n_ff == 128 && hp->n_head == 4 && hp->n_head_kv == 2 &&
		   hp->head_dim == 16 && hp->rope_dim == 16 && hp->rope_style == SKIPPER_ROPE_PAIRS && hp->n_ctx_train == 256 &&
		   m->view.layers[3].wq.type == dtypes[i] && m->view.layers[3].attn_norm.type == SKIPPER_F32 &&
		   m->view.layers[1].wk.ne0 == 64 && m->view.layers[1].wk.ne1 == 32 && m->view.layers[2].w_down.ne0 == 128 &&
		   m->view.tied_embeddings == (int)(i % 2) && (!o.tied || m->view.output.data == m->view.tok_embd.data) &&
		   m->view.tok_embd.ne1 == hp->n_vocab && !strcmp(m->view.arch, "llama") && !strcmp(m->view.name, "skipper-test") &&
		   m->view.rope_freqs == NULL && hp->rope_scaling == SKIPPER_ROPE_SCALING_NONE,
		   "generated %s model (%s, %s tokenizer) loads with the right shapes", skipper_dtype_name(dtypes[i]),
		   o.tied ? "tied" : "untied", i == 5 ? "spm" : "bytes");
		if (i == 0) {
			/* the view names the file and hands copied weights' pages back */
			const struct skipper_weight *wq = &m->view.layers[0].wq;
			size_t n = wq->row_bytes * (size_t)wq->ne1;
			void *copy = malloc(n);
			memcpy(copy, wq->data, n);
			ok(m->view.path && !strcmp(m->view.path, path) && m->view.release, "the model's view: its file, a release hook");
			m->view.release(&m->view, wq->data, n);
			ok(!memcmp(copy, wq->data, n), "a released weight reads back as the file's bytes");
			free(copy);
		}
		skipper_model_free(m);
	}

	/* tokenizer metadata of the generator */
	skipper_test_model_defaults(&o);
	o.n_vocab = 300;
	skipper_test_model_write(path, &o);
	if (skipper_model_load(path, &m, &err) == 0) {
		struct skipper_gguf_str s;
		uint64_t n;
		uint32_t eos;
		ok(m->view.hp.n_vocab == 300 && skipper_gguf_get_arr(m->gguf, "tokenizer.ggml.tokens", NULL, &n) == 0 && n == 300,
		   "--vocab 300 gives 300 tokens");
		ok(skipper_gguf_get_u32(m->gguf, "tokenizer.ggml.eos_token_id", &eos) == 0 &&
		   skipper_gguf_arr_str(m->gguf, "tokenizer.ggml.tokens", eos, &s) == 0 && s.len == 10 && !memcmp(s.ptr, "<|im_end|>", 10),
		   "eos is <|im_end|>");
		ok(skipper_gguf_arr_str(m->gguf, "tokenizer.ggml.tokens", 32, &s) == 0 && s.len == 2 && !memcmp(s.ptr, "\xc4\xa0", 2),
		   "byte 0x20 is the GPT-2 'Ġ'");
		ok(skipper_gguf_get_arr(m->gguf, "tokenizer.ggml.merges", NULL, &n) == 0 && n == 300 - 259, "merges fill the vocab");
		skipper_model_free(m);
	} else {
		ok(0, "vocab-300 model loads: %s", err.msg);
	}

	/* RoPE scaling, both spellings */
	float from_tensor[8] = { 0 };
	for (int k = 1; k <= 2; k++) {
		skipper_test_model_defaults(&o);
		o.rope_llama3 = k;
		o.n_ctx = 4096;
		skipper_test_model_write(path, &o);
		if (skipper_model_load(path, &m, &err) != 0) {
			ok(0, "llama3 rope model loads: %s", err.msg);
			continue;
		}
		/* head dim 16, theta 1e4, original context 1024: wavelengths 2pi*10^(i/2);
		 * i <= 3 below 256 (kept), i = 4 between (smoothed), i >= 5 above 1024 (x8) */
		const float *f = m->view.rope_freqs;
		ok(f && m->view.hp.rope_scaling == SKIPPER_ROPE_SCALING_LLAMA3 && f[0] == 1.0f && f[3] == 1.0f && f[5] == 8.0f &&
		   f[7] == 8.0f && f[4] > 1.0f && f[4] < 8.0f,
		   "llama3 rope factors from %s (%g %g %g)", k == 1 ? "rope_freqs.weight" : "scaling keys", f ? f[0] : -1, f ? f[4] : -1,
		   f ? f[7] : -1);
		if (k == 1 && f)
			memcpy(from_tensor, f, sizeof from_tensor);
		if (k == 2 && f)
			ok(fabsf(f[4] - from_tensor[4]) < 1e-5f && f[3] == from_tensor[3], "keys and tensor give the same factors");
		skipper_model_free(m);
	}

	/* corruptions at the model level */
	skipper_test_model_defaults(&o);
	o.dtype = SKIPPER_Q8_0;
	skipper_test_model_write(path, &o);
	size_t len, at;
	uint8_t *b = slurp(path, &len), *c = malloc(len);
	memcpy(c, b, len);
	at = find(c, len, "blk.1.ffn_up.weight");
	c[at + 11] = 'X';
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "missing tensor", "blk.1.ffn_up.weight", "missing tensor");
	memcpy(c, b, len);
	at = find(c, len, "blk.0.attn_k.weight") + strlen("blk.0.attn_k.weight") + 4;
	p64(c, at, 32);
	p64(c, at + 8, 64);
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "wrong shape names tensor, actual and expected", "blk.0.attn_k.weight",
	                  "[32 x 64], expected [64 x 32]");
	memcpy(c, b, len);
	at = find(c, len, "general.architecture") + strlen("general.architecture") + 4 + 8;
	memcpy(c + at, "gpt2x", 5);
	expect_model_fail(c, len, SKIPPER_ERR_UNSUPPORTED, "wrong architecture", "gpt2x", "not supported");
	memcpy(c, b, len);
	at = find(c, len, "llama.block_count");
	c[at + 6] = 'X';
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "missing hyper-parameter", "llama.block_count", NULL);
	memcpy(c, b, len);
	at = find(c, len, "output_norm.weight") + strlen("output_norm.weight") + 4 + 8;
	p32(c, at, SKIPPER_F16); /* F32 [64] -> F16 [64]: smaller, still fits */
	expect_model_fail(c, len, SKIPPER_ERR_UNSUPPORTED, "norm must be F32", "output_norm.weight", "F32");
	/* a context of no token loaded (every size derived from it zero) */
	memcpy(c, b, len);
	at = find(c, len, "llama.context_length") + strlen("llama.context_length"); /* then its type, then the value */
	p32(c, at + 4, 0);
	expect_model_fail(c, len, SKIPPER_ERR_FORMAT, "context_length = 0 is refused, naming the key",
	                  "llama.context_length = 0", "at least one token");
	/* a special token id past the vocabulary loaded (dropped in silence) */
	memcpy(c, b, len);
	at = find(c, len, "tokenizer.ggml.bos_token_id") + strlen("tokenizer.ggml.bos_token_id");
	p32(c, at + 4, 4000000000u);
	gw_dump(path, c, len);
	{
		struct skipper_model *mm = NULL;
		struct skipper_tokenizer *t = NULL;
		int rc = skipper_model_load(path, &mm, &err);
		if (!rc)
			rc = skipper_tokenizer_from_gguf(mm->gguf, &t, &err);
		ok(rc == SKIPPER_ERR_FORMAT && !t && strstr(err.msg, "tokenizer.ggml.bos_token_id = 4000000000 is past the vocabulary"),
		   "bos_token_id = 4000000000 is refused, naming the key (%s)", err.msg);
		skipper_tokenizer_free(t);
		skipper_model_free(mm);
	}
	free(b);
	free(c);
	test_qwen_models();

	/* info output */
	skipper_test_model_defaults(&o);
	o.tied = 1;
	skipper_test_model_write(path, &o);
	if (skipper_model_load(path, &m, &err) == 0) {
		char *text = NULL;
		size_t tl = 0;
		FILE *f = open_memstream(&text, &tl);
		skipper_model_print_info(m, f);
		fclose(f);
		ok(strstr(text, "architecture:    llama") && strstr(text, "layers:          4") && strstr(text, "F32 x") &&
		   strstr(text, "gpt2") && strstr(text, "chat template:   yes") && strstr(text, "tied embeddings: yes"),
		   "print_info");
		for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
			diag("%s", line);
		free(text);
		skipper_model_free(m);
	} else {
		ok(0, "info model loads: %s", err.msg);
	}

	/* determinism of the generator */
	char p2[600];
	snprintf(p2, sizeof p2, "%s/again.gguf", dir);
	skipper_test_model_defaults(&o);
	o.dtype = SKIPPER_Q4_1;
	skipper_test_model_write(path, &o);
	skipper_test_model_write(p2, &o);
	size_t l1, l2;
	uint8_t *b1 = slurp(path, &l1), *b2 = slurp(p2, &l2);
	ok(b1 && b2 && l1 == l2 && !memcmp(b1, b2, l1), "same seed, same bytes");
	free(b2);
	o.seed = 2;
	skipper_test_model_write(p2, &o);
	b2 = slurp(p2, &l2);
	ok(b2 && l1 == l2 && memcmp(b1, b2, l1), "other seed, other weights");
	free(b1);
	free(b2);
	unlink(p2);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/t-gguf.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp %s\n", dir);
		return 1;
	}
	snprintf(path, sizeof path, "%s/test.gguf", dir);
	test_good();
	test_release();
	test_truncated();
	test_corrupt();
	test_models();
	unlink(path);
	rmdir(dir);
	return tap_done();
}
