/* Tiny GGUF v3 writer for tests: metadata of every type, string arrays and
 * tensors placed at aligned offsets. It records where each header field
 * landed so corruption tests can patch exact bytes. Test code only: on
 * allocation failure it aborts. */
#ifndef SKIPPER_TEST_GGUF_WRITER_H
#define SKIPPER_TEST_GGUF_WRITER_H

#include <stddef.h>
#include <stdint.h>

struct gw;

struct gw_tensor_layout {
	size_t info;       /* file offset of the tensor's name length */
	size_t n_dims;     /* of its n_dims field */
	size_t dims;       /* of ne[0] */
	size_t type;       /* of its type field */
	size_t offset;     /* of its data-offset field */
	uint64_t data_off; /* its data offset (relative to the data section) */
	uint64_t nbytes;
};

struct gw_layout {
	size_t version, n_tensors, n_kv; /* header field offsets */
	size_t kv_start, tensors_start;  /* first key, first tensor info */
	size_t data_start, size;
	size_t n;                        /* tensors */
	struct gw_tensor_layout *t;
};

/* New writer (version 3, alignment 32 without a general.alignment key).
 * Owned by the caller: gw_free(). */
struct gw *gw_new(void);
void gw_free(struct gw *w);
void gw_set_version(struct gw *w, uint32_t version);
/* Writes general.alignment (uint32) and aligns data to it. */
void gw_set_alignment(struct gw *w, uint32_t alignment);

void gw_u8(struct gw *w, const char *key, uint8_t v);
void gw_u32(struct gw *w, const char *key, uint32_t v);
void gw_i32(struct gw *w, const char *key, int32_t v);
void gw_u64(struct gw *w, const char *key, uint64_t v);
void gw_i64(struct gw *w, const char *key, int64_t v);
void gw_f32(struct gw *w, const char *key, float v);
void gw_f64(struct gw *w, const char *key, double v);
void gw_bool(struct gw *w, const char *key, int v);
void gw_str(struct gw *w, const char *key, const char *v);
void gw_arr_str(struct gw *w, const char *key, const char *const *v, size_t n);
/* Numeric array of n packed little-endian elements of elem_type. */
void gw_arr(struct gw *w, const char *key, int elem_type, const void *data, size_t n);
/* Raw key: type and value bytes as given (for malformed files). */
void gw_raw(struct gw *w, const char *key, uint32_t type, const void *val, size_t len);

/* Tensor of GGUF type `type` (enum skipper_dtype), ne[0..n_dims-1]; data
 * (row bytes x rows) is copied; NULL data writes zeros. */
void gw_tensor(struct gw *w, const char *name, int type, int n_dims, const int64_t *ne, const void *data);

/* Tensor whose bytes are made when the file is built or written:
 * fill(ctx, dst, row0, nrows) writes rows [row0, row0 + nrows) (row = ne[0]
 * elements) to dst. Tensors are filled in the order they were added, so a
 * generator may share state (a PRNG) between them. gw_write_file streams
 * them a block of rows at a time: files larger than memory. ctx is the
 * writer's: gw_free frees it with free(). */
typedef void (*gw_fill_fn)(void *ctx, void *dst, int64_t row0, int64_t nrows);
void gw_tensor_gen(struct gw *w, const char *name, int type, int n_dims, const int64_t *ne, gw_fill_fn fill,
                   void *ctx);

/* Serialise into *buf (malloc'ed, owned by the caller). The layout stays
 * valid until the next gw_build or gw_free. */
void gw_build(struct gw *w, uint8_t **buf, size_t *len);
const struct gw_layout *gw_layout(const struct gw *w);
/* Write to path (streamed, same bytes as gw_build); 0 on success, -1 on I/O error. */
int gw_write_file(struct gw *w, const char *path);
/* Write len bytes of buf to path; 0 / -1. */
int gw_dump(const char *path, const void *buf, size_t len);

#endif
