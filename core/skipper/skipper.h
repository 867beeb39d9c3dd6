/* libskipper: open a model as an INI configuration says, generate text
 * with self-speculative decoding, close (skipper(3)).
 *
 *	struct skipper_config *cfg;
 *	struct skipper_session *s;
 *	struct skipper_error err;
 *	skipper_config_new(&cfg, &err);
 *	skipper_config_set(cfg, "policy.name=lookup", &err);
 *	skipper_config_check(cfg, &err);
 *	skipper_session_open(cfg, NULL, &s, &err);
 *	skipper_session_generate(s, &(struct skipper_message){ "user", "Hi" }, 1, NULL, on_text, NULL, &err);
 *	skipper_session_close(s);
 *	skipper_config_free(cfg);
 *
 * Every call that can fail returns SKIPPER_OK (0) or a negative
 * enum skipper_status and leaves a message in *err (skipper/status.h).
 * The library never prints, exits or aborts; long work reports through
 * the session's hooks.
 *
 * Threads: a session is used by one thread at a time, but for
 * skipper_session_info, _defaults, _chat_tokens and _text_tokens, which
 * only read it and may be called from any thread, also while a batch
 * decodes on it (skipper serve tokenizes in each request's thread).
 * Structs the library hands out (struct skipper_run_stats, struct
 * skipper_session_info) only grow: members are appended, never removed or
 * reordered, so a program built against an older header reads the members
 * it knows. */
#ifndef SKIPPER_SKIPPER_H
#define SKIPPER_SKIPPER_H

#include <stddef.h>
#include <stdint.h>

#include "skipper/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration (skipper.ini(5)) ---- */

struct skipper_config; /* opaque */

/* A configuration holding the built-in defaults of every key. *out owned
 * by the caller: skipper_config_free(). */
int skipper_config_new(struct skipper_config **out, struct skipper_error *err);
void skipper_config_free(struct skipper_config *cfg);
/* An INI file layered over what cfg holds (must_exist = 0: a missing file
 * is no error). Errors name file and line. */
int skipper_config_load_file(struct skipper_config *cfg, const char *path, int must_exist,
                             struct skipper_error *err);
/* "section.key=value", layered over everything before it. */
int skipper_config_set(struct skipper_config *cfg, const char *assignment, struct skipper_error *err);
/* The effective value of section.key, or NULL. Owned by cfg. */
const char *skipper_config_get(const struct skipper_config *cfg, const char *section, const char *key);
/* Check every section, key and value, the policies' sections by their
 * plugins, before anything is loaded; errors name file, line, section and
 * key. skipper_session_open checks too; call it to report configuration
 * errors apart from the others. */
int skipper_config_check(const struct skipper_config *cfg, struct skipper_error *err);

/* ---- sessions ---- */

struct skipper_session; /* opaque: a model, its tokenizer, a backend, a policy */

/* Log levels of the hooks. */
#define SKIPPER_LOG_ERROR 0
#define SKIPPER_LOG_WARN 1
#define SKIPPER_LOG_INFO 2
#define SKIPPER_LOG_DEBUG 3

/* What a session tells its caller while it works; every member may be
 * NULL. Called from the thread using the session. */
struct skipper_session_hooks {
	/* A line for a person (no trailing newline): a warning, a note such as
	 * "measuring what verification costs (once)", a policy's own line. */
	void (*log)(void *ctx, int level, const char *msg);
	/* Long work: `what` (a file being downloaded: bytes; "prompt": the
	 * tokens of a prompt of 1024 or more being read by
	 * skipper_session_generate*, told every 512) done of total units
	 * (total 0: unknown), finished = 1 on its last call; what NULL: nothing
	 * to show, the work only asks whether to go on. Non-zero stops the work
	 * (the call fails with SKIPPER_ERR_INTERRUPTED). */
	int (*progress)(void *ctx, const char *what, long long done, long long total, int finished);
	void *ctx;
};

/* Load the model ([model] path or hub), its tokenizer and chat template,
 * the backend and the configured policy, as cfg says (cfg is read during
 * the call only). hooks may be NULL. *out owned by the caller:
 * skipper_session_close(). */
int skipper_session_open(const struct skipper_config *cfg, const struct skipper_session_hooks *hooks,
                         struct skipper_session **out, struct skipper_error *err);
void skipper_session_close(struct skipper_session *s);

/* What a session runs. Owned by the session. */
struct skipper_session_info {
	const char *model;          /* the model's name */
	const char *model_path;     /* the file loaded */
	const char *arch;           /* "llama", "qwen2", "qwen3" */
	const char *backend;        /* "cpu", "cuda" */
	const char *device;         /* the device in words, or NULL (CPU) */
	const char *policy;         /* [policy] name */
	const char *chat_template;  /* "chatml", ..., "none" */
	int n_ctx, n_vocab, n_layer;
};
const struct skipper_session_info *skipper_session_info(const struct skipper_session *s);

/* ---- prompts ---- */

/* One chat message; role "system", "user" or "assistant". */
struct skipper_message {
	const char *role;
	const char *content;
};

/* The token ids of a conversation with the model's chat template applied
 * and the assistant's turn opened (a template that cannot hold the
 * conversation is SKIPPER_ERR_UNSUPPORTED); without a system message the
 * configured one ([generate] system, else the template's default). With
 * chat_template none: the messages' contents, concatenated. *ids malloc'ed,
 * owned by the caller. */
int skipper_session_chat_tokens(struct skipper_session *s, const struct skipper_message *msgs, size_t n_msgs,
                                int32_t **ids, size_t *n_ids, struct skipper_error *err);
/* The text of that conversation with the template applied, the tokens of
 * which skipper_session_chat_tokens gives (for another engine to be given
 * the same input). *text malloc'ed, owned by the caller. */
int skipper_session_chat_text(struct skipper_session *s, const struct skipper_message *msgs, size_t n_msgs,
                              char **text, struct skipper_error *err);
/* The token ids of raw text (BOS as the model asks for it; no template).
 * *ids malloc'ed, owned by the caller. */
int skipper_session_text_tokens(struct skipper_session *s, const char *text, int32_t **ids, size_t *n_ids,
                                struct skipper_error *err);

/* ---- generation ---- */

/* Sampling and length; skipper_session_defaults() fills them from
 * [generate]. temperature 0: greedy (output identical to plain decoding). */
struct skipper_generate_params {
	int max_tokens;
	double temperature;
	double top_p;      /* 1: off */
	int top_k;         /* 0: off */
	uint64_t seed;     /* 0: a new one each time */
};
void skipper_session_defaults(const struct skipper_session *s, struct skipper_generate_params *p);

/* Called with each piece of text as it is committed (whole UTF-8
 * characters; end-of-generation tokens are not rendered) and the token
 * that completed it. Return non-zero to stop generating. */
typedef int (*skipper_text_cb)(void *ctx, const char *text, size_t len, int32_t token);

/* Generate the assistant's answer to msgs (params NULL: the defaults). */
int skipper_session_generate(struct skipper_session *s, const struct skipper_message *msgs, size_t n_msgs,
                             const struct skipper_generate_params *params, skipper_text_cb cb, void *ctx,
                             struct skipper_error *err);
/* The same after prompt ids (skipper_session_*_tokens). */
int skipper_session_generate_ids(struct skipper_session *s, const int32_t *prompt, size_t n_prompt,
                                 const struct skipper_generate_params *params, skipper_text_cb cb, void *ctx,
                                 struct skipper_error *err);

/* What one generation did (DESIGN §4). Times in seconds. */
struct skipper_run_stats {
	int n_prompt, n_generated;
	int rounds;          /* verification passes (plain decoding: one per decoded token after the first) */
	int drafted, accepted;
	double t_prefill, t_draft, t_verify, t_policy, t_total; /* policy = time inside its hooks */
	double t_sample;     /* sampling and acceptance on the host (inside draft and verify) */
	double alpha;        /* accepted / drafted (0 when nothing was drafted) */
	int lookup_drafted, lookup_accepted; /* of drafted / accepted: lookup's (the context's, the corpus
	                                        n-grams' and the history's) */
	int ngram_drafted, ngram_accepted;   /* of those: proposed by the corpus n-grams */
	int backoffs;        /* times drafting was found slower than plain steps and paused */
	double mean_accepted;/* M: tokens committed per verify pass (1.00 for plain decoding) */
	double tokens_per_s; /* decode speed: tokens after the first / (t_total - t_prefill) */
	int draft_head;      /* tokens the draft passes' LM head covers; 0: the whole vocabulary */
	/* rounds that verified drafts: the policy's, lookup's (corpus n-grams
	 * included), the corpus n-grams' */
	int drafts, lookup_drafts, ngram_drafts;
	/* of lookup's: drafts from earlier requests ([lookup] history) */
	int history_drafted, history_accepted, history_drafts;
	int n_reused;        /* prompt tokens whose K/V an earlier request left ([generate] prefix_cache) */
};
/* The last generation's, valid until the next generation or close. */
const struct skipper_run_stats *skipper_session_stats(const struct skipper_session *s);

/* ---- several requests at once (skipper serve) ----
 *
 * A batch decodes up to n_seq requests together, each in its own KV
 * sequence of the session's backend: every pass carries the next token of
 * each running request and the drafts the batch chooses to verify beside
 * them, a request joins at the next pass after its prompt (read in chunks
 * of prefill_chunk tokens between passes), and the rest wait in a bounded
 * queue. Greedy output of each request is what skipper_session_generate
 * gives it alone. The batch's loop runs in one thread (skipper_batch_run);
 * submit, cancel, stop and metrics may be called from any thread. */

struct skipper_batch; /* opaque */

struct skipper_batch_opts {
	int n_seq;          /* requests decoded together (>= 1) */
	int max_queue;      /* requests waiting beyond those; more: SKIPPER_ERR_BUSY */
	int prefill_chunk;  /* prompt tokens per pass of a request being read (0: 512) */
};

/* Make a batch on s (which it borrows: close the batch first). */
int skipper_batch_new(struct skipper_session *s, const struct skipper_batch_opts *o, struct skipper_batch **out,
                      struct skipper_error *err);
void skipper_batch_free(struct skipper_batch *b);

/* How a request ended. */
enum skipper_finish {
	SKIPPER_FINISH_STOP = 0,     /* end of generation (or the text callback asked to stop) */
	SKIPPER_FINISH_LENGTH = 1,   /* max_tokens, or the context is full */
	SKIPPER_FINISH_CANCELLED = 2,/* skipper_batch_cancel, or the batch stopped */
	SKIPPER_FINISH_ERROR = 3     /* see the message */
};

/* One request. The callbacks run in the batch's thread, in order, and
 * must not block: hand the text to the thread that serves the request. */
struct skipper_batch_request {
	const int32_t *prompt;    /* copied at submit */
	size_t n_prompt;
	struct skipper_generate_params params;
	skipper_text_cb on_text;  /* each piece of text; non-zero: stop (finish STOP) */
	/* Exactly once, last: how it ended, its statistics, and the message of
	 * an error (else NULL). */
	void (*on_done)(void *ctx, int finish, const struct skipper_run_stats *st, const char *error);
	void *ctx;
	/* Whose earlier requests this one may draft from ([lookup] history,
	 * history_scope = key): requests with the same key share a history,
	 * others never see it (what a request drafts can be told from how fast
	 * it answers). NULL: the history every request without a key shares.
	 * A server passes a digest of the client's API key, not the key. */
	const char *history_key;
};

/* Queue r; *id identifies it for skipper_batch_cancel. SKIPPER_ERR_BUSY:
 * the queue is full (try again later); SKIPPER_ERR_RANGE: the prompt does
 * not fit the context (the message gives both); SKIPPER_ERR_INTERRUPTED:
 * the batch is stopping. On an error no callback is ever called. */
int skipper_batch_submit(struct skipper_batch *b, const struct skipper_batch_request *r, uint64_t *id,
                         struct skipper_error *err);
/* End request id at the next pass (its on_done says CANCELLED); an id that
 * already ended is ignored. */
void skipper_batch_cancel(struct skipper_batch *b, uint64_t id);

/* Decode until skipper_batch_stop: returns SKIPPER_OK once stopped and
 * every request ended. */
int skipper_batch_run(struct skipper_batch *b);
/* Stop the loop: queued requests are cancelled; running ones finish
 * (drain) or are cancelled at the next pass; no new request is taken. */
void skipper_batch_stop(struct skipper_batch *b, int drain);

/* What a batch has done, since it was made (counters) and now (gauges).
 * Draft sources: 0 layer-skip drafts (the policy's), 1 context lookup,
 * 2 corpus n-grams, 3 history (SKIPPER_DRAFT_SOURCES). */
#define SKIPPER_DRAFT_SOURCES 4
struct skipper_batch_metrics {
	uint64_t requests, requests_failed, requests_cancelled;
	uint64_t prompt_tokens, generated_tokens;
	uint64_t passes;            /* forward passes of the whole batch */
	uint64_t pass_rows;         /* rows over those passes */
	uint64_t drafts[SKIPPER_DRAFT_SOURCES];          /* rounds that verified drafts of the source */
	uint64_t drafted[SKIPPER_DRAFT_SOURCES];         /* draft tokens verified */
	uint64_t accepted[SKIPPER_DRAFT_SOURCES];        /* of them, accepted */
	double busy_seconds;        /* time spent in passes */
	int queued, running;        /* now */
	int n_seq, max_queue;
	uint64_t draft_passes;      /* layer-skip draft steps run as passes of the batch */
	uint64_t draft_rows;        /* rows over those passes (one a drafting sequence) */
};
void skipper_batch_metrics(struct skipper_batch *b, struct skipper_batch_metrics *m);

/* The library's version ("0.1.0"). */
const char *skipper_version(void);

#ifdef __cplusplus
}
#endif
#endif
