/* Inside core/model/: what the GGUF and the Hugging Face loaders share.
 * Each reads its own metadata into the hyper-parameters and names its
 * tensors as GGUF does ("blk.3.attn_q.weight"); model.c checks the
 * hyper-parameters and binds the weights the same way for both. */
#ifndef SKIPPER_MODEL_IMPL_H
#define SKIPPER_MODEL_IMPL_H

#include <jansson.h>

#include "model.h"

struct arch_info {
	const char *name;
	int id, rope_style, qkv_bias, qk_norm;
};

/* The architecture called name (len bytes), or NULL. */
const struct arch_info *model_arch(const char *name, size_t len);

/* A model's tensors under GGUF names: find by name, or the i-th of n. */
struct tensor_src {
	const void *ctx;
	const struct skipper_gguf_tensor *(*find)(const void *ctx, const char *name);
	const struct skipper_gguf_tensor *(*at)(const void *ctx, int64_t i);
	int64_t n;
	/* NULL for GGUF; else the name (in buf) and shape order of the
	 * model's own files, for messages */
	const char *(*hf_name)(const char *gguf_name, char *buf, size_t cap);
};

/* bytes of storage for weights converted at load, owned (and freed) by m;
 * NULL when out of memory. */
void *model_alloc(struct skipper_model *m, size_t bytes);

/* The tensors of a loaded model, GGUF-named (norms of a checkpoint as f32). */
struct tensor_src model_tensors(const struct skipper_model *m);
struct tensor_src model_hf_tensors(const struct skipper_hf *hf);

struct loader {
	const struct arch_info *arch;
	struct skipper_model *m;
	struct tensor_src src;
	const char *path;  /* for messages: the file, or the checkpoint's config.json */
	struct skipper_error *err;
};

/* The hyper-parameters read into m->view.hp checked for what every later
 * size relies on; rope_freqs computed for llama3 scaling without a tensor. */
int model_check_hparams(struct loader *L);
/* Every weight of the architecture bound from L->src, with its shape and,
 * for norms and biases, type F32 checked. */
int model_bind_tensors(struct loader *L);

/* config.json into L->arch, m->view.arch and m->view.hp (hf_config.c). */
int model_hf_config(struct loader *L, json_t *cfg);

/* Hugging Face checkpoint directory (config.json, safetensors): fills m
 * (arch, name, hparams, weights) and m->hf. */
int model_load_hf(struct skipper_model *m, const char *dir, struct skipper_error *err);
void model_free_hf(struct skipper_hf *hf);
void model_release_hf(const struct skipper_hf *hf, const void *p, uint64_t n);
uint64_t model_hf_size(const struct skipper_hf *hf);
int model_hf_sha256(const struct skipper_hf *hf, char out[65], struct skipper_error *err);

/* Weights of float type converted once to type q (m->quantized set); the
 * packed blocks are owned by m. */
int model_quantize(struct skipper_model *m, int q, struct skipper_error *err);

#endif
