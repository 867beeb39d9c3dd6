/* Tiny Llama-family (llama, qwen2, qwen3) GGUF test models with seeded random weights (tests/gen-model is
 * the command-line face of this). Same options and seed give the same bytes
 * on every machine: the PRNG is our own splitmix64 and every float step is
 * plain IEEE arithmetic. */
#ifndef SKIPPER_TESTMODEL_H
#define SKIPPER_TESTMODEL_H

#include <stddef.h>
#include <stdint.h>

#define SKIPPER_TEST_MAX_LAYERS 64

enum skipper_test_tokenizer { SKIPPER_TEST_TOK_BYTES = 0, SKIPPER_TEST_TOK_SPM = 1 };

struct skipper_test_model_opts {
	int dtype;                 /* enum skipper_dtype of the 2-D weights; norms stay F32 */
	int n_layer, n_embd, n_ff, n_head, n_head_kv;
	int n_vocab;               /* at least; raised to what the tokenizer needs */
	int n_ctx;
	uint64_t seed;
	int tied;                  /* no output.weight: LM head = token_embd */
	int tokenizer;             /* enum skipper_test_tokenizer */
	float rope_theta, rms_eps;
	/* near-redundant blocks: attn_output and ffn_down scaled by 1e-3 */
	unsigned char redundant[SKIPPER_TEST_MAX_LAYERS];
	const char *name;          /* general.name */
	/* Llama-3.1 RoPE scaling (factor 8, low 1, high 4, original context
	 * n_ctx/4): 1 = as a rope_freqs.weight tensor (llama.cpp converter),
	 * 2 = as llama.rope.scaling.* keys */
	int rope_llama3;
	const char *arch;          /* "llama" (default), "qwen2" (Q/K/V biases), "qwen3" (Q/K norms) */
	int head_dim;              /* 0 = n_embd / n_head; else written as key/value_length */
};

/* Defaults: F32, 4 layers, embd 64, ff 128, 4 heads, 2 kv heads, vocab 0
 * (= what the tokenizer needs), ctx 256, seed 1, bytes tokenizer. */
void skipper_test_model_defaults(struct skipper_test_model_opts *o);

/* Parse a layer list "1,2,5" into o->redundant; 0 or -1 on a bad list. */
int skipper_test_model_parse_layers(struct skipper_test_model_opts *o, const char *list);

/* Write the model to path. 0 on success; -1 with a message on stderr (test
 * code) for bad options or I/O errors. */
int skipper_test_model_write(const char *path, const struct skipper_test_model_opts *o);

/* Where the SmolLM2-135M test model is: $SKIPPER_TEST_MODEL, else the model
 * cache scripts/fetch-model.sh fills. Returns buf or the variable. */
const char *skipper_test_smollm2_path(char *buf, size_t n);

/* Sampling tests: a 3-token sequence, its exact probability under the
 * model and how often it was drawn. */
struct skipper_test_cell {
	int32_t t[3];
	double p;
	int count;
};

/* Pearson chi-square of the counts against n_draws * p. Cells expected
 * below 5 are pooled into one cell (kept when that pool is expected at 5
 * or more), as the test needs; *df = cells used - 1. */
double skipper_test_chi_square(const struct skipper_test_cell *c, int n_cells, int n_draws, int *df);

#endif
