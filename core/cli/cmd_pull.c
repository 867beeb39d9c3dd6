/* skipper pull REPO [FILE...]: fill the hub cache; print one snapshot path
 * per file on stdout so scripts can use them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cli.h"
#include "hub/hub.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: skipper pull [-c FILE] [--set hub.KEY=VALUE]... [--revision REV] [--include GLOB]\n"
	        "                    [--offline] [--refresh] [--quiet] REPO [FILE]...\n"
	        "Download FILEs (default: every file, or those matching GLOB) of the hub repository\n"
	        "REPO (ORG/NAME) into the huggingface_hub-compatible cache and print their paths.\n"
	        "See skipper-hub(1).\n");
}

struct printer {
	int quiet;
	int n;
};

static void print_file(void *arg, const char *file, const char *path, int downloaded)
{
	struct printer *p = arg;
	p->n++;
	if (!p->quiet)
		printf("%s\n", path);
}

int cmd_pull(int argc, char **argv)
{
	struct cli_common c = {0};
	struct skipper_config *cfg = NULL;
	struct skipper_error err = {0};
	struct skipper_hub_request req = {0};
	struct printer pr = {0};
	struct session_hub h;
	const char **files = calloc((size_t)argc + 1, sizeof *files);
	int offline = 0, rc;
	size_t nf = 0;

	if (!files)
		return EXIT_FAILURE_GENERIC;
	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(&c, argc, argv, &i);
		if (r < 0)
			goto usage;
		if (r)
			continue;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			rc = EXIT_OK;
			goto out;
		} else if ((strcmp(argv[i], "--revision") == 0 || strcmp(argv[i], "-r") == 0) && i + 1 < argc) {
			req.revision = argv[++i];
		} else if (strcmp(argv[i], "--include") == 0 && i + 1 < argc) {
			req.include = argv[++i];
		} else if (strcmp(argv[i], "--offline") == 0) {
			offline = 1;
		} else if (strcmp(argv[i], "--refresh") == 0) {
			req.refresh = 1;
		} else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
			pr.quiet = 1;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "skipper pull: %s option '%s'\n", i + 1 == argc ? "unknown or incomplete" : "unknown",
			        argv[i]);
			goto usage;
		} else if (!req.repo) {
			req.repo = argv[i];
		} else {
			files[nf++] = argv[i];
		}
	}
	if (!req.repo) {
		fprintf(stderr, "skipper pull: which repository?\n");
		goto usage;
	}
	if (nf && req.include) {
		fprintf(stderr, "skipper pull: give FILEs or --include, not both\n");
		goto usage;
	}
	req.files = nf ? files : NULL;
	req.n_files = nf;
	rc = cli_load_config(&c, &cfg);
	if (rc)
		goto out;
	cli_install_signals();
	if ((rc = session_hub_open(&h, cfg, offline, &cli_hooks, &err))) {
		rc = cli_fail(&err, rc);
		goto out;
	}
	rc = skipper_hub_pull(h.hub, &req, print_file, &pr, &err);
	if (rc) {
		fprintf(stderr, "skipper pull: %s\n", err.msg);
		rc = cli_hub_exit_code(rc);
	} else if (pr.n == 0) {
		fprintf(stderr, "skipper pull: no file of %s matches %s\n", req.repo, req.include ? req.include : "");
		rc = EXIT_NETWORK;
	}
	session_hub_close(&h);
	goto out;
usage:
	usage(stderr);
	rc = EXIT_USAGE;
out:
	skipper_config_free(cfg);
	cli_common_free(&c);
	free(files);
	return rc;
}
