/* Writing a file atomically: a reader (or a crash) sees the old file or the
 * whole new one, never a part, and a failed write leaves nothing behind.
 * The one implementation every writer of a file skipper keeps (profiles,
 * tensor files, the cost cache, hub refs and signatures, CLI outputs). */
#ifndef SKIPPER_ATOMIC_H
#define SKIPPER_ATOMIC_H

#include <stddef.h>
#include <stdio.h>

#include "skipper/status.h"

struct skipper_atomic; /* a temporary file beside the target */

/* Open a new temporary file in path's directory (so that the final rename
 * stays on one file system), created like fopen(path, "w") would create
 * path (0666 less the umask). Returns the handle (ended by exactly one of
 * skipper_atomic_commit and skipper_atomic_abort), or NULL with err naming
 * path. */
struct skipper_atomic *skipper_atomic_open(const char *path, struct skipper_error *err);

/* The stream to write the content to (owned by the handle). */
FILE *skipper_atomic_file(struct skipper_atomic *a);

/* Put the content in place: every write, the flush, fsync and close are
 * checked (a write error the stream met earlier fails it too), then the
 * temporary is renamed over path. On any failure the temporary is removed,
 * path is left as it was and err names path and the reason. Frees a. */
int skipper_atomic_commit(struct skipper_atomic *a, struct skipper_error *err);

/* Drop the content: close and remove the temporary. Frees a; NULL is fine. */
void skipper_atomic_abort(struct skipper_atomic *a);

/* The whole content at once: open, write len bytes, commit. */
int skipper_atomic_write(const char *path, const void *data, size_t len, struct skipper_error *err);

/* Make link_path a symbolic link to target, replacing what was there in one
 * step (a link made under a temporary name, renamed over link_path). */
int skipper_atomic_symlink(const char *target, const char *link_path, struct skipper_error *err);

#endif
