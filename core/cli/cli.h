/* The skipper command: its sub-commands (cmd_*.c, each returns a process
 * exit code) and what they share: the common options and configuration
 * layering, library statuses as exit codes, the hooks that print notes and
 * progress. Everything else is the library's (core/session/). */
#ifndef SKIPPER_CLI_H
#define SKIPPER_CLI_H

#include <signal.h>
#include <stdio.h>

#include "session/session.h"

/* Exit codes (documented in skipper(1)). */
enum {
	EXIT_OK = 0,
	EXIT_FAILURE_GENERIC = 1, /* runtime failure (model, backend, plugin, I/O) */
	EXIT_USAGE = 2,           /* bad command line or configuration */
	EXIT_NETWORK = 3,         /* hub: network, HTTP or checksum failure */
	EXIT_INTERRUPTED = 130
};

/* Options every model-using command shares: -c FILE, --set S.K=V and the
 * shortcuts that are --set in disguise. */
struct cli_common {
	const char *config_file;
	const char *extra_file; /* layered after config_file (bench variants) */
	const char *extra_set;  /* one more "section.key=value" after sets (bench variants) */
	char **sets;     /* "section.key=value", owned */
	int n_sets;
};

/* If argv[*i] is a common option, consume it (and its argument) and return 1;
 * 0 if it is not one; -1 (message printed) if its argument is missing. */
int cli_common_option(struct cli_common *c, int argc, char **argv, int *i);
void cli_common_free(struct cli_common *c);
/* Append "key=value" to c's sets as --set does (a command's own shortcut
 * options). -1 when out of memory. */
int cli_common_add_set(struct cli_common *c, const char *key, const char *value);

/* A count option's argument: a whole number 0..INT_MAX into *out, or an
 * error naming who and opt printed and -1 ("--limit abc" is no limit). */
int cli_count_arg(const char *who, const char *opt, const char *arg, int *out);

/* defaults < system skipper.ini < -c FILE < --set, checked
 * (skipper_config_check) before any model is loaded. Prints the error and
 * returns EXIT_USAGE on failure. */
int cli_load_config(const struct cli_common *c, struct skipper_config **cfg);

/* The exit code (skipper(1)) for a library status: configuration errors
 * EXIT_USAGE, what the hub or the network did EXIT_NETWORK, a signal
 * EXIT_INTERRUPTED, the rest EXIT_FAILURE_GENERIC. */
int cli_exit_code(int status);
/* For skipper pull and profile: a missing, malformed or oversized file
 * from the hub is the hub's doing too. */
int cli_hub_exit_code(int status);
/* Print "skipper: MESSAGE" and return cli_exit_code(status). */
int cli_fail(const struct skipper_error *err, int status);

/* The hooks every command gives the library: its notes on stderr
 * ("skipper: ..."), a progress bar on a terminal, and a stop when SIGINT
 * or SIGTERM came (cli_install_signals). */
extern const struct skipper_session_hooks cli_hooks;

/* skipper_engine_set_progress's teller for a command (arg unused): on a
 * terminal, a line that follows a long prompt's prefill (percent, tokens,
 * rate, time left), at most ten times a second; after SIGINT or SIGTERM,
 * a stop. */
int cli_prompt_progress(void *arg, int done, int total);

/* Open the session of a model-using command (cfg read during the call;
 * flags: the members of struct skipper_session_opts beyond the hooks).
 * Prints errors; returns an exit code. */
int cli_session_open(const struct skipper_config *cfg, const struct skipper_session_opts *o,
                     struct skipper_session **s);

/* Everything written to standard output so far flushed and checked
 * (write_errno: a failure seen earlier, else 0): EXIT_OK, or the error
 * printed and EXIT_FAILURE_GENERIC. A full disk or a closed descriptor
 * must not pass for success. */
int cli_stdout_check(int write_errno);

/* Set by SIGINT/SIGTERM handlers the long-running commands install. */
extern volatile sig_atomic_t cli_interrupted;
void cli_install_signals(void);

/* An atomic write of path (core/base/atomic.h): cli_atomic_open returns
 * the stream to write, *a the handle (NULL after printing "WHO: ..." on
 * failure); cli_atomic_close commits it (every write, the flush and close
 * checked, then renamed over path) or removes it and prints why, and
 * returns an exit code; skipper_atomic_abort drops it. */
struct skipper_atomic;
FILE *cli_atomic_open(const char *who, const char *path, struct skipper_atomic **a);
int cli_atomic_close(const char *who, struct skipper_atomic *a);

/* The token streams skipper vocab --ngrams counts: prompts' tokens (pushed
 * with generated = 0, after a -1 that starts each prompt) and what the
 * model wrote after them (generated = 1). */
struct ngram_corpus {
	int32_t *tok;
	uint8_t *gen;
	size_t n, cap, n_generated;
};
/* Append one token; -1 when out of memory. */
int ngram_corpus_push(struct ngram_corpus *c, int32_t tok, int generated);
void ngram_corpus_free(struct ngram_corpus *c);
/* The n-gram file of the corpus's generated tokens into f (the caller
 * opened it atomically). Prints errors; returns an exit code. */
int ngram_file_write(FILE *f, const struct ngram_corpus *c, const char *model, const char *data, int n_prompts);

#include <jansson.h>
/* Stats as text (--stats) and as a JSON object (new reference). */
void cli_print_stats(FILE *f, const struct skipper_run_stats *st);
json_t *cli_stats_json(const struct skipper_run_stats *st);

int cmd_generate(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_policies(int argc, char **argv);
int cmd_vocab(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
