/* What the server's files share: the server and one HTTP request (http.c),
 * a generation between two threads (gen.c), the OpenAI JSON (openai.c),
 * the completion endpoints (api.c), the metrics text (metrics.c). Not
 * seen outside core/server/ (cmd_serve.c uses server.h). */
#ifndef SKIPPER_SERVER_INTERNAL_H
#define SKIPPER_SERVER_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdint.h>

#include "server.h"

#define HTTP_CODES 600

struct server {
	struct MHD_Daemon *d;
	int fd;                      /* the listening socket, -1 once quiesced */
	int port;
	struct server_limits lim;
	const struct server_auth *auth;
	struct access_log *log;
	char model_name[256];        /* the id answers carry (set by server_ready unless given) */
	long long started;           /* time(NULL) at start: /v1/models' created */
	/* loaded is set once s, b and the members below it are; stopping once
	 * server_quiesce ran (either may come first: a signal while loading) */
	atomic_int loaded, stopping;
	struct skipper_session *s;
	struct skipper_batch *b;
	struct skipper_generate_params defaults;
	int n_ctx, n_vocab;
	const char *policy;
	atomic_ullong codes[HTTP_CODES]; /* answers by HTTP status */
	atomic_int calls;            /* requests begun and not yet ended */
};

/* ---- gen.c: one generation ----
 * The batch's thread appends text (gen_on_text) and ends it (gen_on_done);
 * the thread answering the client waits for text (gen_wait). Text that
 * could be the start of a stop string is held back until it is known not
 * to be one; a stop string ends the generation, the text cut before it. */
struct gen;
/* With its stop strings (copied); one reference, the caller's. NULL when
 * out of memory. */
struct gen *gen_new(const char *const *stop, int n_stop);
void gen_hold(struct gen *g);    /* the batch's reference, taken before submit */
void gen_release(struct gen *g); /* the last one frees g */
/* The batch's callbacks (ctx = g); gen_on_done drops the batch's reference. */
int gen_on_text(void *ctx, const char *text, size_t len, int32_t token);
void gen_on_done(void *ctx, int finish, const struct skipper_run_stats *st, const char *error);

struct gen_view {
	char *text;     /* the text that may be sent past `from` (malloc'ed; NULL: none) */
	size_t n;       /* its length */
	int done;       /* ended: that was the last of it, and the members below are set */
	int finish;     /* enum skipper_finish */
	int n_tokens;   /* tokens generated so far */
};
/* Wait at most ms milliseconds for text past byte `from` or the end, and
 * take it into v. -1 when out of memory. */
int gen_wait(struct gen *g, size_t from, int ms, struct gen_view *v);
/* Once gen_wait said done: the statistics and the error message (NULL: none;
 * "out of memory" when the text could not be kept). Owned by g. */
const struct skipper_run_stats *gen_stats(const struct gen *g);
const char *gen_error(const struct gen *g);

/* ---- openai.c: requests and answers ---- */

/* An error as OpenAI clients read it:
 * {"error": {"message", "type", "param", "code"}} with an HTTP status. */
struct oa_error {
	int status;
	const char *type;   /* "invalid_request_error", "server_error", ... */
	const char *code;   /* NULL: null */
	char param[96];     /* "": null */
	char message[512];
};
/* Fill e; returns -1 so that callers can `return oa_fail(...)`. */
int oa_fail(struct oa_error *e, int status, const char *type, const char *code, const char *param,
            const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Bytes of s that are not UTF-8 replaced with '?' (JSON strings must be). */
void oa_utf8_clean(char *s);
/* e as a JSON body, malloc'ed (NULL when out of memory). */
char *oa_error_body(const struct oa_error *e);

#define OA_MAX_STOP 16      /* stop strings per request */
#define OA_MAX_STOP_LEN 256 /* bytes of one */
#define OA_MAX_USER 256     /* bytes of "user" */

/* A completion request, checked. */
struct oa_request {
	int chat;                          /* /v1/chat/completions, else /v1/completions */
	json_t *root;                      /* the body, owning the strings below */
	struct skipper_message *msgs;      /* chat */
	size_t n_msgs;
	char **joined;                     /* contents made of several text parts */
	size_t n_joined;
	const char *prompt;                /* completions: text, or */
	int32_t *prompt_ids;               /* token ids (malloc'ed) */
	size_t n_prompt_ids;
	int max_tokens;                    /* 0: not given */
	const char *max_tokens_param;      /* the field it came from */
	struct skipper_generate_params p;  /* the defaults, the request's values over them */
	const char *stop[OA_MAX_STOP];
	int n_stop;
	int stream, include_usage;
	const char *user;                  /* "user": the end user's identifier, or NULL */
	size_t user_len;
};
/* The body of a completion request into r (defaults: [generate]'s; token
 * ids must be below n_vocab). Unknown fields are ignored; fields that would
 * change the answer in a way not supported are refused, naming the field.
 * -1 with e filled (400). Free r with oa_request_free either way. */
int oa_parse(const char *body, size_t len, int chat, const struct skipper_generate_params *defaults, int n_vocab,
             struct oa_request *r, struct oa_error *e);
void oa_request_free(struct oa_request *r);

/* What every answer to one request carries. */
struct oa_answer {
	int chat;
	char id[48];       /* chatcmpl-... or cmpl-... */
	long long created;
	const char *model, *policy;
	int n_prompt;
	int include_usage;
};
void oa_answer_init(struct oa_answer *a, int chat, const char *model, const char *policy, int n_prompt,
                    int include_usage);
const char *oa_finish_reason(int finish);
/* The whole answer (chat.completion or text_completion), malloc'ed JSON. */
char *oa_body(const struct oa_answer *a, const char *text, size_t n, int finish, const struct skipper_run_stats *st);
/* One SSE event "data: {...}\n\n", malloc'ed: the chat's first chunk (role
 * set), a piece of text, or the finish (finish >= 0: text must be empty). */
char *oa_chunk(const struct oa_answer *a, int role, const char *text, size_t n, int finish);
/* The last chunk: no choices, usage and skipper's statistics. */
char *oa_usage_chunk(const struct oa_answer *a, const struct skipper_run_stats *st);
/* An error as an SSE event. */
char *oa_error_event(const struct oa_error *e);
#define OA_DONE "data: [DONE]\n\n"

/* ---- http.c: one HTTP request ---- */

struct call;
/* Answer with body (a JSON object, taken over: freed here) and status;
 * body NULL: 500, out of memory. */
enum MHD_Result http_json(struct call *c, int status, char *body);
enum MHD_Result http_error(struct call *c, const struct oa_error *e);
/* Queue r (the caller still destroys its reference) with status. */
enum MHD_Result http_queue(struct call *c, int status, struct MHD_Response *r);
/* The connection's idle timeout ([server] read_timeout) on or off: off
 * while the server works on an answer, since then the silence is ours. */
void http_timeout(struct call *c, int on);
/* 1 when the client has closed its end. */
int http_client_gone(struct call *c);
/* Seconds on the monotonic clock. */
double http_now(void);

/* ---- api.c: the completion endpoints ---- */

struct api_call; /* what api.c keeps of a call */
/* The whole body of POST /v1/chat/completions (chat) or /v1/completions
 * has been read: answer it (*ac what is kept until api_end). */
enum MHD_Result api_completion(struct call *c, struct server *srv, const char *body, size_t len, int chat,
                               struct api_call **ac);
/* The call is over (answered, or the client gone): cancel a generation
 * still running, fill the log entry's token counts and finish, free. */
void api_end(struct api_call *ac, struct server *srv, struct access_entry *e);

/* ---- metrics.c ---- */

/* The Prometheus text of m and the answers by HTTP status, malloc'ed. */
char *metrics_text(const struct skipper_batch_metrics *m, const atomic_ullong *codes);

#endif
