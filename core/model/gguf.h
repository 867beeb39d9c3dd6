/* GGUF v2/v3 reader over a read-only mmap. Every offset, count, size and
 * string is checked against the file before use; nothing is copied except the
 * small index tables. */
#ifndef SKIPPER_GGUF_H
#define SKIPPER_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "skipper/status.h"

enum skipper_gguf_type {
	GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8 = 1, GGUF_TYPE_UINT16 = 2, GGUF_TYPE_INT16 = 3,
	GGUF_TYPE_UINT32 = 4, GGUF_TYPE_INT32 = 5, GGUF_TYPE_FLOAT32 = 6, GGUF_TYPE_BOOL = 7,
	GGUF_TYPE_STRING = 8, GGUF_TYPE_ARRAY = 9, GGUF_TYPE_UINT64 = 10, GGUF_TYPE_INT64 = 11,
	GGUF_TYPE_FLOAT64 = 12,
};

struct skipper_gguf; /* opaque */

struct skipper_gguf_str { const char *ptr; uint64_t len; }; /* points into the mapping, not NUL-terminated */

struct skipper_gguf_tensor {
	struct skipper_gguf_str name;
	int type;            /* enum skipper_dtype */
	int n_dims;          /* 1..4 */
	int64_t ne[4];       /* ne[0] = elements per row (contiguous), unused dims = 1 */
	const void *data;    /* into the mapping, already bounds-checked */
	uint64_t nbytes;
};

/* Open and validate PATH. On success *out owns the mapping; free with
 * skipper_gguf_close(). Errors name the file and what is wrong. */
int skipper_gguf_open(const char *path, struct skipper_gguf **out, struct skipper_error *err);
void skipper_gguf_close(struct skipper_gguf *g);

/* Tell the kernel that [p, p + n) of the mapping will not be read for a
 * while (a backend that keeps its own copy of those weights): the whole
 * pages inside it leave the process's resident set. Reading them later
 * is still correct (they come back from the file). Nothing happens when g
 * is NULL or the range is not inside g's mapping. */
void skipper_gguf_release(const struct skipper_gguf *g, const void *p, uint64_t n);

const char *skipper_gguf_path(const struct skipper_gguf *g);
uint32_t skipper_gguf_version(const struct skipper_gguf *g);
uint64_t skipper_gguf_file_size(const struct skipper_gguf *g);

/* Metadata: index of KEY or -1. */
int64_t skipper_gguf_find_key(const struct skipper_gguf *g, const char *key);
int64_t skipper_gguf_n_keys(const struct skipper_gguf *g);
struct skipper_gguf_str skipper_gguf_key_name(const struct skipper_gguf *g, int64_t i);
int skipper_gguf_key_type(const struct skipper_gguf *g, int64_t i);

/* Typed getters by key name. Return SKIPPER_OK, SKIPPER_ERR_NOT_FOUND when the
 * key is absent, SKIPPER_ERR_FORMAT when it has an incompatible type. Integer
 * getters accept any integer type whose value fits. */
int skipper_gguf_get_u32(const struct skipper_gguf *g, const char *key, uint32_t *out);
int skipper_gguf_get_i64(const struct skipper_gguf *g, const char *key, int64_t *out);
int skipper_gguf_get_f32(const struct skipper_gguf *g, const char *key, float *out);
int skipper_gguf_get_bool(const struct skipper_gguf *g, const char *key, int *out);
int skipper_gguf_get_str(const struct skipper_gguf *g, const char *key, struct skipper_gguf_str *out);

/* Arrays: element type and count; then element access. Strings by index;
 * numeric arrays as a pointer to the packed little-endian elements. */
int skipper_gguf_get_arr(const struct skipper_gguf *g, const char *key, int *elem_type, uint64_t *count);
int skipper_gguf_arr_str(const struct skipper_gguf *g, const char *key, uint64_t i, struct skipper_gguf_str *out);
/* The packed elements are NOT aligned (metadata has no padding): read them
 * with memcpy, or with the element getters below. */
int skipper_gguf_arr_data(const struct skipper_gguf *g, const char *key, const void **data);
/* Element i of a numeric array, converted: any integer or bool type as
 * int64 (u64 above INT64_MAX -> SKIPPER_ERR_FORMAT), any numeric type as
 * float. SKIPPER_ERR_RANGE when i >= count, SKIPPER_ERR_FORMAT for string
 * arrays or non-arrays. */
int skipper_gguf_arr_get_i64(const struct skipper_gguf *g, const char *key, uint64_t i, int64_t *out);
int skipper_gguf_arr_get_f32(const struct skipper_gguf *g, const char *key, uint64_t i, float *out);

/* Tensors. */
int64_t skipper_gguf_n_tensors(const struct skipper_gguf *g);
const struct skipper_gguf_tensor *skipper_gguf_tensor(const struct skipper_gguf *g, int64_t i);
const struct skipper_gguf_tensor *skipper_gguf_find_tensor(const struct skipper_gguf *g, const char *name);

#endif
