/* See file.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static const char empty_file[1];

int skipper_map_file(const char *path, uint64_t max_bytes, const char *what, const void **data, size_t *len,
                     struct skipper_error *err)
{
	uint64_t size;
	int fd = skipper_open_regular_fd(path, max_bytes, what, &size, err);
	void *p;

	*data = empty_file;
	*len = 0;
	if (fd < 0)
		return err ? err->status : SKIPPER_ERR_IO;
	if (size == 0) {
		close(fd);
		return SKIPPER_OK;
	}
	p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return skipper_fail(err, SKIPPER_ERR_IO, "%s: mmap: %s", path, strerror(errno));
	*data = p;
	*len = (size_t)size;
	return SKIPPER_OK;
}

void skipper_unmap_file(const void *data, size_t len)
{
	if (len)
		munmap((void *)data, len);
}

long skipper_read_line(FILE *f, char **buf, size_t *cap, size_t max)
{
	size_t n = 0;
	int c;

	while ((c = getc(f)) != EOF) {
		if (c == '\0')
			return SKIPPER_LINE_NUL;
		if (n + 1 >= max)
			return SKIPPER_LINE_LONG;
		if (n + 2 > *cap) {
			size_t want = *cap ? 2 * *cap : 256;
			char *b = realloc(*buf, want < max ? want : max);
			if (!b)
				return SKIPPER_LINE_NOMEM;
			*buf = b;
			*cap = want < max ? want : max;
		}
		(*buf)[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (!n)
		return SKIPPER_LINE_EOF;
	(*buf)[n] = '\0';
	return (long)n;
}

void skipper_release_mapped(const void *base, uint64_t size, const void *p, uint64_t n)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;
	long page = sysconf(_SC_PAGESIZE);
	if (!base || page <= 0 || a < b || a - b > size || n > size - (a - b))
		return;
	uintptr_t lo = (a + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
	uintptr_t hi = (a + n) / (uintptr_t)page * (uintptr_t)page;
	/* PROT_READ and MAP_PRIVATE: never written, so dropped pages refault
	 * from the file */
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}
