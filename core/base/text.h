/* Reading text files a user names (rankings, n-grams, prompts, JSONL) to
 * a bound, so that /dev/zero or a file without newlines is refused rather
 * than read to the end of memory, and a NUL byte is refused rather than
 * cutting the text short: a line at a time (skipper_read_line, file.h),
 * or whole. */
#ifndef SKIPPER_BASE_TEXT_H
#define SKIPPER_BASE_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "file.h"

/* SKIPPER_LINE_MAX is room for any valid line of numbers. */
#define SKIPPER_LINE_MAX 512
/* What skipper_read_line's negative lengths mean, for messages. */
static inline const char *skipper_read_line_why(long len)
{
	return len == -2 ? "line too long" : len == -3 ? "NUL byte in line" : len == -4 ? "out of memory" : "read error";
}

/* The rest of f, text of at most max bytes, as a NUL-terminated string
 * (malloc'ed, the caller frees it). NULL with why[0..why_n) saying what
 * is wrong: a read error (a directory's), a NUL byte, more than max bytes,
 * out of memory. */
char *skipper_read_all(FILE *f, size_t max, char *why, size_t why_n);

#endif
