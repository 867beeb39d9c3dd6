/* Internal: download one blob into the cache (see download.c). */
#ifndef SKIPPER_HUB_DOWNLOAD_H
#define SKIPPER_HUB_DOWNLOAD_H

#include "hub/client.h"

struct skipper_hub_blob {
	const char *url;          /* resolve URL of the file */
	const char *file;         /* repo path, for messages and progress */
	const char *expected_sha; /* 64 hex digits, or "" when the listing had none */
	const char *git_oid;      /* without a SHA-256: git blob id (40 hex) to check, or "" */
	long long size;           /* -1 when unknown */
	const char *partial;      /* where the partial download lives (outside blobs/) */
	const char *lock;         /* lock file guarding partial and blob */
	const char *blobs_dir;    /* final home: blobs_dir/<sha256> */
};

/* Fetch b into blobs_dir, resuming a partial file, verifying SHA-256 (or
 * the git blob id) and renaming atomically. blob_name gets the blob's name:
 * the SHA-256, or the git blob id for files listed with only that (as
 * huggingface_hub names them); *downloaded is 0 when another process
 * (holding the lock first) already stored it. */
int skipper_hub_fetch_blob(struct skipper_hub *hub, const struct skipper_hub_blob *b, char blob_name[65],
                           int *downloaded, struct skipper_error *err);

#endif
