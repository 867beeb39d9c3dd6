/* Internal: the hub handle shared by the transfer and pull code. */
#ifndef SKIPPER_HUB_CLIENT_H
#define SKIPPER_HUB_CLIENT_H

#include <curl/curl.h>

#include "hub/hub.h"

struct skipper_hub {
	char *endpoint;       /* without trailing slash */
	char *cache_dir;
	char *token;          /* wiped on free */
	char *user_agent;
	int offline;
	long long max_file_size;
	int retries;
	long timeout_s;
	long backoff_ms;
	long long retry_after_ms; /* the last answer's Retry-After (0: none), honoured by the next backoff */
	skipper_hub_progress_fn progress;
	skipper_hub_note_fn note;
	void *progress_arg;
	CURL *curl;           /* reused so keep-alive connections survive between files */
};

#endif
