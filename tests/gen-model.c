/* gen-model: write a tiny Llama GGUF test model with seeded random weights.
 * See testmodel.h for what the file contains; the options mirror
 * struct skipper_test_model_opts. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/quant.h"
#include "testmodel.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gen-model --out FILE [--arch llama|qwen2|qwen3]\n"
	           "                 [--dtype f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k]\n"
	           "                 [--layers 4] [--embd 64] [--ff 128] [--heads 4] [--kv-heads 2] [--head-dim N]\n"
	           "                 [--vocab N] [--ctx 256] [--seed 1] [--redundant 1,2] [--tied]\n"
	           "                 [--tokenizer bytes|spm] [--theta 10000] [--name NAME]\n"
	           "                 [--rope-scaling none|llama3-tensor|llama3-keys]\n");
}

static int parse_int(const char *opt, const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi) {
		fprintf(stderr, "gen-model: --%s: '%s' is not an integer in [%ld, %ld]\n", opt, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "out", 1, 0, 'o' }, { "dtype", 1, 0, 'd' }, { "layers", 1, 0, 'l' }, { "embd", 1, 0, 'e' },
		{ "ff", 1, 0, 'f' }, { "heads", 1, 0, 'h' }, { "kv-heads", 1, 0, 'k' }, { "vocab", 1, 0, 'v' },
		{ "ctx", 1, 0, 'c' }, { "seed", 1, 0, 's' }, { "redundant", 1, 0, 'r' }, { "tied", 0, 0, 't' },
		{ "tokenizer", 1, 0, 'T' }, { "theta", 1, 0, 'R' }, { "name", 1, 0, 'n' }, { "help", 0, 0, 'H' },
		{ "rope-scaling", 1, 0, 'S' }, { "arch", 1, 0, 'A' }, { "head-dim", 1, 0, 'D' },
		{ 0, 0, 0, 0 },
	};
	struct skipper_test_model_opts o;
	const char *out = NULL;
	long v;
	int c;

	skipper_test_model_defaults(&o);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		const char *name = lo[0].name;
		for (int i = 0; lo[i].name; i++)
			if (lo[i].val == c)
				name = lo[i].name;
		switch (c) {
		case 'o': out = optarg; break;
		case 'd': {
			static const struct { const char *n; int t; } dt[] = {
				{ "f32", SKIPPER_F32 }, { "f16", SKIPPER_F16 }, { "bf16", SKIPPER_BF16 },
				{ "q8_0", SKIPPER_Q8_0 }, { "q4_0", SKIPPER_Q4_0 }, { "q4_1", SKIPPER_Q4_1 },
				{ "q5_0", SKIPPER_Q5_0 }, { "q5_1", SKIPPER_Q5_1 }, { "q4_k", SKIPPER_Q4_K },
				{ "q5_k", SKIPPER_Q5_K }, { "q6_k", SKIPPER_Q6_K },
			};
			int found = 0;
			for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++)
				if (!strcasecmp(optarg, dt[i].n)) {
					o.dtype = dt[i].t;
					found = 1;
				}
			if (!found) {
				fprintf(stderr, "gen-model: --dtype: unknown type '%s'\n", optarg);
				return 2;
			}
			break;
		}
		case 'l': if (parse_int(name, optarg, 1, SKIPPER_TEST_MAX_LAYERS, &v)) return 2; o.n_layer = (int)v; break;
		case 'e': if (parse_int(name, optarg, 2, 1 << 16, &v)) return 2; o.n_embd = (int)v; break;
		case 'f': if (parse_int(name, optarg, 1, 1 << 18, &v)) return 2; o.n_ff = (int)v; break;
		case 'h': if (parse_int(name, optarg, 1, 1024, &v)) return 2; o.n_head = (int)v; break;
		case 'k': if (parse_int(name, optarg, 1, 1024, &v)) return 2; o.n_head_kv = (int)v; break;
		case 'v': if (parse_int(name, optarg, 0, 1 << 20, &v)) return 2; o.n_vocab = (int)v; break;
		case 'c': if (parse_int(name, optarg, 1, 1 << 24, &v)) return 2; o.n_ctx = (int)v; break;
		case 's': if (parse_int(name, optarg, 0, 0x7fffffffL, &v)) return 2; o.seed = (uint64_t)v; break;
		case 'r':
			if (skipper_test_model_parse_layers(&o, optarg)) {
				fprintf(stderr, "gen-model: --redundant: bad layer list '%s'\n", optarg);
				return 2;
			}
			break;
		case 't': o.tied = 1; break;
		case 'T':
			if (!strcmp(optarg, "bytes"))
				o.tokenizer = SKIPPER_TEST_TOK_BYTES;
			else if (!strcmp(optarg, "spm"))
				o.tokenizer = SKIPPER_TEST_TOK_SPM;
			else {
				fprintf(stderr, "gen-model: --tokenizer: '%s' is not bytes or spm\n", optarg);
				return 2;
			}
			break;
		case 'R': {
			char *end;
			o.rope_theta = strtof(optarg, &end);
			if (*end || !(o.rope_theta > 0)) {
				fprintf(stderr, "gen-model: --theta: '%s' is not a positive number\n", optarg);
				return 2;
			}
			break;
		}
		case 'S':
			if (!strcmp(optarg, "none"))
				o.rope_llama3 = 0;
			else if (!strcmp(optarg, "llama3-tensor"))
				o.rope_llama3 = 1;
			else if (!strcmp(optarg, "llama3-keys"))
				o.rope_llama3 = 2;
			else {
				fprintf(stderr, "gen-model: --rope-scaling: '%s' is not none, llama3-tensor or llama3-keys\n", optarg);
				return 2;
			}
			break;
		case 'n': o.name = optarg; break;
		case 'A':
			if (strcmp(optarg, "llama") && strcmp(optarg, "qwen2") && strcmp(optarg, "qwen3")) {
				fprintf(stderr, "gen-model: --arch: '%s' is not llama, qwen2 or qwen3\n", optarg);
				return 2;
			}
			o.arch = optarg;
			break;
		case 'D': if (parse_int(name, optarg, 2, 1024, &v)) return 2; o.head_dim = (int)v; break;
		case 'H': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!out || optind != argc) {
		usage(stderr);
		return 2;
	}
	for (int i = o.n_layer; i < SKIPPER_TEST_MAX_LAYERS; i++)
		if (o.redundant[i]) {
			fprintf(stderr, "gen-model: --redundant: layer %d does not exist (%d layers)\n", i, o.n_layer);
			return 2;
		}
	return skipper_test_model_write(out, &o) ? 1 : 0;
}
