/* Opening the files a user names (profiles, tensor files): a base every
 * subsystem may include, like error.h. */
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

#endif
