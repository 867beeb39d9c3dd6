/* Opening and reading the files a user names (configuration, profiles,
 * tensor files, the cost cache, data files): a base every subsystem may
 * include, like error.h. Every reader of a file skipper did not just write
 * itself opens it with these (regular files only, a stated size) and reads
 * its lines with skipper_read_line (a stated length, no NUL byte). */
#ifndef SKIPPER_FILE_H
#define SKIPPER_FILE_H

#include <stdint.h>
#include <stdio.h>

#include "skipper/status.h"

/* path opened read-only if it is a regular file of at most max_bytes bytes
 * (0: any size): its descriptor (the caller closes it) and, with size, its
 * size; else -1 with err set, naming path and what (e.g. "skip profile";
 * NULL: path alone). A FIFO or a device is refused without blocking on it
 * (a FIFO left where profiles are searched would otherwise hang every run;
 * one named as the model, every command). */
int skipper_open_regular_fd(const char *path, uint64_t max_bytes, const char *what, uint64_t *size,
                            struct skipper_error *err);

/* The same as a stream for mode "r" or "rb"; the caller fcloses it. */
FILE *skipper_open_regular(const char *path, const char *mode, uint64_t max_bytes, const char *what,
                           struct skipper_error *err);

/* The regular file at path (at most max_bytes, 0: any size) mapped whole,
 * read-only: *data (a static empty buffer for an empty file) and *len,
 * until skipper_unmap_file(*data, *len). For what must be read at once
 * (signed files: Ed25519 takes the whole message in one call). */
int skipper_map_file(const char *path, uint64_t max_bytes, const char *what, const void **data, size_t *len,
                     struct skipper_error *err);
void skipper_unmap_file(const void *data, size_t len);

/* The whole pages of [p, p + n) leave the resident set when that range is
 * inside [base, base + size), a read-only private file mapping (this
 * one's, or a model reader's): read again, they come back from the file.
 * A range outside it (a copy in memory) is left alone. */
void skipper_release_mapped(const void *base, uint64_t size, const void *p, uint64_t n);

/* One line with its newline into *buf, grown as needed (*cap its size; the
 * caller frees it): its length, SKIPPER_LINE_EOF at the end of the file (or
 * a read error: ferror), SKIPPER_LINE_LONG if longer than max - 1 bytes,
 * SKIPPER_LINE_NUL if it holds a NUL byte, SKIPPER_LINE_NOMEM. Reading
 * stops at any of these, so an endless line (/dev/zero, a file growing
 * while read) is refused, never read to the end of memory. The last line
 * may lack its newline. */
enum { SKIPPER_LINE_EOF = -1, SKIPPER_LINE_LONG = -2, SKIPPER_LINE_NUL = -3, SKIPPER_LINE_NOMEM = -4 };
long skipper_read_line(FILE *f, char **buf, size_t *cap, size_t max);

#endif
