/* skipper policies: what is installed, with versions and config help. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "policy/policy_host.h"

int cmd_policies(int argc, char **argv)
{
	struct cli_common c = { 0 };
	struct skipper_config *cfg = NULL;
	struct skipper_policy_search search;
	struct skipper_policy_info *list = NULL;
	struct skipper_error err = { 0 };
	size_t n = 0;
	int rc, verbose = 0, bad = 0;

	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(&c, argc, argv, &i);
		if (r < 0) {
			cli_common_free(&c);
			return EXIT_USAGE;
		}
		if (r)
			continue;
		if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
			verbose = 1;
		} else {
			if (strcmp(argv[i], "-h") != 0 && strcmp(argv[i], "--help") != 0)
				fprintf(stderr, "skipper policies: unknown option '%s'\n", argv[i]);
			fprintf(stderr, "usage: skipper policies [-v] [-c FILE] [--set policy.plugin_dir=DIR]\n");
			cli_common_free(&c);
			return strcmp(argv[i], "-h") && strcmp(argv[i], "--help") ? EXIT_USAGE : EXIT_OK;
		}
	}
	rc = cli_load_config(&c, &cfg);
	cli_common_free(&c);
	if (rc)
		return rc;
	session_policy_search(cfg, &search);
	if (skipper_policy_list(&search, &list, &n, &err)) {
		fprintf(stderr, "skipper: %s\n", err.msg);
		skipper_config_free(cfg);
		return EXIT_FAILURE_GENERIC;
	}
	for (size_t i = 0; i < n; i++) {
		if (list[i].error) {
			printf("%-12s REFUSED  %s\n", list[i].name ? list[i].name : "?", list[i].error);
			bad++;
			continue;
		}
		printf("%-12s %-8s %s\n", list[i].name, list[i].version ? list[i].version : "", list[i].description ? list[i].description : "");
		if (verbose) {
			printf("    file: %s\n", list[i].path);
			if (list[i].config_help && *list[i].config_help) {
				const char *p = list[i].config_help;
				while (*p) {
					const char *nl = strchr(p, '\n');
					int len = nl ? (int)(nl - p) : (int)strlen(p);
					printf("    [%s] %.*s\n", list[i].name, len, p);
					p += len + (nl != NULL);
				}
			}
		}
	}
	skipper_policy_list_free(list, n);
	skipper_config_free(cfg);
	return bad ? EXIT_FAILURE_GENERIC : EXIT_OK;
}
