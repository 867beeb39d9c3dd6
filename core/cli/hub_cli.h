/* The hub commands of the CLI and the glue between configuration and
 * hub/ (which knows nothing of either). */
#ifndef SKIPPER_HUB_CLI_H
#define SKIPPER_HUB_CLI_H

#include <stddef.h>

#include "config/config.h"
#include "hub/hub.h"

/* skipper pull / skipper profile: return process exit codes. */
int cmd_pull(int argc, char **argv);
int cmd_profile(int argc, char **argv);

/* A hub handle configured from [hub] and the HF_* environment, plus the
 * progress bar state. */
struct hub_cli {
	struct skipper_hub *hub;
	char *token;       /* wiped on close */
	char *cache_dir;
	const char *endpoint;
	int offline;
	struct {
		int tty;
		double start, last;
		long long start_bytes;
	} bar;
};

/* Open from cfg; force_offline adds --offline. Prints errors; returns an
 * exit code. */
int hub_cli_open(struct hub_cli *h, const struct skipper_config *cfg, int force_offline);
void hub_cli_close(struct hub_cli *h);

/* Exit code for a hub status: EXIT_NETWORK for everything the hub or the
 * network did (HTTP errors, checksums, signatures, offline misses). */
int hub_cli_exit_code(int status);

/* [hub] trusted_keys split into paths. *buf owns the strings (free it). */
size_t hub_cli_trusted_keys(const struct skipper_config *cfg, char **buf, const char **keys, size_t max);

/* Pull one file; *path (malloc'ed) is its snapshot path. Prints errors;
 * returns an exit code. */
int hub_cli_pull_one(struct hub_cli *h, const char *repo, const char *rev, const char *file, char **path);

/* [model] hub = org/repo:file.gguf[@rev]: the cached path, downloading
 * unless offline. *path malloc'ed. Prints errors; returns an exit code. */
int cli_hub_model_path(const struct skipper_config *cfg, const char *spec, char **path);

/* [policy] profile = hub:org/repo[@rev]/file: pulled with its .sig and
 * checked against [hub] trusted_keys. *path malloc'ed. Prints errors;
 * returns an exit code. */
int cli_hub_profile_path(const struct skipper_config *cfg, const char *spec, char **path);

#endif
