/* Opening the files a user names (profiles, tensor files): a base every
 * subsystem may include, like error.h. */
#ifndef SKIPPER_FILE_H
#define SKIPPER_FILE_H

#include <stdint.h>
#include <stdio.h>

#include "skipper/status.h"

/* path opened for reading ("r" or "rb") if it is a regular file of at most
 * max_bytes bytes (0: any size); else NULL with err set, naming path and
 * what (e.g. "skip profile"). A FIFO or a device is refused without
 * blocking on it (a FIFO left where profiles are searched would otherwise
 * hang every run). The caller fcloses the stream. */
FILE *skipper_open_regular(const char *path, const char *mode, uint64_t max_bytes, const char *what,
                           struct skipper_error *err);

#endif
