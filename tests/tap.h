/* Minimal TAP producer for the C tests (automake's tap-driver reads it). */
#ifndef SKIPPER_TAP_H
#define SKIPPER_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

static inline void tap_plan(int n) { printf("1..%d\n", n); fflush(stdout); }

static inline void tap_skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	exit(0);
}

static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;
	tap_n++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __VA_ARGS__)
#define is_int(got, want, ...)                                                              \
	do {                                                                                \
		long long g_ = (long long)(got), w_ = (long long)(want);                    \
		if (!tap_ok(g_ == w_, __VA_ARGS__))                                         \
			printf("#   got %lld, want %lld\n", g_, w_);                            \
	} while (0)
#define is_str(got, want, ...)                                                              \
	do {                                                                                \
		const char *g_ = (got), *w_ = (want);                                       \
		if (!tap_ok(g_ && w_ && strcmp(g_, w_) == 0, __VA_ARGS__))                  \
			printf("#   got \"%s\"\n#  want \"%s\"\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
	} while (0)
#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))

static inline void tap_skip(int n, const char *why)
{
	for (int i = 0; i < n; i++)
		printf("ok %d # SKIP %s\n", ++tap_n, why);
}

/* Abort the whole test file (TAP "Bail out!"). */
#define BAIL(msg)                                                                           \
	do {                                                                                \
		printf("Bail out! %s\n", (msg));                                            \
		exit(1);                                                                    \
	} while (0)

/* Print the trailing plan (when tap_plan was not called) and exit status. */
static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
