/* skipper status codes and the error record every fallible call fills.
 *
 * Codes are negative, stable and never renumbered: new ones are appended.
 * Functions return SKIPPER_OK (0) or a negative code and, on failure, leave
 * a human-readable message in the caller's struct skipper_error. */
#ifndef SKIPPER_STATUS_H
#define SKIPPER_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

enum skipper_status {
	SKIPPER_OK = 0,
	SKIPPER_ERR_NOMEM = -1,       /* allocation failed */
	SKIPPER_ERR_IO = -2,          /* open/read/write/mmap failed */
	SKIPPER_ERR_FORMAT = -3,      /* malformed or corrupt file */
	SKIPPER_ERR_UNSUPPORTED = -4, /* valid but not supported (dtype, arch, ...) */
	SKIPPER_ERR_CONFIG = -5,      /* bad INI key/value or command-line option */
	SKIPPER_ERR_ARG = -6,         /* invalid argument from the caller */
	SKIPPER_ERR_PLUGIN = -7,      /* policy plugin refused or failed */
	SKIPPER_ERR_NETWORK = -8,     /* transfer failed after retries */
	SKIPPER_ERR_NOT_FOUND = -9,   /* file, key, repo or revision missing */
	SKIPPER_ERR_CHECKSUM = -10,   /* SHA-256 mismatch */
	SKIPPER_ERR_AUTH = -11,       /* 401/403 */
	SKIPPER_ERR_BACKEND = -12,    /* compute backend failure */
	SKIPPER_ERR_RANGE = -13,      /* context or size limit exceeded */
	SKIPPER_ERR_INTERNAL = -14,   /* a bug: an invariant did not hold */
	SKIPPER_ERR_OFFLINE = -15,    /* offline mode and the file is not cached */
	SKIPPER_ERR_SIGNATURE = -16,  /* missing or bad Ed25519 signature */
	SKIPPER_ERR_MISMATCH = -17,   /* profile made for another model */
	SKIPPER_ERR_INTERRUPTED = -18, /* stopped by a signal */
	SKIPPER_ERR_BUSY = -19         /* full (a request queue): try again later */
};

#define SKIPPER_ERROR_MAX 1024

struct skipper_error {
	int status;                    /* last failing status, 0 if none */
	char msg[SKIPPER_ERROR_MAX];   /* "file:line: what went wrong" style text */
};

/* Short fixed description of a status code ("out of memory", ...). */
const char *skipper_strerror(int status);

#ifdef __cplusplus
}
#endif
#endif
