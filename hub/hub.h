/* Hub client: fetch files from a Hugging Face-compatible hub into a cache
 * laid out like huggingface_hub's (models--org--name/{blobs,snapshots,refs}).
 *
 * hub/ knows nothing of the engine; the CLI fills the options from the
 * configuration and draws the progress bar through the callback. Library
 * code never prints. The token is only ever placed in the Authorization
 * header of requests to the endpoint's own host. */
#ifndef SKIPPER_HUB_H
#define SKIPPER_HUB_H

#include <stddef.h>

#include "skipper/status.h"

/* Progress of one file: done/total bytes (total -1 if unknown). finished is
 * 1 on the last call for that file. Return non-zero to abort the transfer
 * (the pull then fails with SKIPPER_ERR_INTERRUPTED). Also called with file
 * NULL while no file moves (the listing, a pause before a retry, waiting
 * for another process's lock): nothing to draw, but non-zero still aborts. */
typedef int (*skipper_hub_progress_fn)(void *arg, const char *file, long long done, long long total,
                                       int finished);

/* A line for the user (no newline): why a request is tried again and when,
 * sent before the pause. The library never prints; a CLI prints it, a
 * server logs it. */
typedef void (*skipper_hub_note_fn)(void *arg, const char *msg);

struct skipper_hub_options {
	const char *endpoint;        /* e.g. https://huggingface.co (no trailing slash needed) */
	const char *cache_dir;       /* the hub cache root (HF_HUB_CACHE) */
	const char *token;           /* NULL for anonymous access */
	int offline;                 /* use the cache only */
	long long max_file_size;     /* refuse listed or streamed files larger than this; <= 0: 64 GiB */
	int retries;                 /* extra attempts after a failed one (< 0: 5) */
	long timeout_s;              /* connect timeout and stall limit, seconds (<= 0: 30) */
	long backoff_ms;             /* first retry delay, doubled each time (<= 0: 500) */
	const char *user_agent;      /* NULL: "skipper" */
	skipper_hub_progress_fn progress;
	void *progress_arg;          /* given to progress and note */
	skipper_hub_note_fn note;    /* NULL: retries are not told */
};

struct skipper_hub; /* opaque: options + a reusable connection */

/* Copies the options. Free with skipper_hub_free(). */
int skipper_hub_new(struct skipper_hub **out, const struct skipper_hub_options *opt, struct skipper_error *err);
void skipper_hub_free(struct skipper_hub *hub);

/* One entry of a listing; sha256 is "" when the hub gave none (small non-LFS
 * files on the public hub), in which case git_oid may hold the git blob id
 * (SHA-1 of "blob SIZE\0" + content) the hub lists as blobId; size is -1
 * when unknown. */
struct skipper_hub_file {
	char *path;
	long long size;
	char sha256[65];
	char git_oid[41];
};

struct skipper_hub_listing {
	char *commit;
	size_t n_files;
	struct skipper_hub_file *files;
};

/* Parse the JSON reply of {endpoint}/api/models/{repo}/revision/{rev}.
 * The listing is untrusted: one bad entry (unsafe name, size over
 * max_file_size, malformed hash) refuses the whole listing. On success the
 * caller owns *out and frees it with skipper_hub_listing_free(). */
int skipper_hub_listing_parse(const char *json, size_t len, long long max_file_size,
                              struct skipper_hub_listing *out, struct skipper_error *err);
void skipper_hub_listing_free(struct skipper_hub_listing *l);

/* Untrusted-name checks. A repo file name must be relative, made of
 * non-empty components other than "." and "..", without backslashes or
 * control characters. Repo ids are "name" or "org/name"; revisions are
 * branch, tag or commit names. Return 1 when acceptable. */
int skipper_hub_path_ok(const char *path);
int skipper_hub_repo_ok(const char *repo);
int skipper_hub_revision_ok(const char *rev);

/* What to pull. files == NULL (n_files 0) means every file of the listing
 * that matches include (an fnmatch glob; NULL matches everything). */
struct skipper_hub_request {
	const char *repo;
	const char *revision;        /* NULL: "main" */
	const char *const *files;
	size_t n_files;
	const char *include;
	int (*filter)(const char *name); /* non-NULL: listing entries it returns 0 for are skipped */
	int refresh;                 /* ask the hub even if refs/ already names a commit */
};

/* Called once per file that is in the cache after the pull; path is the
 * snapshot path (valid only during the call); downloaded is 0 when the file
 * was already there. */
typedef void (*skipper_hub_file_fn)(void *arg, const char *file, const char *path, int downloaded);

/* Resolve the revision, download what is missing (verified), link the
 * snapshot. If every requested file is already in the snapshot named by
 * refs/<revision>, no request is made. Errors: SKIPPER_ERR_NOT_FOUND (404 or
 * file not in the listing), _AUTH (401/403), _NETWORK (after retries),
 * _CHECKSUM, _OFFLINE (offline and missing), _FORMAT (bad listing). */
int skipper_hub_pull(struct skipper_hub *hub, const struct skipper_hub_request *req, skipper_hub_file_fn fn,
                     void *arg, struct skipper_error *err);

/* Cache helpers (also used by the tests). Return malloc'd strings owned by
 * the caller, or NULL when out of memory. */
char *skipper_hub_repo_dir(const char *cache_dir, const char *repo); /* .../models--org--name */
char *skipper_hub_url_encode(const char *s, int keep_slash);

/* Default cache directory from the environment: $HF_HUB_CACHE, else
 * $HF_HOME/hub, else ~/.cache/huggingface/hub. Caller frees. */
char *skipper_hub_default_cache_dir(void);

/* Read a token: the first line of token_file if given; else $HF_TOKEN if
 * non-empty; else the first line of $HF_HOME/token, or without HF_HOME of
 * ~/.cache/huggingface/token.
 * *token is NULL when there is none; the caller frees it with
 * skipper_hub_token_free() (which wipes it). A token file that exists but
 * cannot be read is an error; one that does not exist is not. */
int skipper_hub_token_load(const char *token_file, char **token, struct skipper_error *err);
void skipper_hub_token_free(char *token);

/* 1 if name may be fetched as part of a profile: .ini, .sig, .safetensors,
 * .json, .txt, .md only, so nothing executable (.so, scripts) ever is. */
int skipper_hub_profile_name_ok(const char *name);

/* Parse "64G", "512M", "1024" (bytes, K/M/G/T suffix, powers of 1024). */
int skipper_hub_parse_size(const char *s, long long *out);

#endif
