/* Writing a GGUF v3 file: metadata keys as they are added, then the tensor
 * infos and the tensors' bytes at 32-byte aligned offsets, written
 * atomically (nothing is left at the path when anything fails). */
#ifndef SKIPPER_GGUF_WRITE_H
#define SKIPPER_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "skipper/status.h"

struct skipper_gguf_out; /* opaque */

/* A new, empty file description; NULL when out of memory. Owned by the
 * caller: skipper_gguf_out_free(). */
struct skipper_gguf_out *skipper_gguf_out_new(void);
void skipper_gguf_out_free(struct skipper_gguf_out *o);

/* Metadata, in the order added. An allocation failure is remembered and
 * reported by skipper_gguf_out_write. */
void skipper_gguf_out_u32(struct skipper_gguf_out *o, const char *key, uint32_t v);
void skipper_gguf_out_i32(struct skipper_gguf_out *o, const char *key, int32_t v);
void skipper_gguf_out_f32(struct skipper_gguf_out *o, const char *key, float v);
void skipper_gguf_out_bool(struct skipper_gguf_out *o, const char *key, int v);
void skipper_gguf_out_str(struct skipper_gguf_out *o, const char *key, const char *v, size_t len);
/* n strings (lens NULL: NUL-terminated). */
void skipper_gguf_out_arr_str(struct skipper_gguf_out *o, const char *key, const char *const *v, const uint32_t *lens,
                              size_t n);
/* n packed little-endian elements of GGUF type elem_type (INT32, FLOAT32). */
void skipper_gguf_out_arr(struct skipper_gguf_out *o, const char *key, int elem_type, const void *data, size_t n);

/* A tensor of type (enum skipper_dtype) and shape ne[0..n_dims-1] (ne[0]
 * contiguous); its nbytes at data are read when the file is written and
 * must stay valid until then. */
void skipper_gguf_out_tensor(struct skipper_gguf_out *o, const char *name, int type, int n_dims, const int64_t *ne,
                             const void *data, uint64_t nbytes);

/* Write the file to path atomically; err names path and the reason. */
int skipper_gguf_out_write(struct skipper_gguf_out *o, const char *path, struct skipper_error *err);

#endif
