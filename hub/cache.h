/* Internal: cache paths and atomic updates (see cache.c for the layout). */
#ifndef SKIPPER_HUB_CACHE_H
#define SKIPPER_HUB_CACHE_H

#include "hub/hub.h"

/* printf into a new string; caller frees; NULL when out of memory. */
char *skipper_hub_pathf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int skipper_hub_mkdirs(const char *dir, struct skipper_error *err);
int skipper_hub_mkparent(const char *path, struct skipper_error *err);

/* The commit refs/<revision> names, or NULL (missing or not a plain id).
 * Caller frees. */
char *skipper_hub_read_ref(const char *repo_dir, const char *revision);
int skipper_hub_write_ref(const char *repo_dir, const char *revision, const char *commit, struct skipper_error *err);

/* Point snapshots/<commit>/<file> at blobs/<blob_name>, atomically. */
int skipper_hub_link_snapshot(const char *repo_dir, const char *commit, const char *file, const char *blob_name,
                              struct skipper_error *err);

/* 1 if path (following links) is a regular file. */
int skipper_hub_file_exists(const char *path);

#endif
