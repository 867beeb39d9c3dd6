/* safetensors reader over a read-only mmap: the JSON header parsed with
 * every field checked against the file (dtype, shape, offsets inside the
 * data, no two tensors sharing bytes) before any tensor is handed out. The
 * tensors are described as GGUF ones are (struct skipper_gguf_tensor), so
 * the model loader binds either kind the same way. */
#ifndef SKIPPER_SAFETENSORS_H
#define SKIPPER_SAFETENSORS_H

#include <stdint.h>

#include "gguf.h"

struct skipper_safetensors; /* opaque */

/* Largest header accepted: the format's own readers refuse more than
 * 100 MB (a forged length would otherwise make us parse gigabytes). */
#define SKIPPER_SAFETENSORS_MAX_HEADER (100u << 20)

/* Open and validate PATH. F32, F16 and BF16 tensors of 1 to 4 dimensions
 * are read; any other dtype is refused naming the tensor. On success *out
 * owns the mapping: skipper_safetensors_close(). In each tensor, ne[0] is
 * the last (contiguous) dimension of the file's shape, as GGUF counts. */
int skipper_safetensors_open(const char *path, struct skipper_safetensors **out, struct skipper_error *err);
void skipper_safetensors_close(struct skipper_safetensors *s);

/* The same checks on a header and data held in memory (the fuzz target):
 * buf is the whole file. The result refers into buf. */
int skipper_safetensors_parse(const void *buf, uint64_t len, const char *path, struct skipper_safetensors **out,
                              struct skipper_error *err);

const char *skipper_safetensors_path(const struct skipper_safetensors *s);
uint64_t skipper_safetensors_size(const struct skipper_safetensors *s);
int64_t skipper_safetensors_n_tensors(const struct skipper_safetensors *s);
/* Tensor i; its name is NUL-terminated (name.ptr[name.len] == 0). */
const struct skipper_gguf_tensor *skipper_safetensors_tensor(const struct skipper_safetensors *s, int64_t i);

/* As skipper_gguf_release, for a range inside this file's mapping. */
void skipper_safetensors_release(const struct skipper_safetensors *s, const void *p, uint64_t n);

#endif
