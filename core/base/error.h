/* Internal helpers to fill a struct skipper_error. */
#ifndef SKIPPER_ERROR_H
#define SKIPPER_ERROR_H

#include "skipper/status.h"

/* Format a message into err (if non-NULL) and return status, so callers can
 * write `return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: bad magic", path);`. */
int skipper_fail(struct skipper_error *err, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix an existing message with more context ("while loading X: ..."). */
int skipper_fail_prefix(struct skipper_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void skipper_error_clear(struct skipper_error *err);

/* Control bytes of s (a NUL-terminated string that quotes a file or a
 * server) replaced with '?', so that printing it sends no escapes. Every
 * message skipper_fail makes goes through it. */
void skipper_printable(char *s);

#endif
