#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

const char *skipper_strerror(int status)
{
	switch (status) {
	case SKIPPER_OK: return "success";
	case SKIPPER_ERR_NOMEM: return "out of memory";
	case SKIPPER_ERR_IO: return "input/output error";
	case SKIPPER_ERR_FORMAT: return "malformed file";
	case SKIPPER_ERR_UNSUPPORTED: return "not supported";
	case SKIPPER_ERR_CONFIG: return "configuration error";
	case SKIPPER_ERR_ARG: return "invalid argument";
	case SKIPPER_ERR_PLUGIN: return "policy plugin error";
	case SKIPPER_ERR_NETWORK: return "network error";
	case SKIPPER_ERR_NOT_FOUND: return "not found";
	case SKIPPER_ERR_CHECKSUM: return "checksum mismatch";
	case SKIPPER_ERR_AUTH: return "authentication required or refused";
	case SKIPPER_ERR_BACKEND: return "backend error";
	case SKIPPER_ERR_RANGE: return "limit exceeded";
	case SKIPPER_ERR_INTERNAL: return "internal error";
	case SKIPPER_ERR_OFFLINE: return "not available offline";
	case SKIPPER_ERR_SIGNATURE: return "signature missing or invalid";
	case SKIPPER_ERR_MISMATCH: return "made for another model";
	case SKIPPER_ERR_INTERRUPTED: return "interrupted";
	case SKIPPER_ERR_BUSY: return "busy, try again later";
	}
	return "unknown error";
}

/* Messages quote names and values read from files and servers: control
 * bytes among them (an escape sequence in a model's metadata) must not
 * reach a terminal. */
void skipper_printable(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int skipper_fail(struct skipper_error *err, int status, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		skipper_printable(err->msg);
		err->status = status;
	}
	return status;
}

int skipper_fail_prefix(struct skipper_error *err, const char *fmt, ...)
{
	char prefix[SKIPPER_ERROR_MAX], old[SKIPPER_ERROR_MAX];
	va_list ap;

	if (!err)
		return SKIPPER_ERR_INTERNAL;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	/* Bounded widths keep the result within msg even when both are long. */
	snprintf(err->msg, sizeof err->msg, "%.*s: %.*s", SKIPPER_ERROR_MAX / 2 - 2, prefix,
	         SKIPPER_ERROR_MAX / 2 - 1, old);
	skipper_printable(err->msg);
	return err->status;
}

void skipper_error_clear(struct skipper_error *err)
{
	if (err) {
		err->status = 0;
		err->msg[0] = '\0';
	}
}
