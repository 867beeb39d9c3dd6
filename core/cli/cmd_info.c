/* skipper info: what a model file (or checkpoint directory) is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cli.h"

/* What the K/V cache of the configured context takes, before anything
 * runs: a long context's memory is mostly this. */
static void print_kv(const struct skipper_config *cfg, const struct skipper_model *m)
{
	const struct skipper_hparams *hp = &m->view.hp;
	struct skipper_backend_opts bo = { 0 };

	if (skipper_session_backend_opts(cfg, m, &bo, NULL))
		return; /* the configuration was checked on reading */
	int ctx = bo.n_ctx, kt = bo.kv_type;
	printf("K/V cache:       %s, %.1f KiB a token; %.1f MiB at [model] ctx %d", skipper_kv_type_name(kt),
	       skipper_backend_kv_bytes(hp, 1, kt) / 1024.0, skipper_backend_kv_bytes(hp, ctx, kt) / 1048576.0, ctx);
	if (hp->n_ctx_train > 0 && ctx < hp->n_ctx_train)
		printf(", %.1f MiB at %d", skipper_backend_kv_bytes(hp, hp->n_ctx_train, kt) / 1048576.0, hp->n_ctx_train);
	printf("\n");
}

int cmd_info(int argc, char **argv)
{
	struct cli_common c = { 0 };
	struct skipper_config *cfg = NULL;
	struct skipper_error err = { 0 };
	struct skipper_model *m = NULL;
	const char *file = NULL;
	char *path = NULL;
	int rc;

	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(&c, argc, argv, &i);
		if (r < 0)
			goto usage;
		if (r)
			continue;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: skipper info [-c FILE] [--set SECTION.KEY=VALUE]... [MODEL.gguf | CHECKPOINT-DIR]\n"
			       "Without MODEL the configured model ([model] path or hub, else the default model).\n");
			cli_common_free(&c);
			return EXIT_OK;
		}
		if (argv[i][0] == '-' || file) {
			fprintf(stderr, "skipper info: unexpected argument '%s'\n", argv[i]);
			goto usage;
		}
		file = argv[i];
	}
	rc = cli_load_config(&c, &cfg);
	cli_common_free(&c);
	if (rc)
		return rc;
	if (file)
		path = strdup(file);
	else if ((rc = skipper_session_model_path(cfg, &cli_hooks, &path, &err))) {
		skipper_config_free(cfg);
		return cli_fail(&err, rc);
	}
	struct skipper_model_opts mo = { skipper_model_quantize_type(skipper_config_get(cfg, "model", "quantize")) };
	rc = skipper_model_load_opts(path, &mo, &m, &err);
	if (rc) {
		fprintf(stderr, "skipper: %s\n", err.msg);
		rc = EXIT_FAILURE_GENERIC;
	} else {
		struct skipper_tokenizer *tok = NULL;
		skipper_model_print_info(m, stdout);
		print_kv(cfg, m);
		rc = EXIT_OK;
		/* the vocabulary is part of the file: what generate would refuse
		 * there, info refuses too */
		if (skipper_tokenizer_for_model(m, &tok, &err)) {
			fprintf(stderr, "skipper: %s\n", err.msg);
			rc = EXIT_FAILURE_GENERIC;
		}
		skipper_tokenizer_free(tok);
	}
	skipper_model_free(m);
	free(path);
	skipper_config_free(cfg);
	return rc;
usage:
	cli_common_free(&c);
	fprintf(stderr, "usage: skipper info [-c FILE] [--set SECTION.KEY=VALUE]... [MODEL.gguf | CHECKPOINT-DIR]\n");
	return EXIT_USAGE;
}
