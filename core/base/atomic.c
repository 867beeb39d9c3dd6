/* See atomic.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"
#include "error.h"

struct skipper_atomic {
	FILE *f;
	char *path, *tmp;
};

/* PATH.tmp.PID.N: unique within the process by the counter, across
 * processes by the pid; O_EXCL (or symlink) refuses a name left by a
 * crashed run, and the next number is tried. */
static char *tmp_name(const char *path)
{
	static atomic_uint counter;
	size_t n = strlen(path) + 48;
	char *t = malloc(n);
	if (t)
		snprintf(t, n, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
	return t;
}

struct skipper_atomic *skipper_atomic_open(const char *path, struct skipper_error *err)
{
	struct skipper_atomic *a = calloc(1, sizeof *a);
	int fd = -1;

	if (!a || !(a->path = strdup(path))) {
		free(a);
		skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		free(a->tmp);
		if (!(a->tmp = tmp_name(path))) {
			errno = ENOMEM;
			break;
		}
		fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0 || !(a->f = fdopen(fd, "w"))) {
		/* named by the file asked for: the temporary one is an internal */
		skipper_fail(err, errno == ENOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_IO, "%s: %s", path,
		             strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(a->tmp);
		}
		free(a->tmp);
		free(a->path);
		free(a);
		return NULL;
	}
	return a;
}

FILE *skipper_atomic_file(struct skipper_atomic *a)
{
	return a->f;
}

static void drop(struct skipper_atomic *a)
{
	unlink(a->tmp);
	free(a->tmp);
	free(a->path);
	free(a);
}

int skipper_atomic_commit(struct skipper_atomic *a, struct skipper_error *err)
{
	int failed = ferror(a->f), e = failed ? EIO : 0;

	/* fsync always: these files are few and small next to what a crash
	 * between rename and writeback would cost (an empty cache or profile
	 * in place of the old one) */
	if (!failed && (fflush(a->f) != 0 || fsync(fileno(a->f)) != 0)) {
		failed = 1;
		e = errno;
	}
	if (fclose(a->f) != 0 && !failed) {
		failed = 1;
		e = errno;
	}
	if (!failed && rename(a->tmp, a->path) != 0) {
		failed = 1;
		e = errno;
	}
	if (failed) {
		int rc = skipper_fail(err, SKIPPER_ERR_IO, "%s: write failed: %s", a->path, strerror(e));
		drop(a);
		return rc;
	}
	free(a->tmp);
	free(a->path);
	free(a);
	return SKIPPER_OK;
}

void skipper_atomic_abort(struct skipper_atomic *a)
{
	if (!a)
		return;
	fclose(a->f);
	drop(a);
}

int skipper_atomic_write(const char *path, const void *data, size_t len, struct skipper_error *err)
{
	struct skipper_atomic *a = skipper_atomic_open(path, err);

	if (!a)
		return err ? err->status : SKIPPER_ERR_IO;
	if (len)
		fwrite(data, 1, len, a->f); /* a short write sets the stream's error, which commit checks */
	return skipper_atomic_commit(a, err);
}

int skipper_atomic_symlink(const char *target, const char *link_path, struct skipper_error *err)
{
	char *tmp = NULL;
	int rc = -1;

	for (int tries = 0; rc < 0 && tries < 100; tries++) {
		free(tmp);
		if (!(tmp = tmp_name(link_path)))
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		rc = symlink(target, tmp);
		if (rc < 0 && errno != EEXIST)
			break;
	}
	if (rc < 0 || rename(tmp, link_path) < 0) {
		int e = errno;
		if (rc == 0)
			unlink(tmp);
		free(tmp);
		return skipper_fail(err, SKIPPER_ERR_IO, "cannot link %s: %s", link_path, strerror(e));
	}
	free(tmp);
	return SKIPPER_OK;
}
