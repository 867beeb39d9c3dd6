/* GGUF v2/v3 reader. The whole file is mapped read-only; parsing walks it
 * with a cursor that refuses to step past the end, so a corrupt or truncated
 * file can only ever produce an error naming the file, the byte offset and
 * the key or tensor involved. v2 and v3 share the little-endian layout (v3
 * only added big-endian files, which we refuse with a clear message). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/file.h"
#include "gguf.h"
#include "gguf_impl.h"
#include "quant.h"

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_TENSOR_NAME 64      /* GGML_MAX_NAME: longer names cannot come from a converter */
#define GGUF_MAX_KEY 65535           /* spec: keys are at most 2^16-1 bytes */
#define GGUF_MAX_DIMS 4

/* ---- bounds-checked cursor ------------------------------------------------ */

struct cur {
	const struct skipper_gguf *g;
	uint64_t pos;
	struct skipper_error *err;
};

static int need(struct cur *c, uint64_t n, const char *what)
{
	if (n > c->g->size || c->pos > c->g->size - n)
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT,
		                    "%s: truncated file: %s at offset %llu needs %llu bytes, file has %llu",
		                    c->g->path, what, (unsigned long long)c->pos, (unsigned long long)n,
		                    (unsigned long long)c->g->size);
	return SKIPPER_OK;
}

static int rd_u32(struct cur *c, uint32_t *v, const char *what)
{
	int rc = need(c, 4, what);
	if (rc) return rc;
	memcpy(v, c->g->base + c->pos, 4);
	c->pos += 4;
	return SKIPPER_OK;
}

static int rd_u64(struct cur *c, uint64_t *v, const char *what)
{
	int rc = need(c, 8, what);
	if (rc) return rc;
	memcpy(v, c->g->base + c->pos, 8);
	c->pos += 8;
	return SKIPPER_OK;
}

static int rd_str(struct cur *c, struct skipper_gguf_str *s, const char *what)
{
	uint64_t len, at = c->pos;
	int rc = rd_u64(c, &len, what);
	if (rc) return rc;
	if (len > c->g->size - c->pos)
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT,
		                    "%s: %s at offset %llu: string length %llu runs past the end of the file (%llu bytes)",
		                    c->g->path, what, (unsigned long long)at, (unsigned long long)len,
		                    (unsigned long long)c->g->size);
	s->ptr = (const char *)c->g->base + c->pos;
	s->len = len;
	c->pos += len;
	return SKIPPER_OK;
}

/* ---- helpers -------------------------------------------------------------- */

size_t gguf_scalar_size(int type)
{
	switch (type) {
	case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
	case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
	case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
	case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
	}
	return 0;
}

/* FNV-1a from a random seed, then a finalizer that spreads every bit into
 * the low ones the table uses. A model file is untrusted input: plain
 * FNV-1a's low k bits depend only on the low k bits of the input, so a file
 * can chain thousands of names into one probe run (65536 keys took 7.4 s
 * to open); with the seed unknown and all 64 bits mixed in, it cannot. */
static uint64_t hash_str(uint64_t seed, const char *p, uint64_t len)
{
	uint64_t h = 1469598103934665603ull ^ seed;
	for (uint64_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
	h ^= h >> 33; /* MurmurHash3's fmix64 */
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

static int str_eq(struct skipper_gguf_str a, const char *p, uint64_t len)
{
	return a.len == len && memcmp(a.ptr, p, len) == 0;
}

/* Printable, bounded copy of a name for error messages. */
static const char *show(struct skipper_gguf_str s, char buf[96])
{
	size_t n = s.len < 80 ? (size_t)s.len : 80, j = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s.ptr[i];
		buf[j++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
	}
	if (s.len > n) { buf[j++] = '.'; buf[j++] = '.'; buf[j++] = '.'; }
	buf[j] = '\0';
	return buf;
}

static uint64_t pow2_at_least(uint64_t n)
{
	uint64_t c = 16;
	while (c < n * 2)
		c *= 2;
	return c;
}

/* Insert index i (name s) into table; returns the index already there under
 * the same name, or -1 once inserted. Names come from getter lambdas. */
struct skipper_gguf_str gguf_kv_name(const struct skipper_gguf *g, uint64_t i) { return g->kv[i].name; }
struct skipper_gguf_str gguf_tensor_name(const struct skipper_gguf *g, uint64_t i) { return g->tensors[i].name; }

int64_t gguf_table_lookup(const struct skipper_gguf *g, const uint32_t *tab, uint64_t cap, gguf_name_fn nf,
                            const char *p, uint64_t len)
{
	if (!tab)
		return -1;
	for (uint64_t h = hash_str(g->hash_seed, p, len) & (cap - 1);; h = (h + 1) & (cap - 1)) {
		if (!tab[h])
			return -1;
		if (str_eq(nf(g, tab[h] - 1), p, len))
			return (int64_t)tab[h] - 1;
	}
}

static int64_t table_insert(const struct skipper_gguf *g, uint32_t *tab, uint64_t cap, gguf_name_fn nf, uint64_t i)
{
	struct skipper_gguf_str s = nf(g, i);
	for (uint64_t h = hash_str(g->hash_seed, s.ptr, s.len) & (cap - 1);; h = (h + 1) & (cap - 1)) {
		if (!tab[h]) {
			tab[h] = (uint32_t)(i + 1);
			return -1;
		}
		if (str_eq(nf(g, tab[h] - 1), s.ptr, s.len))
			return (int64_t)tab[h] - 1;
	}
}

static const char *ggml_type_name(uint32_t t)
{
	static const char *names[] = {
		"F32", "F16", "Q4_0", "Q4_1", "Q4_2(removed)", "Q4_3(removed)", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
		"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
		"IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16",
	};
	return t < sizeof names / sizeof names[0] ? names[t] : NULL;
}

/* ---- metadata ------------------------------------------------------------- */

static int parse_kv(struct cur *c, struct skipper_gguf *g, struct gguf_kv *kv, int64_t idx)
{
	char nb[96];
	uint64_t at = c->pos;
	uint32_t type;
	int rc = rd_str(c, &kv->name, "metadata key");
	if (rc) return rc;
	if (kv->name.len == 0 || kv->name.len > GGUF_MAX_KEY)
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: metadata key #%lld at offset %llu has length %llu (must be 1..%d)",
		                    g->path, (long long)idx, (unsigned long long)at, (unsigned long long)kv->name.len, GGUF_MAX_KEY);
	if ((rc = rd_u32(c, &type, "metadata value type")))
		return skipper_fail_prefix(c->err, "key '%s'", show(kv->name, nb));
	kv->type = (int)type;
	kv->val = g->base + c->pos;
	if (type == GGUF_TYPE_STRING) {
		struct skipper_gguf_str s;
		if ((rc = rd_str(c, &s, "string value")))
			return skipper_fail_prefix(c->err, "key '%s'", show(kv->name, nb));
		return SKIPPER_OK;
	}
	if (type != GGUF_TYPE_ARRAY) {
		size_t sz = gguf_scalar_size((int)type);
		if (!sz)
			return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: key '%s' at offset %llu: unknown value type %u",
			                    g->path, show(kv->name, nb), (unsigned long long)at, type);
		if ((rc = need(c, sz, "metadata value")))
			return skipper_fail_prefix(c->err, "key '%s'", show(kv->name, nb));
		c->pos += sz;
		return SKIPPER_OK;
	}

	uint32_t et;
	uint64_t count;
	if ((rc = rd_u32(c, &et, "array element type")) || (rc = rd_u64(c, &count, "array length")))
		return skipper_fail_prefix(c->err, "key '%s'", show(kv->name, nb));
	kv->elem_type = (int)et;
	kv->count = count;
	kv->val = g->base + c->pos;
	if (et == GGUF_TYPE_ARRAY)
		return skipper_fail(c->err, SKIPPER_ERR_UNSUPPORTED, "%s: key '%s': nested arrays are not supported",
		                    g->path, show(kv->name, nb));
	if (et == GGUF_TYPE_STRING) {
		/* each element takes at least its 8-byte length: refuse before allocating */
		if (count > (g->size - c->pos) / 8)
			return skipper_fail(c->err, SKIPPER_ERR_FORMAT,
			                    "%s: key '%s': string array of %llu elements cannot fit in the %llu bytes left after offset %llu",
			                    g->path, show(kv->name, nb), (unsigned long long)count,
			                    (unsigned long long)(g->size - c->pos), (unsigned long long)c->pos);
		kv->str_off = malloc((count ? count : 1) * sizeof *kv->str_off);
		if (!kv->str_off)
			return skipper_fail(c->err, SKIPPER_ERR_NOMEM, "%s: key '%s': no memory for %llu string offsets",
			                    g->path, show(kv->name, nb), (unsigned long long)count);
		for (uint64_t i = 0; i < count; i++) {
			struct skipper_gguf_str s;
			kv->str_off[i] = c->pos;
			if ((rc = rd_str(c, &s, "array string")))
				return skipper_fail_prefix(c->err, "key '%s' element %llu", show(kv->name, nb), (unsigned long long)i);
		}
		return SKIPPER_OK;
	}
	size_t sz = gguf_scalar_size((int)et);
	if (!sz)
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: key '%s': unknown array element type %u",
		                    g->path, show(kv->name, nb), et);
	if (count > (g->size - c->pos) / sz)
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT,
		                    "%s: key '%s': array of %llu x %zu-byte elements at offset %llu runs past the end of the file (%llu bytes)",
		                    g->path, show(kv->name, nb), (unsigned long long)count, sz,
		                    (unsigned long long)c->pos, (unsigned long long)g->size);
	c->pos += count * sz;
	return SKIPPER_OK;
}

/* ---- tensor infos --------------------------------------------------------- */

static int parse_tensor_info(struct cur *c, struct skipper_gguf *g, struct skipper_gguf_tensor *t,
                             uint64_t *offset, int64_t idx)
{
	char nb[96];
	uint64_t at = c->pos;
	uint32_t nd, type;
	int rc = rd_str(c, &t->name, "tensor name");
	if (rc) return rc;
	if (t->name.len == 0 || t->name.len > GGUF_MAX_TENSOR_NAME)
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: tensor #%lld at offset %llu: name length %llu (must be 1..%d)",
		                    g->path, (long long)idx, (unsigned long long)at, (unsigned long long)t->name.len,
		                    GGUF_MAX_TENSOR_NAME);
	show(t->name, nb);
	if ((rc = rd_u32(c, &nd, "tensor n_dims")))
		return skipper_fail_prefix(c->err, "tensor '%s'", nb);
	if (nd < 1 || nd > GGUF_MAX_DIMS)
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': n_dims = %u (must be 1..%d)",
		                    g->path, nb, nd, GGUF_MAX_DIMS);
	t->n_dims = (int)nd;
	uint64_t nelem = 1;
	for (int d = 0; d < GGUF_MAX_DIMS; d++) {
		uint64_t v = 1;
		if (d < (int)nd && (rc = rd_u64(c, &v, "tensor dimension")))
			return skipper_fail_prefix(c->err, "tensor '%s'", nb);
		if (v == 0 || v > (uint64_t)INT64_MAX)
			return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': dimension %d = %llu is out of range",
			                    g->path, nb, d, (unsigned long long)v);
		if (nelem > (uint64_t)INT64_MAX / v)
			return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': element count overflows at dimension %d",
			                    g->path, nb, d);
		nelem *= v;
		t->ne[d] = (int64_t)v;
	}
	if ((rc = rd_u32(c, &type, "tensor type")) || (rc = rd_u64(c, offset, "tensor data offset")))
		return skipper_fail_prefix(c->err, "tensor '%s'", nb);
	t->type = (int)type;
	if (!skipper_dtype_name((int)type)) {
		const char *tn = ggml_type_name(type);
		if (tn)
			return skipper_fail(c->err, SKIPPER_ERR_UNSUPPORTED,
			                    "%s: tensor '%s': type %s (%u) is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1 are)",
			                    g->path, nb, tn, type);
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': invalid type %u", g->path, nb, type);
	}
	int blk = skipper_dtype_block((int)type);
	if (t->ne[0] % blk)
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': row length %lld is not a multiple of the %s block size %d",
		                    g->path, nb, (long long)t->ne[0], skipper_dtype_name((int)type), blk);
	uint64_t rows = nelem / (uint64_t)t->ne[0];
	uint64_t rb = skipper_dtype_row_bytes((int)type, t->ne[0]);
	if (rb == 0 || rows > UINT64_MAX / rb || rows * rb > g->size)
		return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': %lld x %lld x %lld x %lld %s needs more bytes than the file has (%llu)",
		                    g->path, nb, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
		                    (long long)t->ne[3], skipper_dtype_name((int)type), (unsigned long long)g->size);
	t->nbytes = rows * rb;
	return SKIPPER_OK;
}

static int cmp_by_data(const void *a, const void *b)
{
	const struct skipper_gguf_tensor *x = *(const struct skipper_gguf_tensor *const *)a;
	const struct skipper_gguf_tensor *y = *(const struct skipper_gguf_tensor *const *)b;
	return (x->data > y->data) - (x->data < y->data);
}

/* ---- open ----------------------------------------------------------------- */

/* Magic, version, and the two counts, checked against what the file can hold. */
static int parse_header(struct skipper_gguf *g, struct cur *c, uint64_t *n_tensors, uint64_t *n_kv)
{
	struct skipper_error *err = c->err;
	uint32_t magic;
	int rc;

	if ((rc = rd_u32(c, &magic, "magic")))
		return rc;
	if (memcmp(g->base, "GGUF", 4) != 0)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: not a GGUF file (magic %02x %02x %02x %02x, want \"GGUF\")",
		                    g->path, g->base[0], g->base[1], g->base[2], g->base[3]);
	if ((rc = rd_u32(c, &g->version, "version")))
		return rc;
	if (g->version == 0x02000000u || g->version == 0x03000000u)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "%s: big-endian GGUF files are not supported", g->path);
	if (g->version != 2 && g->version != 3)
		return skipper_fail(err, g->version == 1 ? SKIPPER_ERR_UNSUPPORTED : SKIPPER_ERR_FORMAT,
		                    "%s: GGUF version %u is not supported (2 and 3 are)", g->path, g->version);
	if ((rc = rd_u64(c, n_tensors, "tensor count")) || (rc = rd_u64(c, n_kv, "metadata count")))
		return rc;
	/* smallest possible entries: a key is 8+1 name, 4 type, 1 value; a tensor
	 * info is 8+1 name, 4 n_dims, 8 dim, 4 type, 8 offset */
	uint64_t left = g->size - c->pos;
	if (*n_kv > left / 14 || *n_kv > UINT32_MAX / 4)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: metadata count %llu is impossible for a %llu-byte file",
		                    g->path, (unsigned long long)*n_kv, (unsigned long long)g->size);
	if (*n_tensors > left / 33 || *n_tensors > UINT32_MAX / 4)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor count %llu is impossible for a %llu-byte file",
		                    g->path, (unsigned long long)*n_tensors, (unsigned long long)g->size);
	return SKIPPER_OK;
}

/* The key/value section, indexed by name, then general.alignment. */
static int parse_metadata(struct skipper_gguf *g, struct cur *c, uint64_t n_kv)
{
	struct skipper_error *err = c->err;
	char nb[96];
	int rc;

	g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
	g->kv_cap = pow2_at_least(n_kv);
	g->kv_hash = calloc(g->kv_cap, sizeof *g->kv_hash);
	if (!g->kv || !g->kv_hash)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: no memory for %llu metadata entries", g->path, (unsigned long long)n_kv);
	for (uint64_t i = 0; i < n_kv; i++) {
		g->n_kv = (int64_t)i + 1; /* so close() frees the string index of a partly parsed entry */
		if ((rc = parse_kv(c, g, &g->kv[i], (int64_t)i)))
			return rc;
		int64_t dup = table_insert(g, g->kv_hash, g->kv_cap, gguf_kv_name, i);
		if (dup >= 0)
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: duplicate metadata key '%s' (entries %lld and %llu)",
			                    g->path, show(g->kv[i].name, nb), (long long)dup, (unsigned long long)i);
	}

	g->alignment = GGUF_DEFAULT_ALIGNMENT;
	int64_t ai = skipper_gguf_find_key(g, "general.alignment");
	if (ai >= 0) {
		uint32_t a;
		if (g->kv[ai].type != GGUF_TYPE_UINT32)
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: general.alignment has type %d, must be uint32",
			                    g->path, g->kv[ai].type);
		memcpy(&a, g->kv[ai].val, 4);
		if (a == 0 || (a & (a - 1)))
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: general.alignment = %u is not a power of two",
			                    g->path, a);
		g->alignment = a;
	}
	return SKIPPER_OK;
}

/* The tensor-info section, indexed by name; offs[i] gets tensor i's data offset. */
static int parse_tensor_infos(struct skipper_gguf *g, struct cur *c, uint64_t n_tensors, uint64_t *offs)
{
	char nb[96];
	int rc;

	for (uint64_t i = 0; i < n_tensors; i++) {
		g->n_tensors = (int64_t)i + 1;
		if ((rc = parse_tensor_info(c, g, &g->tensors[i], &offs[i], (int64_t)i)))
			return rc;
		int64_t dup = table_insert(g, g->t_hash, g->t_cap, gguf_tensor_name, i);
		if (dup >= 0)
			return skipper_fail(c->err, SKIPPER_ERR_FORMAT, "%s: duplicate tensor name '%s' (tensors %lld and %llu)",
			                    g->path, show(g->tensors[i].name, nb), (long long)dup, (unsigned long long)i);
	}
	return SKIPPER_OK;
}

/* Point each tensor at its data: aligned, inside the file, no two overlapping. */
static int place_tensors(struct skipper_gguf *g, uint64_t header_end, const uint64_t *offs, struct skipper_error *err)
{
	uint64_t n = (uint64_t)g->n_tensors;
	char nb[96], nb2[96];
	int rc = SKIPPER_OK;

	/* data section starts at the next multiple of the alignment */
	uint64_t pad = (g->alignment - header_end % g->alignment) % g->alignment;
	g->data_start = header_end + pad; /* header_end <= size, pad < 2^32: no overflow */
	for (uint64_t i = 0; i < n; i++) {
		struct skipper_gguf_tensor *t = &g->tensors[i];
		show(t->name, nb);
		if (offs[i] % g->alignment)
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%s': data offset %llu is not a multiple of the alignment %llu",
			                    g->path, nb, (unsigned long long)offs[i], (unsigned long long)g->alignment);
		if (g->data_start > g->size || offs[i] > g->size - g->data_start ||
		    t->nbytes > g->size - g->data_start - offs[i])
			return skipper_fail(err, SKIPPER_ERR_FORMAT,
			                    "%s: tensor '%s': data [%llu, +%llu) at data offset %llu lies outside the file (%llu bytes, data section at %llu)",
			                    g->path, nb, (unsigned long long)offs[i], (unsigned long long)t->nbytes,
			                    (unsigned long long)offs[i], (unsigned long long)g->size, (unsigned long long)g->data_start);
		t->data = g->base + g->data_start + offs[i];
	}
	if (n < 2)
		return SKIPPER_OK;
	const struct skipper_gguf_tensor **byoff = malloc(n * sizeof *byoff);
	if (!byoff)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: no memory", g->path);
	for (uint64_t i = 0; i < n; i++)
		byoff[i] = &g->tensors[i];
	qsort(byoff, n, sizeof *byoff, cmp_by_data);
	for (uint64_t i = 0; i + 1 < n; i++) {
		const struct skipper_gguf_tensor *a = byoff[i], *b = byoff[i + 1];
		if ((const uint8_t *)a->data + a->nbytes > (const uint8_t *)b->data) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap (data offsets %llu and %llu, %llu bytes)",
			                  g->path, show(a->name, nb), show(b->name, nb2),
			                  (unsigned long long)((const uint8_t *)a->data - g->base - g->data_start),
			                  (unsigned long long)((const uint8_t *)b->data - g->base - g->data_start),
			                  (unsigned long long)a->nbytes);
			break;
		}
	}
	free(byoff);
	return rc;
}

static int parse(struct skipper_gguf *g, struct skipper_error *err)
{
	struct cur c = { g, 0, err };
	uint64_t n_tensors, n_kv, *offs;
	int rc;

	if ((rc = parse_header(g, &c, &n_tensors, &n_kv)) || (rc = parse_metadata(g, &c, n_kv)))
		return rc;
	offs = calloc(n_tensors ? n_tensors : 1, sizeof *offs);
	g->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *g->tensors);
	g->t_cap = pow2_at_least(n_tensors);
	g->t_hash = calloc(g->t_cap, sizeof *g->t_hash);
	if (!offs || !g->tensors || !g->t_hash)
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: no memory for %llu tensors", g->path, (unsigned long long)n_tensors);
	if (!rc && !(rc = parse_tensor_infos(g, &c, n_tensors, offs)))
		rc = place_tensors(g, c.pos, offs, err);
	free(offs);
	return rc;
}

int skipper_gguf_open(const char *path, struct skipper_gguf **out, struct skipper_error *err)
{
	struct skipper_gguf *g;
	int fd, rc;

	*out = NULL;
	g = calloc(1, sizeof *g);
	if (!g || !(g->path = strdup(path))) {
		free(g);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "%s: out of memory", path);
	}
	if (getrandom(&g->hash_seed, sizeof g->hash_seed, GRND_NONBLOCK) != (ssize_t)sizeof g->hash_seed)
		g->hash_seed = (uint64_t)(uintptr_t)g ^ (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
	if ((fd = skipper_open_regular_fd(path, 0, NULL, &g->size, err)) < 0) {
		rc = err ? err->status : SKIPPER_ERR_IO;
		skipper_gguf_close(g);
		return rc;
	}
	if (g->size < 24) {
		close(fd);
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: truncated file: %llu bytes is shorter than a GGUF header (24)",
		                  path, (unsigned long long)g->size);
		skipper_gguf_close(g);
		return rc;
	}
	void *p = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: mmap: %s", path, strerror(errno));
		skipper_gguf_close(g);
		return rc;
	}
	g->base = p;
	if ((rc = parse(g, err))) {
		skipper_gguf_close(g);
		return rc;
	}
	*out = g;
	return SKIPPER_OK;
}

void skipper_gguf_release(const struct skipper_gguf *g, const void *p, uint64_t n)
{
	if (g)
		skipper_release_mapped(g->base, g->size, p, n);
}

void skipper_gguf_close(struct skipper_gguf *g)
{
	if (!g)
		return;
	if (g->kv)
		for (int64_t i = 0; i < g->n_kv; i++)
			free(g->kv[i].str_off);
	free(g->kv);
	free(g->kv_hash);
	free(g->tensors);
	free(g->t_hash);
	if (g->base)
		munmap((void *)g->base, g->size);
	free(g->path);
	free(g);
}
