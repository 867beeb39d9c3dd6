/* core/model/ -- model files. The GGUF reader (gguf.c, bounds-checked over a
 * read-only mmap), tensor types and their block layouts (quant.c), and
 * architectures (model.c): hyper-parameters and weight views into the mapping.
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

/* A loaded model: the view backends read, and what only the loader and
 * its callers use (the file, its metadata, the SHA-256 cache). */
struct skipper_model {
	struct skipper_model_view view; /* first: the loader's release hook finds the model from it */
	struct skipper_gguf *gguf;      /* owned; tokenizer metadata is read from it */
	uint64_t n_params;
	float *rope_freqs_buf;          /* owned storage behind view.rope_freqs when computed */
	char sha256[65];                /* cache of skipper_model_sha256(); "" until computed */
};

/* Load a model from a GGUF file. Checks architecture, every required tensor,
 * its shape and type. *out is owned by the caller: skipper_model_free(). */
int skipper_model_load(const char *path, struct skipper_model **out, struct skipper_error *err);
void skipper_model_free(struct skipper_model *m);

/* SHA-256 of the model file as 64 lowercase hex chars + NUL (computed on first
 * call and cached). Used to bind skip profiles to a model. */
int skipper_model_sha256(struct skipper_model *m, char out[65], struct skipper_error *err);

/* `skipper info`: architecture, hyper-parameters, tensor types, tokenizer, size. */
void skipper_model_print_info(const struct skipper_model *m, FILE *f);

#endif
