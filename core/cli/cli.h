/* Sub-commands of the `skipper` CLI; each returns a process exit code. */
#ifndef SKIPPER_CLI_H
#define SKIPPER_CLI_H

/* Exit codes (documented in skipper(1)). */
enum {
	EXIT_OK = 0,
	EXIT_FAILURE_GENERIC = 1, /* runtime failure (model, backend, I/O) */
	EXIT_USAGE = 2,           /* bad command line or configuration */
	EXIT_NETWORK = 3,         /* hub: network, HTTP or checksum failure */
	EXIT_INTERRUPTED = 130
};

#endif
