/* The hub handle: a private copy of the options plus one libcurl handle. */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "base/error.h"
#include "hub/client.h"

/* An endpoint every request can be built on: http or https, with a host
 * (curl only fetches those two; anything else would fail on every call). */
static int endpoint_ok(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL;
	int ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	         curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	         curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && *host &&
	         (strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0);
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ok;
}

int skipper_hub_new(struct skipper_hub **out, const struct skipper_hub_options *opt, struct skipper_error *err)
{
	struct skipper_hub *hub;
	size_t n;

	*out = NULL;
	if (!opt->endpoint || !opt->cache_dir)
		return skipper_fail(err, SKIPPER_ERR_ARG, "hub: endpoint and cache directory are required");
	if (!endpoint_ok(opt->endpoint))
		return skipper_fail(err, SKIPPER_ERR_ARG, "endpoint \"%s\" is not an http:// or https:// URL with a host",
		                    opt->endpoint);
	/* Reference-counted by libcurl; never undone, since other handles in the
	 * process may still be live when one hub is freed. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return skipper_fail(err, SKIPPER_ERR_NETWORK, "hub: cannot initialise libcurl");
	hub = calloc(1, sizeof *hub);
	if (!hub)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	hub->endpoint = strdup(opt->endpoint);
	hub->cache_dir = strdup(opt->cache_dir);
	hub->user_agent = strdup(opt->user_agent ? opt->user_agent : "skipper");
	hub->token = opt->token && *opt->token ? strdup(opt->token) : NULL;
	hub->curl = curl_easy_init();
	if (!hub->endpoint || !hub->cache_dir || !hub->user_agent || (opt->token && *opt->token && !hub->token) ||
	    !hub->curl) {
		skipper_hub_free(hub);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	n = strlen(hub->endpoint);
	while (n > 0 && hub->endpoint[n - 1] == '/')
		hub->endpoint[--n] = '\0';
	hub->offline = opt->offline;
	hub->max_file_size = opt->max_file_size > 0 ? opt->max_file_size : 64LL << 30;
	hub->retries = opt->retries >= 0 ? opt->retries : 5;
	hub->timeout_s = opt->timeout_s > 0 ? opt->timeout_s : 30;
	hub->backoff_ms = opt->backoff_ms > 0 ? opt->backoff_ms : 500;
	hub->progress = opt->progress;
	hub->note = opt->note;
	hub->progress_arg = opt->progress_arg;
	*out = hub;
	return SKIPPER_OK;
}

void skipper_hub_free(struct skipper_hub *hub)
{
	if (!hub)
		return;
	if (hub->curl)
		curl_easy_cleanup(hub->curl);
	if (hub->token) {
		OPENSSL_cleanse(hub->token, strlen(hub->token));
		free(hub->token);
	}
	free(hub->endpoint);
	free(hub->cache_dir);
	free(hub->user_agent);
	free(hub);
}
