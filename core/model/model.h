/* core/model/ -- model files. The GGUF reader (gguf.c, bounds-checked over a
 * read-only mmap), the safetensors reader (safetensors.c) and Hugging Face
 * checkpoints (hf_model.c, hf_config.c), tensor types and their block
 * layouts (quant.c), quantise on load (model_quantize.c), architectures
 * (model.c): hyper-parameters and weight views into the mappings, and a
 * model written back as GGUF (model_write.c over gguf_write.c).
 * Nothing here computes. May include: core/skipper/, error.h, and
 * core/backend/backend_abi.h for the types it fills (that header includes
 * nothing of ours but skipper/status.h). Called by the tokenizer
 * (metadata), backends (weights), the engine and the CLI. */
#ifndef SKIPPER_MODEL_H
#define SKIPPER_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "gguf.h"
#include "backend/backend_abi.h"

struct skipper_hf; /* a Hugging Face checkpoint's files (hf_model.c) */

/* A loaded model: the view backends read, and what only the loader and
 * its callers use (the files, their metadata, the SHA-256 cache). Exactly
 * one of gguf and hf is set. */
struct skipper_model {
	struct skipper_model_view view; /* first: the loader's release hook finds the model from it */
	struct skipper_gguf *gguf;      /* owned; tokenizer metadata is read from it */
	struct skipper_hf *hf;          /* owned; skipper_model_hf_file() names its files */
	uint64_t n_params;
	float *rope_freqs_buf;          /* owned storage behind view.rope_freqs when computed */
	void **owned;                   /* weights converted at load (norms in f32, quantised matrices) */
	int n_owned;
	int quantized;                  /* [model] quantize applied: the type, else -1 */
	double quantize_seconds;        /* what that took */
	char sha256[65];                /* cache of skipper_model_sha256(); "" until computed */
};

struct skipper_model_opts {
	int quantize; /* enum skipper_dtype the float matrices become, or -1: as stored */
};

/* Load a model: a GGUF file, or a directory holding a Hugging Face
 * checkpoint (config.json, model.safetensors or its shards through
 * model.safetensors.index.json). Checks architecture, every required
 * tensor, its shape and type. *out is owned by the caller:
 * skipper_model_free(). o may be NULL (weights as stored). */
int skipper_model_load_opts(const char *path, const struct skipper_model_opts *o, struct skipper_model **out,
                            struct skipper_error *err);
int skipper_model_load(const char *path, struct skipper_model **out, struct skipper_error *err);
void skipper_model_free(struct skipper_model *m);

/* The GGUF file or the checkpoint's directory; the bytes of its files. */
const char *skipper_model_path(const struct skipper_model *m);
uint64_t skipper_model_file_size(const struct skipper_model *m);

/* The name data for the model is kept under (profiles/STEM/, cost
 * curves): a GGUF file's name without .gguf; a checkpoint's name, ORG/NAME
 * written ORG--NAME. */
void skipper_model_stem(const struct skipper_model *m, char *buf, size_t cap);

/* For a Hugging Face checkpoint: DIR/name when that file is there (one of
 * the tokenizer's or the chat template's files), else NULL. malloc'ed,
 * owned by the caller. NULL for a GGUF model. */
char *skipper_model_hf_file(const struct skipper_model *m, const char *name);
/* A JSON object file of a checkpoint (config.json, tokenizer.json, ...):
 * a regular file of at most 256 MiB; NULL with err naming the file and,
 * for bad JSON, the line and column. The caller json_decref()s it. */
struct json_t;
struct json_t *skipper_hf_json_file(const char *path, struct skipper_error *err);
/* A Hugging Face checkpoint's end-of-generation ids from
 * generation_config.json (eos_token_id, a number or a list): up to max
 * into ids, their count; 0 when there is none. */
int skipper_model_hf_eos(const struct skipper_model *m, int32_t *ids, int max);

/* The name of a quantize type ("q8_0", "q4_k", ...) as its enum
 * skipper_dtype, "none" as -1; -2 for any other name. */
int skipper_model_quantize_type(const char *name);

/* The model as a GGUF file at path (written atomically), in llama.cpp's
 * conventions so that it loads there too: its hyper-parameters, names
 * and weights as loaded (after [model] quantize), added to o after the
 * metadata the caller put there (the tokenizer's). */
struct skipper_gguf_out;
int skipper_model_write_gguf(const struct skipper_model *m, struct skipper_gguf_out *o, const char *path,
                             struct skipper_error *err);

/* SHA-256 of the model file as 64 lowercase hex chars + NUL (computed on first
 * call and cached); for a checkpoint, of its files' names and hashes; with
 * quantize, of that and the type. Used to bind skip profiles to a model. */
int skipper_model_sha256(struct skipper_model *m, char out[65], struct skipper_error *err);

/* `skipper info`: architecture, hyper-parameters, tensor types, tokenizer, size. */
void skipper_model_print_info(const struct skipper_model *m, FILE *f);

#endif
