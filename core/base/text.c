/* Reading text a user names to a bound, whole (file.c reads it a line at
 * a time). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

char *skipper_read_all(FILE *f, size_t max, char *why, size_t why_n)
{
	size_t len = 0, cap = 4096;
	char *s = malloc(cap);

	while (s) {
		size_t n = fread(s + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
		if (len > max) {
			snprintf(why, why_n, "more than %zu MiB of text", max >> 20);
			free(s);
			return NULL;
		}
		if (len + 1 == cap) {
			char *t = realloc(s, cap *= 2);
			if (!t)
				free(s);
			s = t;
		}
	}
	if (!s || ferror(f) || memchr(s, '\0', len)) {
		snprintf(why, why_n, "%s", !s ? "out of memory" : ferror(f) ? strerror(errno) : "NUL byte in the text");
		free(s);
		return NULL;
	}
	s[len] = '\0';
	return s;
}
