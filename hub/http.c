/* HTTP GET on libcurl, one attempt. Redirects are followed here rather than
 * by libcurl so that the rule "the token only goes to the endpoint's own
 * origin" is ours to see: scheme, host and port must all match, and an https
 * to http downgrade is refused outright. TLS verification is always on;
 * proxies come from the usual environment variables (libcurl's default). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>

#include "base/error.h"
#include "hub/http.h"

#define SKIPPER_HUB_MAX_REDIRECTS 10

struct xfer {
	const struct skipper_hub_get *g;
	struct skipper_hub *hub;
	struct skipper_error *err;
	int started;     /* on_start called for this hop */
	int failed;      /* a callback aborted; err holds why */
	int interrupted; /* the progress callback asked to stop */
};

static size_t write_cb(char *data, size_t size, size_t nmemb, void *p)
{
	struct xfer *x = p;
	size_t n = size * nmemb;
	long code = 0;

	curl_easy_getinfo(x->hub->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code > 299)
		return n; /* redirect or error page: not content */
	if (!x->started) {
		x->started = 1;
		if (x->g->on_start && x->g->on_start(x->g->arg, code, x->err) < 0) {
			x->failed = 1;
			return 0; /* != n: libcurl stops with CURLE_WRITE_ERROR */
		}
	}
	if (x->g->on_data(x->g->arg, data, n, x->err) < 0) {
		x->failed = 1;
		return 0; /* != n: libcurl stops with CURLE_WRITE_ERROR */
	}
	return n;
}

static int progress_cb(void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct xfer *x = p;
	long code = 0;
	long long total = x->g->progress_total;

	if (!x->hub->progress)
		return 0;
	if (!x->g->progress_file) {
		x->interrupted = skipper_hub_interrupted(x->hub);
		return x->interrupted;
	}
	curl_easy_getinfo(x->hub->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code > 299)
		dlnow = 0;
	if (total < 0 && dltotal > 0)
		total = x->g->progress_base + dltotal;
	if (x->hub->progress(x->hub->progress_arg, x->g->progress_file, x->g->progress_base + dlnow, total, 0)) {
		x->interrupted = 1;
		return 1;
	}
	return 0;
}

/* scheme://host:port of url into out, lowercased host; -1 if unparsable. */
static int origin_of(const char *url, char *out, size_t cap, char *scheme, size_t scap)
{
	CURLU *u = curl_url();
	char *s = NULL, *h = NULL, *port = NULL;
	int rc = -1;

	if (!u)
		return -1;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &s, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
		for (char *c = h; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		snprintf(out, cap, "%s://%s:%s", s, h, port);
		snprintf(scheme, scap, "%s", s);
		rc = 0;
	}
	curl_free(s);
	curl_free(h);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

static int transport_retryable(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

static void setup(struct skipper_hub *hub, const char *url, struct curl_slist *headers, struct xfer *x,
                  char *errbuf)
{
	CURL *c = hub->curl;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, hub->timeout_s);
	/* A total timeout would kill large downloads; a stall limit does not. */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, hub->timeout_s);
	curl_easy_setopt(c, CURLOPT_USERAGENT, hub->user_agent);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress_cb);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 256L * 1024);
}

static struct curl_slist *build_headers(const struct skipper_hub *hub, const struct skipper_hub_get *g, int with_auth)
{
	struct curl_slist *h = NULL, *t;
	char line[64];

	/* Content is hashed as sent: no transfer compression. */
	h = curl_slist_append(h, "Accept-Encoding: identity");
	if (h && g->range_from > 0) {
		snprintf(line, sizeof line, "Range: bytes=%lld-", g->range_from);
		t = curl_slist_append(h, line);
		if (!t)
			goto fail;
		h = t;
	}
	if (h && with_auth && hub->token) {
		size_t n = strlen(hub->token) + 32;
		char *auth = malloc(n);
		if (!auth)
			goto fail;
		snprintf(auth, n, "Authorization: Bearer %s", hub->token);
		t = curl_slist_append(h, auth);
		OPENSSL_cleanse(auth, n);
		free(auth);
		if (!t)
			goto fail;
		h = t;
	}
	return h;
fail:
	curl_slist_free_all(h);
	return NULL;
}

/* curl_slist_append copies strings; wipe the copy holding the token. */
static void free_headers(struct curl_slist *h)
{
	for (struct curl_slist *p = h; p; p = p->next)
		if (strncasecmp(p->data, "Authorization:", 14) == 0)
			OPENSSL_cleanse(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

static int http_status_error(const struct skipper_hub *hub, const struct skipper_hub_get *g, long code,
                             const char *url, int *retryable, struct skipper_error *err)
{
	if (code == 401 || code == 403)
		return skipper_fail(err, SKIPPER_ERR_AUTH, "%s: HTTP %ld from %s: %s", g->what, code, url,
		                    hub->token ? "the token was refused"
		                               : "authentication required (set HF_TOKEN or [hub] token_file)");
	if (code == 404 || code == 410)
		return skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s: not found (HTTP %ld from %s)", g->what, code, url);
	if (code == 416)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "%s: range not satisfiable (HTTP 416 from %s)", g->what, url);
	*retryable = code >= 500 || code == 429 || code == 408;
	return skipper_fail(err, SKIPPER_ERR_NETWORK, "%s: HTTP %ld from %s", g->what, code, url);
}

int skipper_hub_http_get(struct skipper_hub *hub, const struct skipper_hub_get *g, long *status, int *retryable,
                         struct skipper_error *err)
{
	char origin0[512], scheme0[16], origin[512], scheme[16], errbuf[CURL_ERROR_SIZE];
	char *url = strdup(g->url);
	int rc = SKIPPER_OK, with_auth = 1;

	*status = 0;
	*retryable = 0;
	if (!url)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (origin_of(url, origin0, sizeof origin0, scheme0, sizeof scheme0) < 0) {
		free(url);
		return skipper_fail(err, SKIPPER_ERR_ARG, "%s: bad URL %s", g->what, g->url);
	}
	for (int hop = 0;; hop++) {
		struct xfer x = {.g = g, .hub = hub, .err = err};
		struct curl_slist *headers = build_headers(hub, g, with_auth);
		CURLcode cc;
		long code = 0;
		char *next = NULL;

		if (!headers) {
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
			break;
		}
		errbuf[0] = '\0';
		setup(hub, url, headers, &x, errbuf);
		cc = curl_easy_perform(hub->curl);
		free_headers(headers);
		curl_easy_setopt(hub->curl, CURLOPT_HTTPHEADER, NULL);
		curl_easy_getinfo(hub->curl, CURLINFO_RESPONSE_CODE, &code);
		*status = code;
		curl_off_t after = 0;
		hub->retry_after_ms = curl_easy_getinfo(hub->curl, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0
		                              ? (long long)after * 1000
		                              : 0;
		if (x.failed) {
			rc = err ? err->status : SKIPPER_ERR_IO;
			break;
		}
		if (x.interrupted) {
			rc = skipper_fail(err, SKIPPER_ERR_INTERRUPTED, "%s: interrupted", g->what);
			break;
		}
		if (cc != CURLE_OK) {
			long os = 0;
			curl_easy_getinfo(hub->curl, CURLINFO_OS_ERRNO, &os);
			/* A refusal is the host's answer, at once: nothing listens on
			 * that port, and asking again in 0.5, 1, 2, 4 and 8 s only made
			 * a wrong endpoint take 16 s to fail. Not even on 127.0.0.1,
			 * where a mirror being started might listen a second later:
			 * one started with the command (nginx -g 'daemon on') listens
			 * before that command returns, and a user who starts one by
			 * hand sees the refusal at once and runs the pull again. */
			int refused = cc == CURLE_COULDNT_CONNECT && os == ECONNREFUSED;
			*retryable = transport_retryable(cc) && !refused;
			rc = skipper_fail(err, SKIPPER_ERR_NETWORK, "%s: %s (%s)%s", g->what,
			                  errbuf[0] ? errbuf : curl_easy_strerror(cc), url,
			                  refused ? "; not retried: nothing listens there" : "");
			break;
		}
		if (code >= 200 && code <= 299)
			break;
		if (code < 300 || code > 399 || code == 304) {
			rc = http_status_error(hub, g, code, url, retryable, err);
			break;
		}
		if (hop == SKIPPER_HUB_MAX_REDIRECTS) {
			rc = skipper_fail(err, SKIPPER_ERR_NETWORK, "%s: too many redirects (last %s)", g->what, url);
			break;
		}
		curl_easy_getinfo(hub->curl, CURLINFO_REDIRECT_URL, &next);
		if (!next || origin_of(next, origin, sizeof origin, scheme, sizeof scheme) < 0 ||
		    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
			rc = skipper_fail(err, SKIPPER_ERR_NETWORK, "%s: HTTP %ld with an unusable Location (from %s)",
			                  g->what, code, url);
			break;
		}
		if (strcmp(scheme0, "https") == 0 && strcmp(scheme, "http") == 0) {
			rc = skipper_fail(err, SKIPPER_ERR_NETWORK, "%s: refusing redirect from https to http (%s)", g->what,
			                  next);
			break;
		}
		/* Once the chain has left the endpoint's origin it never gets the
		 * token back, even if it returns. */
		if (strcmp(origin, origin0) != 0)
			with_auth = 0;
		free(url);
		url = strdup(next);
		if (!url)
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	free(url);
	return rc;
}

int skipper_hub_interrupted(const struct skipper_hub *hub)
{
	return hub->progress && hub->progress(hub->progress_arg, NULL, 0, -1, 0) != 0;
}

int skipper_hub_backoff(const struct skipper_hub *hub, int attempt, const struct skipper_error *why)
{
	long long ms = hub->backoff_ms;
	struct timespec ts;

	for (int i = 1; i < attempt && ms < 30000; i++)
		ms *= 2;
	if (ms < hub->retry_after_ms) /* a 429 or 503 that says when: not earlier */
		ms = hub->retry_after_ms;
	if (ms > 30000)
		ms = 30000;
	if (hub->note) {
		char line[SKIPPER_ERROR_MAX + 64];
		snprintf(line, sizeof line, "%.*s; retrying in %.1f s (attempt %d of %d)", SKIPPER_ERROR_MAX - 1, why->msg,
		         (double)ms / 1000, attempt + 1, hub->retries + 1);
		hub->note(hub->progress_arg, line);
	}
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		if (skipper_hub_interrupted(hub))
			return 1;
	return 0;
}
