/* What every command gives the library: notes on stderr, a progress bar
 * on a terminal, library statuses as exit codes, and the session opened
 * with them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void human(char *buf, size_t cap, double bytes)
{
	static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
	int u = 0;
	while (bytes >= 1000 && u < 4) {
		bytes /= 1000;
		u++;
	}
	snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

/* The bar's state: one bar at a time, like the terminal it is drawn on. */
static struct bar {
	int tty;
	double start, last;
	long long start_bytes;
} bar_state;

/* The line of long work on stderr, only on a terminal, at most ten times a
 * second: a file's bytes, or with tokens a prompt's tokens being read. A
 * signal stops the work, the line drawn so far ended so that the error
 * goes on one of its own. */
static int draw(const char *file, long long done, long long total, int finished, int tokens)
{
	struct bar *bar = &bar_state;
	double t = now_s(), rate;
	char d[32], tt[32], r[32], eta[32] = "";

	if (cli_interrupted) {
		if (bar->tty && bar->start != 0)
			fputc('\n', stderr);
		bar->start = 0;
		return 1;
	}
	bar->tty = isatty(STDERR_FILENO);
	if (!file || !bar->tty)
		return 0;
	if (bar->start == 0 || done < bar->start_bytes) {
		bar->start = t;
		bar->start_bytes = done;
		bar->last = 0;
	}
	if (!finished && t - bar->last < 0.1)
		return 0;
	bar->last = t;
	rate = t > bar->start ? (double)(done - bar->start_bytes) / (t - bar->start) : 0;
	if (total > 0 && rate > 0 && !finished) {
		long sec = (long)((double)(total - done) / rate);
		snprintf(eta, sizeof eta, "%s ETA %ld:%02ld", tokens ? " " : "", sec / 60, sec % 60);
	}
	if (tokens) {
		fprintf(stderr, "\r\033[K%s %3d%%  %lld / %lld tokens  %.0f tok/s%s", file, (int)(100.0 * done / total), done,
		        total, rate, eta);
	} else {
		human(d, sizeof d, (double)done);
		human(tt, sizeof tt, total > 0 ? (double)total : 0);
		human(r, sizeof r, rate);
		if (total > 0)
			fprintf(stderr, "\r\033[K%-32.32s %3d%% %s / %s  %s/s%s", file, (int)(100.0 * done / total), d, tt, r,
			        eta);
		else
			fprintf(stderr, "\r\033[K%-32.32s %s  %s/s", file, d, r);
	}
	if (finished) {
		fputc('\n', stderr);
		bar->start = 0;
	}
	return 0;
}

/* The session's progress hook: downloads, and "prompt" in tokens */
static int progress(void *arg, const char *file, long long done, long long total, int finished)
{
	if (file && !strcmp(file, "prompt"))
		return cli_prompt_progress(arg, (int)done, (int)total);
	return draw(file, done, total, finished, 0);
}

/* A note or a policy's line; a progress bar cut short is ended first. */
static void log_line(void *arg, int level, const char *msg)
{
	if (bar_state.tty && bar_state.start != 0) {
		fputc('\n', stderr);
		bar_state.start = 0;
	}
	fprintf(stderr, "skipper: %s\n", msg);
}

const struct skipper_session_hooks cli_hooks = { .log = log_line, .progress = progress };

int cli_prompt_progress(void *arg, int done, int total)
{
	return draw("reading the prompt", done, total, done >= total, 1);
}

int cli_exit_code(int status)
{
	switch (status) {
	case SKIPPER_OK: return EXIT_OK;
	case SKIPPER_ERR_CONFIG: return EXIT_USAGE;
	case SKIPPER_ERR_INTERRUPTED: return EXIT_INTERRUPTED;
	case SKIPPER_ERR_NETWORK:
	case SKIPPER_ERR_AUTH:
	case SKIPPER_ERR_CHECKSUM:
	case SKIPPER_ERR_OFFLINE:
	case SKIPPER_ERR_SIGNATURE: return EXIT_NETWORK;
	default: return EXIT_FAILURE_GENERIC;
	}
}

int cli_hub_exit_code(int status)
{
	switch (status) {
	case SKIPPER_ERR_ARG:
	case SKIPPER_ERR_CONFIG: return EXIT_USAGE;
	case SKIPPER_ERR_NOT_FOUND:
	case SKIPPER_ERR_FORMAT:
	case SKIPPER_ERR_RANGE: return EXIT_NETWORK;
	default: return cli_exit_code(status);
	}
}

int cli_fail(const struct skipper_error *err, int status)
{
	log_line(NULL, SKIPPER_LOG_ERROR, err->msg);
	return cli_exit_code(status);
}

int cli_session_open(const struct skipper_config *cfg, const struct skipper_session_opts *o,
                     struct skipper_session **s)
{
	struct skipper_session_opts opts = { 0 };
	struct skipper_error err = { 0 };
	int rc;

	if (o)
		opts = *o;
	opts.hooks = &cli_hooks;
	if (!opts.log_level)
		opts.log_level = getenv("SKIPPER_DEBUG") ? SKIPPER_LOG_DEBUG : SKIPPER_LOG_WARN;
	if ((rc = skipper_session_open_opts(cfg, &opts, s, &err)))
		return cli_fail(&err, rc);
	return EXIT_OK;
}
