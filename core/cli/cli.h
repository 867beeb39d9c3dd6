/* Sub-commands of the `skipper` CLI; each returns a process exit code. */
#ifndef SKIPPER_CLI_H
#define SKIPPER_CLI_H

#include <signal.h>
#include <stdio.h>

#include "config/config.h"
#include "engine/engine.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#define SKIPPER_DEFAULT_MODEL "SmolLM2-135M-Instruct.Q4_1.gguf"

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

/* A count option's argument: a whole number 0..INT_MAX into *out, or an
 * error naming who and opt printed and -1 ("--limit abc" is no limit). */
int cli_count_arg(const char *who, const char *opt, const char *arg, int *out);

/* defaults < system skipper.ini < -c FILE < --set, validated before any
 * model is loaded. Prints the error and returns EXIT_USAGE on failure. */
int cli_load_config(const struct cli_common *c, struct skipper_config **cfg);

/* Everything a generation needs, loaded from a configuration. */
struct cli_session {
	struct skipper_config *cfg;
	struct skipper_model *model;
	struct skipper_tokenizer *tok;
	struct skipper_backend *be;
	struct cli_policy *policy;     /* NULL for `none` */
	struct skipper_engine *engine;
	int chat_template;
	char *system;                  /* system prompt, NULL = none */
	struct skipper_gen_params gen;
	int no_profile_search;         /* set before cli_session_open (calibrate): no profile is looked for */
};

/* Load model, tokenizer, backend and policy as configured. Prints errors;
 * returns an exit code. cfg is taken over by the session. */
int cli_session_open(struct cli_session *s, struct skipper_config *cfg);
/* Switch the session's policy (bench); name "none" = autoregressive. */
int cli_session_set_policy(struct cli_session *s, const char *name);
void cli_session_close(struct cli_session *s);

/* Configure a new engine e for policy NAME under cfg: [policy] lookup and
 * the [lookup] keys, and, unless it never drafts, the cost curve (cached per
 * model and machine). Prints errors; returns an exit code. */
int cli_engine_setup(struct cli_session *s, const struct skipper_config *cfg, const char *policy,
                     struct skipper_engine *e);
/* [generate] draft_vocab: the first draft_vocab ids of the ranking
 * ([generate] draft_vocab_file, else the model's draft-vocab.txt) as the
 * engine's draft head; auto: all the ids of that ranking when one exists
 * and the policy drafts with the model (drafts is non-zero), else the whole
 * vocabulary. Prints errors; returns an exit code. */
int cli_load_draft_vocab(struct cli_session *s, const struct skipper_config *cfg, int drafts,
                         struct skipper_engine *e);
/* [lookup] ngrams: off, a file, or auto (the model's ngrams.txt, found as
 * cli_model_data_file does, if one exists) into the engine. Prints errors
 * naming the file and line; returns an exit code. */
int cli_load_ngrams(struct cli_session *s, const struct skipper_config *cfg, struct skipper_engine *e);
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
/* $SKIPPER_CACHE_DIR, else $XDG_CACHE_HOME/skipper, else ~/.cache/skipper,
 * with "/sub" appended unless sub is "", into buf. -1 if it does not fit. */
int cli_cache_dir(char *buf, size_t n, const char *sub);
/* A file that goes with the loaded model: profiles/STEM/NAME (STEM = the
 * model file's name without .gguf) in the skipper cache, each directory of
 * $SKIPPER_DATA_PATH, then the installed data directory. malloc'ed path,
 * or NULL when none exists. */
char *cli_model_data_file(const struct cli_session *s, const char *name);
/* The skip profile for METHOD when none is configured: METHOD.ini in
 * profiles/SHA/ or profiles/STEM/ of the directories above, then the newest
 * METHOD.ini in the hub cache ([hub] cache_dir), taking only a profile whose
 * [profile] model_sha256 is sha and whose method is METHOD. malloc'ed path,
 * or NULL. */
char *cli_find_profile(const struct cli_session *s, const char *method, const char *sha);
/* The engine's cost curve, from the cache or measured (a note on a TTY). */
int cli_engine_costs(struct cli_session *s, struct skipper_engine *e, const struct skipper_costs **out,
                     struct skipper_error *err);

/* Apply the chat template and tokenize one user text; *ids malloc'ed. */
int cli_prompt_tokens(struct cli_session *s, const char *user, int32_t **ids, size_t *n);

/* Path of the model to load: [model] path, [model] hub (resolved through the
 * hub cache), or the default model. *path malloc'ed. */
int cli_model_path(const struct skipper_config *cfg, char **path);

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

/* One line of a data file (n-grams, a draft vocabulary, JSONL prompts):
 * skipper_read_line (core/base/file.h), whose contract it keeps: its
 * length, -1 at the end of the file (or an error: ferror), -2 if longer
 * than max - 1 bytes, -3 if it holds a NUL byte, -4 out of memory.
 * CLI_LINE_MAX is room for any valid line of numbers. */
#define CLI_LINE_MAX 512
long cli_read_line(FILE *f, char **buf, size_t *cap, size_t max);

/* The rest of f, text of at most max bytes, as a NUL-terminated string
 * (caller frees). NULL with why[0..why_n) saying what is wrong: a read
 * error (a directory's), a NUL byte, more than max bytes (/dev/zero ends
 * there), out of memory. */
char *cli_read_all(FILE *f, size_t max, char *why, size_t why_n);

#include <jansson.h>
/* Stats as text (--stats) and as a JSON object (new reference). */
void cli_print_stats(FILE *f, const struct skipper_run_stats *st);
json_t *cli_stats_json(const struct skipper_run_stats *st);

int cmd_generate(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_policies(int argc, char **argv);
int cmd_vocab(int argc, char **argv);

#endif
