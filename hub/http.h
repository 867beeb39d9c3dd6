/* Internal: one HTTP GET with careful redirects (see http.c). */
#ifndef SKIPPER_HUB_HTTP_H
#define SKIPPER_HUB_HTTP_H

#include "hub/client.h"

struct skipper_hub_get {
	const char *url;
	const char *what;          /* how error messages name the thing fetched */
	long long range_from;      /* > 0: ask for bytes range_from.. */
	/* Called once when a 2xx response starts, with its status (200, 206);
	 * a negative return aborts with that status (err already filled). */
	int (*on_start)(void *arg, long status, struct skipper_error *err);
	/* Body bytes of the 2xx response; a negative return aborts likewise. */
	int (*on_data)(void *arg, const void *data, size_t n, struct skipper_error *err);
	void *arg;
	const char *progress_file; /* non-NULL: report progress under this name */
	long long progress_base;   /* bytes already on disk */
	long long progress_total;  /* -1 if unknown */
};

/* One attempt (following up to 10 redirects). Returns SKIPPER_OK after a
 * complete 2xx body. *status gets the final HTTP status (0 if none).
 * *retryable is set for failures worth another try: 5xx, 429, timeouts,
 * resets, unreachable hosts (a refused connection is not: nothing listens
 * there, see http.c). 416 is returned as SKIPPER_ERR_RANGE so
 * the caller can decide what a finished partial file means. */
int skipper_hub_http_get(struct skipper_hub *hub, const struct skipper_hub_get *g, long *status, int *retryable,
                         struct skipper_error *err);

/* Sleep before retry number attempt (1, 2, ...): backoff_ms * 2^(attempt-1),
 * or the last answer's Retry-After if longer, capped at 30 s. First the
 * note callback hears why and how long ("WHY; retrying in 2.0 s (attempt 3
 * of 6)"), so that a user does not wait on a silent command. 1 when a
 * signal came and the progress callback says to stop (the caller fails
 * with SKIPPER_ERR_INTERRUPTED), else 0. */
int skipper_hub_backoff(const struct skipper_hub *hub, int attempt, const struct skipper_error *why);

/* The progress callback, asked with no file, says to stop (Ctrl-C). */
int skipper_hub_interrupted(const struct skipper_hub *hub);

#endif
