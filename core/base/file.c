/* See file.h. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "file.h"

int skipper_open_regular_fd(const char *path, uint64_t max_bytes, const char *what, uint64_t *size,
                            struct skipper_error *err)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; it has no
	 * effect on the regular file that is all this returns */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	const char *sep = what ? ": " : "", *w = what ? what : "";
	struct stat st;

	if (fd < 0) {
		skipper_fail(err, errno == ENOENT ? SKIPPER_ERR_NOT_FOUND : SKIPPER_ERR_IO, "%s: %s%s%s%s", path,
		             what ? "cannot open " : "", w, sep, strerror(errno));
		return -1;
	}
	errno = 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		skipper_fail(err, SKIPPER_ERR_IO, "%s%s%s: %s", path, sep, w,
		             errno ? strerror(errno) : S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
		close(fd);
		return -1;
	}
	if (max_bytes && (uint64_t)st.st_size > max_bytes) {
		skipper_fail(err, SKIPPER_ERR_FORMAT, "%s%s%s of %llu bytes, more than any valid one (%llu)", path, sep, w,
		             (unsigned long long)st.st_size, (unsigned long long)max_bytes);
		close(fd);
		return -1;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
		skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (size)
		*size = (uint64_t)st.st_size;
	return fd;
}

FILE *skipper_open_regular(const char *path, const char *mode, uint64_t max_bytes, const char *what,
                           struct skipper_error *err)
{
	int fd = skipper_open_regular_fd(path, max_bytes, what, NULL, err);
	FILE *fp;

	if (fd < 0)
		return NULL;
	if (!(fp = fdopen(fd, mode))) {
		skipper_fail(err, SKIPPER_ERR_IO, "%s: %s", path, strerror(errno));
		close(fd);
	}
	return fp;
}
