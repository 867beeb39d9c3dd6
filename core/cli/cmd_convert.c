/* skipper convert: a Hugging Face checkpoint written out as one GGUF file
 * (optionally quantised), which skipper and llama.cpp load: a conversion
 * made once instead of [model] quantize at every load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "cli.h"
#include "model/gguf_write.h"
#include "model/quant.h"

static const char usage_text[] =
	"usage: skipper convert [-c FILE] [--set SECTION.KEY=VALUE]... [--type TYPE] [CHECKPOINT] OUT.gguf\n"
	"Write a Hugging Face checkpoint (a directory, or ORG/NAME from the hub; without CHECKPOINT the\n"
	"configured model) as one GGUF file. TYPE: none (the weights as stored, the default), f16, bf16,\n"
	"q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k ([model] quantize).\n";

/* llama.cpp's names for the pre-tokenizers skipper recognises in a
 * tokenizer.json (both read either). */
static const char *gguf_pre(const char *pre)
{
	if (!pre || !*pre)
		return "default";
	if (strcmp(pre, "llama3") == 0)
		return "llama-bpe";
	if (strcmp(pre, "gpt2") == 0)
		return "gpt-2";
	return pre;
}

/* The tokenizer as llama.cpp's converter writes it. */
static int put_tokenizer(const struct skipper_tokenizer_spec *sp, void *arg, struct skipper_error *err)
{
	struct skipper_gguf_out *o = arg;
	int32_t *types = NULL;
	const struct { const char *key; int32_t id; } ids[] = {
		{ "tokenizer.ggml.bos_token_id", sp->bos }, { "tokenizer.ggml.eos_token_id", sp->eos },
		{ "tokenizer.ggml.unknown_token_id", sp->unk }, { "tokenizer.ggml.padding_token_id", sp->pad },
		{ "tokenizer.ggml.eot_token_id", sp->eot }, { "tokenizer.ggml.eom_token_id", sp->eom },
	};

	skipper_gguf_out_str(o, "tokenizer.ggml.model", sp->model, strlen(sp->model));
	skipper_gguf_out_str(o, "tokenizer.ggml.pre", gguf_pre(sp->pre), strlen(gguf_pre(sp->pre)));
	skipper_gguf_out_arr_str(o, "tokenizer.ggml.tokens", sp->tokens, sp->token_lens, (size_t)sp->n_vocab);
	if (!sp->types && !(types = malloc(sizeof *types * (size_t)sp->n_vocab)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (int32_t i = 0; types && i < sp->n_vocab; i++)
		types[i] = SKIPPER_TOKEN_NORMAL;
	skipper_gguf_out_arr(o, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, sp->types ? sp->types : types,
	                     (size_t)sp->n_vocab);
	free(types);
	if (sp->n_merges)
		skipper_gguf_out_arr_str(o, "tokenizer.ggml.merges", sp->merges, sp->merge_lens, sp->n_merges);
	if (sp->scores)
		skipper_gguf_out_arr(o, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, sp->scores, (size_t)sp->n_vocab);
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
		if (ids[i].id >= 0)
			skipper_gguf_out_u32(o, ids[i].key, (uint32_t)ids[i].id);
	if (sp->add_bos >= 0)
		skipper_gguf_out_bool(o, "tokenizer.ggml.add_bos_token", sp->add_bos);
	if (sp->add_eos >= 0)
		skipper_gguf_out_bool(o, "tokenizer.ggml.add_eos_token", sp->add_eos);
	if (sp->add_space_prefix >= 0)
		skipper_gguf_out_bool(o, "tokenizer.ggml.add_space_prefix", sp->add_space_prefix);
	return SKIPPER_OK;
}

static int convert(const struct skipper_model *m, const char *out, struct skipper_error *err)
{
	struct skipper_gguf_out *o = skipper_gguf_out_new();
	char *tj = skipper_model_hf_file(m, "tokenizer.json"), *tc = skipper_model_hf_file(m, "tokenizer_config.json");
	char *tmpl = skipper_model_chat_template(m);
	int rc;

	if (!o)
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	else if (!tj)
		rc = skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s: no tokenizer.json beside the weights",
		                  skipper_model_path(m));
	else if (!(rc = skipper_hf_tokenizer_spec(tj, tc, m->view.hp.n_vocab, put_tokenizer, o, err))) {
		if (tmpl)
			skipper_gguf_out_str(o, "tokenizer.chat_template", tmpl, strlen(tmpl));
		rc = skipper_model_write_gguf(m, o, out, err);
	}
	skipper_gguf_out_free(o);
	free(tmpl);
	free(tj);
	free(tc);
	return rc;
}

int cmd_convert(int argc, char **argv)
{
	struct cli_common c = { 0 };
	struct skipper_config *cfg = NULL;
	struct skipper_error err = { 0 };
	struct skipper_model *m = NULL;
	const char *args[2] = { NULL, NULL }, *type = NULL;
	int n = 0, rc;
	char *path = NULL;

	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(&c, argc, argv, &i);
		if (r < 0)
			goto usage;
		if (r)
			continue;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(usage_text, stdout);
			cli_common_free(&c);
			return EXIT_OK;
		}
		if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
			type = argv[++i];
			continue;
		}
		if (argv[i][0] == '-' || n == 2) {
			fprintf(stderr, "skipper convert: unexpected argument '%s'\n", argv[i]);
			goto usage;
		}
		args[n++] = argv[i];
	}
	if (n == 0) {
		fprintf(stderr, "skipper convert: no output file\n");
		goto usage;
	}
	struct skipper_model_opts mo = { -1 };
	if (type && (mo.quantize = skipper_model_quantize_type(type)) < -1) {
		fprintf(stderr, "skipper convert: --type %s: not one of none, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, "
		                "q4_k, q5_k, q6_k\n", type);
		goto usage;
	}
	if ((rc = cli_load_config(&c, &cfg)))
		goto out;
	if (!type)
		mo.quantize = skipper_model_quantize_type(skipper_config_get(cfg, "model", "quantize"));
	const char *outp = args[n - 1];
	struct stat st;
	if (stat(outp, &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "skipper convert: %s is a directory: name the GGUF file to write\n", outp);
		rc = EXIT_USAGE;
		goto out;
	}
	if (n == 2) {
		/* as -m would: a directory, ORG/NAME from the hub, a cached name */
		char *set = malloc(strlen(args[0]) + 12);
		if (set)
			sprintf(set, "model.path=%s", args[0]);
		rc = set ? skipper_config_set(cfg, set, &err) : skipper_fail(&err, SKIPPER_ERR_NOMEM, "out of memory");
		free(set);
		if (rc) {
			rc = cli_fail(&err, rc);
			goto out;
		}
	}
	if ((rc = skipper_session_model_path(cfg, &cli_hooks, &path, &err)) ||
	    (rc = skipper_model_load_opts(path, &mo, &m, &err))) {
		rc = cli_fail(&err, rc);
		goto out;
	}
	if (!m->hf) {
		fprintf(stderr, "skipper convert: %s is a GGUF file already (to quantise its float weights at load: "
		                "[model] quantize)\n", path);
		rc = EXIT_USAGE;
		goto out;
	}
	if (m->quantized >= 0)
		fprintf(stderr, "skipper: quantized to %s in %.1f s\n", skipper_dtype_name(m->quantized),
		        m->quantize_seconds);
	if ((rc = convert(m, outp, &err))) {
		rc = cli_fail(&err, rc);
		goto out;
	}
	fprintf(stderr, "skipper: wrote %s\n", outp);
	rc = EXIT_OK;
out:
	cli_common_free(&c);
	skipper_model_free(m);
	skipper_config_free(cfg);
	free(path);
	return rc;
usage:
	cli_common_free(&c);
	fputs(usage_text, stderr);
	return EXIT_USAGE;
}
