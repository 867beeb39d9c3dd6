/* skipper serve: the OpenAI-compatible server (core/server/). It listens
 * first and loads the model while /health says so; the batch decodes in a
 * thread of its own; SIGINT or SIGTERM stop it cleanly: no new connection,
 * the requests in flight given [server] shutdown_timeout to finish, then
 * cancelled, exit 0. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "cli.h"
#include "server/server.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: skipper serve [-c FILE] [--set SECTION.KEY=VALUE]... [-m MODEL] [-t N] [--ctx N]\n"
	        "                     [--kv-type T] [--policy NAME] [--profile FILE] [--host ADDR] [--port N]\n"
	        "                     [--parallel N] [--api-key-file FILE]\n"
	        "An OpenAI-compatible HTTP server: POST /v1/chat/completions, /v1/completions;\n"
	        "GET /v1/models, /health, /metrics. [server] keys: skipper.ini(5); skipper-serve(1).\n");
}

/* Options that are a --set of one [server] key. */
static const struct {
	const char *opt, *key;
} shortcuts[] = {
	{ "--host", "server.host" },
	{ "--port", "server.port" },
	{ "--parallel", "server.parallel" },
	{ "--api-key-file", "server.api_key_file" },
};

static int parse_args(struct cli_common *c, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(c, argc, argv, &i);
		size_t k;
		if (r < 0)
			return EXIT_USAGE;
		if (r)
			continue;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return EXIT_OK;
		}
		for (k = 0; k < sizeof shortcuts / sizeof shortcuts[0] && strcmp(argv[i], shortcuts[k].opt) != 0; k++)
			;
		if (k == sizeof shortcuts / sizeof shortcuts[0] || i + 1 >= argc) {
			fprintf(stderr, "skipper serve: unknown or incomplete option '%s'\n", argv[i]);
			usage(stderr);
			return EXIT_USAGE;
		}
		if (cli_common_add_set(c, shortcuts[k].key, argv[++i])) {
			fprintf(stderr, "skipper serve: out of memory\n");
			return EXIT_FAILURE_GENERIC;
		}
	}
	return -1;
}

/* The [server] section. */
struct settings {
	struct server_opts so;
	struct skipper_batch_opts bo;
	long shutdown_timeout;
	const char *access_log, *api_key_file;
};

static int read_settings(const struct skipper_config *cfg, struct settings *st, struct skipper_error *err)
{
	static const char *const ints[] = { "port", "parallel", "max_queue", "prefill_chunk", "read_timeout",
		                            "max_connections", "shutdown_timeout" };
	long v[sizeof ints / sizeof ints[0]];
	const char *name;
	int rc;

	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
		if ((rc = skipper_config_get_int(cfg, "server", ints[i], &v[i], err)))
			return rc;
	st->so.port = (int)v[0];
	st->bo.n_seq = (int)v[1];
	st->bo.max_queue = (int)v[2];
	st->bo.prefill_chunk = (int)v[3];
	st->so.lim.read_timeout = (int)v[4];
	st->so.lim.max_connections = (int)v[5];
	st->shutdown_timeout = v[6];
	if ((rc = skipper_config_get_size(cfg, "server", "max_body_bytes", &st->so.lim.max_body_bytes, err)) ||
	    (rc = skipper_config_get_size(cfg, "server", "max_header_bytes", &st->so.lim.max_header_bytes, err)))
		return rc;
	if (st->so.lim.max_header_bytes < 1024 || st->so.lim.max_header_bytes > (1 << 20))
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "[server] max_header_bytes = %lld: expected 1K to 1M",
		                    st->so.lim.max_header_bytes);
	if (st->so.lim.max_body_bytes > (1LL << 30))
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "[server] max_body_bytes = %lld: expected at most 1G",
		                    st->so.lim.max_body_bytes);
	st->so.host = skipper_config_get(cfg, "server", "host");
	if (!st->so.host || !*st->so.host)
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "[server] host: empty");
	name = skipper_config_get(cfg, "server", "model_name");
	st->so.model_name = name && *name ? name : NULL;
	st->access_log = skipper_config_get(cfg, "server", "access_log");
	st->api_key_file = skipper_config_get(cfg, "server", "api_key_file");
	return SKIPPER_OK;
}

/* SIGINT and SIGTERM are blocked in every thread and taken by one, which
 * counts them: the first stops the server, a second cuts the wait for
 * the requests in flight short. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int signals, quit;
	sigset_t set;
} sig = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void *signal_main(void *arg)
{
	for (;;) {
		int s, quit;
		if (sigwait(&sig.set, &s))
			continue;
		pthread_mutex_lock(&sig.mu);
		if (!(quit = sig.quit)) {
			sig.signals++;
			cli_interrupted = s; /* what the library's progress hooks look at while loading */
			pthread_cond_broadcast(&sig.cv);
		}
		pthread_mutex_unlock(&sig.mu);
		if (quit)
			return NULL;
	}
}

static void *batch_main(void *b)
{
	skipper_batch_run(b);
	return NULL;
}

/* Wait for a signal, or until `until` (monotonic, NULL: forever) passes
 * or idle(arg) says there is nothing left to wait for. Returns the count
 * of signals so far. */
static int wait_signals(int want, const struct timespec *until, int (*idle)(void *), void *arg)
{
	int n;

	pthread_mutex_lock(&sig.mu);
	while ((n = sig.signals) < want) {
		struct timespec t;
		if (idle && idle(arg))
			break;
		if (!until) {
			pthread_cond_wait(&sig.cv, &sig.mu);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec > until->tv_sec || (t.tv_sec == until->tv_sec && t.tv_nsec >= until->tv_nsec))
			break;
		/* look again in a tenth of a second */
		if ((t.tv_nsec += 100000000L) >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&sig.cv, &sig.mu, &t);
	}
	pthread_mutex_unlock(&sig.mu);
	return n;
}

static int signals(void)
{
	int n;
	pthread_mutex_lock(&sig.mu);
	n = sig.signals;
	pthread_mutex_unlock(&sig.mu);
	return n;
}

static int batch_idle(void *b)
{
	struct skipper_batch_metrics m;
	skipper_batch_metrics(b, &m);
	return m.queued + m.running == 0;
}

/* After the first signal: stop accepting, let what runs finish within the
 * timeout (a second signal: at once), cancel the rest. */
static void shut_down(struct server *srv, struct skipper_batch *b, pthread_t batch_thread, long timeout)
{
	struct skipper_batch_metrics m;
	struct timespec until;

	server_quiesce(srv);
	if (!b)
		return;
	skipper_batch_metrics(b, &m);
	if (m.queued + m.running) {
		fprintf(stderr, "skipper serve: stopping: %d requests in flight, at most %ld s to finish\n",
		        m.queued + m.running, timeout);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += timeout;
		wait_signals(2, &until, batch_idle, b);
		skipper_batch_metrics(b, &m);
		if (m.queued + m.running)
			fprintf(stderr, "skipper serve: cancelling %d requests\n", m.queued + m.running);
	}
	skipper_batch_stop(b, 0);
	pthread_join(batch_thread, NULL);
}

static void print_listening(const struct settings *st, int port)
{
	int v6 = strchr(st->so.host, ':') != NULL;
	fprintf(stderr, "skipper serve: listening on http://%s%s%s:%d\n", v6 ? "[" : "", st->so.host, v6 ? "]" : "",
	        port);
}

int cmd_serve(int argc, char **argv)
{
	struct cli_common c = { 0 };
	struct skipper_config *cfg = NULL;
	struct skipper_session *s = NULL;
	struct skipper_batch *b = NULL;
	struct skipper_error err = { 0 };
	struct server_auth *auth = NULL;
	struct access_log *log = NULL;
	struct server *srv = NULL;
	struct settings st = { 0 };
	pthread_t sig_thread, batch_thread = 0;
	pthread_condattr_t ca;
	int rc;

	rc = parse_args(&c, argc, argv);
	if (rc < 0)
		rc = cli_load_config(&c, &cfg);
	cli_common_free(&c);
	if (rc || !cfg)
		return rc;
	if ((rc = read_settings(cfg, &st, &err)) || (*st.api_key_file && (rc = auth_load(st.api_key_file, &auth, &err))) ||
	    (rc = access_log_open(st.access_log, &log, &err))) {
		rc = cli_fail(&err, rc);
		goto out;
	}
	st.so.auth = auth;
	st.so.log = log;

	/* before any thread is made, so that every one inherits the mask */
	sigemptyset(&sig.set);
	sigaddset(&sig.set, SIGINT);
	sigaddset(&sig.set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sig.set, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client gone is seen in the write's error */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sig.cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((errno = pthread_create(&sig_thread, NULL, signal_main, NULL))) {
		fprintf(stderr, "skipper serve: cannot start a thread: %s\n", strerror(errno));
		rc = EXIT_FAILURE_GENERIC;
		goto out;
	}

	if ((rc = server_start(&st.so, &srv, &err))) {
		rc = cli_fail(&err, rc);
		goto stop_signals;
	}
	print_listening(&st, server_port(srv));
	rc = cli_session_open(cfg, NULL, &s);
	if (!rc && (rc = skipper_batch_new(s, &st.bo, &b, &err)))
		rc = cli_fail(&err, rc);
	if (!rc && (errno = pthread_create(&batch_thread, NULL, batch_main, b))) {
		fprintf(stderr, "skipper serve: cannot start a thread: %s\n", strerror(errno));
		rc = EXIT_FAILURE_GENERIC;
	}
	if (!rc) {
		const struct skipper_session_info *in = skipper_session_info(s);
		server_ready(srv, s, b);
		fprintf(stderr, "skipper serve: ready: %s, policy %s, %d sequences, context %d\n", in->model, in->policy,
		        st.bo.n_seq, in->n_ctx);
		wait_signals(1, NULL, NULL, NULL);
	}
	/* a signal while loading is a stop like any other */
	if (!rc || (rc == EXIT_INTERRUPTED && signals())) {
		shut_down(srv, rc ? NULL : b, batch_thread, st.shutdown_timeout);
		rc = EXIT_OK;
	}
	server_stop(srv);
	if (!rc)
		fprintf(stderr, "skipper serve: stopped\n");
stop_signals:
	pthread_mutex_lock(&sig.mu);
	sig.quit = 1;
	pthread_mutex_unlock(&sig.mu);
	pthread_kill(sig_thread, SIGTERM);
	pthread_join(sig_thread, NULL);
out:
	skipper_batch_free(b);
	skipper_session_close(s);
	skipper_config_free(cfg);
	auth_free(auth);
	access_log_close(log);
	return rc;
}
