/* core/server/ -- skipper serve: an OpenAI-compatible HTTP server over the
 * library's batch API (skipper_batch_*, skipper/skipper.h). http.c is the
 * HTTP layer on libmicrohttpd (listening, limits, routing, the access log
 * call); api.c the completion endpoints (parse, validate, tokenize, submit,
 * answer or stream); openai.c the JSON of requests, answers, SSE chunks and
 * errors; gen.c one generation handed from the batch's thread to the
 * connection's (text, stop strings, the end); metrics.c the Prometheus
 * text; auth.c the API key; access_log.c the log lines. Compiled into the
 * skipper program. May include: core/session/ and below. Called by
 * core/cli/cmd_serve.c. */
#ifndef SKIPPER_SERVER_H
#define SKIPPER_SERVER_H

#include <stddef.h>

#include "session/session.h"

/* Bounds on what one client may make the server hold ([server] keys). */
struct server_limits {
	long long max_body_bytes;   /* a larger request body is refused (413) */
	long long max_header_bytes; /* headers beyond about this much are refused (431) */
	int read_timeout;           /* seconds: a client silent this long is dropped, and a body
	                               not read within it is refused (408) */
	int max_connections;        /* connections past this are closed at once */
};

struct server_auth;  /* auth.c */
struct access_log;   /* access_log.c */

struct server_opts {
	const char *host;     /* an address or a name that resolves to one */
	int port;             /* 0: any free port (server_port tells which) */
	struct server_limits lim;
	const char *model_name;          /* the model's id in answers; NULL: the file's name */
	const struct server_auth *auth;  /* NULL: no key asked for */
	struct access_log *log;          /* NULL: no access log */
};

struct server; /* opaque */

/* Listen on o->host:o->port and answer at once: /health says "loading" and
 * the API 503 until server_ready. o's strings are copied; auth and log are
 * borrowed until server_stop. *out owned by the caller: server_stop(). */
int server_start(const struct server_opts *o, struct server **out, struct skipper_error *err);
/* The port listened on. */
int server_port(const struct server *srv);
/* The model is loaded: answer requests with s and b (borrowed until
 * server_stop; b's loop runs in a thread of the caller's). */
void server_ready(struct server *srv, struct skipper_session *s, struct skipper_batch *b);
/* Stop accepting connections; a request on a connection already open is
 * answered 503 and the connection closed. Requests being answered go on. */
void server_quiesce(struct server *srv);
/* Close every connection (each request being answered must have ended:
 * stop and join the batch first) and free srv. */
void server_stop(struct server *srv);

/* ---- auth.c ---- */

/* The key in path (one line, surrounding white space dropped; no white
 * space or control characters inside). *out owned by the caller:
 * auth_free, which wipes the key. */
int auth_load(const char *path, struct server_auth **out, struct skipper_error *err);
void auth_free(struct server_auth *a);
/* 1 when the Authorization header value (NULL: none) is "Bearer KEY";
 * the time taken depends on the key's length only. */
int auth_check(const struct server_auth *a, const char *authorization);

/* ---- access_log.c ---- */

/* where: "" standard error, "off" none (*out NULL), else a file appended
 * to. *out owned by the caller: access_log_close. */
int access_log_open(const char *where, struct access_log **out, struct skipper_error *err);
void access_log_close(struct access_log *l);

struct access_entry {
	const char *client, *method, *path;
	int status;
	int prompt_tokens, completion_tokens;
	double seconds;
	const char *finish;   /* "stop", "length", "cancelled", "error" or NULL: no generation */
};
/* One line: time client "METHOD PATH" status prompt completion seconds
 * finish. Safe from any thread. */
void access_log_write(struct access_log *l, const struct access_entry *e);

#endif
