/* core/session/ -- what a program needs to run skipper, in the library:
 * a configuration turned into a loaded model, tokenizer, backend and
 * engines with their policies (session.c, session_engine.c), the services
 * a policy's host gets from the session (calibration trials, prompt
 * embeddings, the model's hash, its profile: services.c), the files that
 * go with a model (model_data.c: the cache directory, per-model data
 * found by hash or name, skip profiles), the draft head's ranking and the
 * corpus n-grams (vocab_files.c), the cost curve's cache key
 * (cost_cache.c), the hub behind [model] hub and hub: profiles (hub.c),
 * configuration checks (config_check.c), prompts (prompt.c) and the public
 * generate call (generate.c). The public API is core/skipper/skipper.h;
 * this header is what the skipper command (core/cli/) and the server use
 * beside it. May include: every subsystem (engine, policy, tokenizer,
 * backend, model, config, hub/). Called by core/cli/, core/server/ and
 * programs that embed skipper. */
#ifndef SKIPPER_SESSION_H
#define SKIPPER_SESSION_H

#include <stdio.h>

#include "config/config.h"
#include "engine/engine.h"
#include "model/model.h"
#include "skipper/skipper.h"
#include "tokenizer/tokenizer.h"

/* The models scripts/fetch-model.sh fetches, by the names -m and [model]
 * path accept. */
#define SKIPPER_DEFAULT_MODEL "SmolLM2-135M-Instruct.Q4_1.gguf"

struct skipper_session {
	struct skipper_config *cfg;      /* the session's own copy */
	struct skipper_model *model;
	struct skipper_tokenizer *tok;
	struct skipper_backend *be;
	struct skipper_engine *engine;   /* the configured policy's */
	int chat_template;
	char *system;                    /* system prompt, NULL = none */
	struct skipper_gen_params gen;   /* [generate] */
	struct skipper_session_hooks hooks;
	int log_level;                   /* policy lines above it are dropped */
	int no_profile_search;           /* calibrate: a profile is written, not looked for */
	char sha256[65];                 /* the model's, "" until asked for */
	struct skipper_session_info info;
	struct skipper_run_stats last;   /* skipper_session_stats */
	int32_t *draft_ids;              /* the draft head of the session's engine (trials draft with it) */
	int n_draft_ids;
	char **kept;                     /* strings engines point to, freed with the session */
	int n_kept;
	struct skipper_history *history; /* [lookup] history: drafts from earlier requests, or NULL */
	const char *history_file;        /* where it is saved at close (the configuration's), or NULL */
};

/* Options for skipper_session_open_opts beyond the configuration. */
struct skipper_session_opts {
	const struct skipper_session_hooks *hooks;
	int no_profile_search; /* the policy finds no profile by itself (skipper calibrate) */
	int log_level;         /* lines up to this level reach hooks->log (default WARN: warnings and
	                          the notes a person should see, such as a first cost measurement) */
};
int skipper_session_open_opts(const struct skipper_config *cfg, const struct skipper_session_opts *o,
                              struct skipper_session **out, struct skipper_error *err);

/* An engine with the policy cfg configures (cfg: the session's, or one
 * layered over it for another policy: skipper bench), its lookup, draft
 * head, corpus n-grams and cost curve as cfg says; for a policy that
 * drafts, the cost curve is had now (cached, or measured with a note).
 * *out owned by the caller: skipper_engine_free(). */
int skipper_session_engine(struct skipper_session *s, const struct skipper_config *cfg, struct skipper_engine **out,
                           struct skipper_error *err);

/* Keep str (malloc'ed) until the session closes; on failure it is freed. */
int session_keep(struct skipper_session *s, char *str, struct skipper_error *err);

/* The same in KV sequence seq of the backend (skipper_batch_new). */
int skipper_session_engine_seq(struct skipper_session *s, const struct skipper_config *cfg, int seq,
                               struct skipper_engine **out, struct skipper_error *err);
/* Room in the backend for n KV sequences of the context each (their memory
 * is allocated now; the sequences' contents are lost). */
int skipper_session_sequences(struct skipper_session *s, int n, struct skipper_error *err);

/* A line to the hooks' log (level SKIPPER_LOG_*), dropped above the
 * session's log level. */
void session_log(const struct skipper_session *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The session services of a policy host (services.c) into env. */
void session_bind_services(struct skipper_session *s, struct skipper_policy_env *env);

/* The user's text as a chat turn (the configured system prompt before it)
 * into ids: what generate, bench and calibrate run. *ids malloc'ed. */
int skipper_session_prompt_tokens(struct skipper_session *s, const char *user, int32_t **ids, size_t *n,
                                  struct skipper_error *err);

/* The backend's settings from cfg ([model] backend, threads, ctx,
 * kv_type), the context within m's training context when m is given
 * (skipper info states the cache's size from them). */
int skipper_session_backend_opts(const struct skipper_config *cfg, const struct skipper_model *m,
                                 struct skipper_backend_opts *bo, struct skipper_error *err);

/* Path of the model to load: [model] path (a file, or a name of
 * scripts/fetch-model.sh's in the cache), [model] hub (pulled through the
 * hub cache), else the default model. *path malloc'ed. */
int skipper_session_model_path(const struct skipper_config *cfg, const struct skipper_session_hooks *hooks,
                               char **path, struct skipper_error *err);

/* ---- files that go with a model (model_data.c) ---- */

/* $SKIPPER_CACHE_DIR, else $XDG_CACHE_HOME/skipper, else ~/.cache/skipper,
 * with "/sub" appended unless sub is "", into buf. -1 if it does not fit. */
int skipper_cache_dir(char *buf, size_t n, const char *sub);
/* A file that goes with the loaded model: profiles/SHA/NAME or
 * profiles/STEM/NAME (STEM = the model file's name without .gguf) in the
 * skipper cache, each directory of $SKIPPER_DATA_PATH, then the installed
 * data directory. malloc'ed path, or NULL when none exists. */
char *session_model_data_file(struct skipper_session *s, const char *name);
/* The skip profile for METHOD when none is configured: METHOD.ini in the
 * directories above, then the newest METHOD.ini in the hub cache, taking
 * only a profile made for this model (hash, layers) and METHOD. malloc'ed
 * path, or NULL. */
char *session_find_profile(struct skipper_session *s, const char *method);
/* The model file's SHA-256 (computed once), or NULL with err set. */
const char *session_model_sha256(struct skipper_session *s, struct skipper_error *err);

/* ---- the draft head's ranking and corpus n-grams (vocab_files.c) ---- */

/* [generate] draft_vocab and draft_vocab_file under cfg: *ids (malloc'ed,
 * *n of them) the draft head's vocabulary, or none (*ids NULL, *n 0). auto:
 * the whole ranking that goes with the model, read only when drafts (the
 * policy drafts with the model). */
int session_draft_vocab(struct skipper_session *s, const struct skipper_config *cfg, int drafts, int32_t **ids,
                        int *n, struct skipper_error *err);
/* [lookup] ngrams under cfg: off, a file, or auto (the model's
 * ngrams.txt, if one exists) into g (g->n = 0: none). Free with
 * session_ngrams_free. */
int session_ngrams(struct skipper_session *s, const struct skipper_config *cfg, struct skipper_ngram_set *g,
                   struct skipper_error *err);
void session_ngrams_free(struct skipper_ngram_set *g);

/* ---- drafts from history (history_file.c) ---- */

struct skipper_history;
/* [lookup] history as the session's configuration says: s->history made
 * (and loaded from its file) when lookup is on and history is not off. A
 * bad file is a warning, not an error. */
int session_history_open(struct skipper_session *s, struct skipper_error *err);
/* Saved to its file, if it has one, and freed. */
int session_history_close(struct skipper_session *s, struct skipper_error *err);
/* A new empty history of [lookup] history_mb for this model (a server's
 * scope of its own). */
int session_history_new(struct skipper_session *s, struct skipper_history **out, struct skipper_error *err);

/* ---- the cost curve's cache (cost_cache.c) ---- */

/* $SKIPPER_CACHE_DIR/costs/NAME-HASH.costs, the hash over everything the
 * costs depend on (model file, the backend's identity: machine, kernels,
 * threads, settings; context, draft head, version); the directory is
 * made. NULL when no cache is writable. */
char *session_cost_cache(struct skipper_session *s, int draft_head);

/* ---- configuration (config_check.c) ---- */

/* The search path of a configuration: the built-in policies, then
 * [policy] plugin_dir. */
struct skipper_policy_search;
void session_policy_search(const struct skipper_config *cfg, struct skipper_policy_search *search);

/* ---- the hub (hub.c) ---- */

struct skipper_hub;
/* A hub handle configured from [hub] and the HF_* environment ([hub] keys
 * first, then the environment, then huggingface_hub's defaults);
 * force_offline adds --offline. progress: hooks->progress. Free with
 * session_hub_close. */
struct session_hub {
	struct skipper_hub *hub;
	char *token;       /* wiped on close */
	char *cache_dir;
	const char *endpoint;
	int offline;
	const struct skipper_session_hooks *hooks;
};
int session_hub_open(struct session_hub *h, const struct skipper_config *cfg, int force_offline,
                     const struct skipper_session_hooks *hooks, struct skipper_error *err);
void session_hub_close(struct session_hub *h);
/* Pull one file; *path (malloc'ed) is its snapshot path. */
int session_hub_pull_one(struct session_hub *h, const char *repo, const char *rev, const char *file, char **path,
                         struct skipper_error *err);
/* [hub] trusted_keys split into paths; *buf owns the strings (free it). */
size_t session_trusted_keys(const struct skipper_config *cfg, char **buf, const char **keys, size_t max);
/* [policy] profile = hub:ORG/REPO[@REV]/FILE: pulled with its .sig and
 * checked against [hub] trusted_keys. *path malloc'ed. */
int session_hub_profile(const struct skipper_config *cfg, const char *spec, const struct skipper_session_hooks *hooks,
                        char **path, struct skipper_error *err);

#endif
