/* skipper: command dispatch. */
#include <stdio.h>
#include <string.h>

#include "build-config.h"
#include "cli.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "generate", cmd_generate, "generate text (self-speculative decoding with the configured policy)" },
	{ "serve", cmd_serve, "serve the model over HTTP (OpenAI-compatible API)" },
	{ "bench", cmd_bench, "compare policies on Spec-Bench style prompts" },
	{ "calibrate", cmd_calibrate, "search a policy's skip sets offline and write its profile" },
	{ "vocab", cmd_vocab, "rank a model's vocabulary over a corpus, for [generate] draft_vocab" },
	{ "info", cmd_info, "describe a model file" },
	{ "convert", cmd_convert, "write a Hugging Face checkpoint as a GGUF file (optionally quantised)" },
	{ "policies", cmd_policies, "list installed policy plugins" },
	{ "pull", cmd_pull, "download model or profile files from a Hugging Face-compatible hub" },
	{ "profile", cmd_profile, "skip profiles: pull, show, verify, sign, keygen, publish" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: skipper COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n`skipper COMMAND --help` for the options of a command; man skipper(1).\n");
}

/* argv[0] is the command's name. */
static int run_command(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[0], commands[i].name) == 0)
			return commands[i].run(argc, argv);
	fprintf(stderr, "skipper: unknown command '%s'\n", argv[0]);
	usage(stderr);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("skipper %s\n", PACKAGE_VERSION);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "help") == 0 && argc > 2) {
		/* skipper help COMMAND = skipper COMMAND --help */
		char *args[] = { argv[2], "--help", NULL };
		return run_command(2, args);
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	return run_command(argc - 1, argv + 1);
}
