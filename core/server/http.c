/* The HTTP layer: libmicrohttpd with a thread per connection, so that the
 * thread answering a request may simply wait for its generation and look
 * at its socket to see the client leave; limits on what a client may make
 * the server hold; the routes; the access log line when a request ends. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "internal.h"

enum route { R_HEALTH, R_MODELS, R_METRICS, R_CHAT, R_COMPLETIONS };

static const struct {
	const char *path;
	enum route route;
	const char *method; /* GET (HEAD too) or POST */
	int open;           /* answered without the API key */
} routes[] = {
	{ "/health", R_HEALTH, "GET", 1 },
	{ "/v1/models", R_MODELS, "GET", 0 },
	{ "/metrics", R_METRICS, "GET", 0 },
	{ "/v1/chat/completions", R_CHAT, "POST", 0 },
	{ "/v1/completions", R_COMPLETIONS, "POST", 0 },
};

/* One HTTP request, from its headers to the end of its answer. */
struct call {
	struct server *srv;
	struct MHD_Connection *conn;
	double t0;
	char method[16], path[160], client[64];
	int route;
	char *body;
	size_t len, cap;
	int status;          /* the answer's, for the log and /metrics; 0: none yet */
	struct api_call *api;
};

double http_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- answers ---- */

enum MHD_Result http_queue(struct call *c, int status, struct MHD_Response *r)
{
	if (atomic_load(&c->srv->stopping))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	c->status = status;
	return MHD_queue_response(c->conn, (unsigned)status, r);
}

static enum MHD_Result respond(struct call *c, int status, const char *type, char *body)
{
	static const char nomem[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
	                            "\"param\":null,\"code\":null}}";
	struct MHD_Response *r;
	enum MHD_Result ok;

	if (body) {
		r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	} else {
		status = 500;
		type = "application/json";
		r = MHD_create_response_from_buffer(sizeof nomem - 1, (void *)nomem, MHD_RESPMEM_PERSISTENT);
	}
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == 503)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (status == 401)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	if (status == 405)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, routes[c->route].method[0] == 'G' ? "GET, HEAD" : "POST");
	ok = http_queue(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

enum MHD_Result http_json(struct call *c, int status, char *body)
{
	return respond(c, status, "application/json", body);
}

enum MHD_Result http_error(struct call *c, const struct oa_error *e)
{
	return respond(c, e->status, "application/json", oa_error_body(e));
}

/* An error of the HTTP layer (no request field to name). */
static enum MHD_Result fail(struct call *c, int status, const char *type, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static enum MHD_Result fail(struct call *c, int status, const char *type, const char *code, const char *fmt, ...)
{
	struct oa_error e = { .status = status, .type = type, .code = code };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e.message, sizeof e.message, fmt, ap);
	va_end(ap);
	return http_error(c, &e);
}

int http_client_gone(struct call *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd p = { .events = POLLRDHUP };

	if (!ci)
		return 0;
	p.fd = ci->connect_fd;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

void http_timeout(struct call *c, int on)
{
	MHD_set_connection_option(c->conn, MHD_CONNECTION_OPTION_TIMEOUT,
	                          on ? (unsigned)c->srv->lim.read_timeout : 0u);
}

/* ---- the GET endpoints ---- */

static enum MHD_Result health(struct call *c)
{
	struct server *srv = c->srv;
	const char *st = atomic_load(&srv->stopping) ? "stopping" : atomic_load(&srv->loaded) ? "ok" : "loading";
	int status = strcmp(st, "ok") == 0 ? 200 : 503;
	json_t *o = json_pack("{s:s}", "status", st);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return http_json(c, status, s);
}

static enum MHD_Result models(struct call *c)
{
	struct server *srv = c->srv;
	json_t *o = json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:{s:i, s:s}}]}", "object", "list", "data", "id",
	                      srv->model_name, "object", "model", "created", (json_int_t)srv->started, "owned_by",
	                      "skipper", "meta", "n_ctx", srv->n_ctx, "policy", srv->policy);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return http_json(c, 200, s);
}

static enum MHD_Result metrics(struct call *c)
{
	struct skipper_batch_metrics m = { 0 };

	if (atomic_load(&c->srv->loaded))
		skipper_batch_metrics(c->srv->b, &m);
	return respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", metrics_text(&m, c->srv->codes));
}

/* ---- requests ---- */

/* What the first call of a request can tell: its route, its method, the
 * key and the body's declared size. MHD_YES with no
 * answer queued: read the body (an answer queued now closes the
 * connection, as the body is left unread). */
static enum MHD_Result begin(struct call *c, const char *url, const char *method)
{
	struct server *srv = c->srv;
	const char *auth, *length;
	unsigned long long declared;
	size_t i;
	int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;

	for (i = 0; i < sizeof routes / sizeof routes[0] && strcmp(url, routes[i].path) != 0; i++)
		;
	if (i == sizeof routes / sizeof routes[0])
		return fail(c, 404, "invalid_request_error", "not_found", "no such endpoint: %s", c->path);
	c->route = (int)i;
	if (routes[i].method[0] == 'G' ? !get : strcmp(method, "POST") != 0)
		return fail(c, 405, "invalid_request_error", "method_not_allowed", "%s %s: use %s", c->method, c->path,
		            routes[i].method);
	auth = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!routes[i].open && srv->auth && !auth_check(srv->auth, auth))
		return fail(c, 401, "invalid_request_error", "invalid_api_key",
		            auth ? "incorrect API key provided" : "an API key is needed: Authorization: Bearer KEY");
	length = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	declared = length ? strtoull(length, NULL, 10) : 0;
	if (declared > (unsigned long long)srv->lim.max_body_bytes)
		return fail(c, 413, "invalid_request_error", "request_too_large",
		            "a body of %llu bytes, over the limit of %lld ([server] max_body_bytes)", declared,
		            srv->lim.max_body_bytes);
	return MHD_YES;
}

/* The request has been read: answer it. */
static enum MHD_Result dispatch(struct call *c)
{
	struct server *srv = c->srv;
	enum route r = routes[c->route].route;

	if (r == R_HEALTH)
		return health(c);
	if (r == R_METRICS)
		return metrics(c);
	if (atomic_load(&srv->stopping))
		return fail(c, 503, "server_error", "stopping", "the server is stopping");
	if (!atomic_load(&srv->loaded))
		return fail(c, 503, "server_error", "loading", "the model is loading");
	if (r == R_MODELS)
		return models(c);
	return api_completion(c, srv, c->body ? c->body : "", c->len, r == R_CHAT, &c->api);
}

/* Body bytes: kept while within the limits, else the connection is
 * dropped (nothing can be answered in the middle of a body). */
static enum MHD_Result body(struct call *c, const char *data, size_t n)
{
	const struct server_limits *lim = &c->srv->lim;

	if (http_now() - c->t0 > lim->read_timeout) {
		c->status = 408;
		return MHD_NO;
	}
	if (c->len + n > (size_t)lim->max_body_bytes) {
		c->status = 413;
		return MHD_NO;
	}
	if (c->len + n + 1 > c->cap) {
		size_t cap = c->len + n + 1 > c->cap * 2 ? c->len + n + 1 : c->cap * 2;
		char *b = realloc(c->body, cap);
		if (!b)
			return MHD_NO;
		c->body = b;
		c->cap = cap;
	}
	memcpy(c->body + c->len, data, n);
	c->len += n;
	return MHD_YES;
}

static struct call *call_new(struct server *srv, struct MHD_Connection *conn, const char *url, const char *method)
{
	struct call *c = calloc(1, sizeof *c);
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	if (!c)
		return NULL;
	c->srv = srv;
	c->conn = conn;
	c->t0 = http_now();
	atomic_fetch_add(&srv->calls, 1);
	/* as the client sent them, cut short: the log and the error messages
	 * make them printable */
	snprintf(c->method, sizeof c->method, "%s", method);
	snprintf(c->path, sizeof c->path, "%s", url);
	strcpy(c->client, "-");
	if (ci && ci->client_addr)
		getnameinfo(ci->client_addr,
		            ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in),
		            c->client, sizeof c->client, NULL, 0, NI_NUMERICHOST);
	return c;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct server *srv = cls;
	struct call *c = *con_cls;

	if (!c) {
		if (!(*con_cls = c = call_new(srv, conn, url, method)))
			return MHD_NO;
		return begin(c, url, method);
	}
	if (c->status) { /* answered already: what is left of the body is dropped */
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		return body(c, upload, n);
	}
	return dispatch(c);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode how)
{
	struct server *srv = cls;
	struct call *c = *con_cls;
	struct access_entry e = { 0 };

	if (!c)
		return;
	*con_cls = NULL;
	/* no answer: the client left (499, nginx's word for it) or was too slow */
	e.status = c->status ? c->status : how == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? 408 : 499;
	e.client = c->client;
	e.method = c->method;
	e.path = c->path;
	api_end(c->api, srv, &e);
	e.seconds = http_now() - c->t0;
	if (e.status >= 100 && e.status < HTTP_CODES)
		atomic_fetch_add(&srv->codes[e.status], 1);
	access_log_write(srv->log, &e);
	free(c->body);
	free(c);
	atomic_fetch_sub(&srv->calls, 1);
}

/* libmicrohttpd's own messages (a client that left mid-answer, ...): only
 * with SKIPPER_DEBUG, as they say nothing the access log does not. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	if (!getenv("SKIPPER_DEBUG"))
		return;
	fprintf(stderr, "skipper serve: http: ");
	vfprintf(stderr, fmt, ap);
}

/* ---- the server ---- */

/* A listening socket on host:port; *port set to the port bound. */
static int listen_on(const char *host, int *port, int *out, struct skipper_error *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		                  .ai_flags = AI_PASSIVE | AI_NUMERICSERV },
		        *res, *a;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char ps[16];
	int fd = -1, e = 0, rc, one = 1;

	snprintf(ps, sizeof ps, "%d", *port);
	if ((rc = getaddrinfo(host, ps, &hints, &res)))
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "[server] host = %s: %s", host, gai_strerror(rc));
	for (a = res; a && fd < 0; a = a->ai_next) {
		if ((fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol)) < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, SOMAXCONN)) {
			e = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		return skipper_fail(err, SKIPPER_ERR_IO, "cannot listen on %s port %d: %s", host, *port, strerror(e));
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                       : ((struct sockaddr_in *)&ss)->sin_port);
	*out = fd;
	return SKIPPER_OK;
}

int server_start(const struct server_opts *o, struct server **out, struct skipper_error *err)
{
	struct server *srv = calloc(1, sizeof *srv);
	int rc;

	if (!srv)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	srv->lim = o->lim;
	srv->auth = o->auth;
	srv->log = o->log;
	srv->port = o->port;
	srv->started = (long long)time(NULL);
	snprintf(srv->model_name, sizeof srv->model_name, "%s", o->model_name ? o->model_name : "");
	if ((rc = listen_on(o->host, &srv->port, &srv->fd, err))) {
		free(srv);
		return rc;
	}
	/* the pool holds a request's headers and the buffers to read and
	 * write them in; the body is kept apart (max_body_bytes) */
	srv->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
	                                  MHD_USE_ITC | MHD_USE_ERROR_LOG,
	                          0, NULL, NULL, on_request, srv, MHD_OPTION_LISTEN_SOCKET, srv->fd,
	                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->lim.max_connections,
	                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->lim.read_timeout,
	                          MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)o->lim.max_header_bytes + 1024,
	                          MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
	                          srv, MHD_OPTION_END);
	if (!srv->d) {
		close(srv->fd);
		free(srv);
		return skipper_fail(err, SKIPPER_ERR_IO, "cannot start the HTTP server (libmicrohttpd) on %s port %d",
		                    o->host, o->port);
	}
	*out = srv;
	return SKIPPER_OK;
}

int server_port(const struct server *srv)
{
	return srv->port;
}

void server_ready(struct server *srv, struct skipper_session *s, struct skipper_batch *b)
{
	const struct skipper_session_info *in = skipper_session_info(s);

	srv->s = s;
	srv->b = b;
	skipper_session_defaults(s, &srv->defaults);
	srv->n_ctx = in->n_ctx;
	srv->n_vocab = in->n_vocab;
	srv->policy = in->policy ? in->policy : "none";
	if (!srv->model_name[0]) {
		const char *base = strrchr(in->model_path, '/');
		snprintf(srv->model_name, sizeof srv->model_name, "%s", base ? base + 1 : in->model_path);
	}
	oa_utf8_clean(srv->model_name); /* a name cut short, or a file's name in another encoding */
	atomic_store(&srv->loaded, 1);
}

void server_quiesce(struct server *srv)
{
	int fd;

	atomic_store(&srv->stopping, 1);
	if ((fd = MHD_quiesce_daemon(srv->d)) >= 0)
		close(fd);
	srv->fd = -1;
}

void server_stop(struct server *srv)
{
	double until;

	if (!srv)
		return;
	/* answers still being written go out before the connections close (a
	 * client that does not read them is dropped after read_timeout anyway) */
	until = http_now() + srv->lim.read_timeout;
	while (atomic_load(&srv->calls) > 0 && http_now() < until)
		nanosleep(&(struct timespec){ 0, 50000000L }, NULL);
	MHD_stop_daemon(srv->d);
	free(srv);
}
