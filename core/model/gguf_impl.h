/* The parsed GGUF file, shared by the parser (gguf.c) and the accessors
 * (gguf_get.c). Internal to core/model/. */
#ifndef SKIPPER_GGUF_IMPL_H
#define SKIPPER_GGUF_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

struct gguf_kv {
	struct skipper_gguf_str name;
	int type;
	const uint8_t *val;   /* scalar value, or first array element */
	int elem_type;        /* arrays only */
	uint64_t count;       /* arrays only */
	uint64_t *str_off;    /* string arrays: file offset of each element's length field */
};

struct skipper_gguf {
	char *path;
	const uint8_t *base;
	uint64_t size;
	uint32_t version;
	uint64_t alignment;
	uint64_t data_start;
	int64_t n_kv, n_tensors;
	struct gguf_kv *kv;
	struct skipper_gguf_tensor *tensors;
	/* open-addressing hash tables of indices (+1, 0 = empty), power-of-two sized */
	uint32_t *kv_hash, *t_hash;
	uint64_t kv_cap, t_cap;
	uint64_t hash_seed; /* random per file: see hash_str */
};

/* Bytes of one scalar of a GGUF value type, 0 for strings and arrays. */
size_t gguf_scalar_size(int type);

/* Name-indexed tables: index of the entry named p[0..len), or -1. */
typedef struct skipper_gguf_str (*gguf_name_fn)(const struct skipper_gguf *, uint64_t);
struct skipper_gguf_str gguf_kv_name(const struct skipper_gguf *g, uint64_t i);
struct skipper_gguf_str gguf_tensor_name(const struct skipper_gguf *g, uint64_t i);
int64_t gguf_table_lookup(const struct skipper_gguf *g, const uint32_t *tab, uint64_t cap, gguf_name_fn nf,
                          const char *p, uint64_t len);

#endif
