/* core/base: atomic writes (the whole file or the old one, no temporary
 * left behind on any failure), opening files (a FIFO or a device refused
 * without waiting), bounded lines, mapping, SHA-256 of a file, the seeded
 * generators (streams pinned to the values they had before they moved
 * here), the module search path and dlopen sequence. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/error.h"
#include "base/file.h"
#include "base/module.h"
#include "base/rng.h"
#include "base/sha256.h"
#include "skipper/policy.h"
#include "tap.h"

static char dir[] = "/tmp/t-base-XXXXXX";
static struct skipper_error err;

static char *at(const char *name)
{
	static char buf[4][512];
	static int i;
	char *b = buf[i++ % 4];
	snprintf(b, sizeof buf[0], "%s/%s", dir, name);
	return b;
}

static void put(const char *name, const char *text)
{
	FILE *f = fopen(at(name), "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		BAIL("cannot write a fixture");
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* entries of dir whose name holds ".tmp." (a temporary left behind) */
static int temporaries(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	while (d && (de = readdir(d)))
		n += strstr(de->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return n;
}

static void test_atomic(void)
{
	struct skipper_atomic *a;

	put("old", "old content\n");
	a = skipper_atomic_open(at("old"), &err);
	ok(a != NULL, "open a temporary beside the target");
	fputs("new content\n", skipper_atomic_file(a));
	is_str(slurp(at("old")), "old content\n", "until the commit, readers see the old file");
	is_int(skipper_atomic_commit(a, &err), SKIPPER_OK, "commit");
	is_str(slurp(at("old")), "new content\n", "after it, the new one");
	is_int(temporaries(), 0, "no temporary left");

	a = skipper_atomic_open(at("old"), &err);
	fputs("half", skipper_atomic_file(a));
	skipper_atomic_abort(a);
	ok(!strcmp(slurp(at("old")), "new content\n") && temporaries() == 0, "abort: old file kept, temporary gone");

	/* a stream that met an error earlier (here: a read on a write-only
	 * stream) must not be committed, even though later writes succeed */
	a = skipper_atomic_open(at("old"), &err);
	fgetc(skipper_atomic_file(a));
	fputs("after the error", skipper_atomic_file(a));
	is_int(skipper_atomic_commit(a, &err), SKIPPER_ERR_IO, "a stream error fails the commit");
	ok(strstr(err.msg, at("old")) && strstr(err.msg, "write failed"), "and names the file: %s", err.msg);
	ok(!strcmp(slurp(at("old")), "new content\n") && temporaries() == 0, "old file kept, temporary gone");

	/* the rename fails: the target is a directory that holds a file */
	mkdir(at("adir"), 0755);
	put("adir/x", "x");
	a = skipper_atomic_open(at("adir"), &err);
	fputs("data", skipper_atomic_file(a));
	ok(skipper_atomic_commit(a, &err) == SKIPPER_ERR_IO && temporaries() == 0,
	   "a failed rename removes the temporary (%s)", err.msg);

	ok(skipper_atomic_open(at("no/such/dir/f"), &err) == NULL && strstr(err.msg, "no/such/dir/f"),
	   "a directory that is not there: refused, naming the file (%s)", err.msg);

	is_int(skipper_atomic_write(at("whole"), "abc", 3, &err), SKIPPER_OK, "skipper_atomic_write");
	is_str(slurp(at("whole")), "abc", "writes the whole content");
	is_int(skipper_atomic_write(at("empty"), "", 0, &err), SKIPPER_OK, "an empty file");
	struct stat st;
	ok(stat(at("empty"), &st) == 0 && st.st_size == 0 && S_ISREG(st.st_mode), "is made, empty");

	is_int(skipper_atomic_symlink("whole", at("link"), &err), SKIPPER_OK, "a link");
	is_int(skipper_atomic_symlink("old", at("link"), &err), SKIPPER_OK, "replaced in one step");
	char target[64] = "";
	ssize_t n = readlink(at("link"), target, sizeof target - 1);
	ok(n == 3 && !memcmp(target, "old", 3) && temporaries() == 0, "now points at the new target");
}

static void on_alarm(int sig)
{
	(void)sig;
	printf("Bail out! opening a FIFO blocked\n");
	_exit(1);
}

static void test_open(void)
{
	uint64_t size = 0;
	int fd;

	signal(SIGALRM, on_alarm);
	alarm(10);
	mkfifo(at("fifo"), 0600);
	fd = skipper_open_regular_fd(at("fifo"), 0, "thing", NULL, &err);
	ok(fd < 0 && strstr(err.msg, "not a regular file") && strstr(err.msg, "thing"),
	   "a FIFO is refused without waiting for a writer (%s)", err.msg);
	fd = skipper_open_regular_fd("/dev/zero", 0, NULL, NULL, &err);
	ok(fd < 0 && strstr(err.msg, "/dev/zero: not a regular file"), "a device is refused (%s)", err.msg);
	fd = skipper_open_regular_fd(dir, 0, NULL, NULL, &err);
	ok(fd < 0 && strstr(err.msg, "is a directory"), "a directory is refused (%s)", err.msg);
	alarm(0);
	fd = skipper_open_regular_fd(at("missing"), 0, NULL, NULL, &err);
	ok(fd < 0 && err.status == SKIPPER_ERR_NOT_FOUND, "a missing file: SKIPPER_ERR_NOT_FOUND");
	put("ten", "0123456789");
	fd = skipper_open_regular_fd(at("ten"), 9, "data", NULL, &err);
	ok(fd < 0 && strstr(err.msg, "of 10 bytes, more than any valid one (9)"), "over the bound: refused (%s)",
	   err.msg);
	fd = skipper_open_regular_fd(at("ten"), 10, "data", &size, &err);
	ok(fd >= 0 && size == 10, "at the bound: opened, size 10");
	if (fd >= 0)
		close(fd);

	const void *data;
	size_t len;
	ok(skipper_map_file(at("ten"), 0, NULL, &data, &len, &err) == SKIPPER_OK && len == 10 &&
	       !memcmp(data, "0123456789", 10),
	   "mapped whole");
	skipper_unmap_file(data, len);
	put("zero", "");
	ok(skipper_map_file(at("zero"), 0, NULL, &data, &len, &err) == SKIPPER_OK && len == 0 && data,
	   "an empty file maps to an empty buffer");
	skipper_unmap_file(data, len);
}

static void test_lines(void)
{
	char *buf = NULL;
	size_t cap = 0;
	FILE *f;

	put("lines", "one\ntwo\nthree");
	f = fopen(at("lines"), "r");
	ok(skipper_read_line(f, &buf, &cap, 64) == 4 && !strcmp(buf, "one\n"), "a line with its newline");
	ok(skipper_read_line(f, &buf, &cap, 64) == 4 && !strcmp(buf, "two\n"), "the next");
	ok(skipper_read_line(f, &buf, &cap, 64) == 5 && !strcmp(buf, "three"), "the last, without a newline");
	is_int(skipper_read_line(f, &buf, &cap, 64), SKIPPER_LINE_EOF, "then the end");
	fclose(f);

	f = fopen(at("lines"), "r");
	is_int(skipper_read_line(f, &buf, &cap, 4), SKIPPER_LINE_LONG, "a line of max bytes is too long");
	fclose(f);
	f = fopen(at("lines"), "r");
	is_int(skipper_read_line(f, &buf, &cap, 5), 4, "one of max - 1 bytes fits");
	fclose(f);

	f = fopen(at("nul"), "w");
	fwrite("a\0b\n", 1, 4, f);
	fclose(f);
	f = fopen(at("nul"), "r");
	is_int(skipper_read_line(f, &buf, &cap, 64), SKIPPER_LINE_NUL, "a NUL byte is refused");
	fclose(f);
	f = fopen("/dev/zero", "r");
	is_int(skipper_read_line(f, &buf, &cap, 1 << 20), SKIPPER_LINE_NUL, "/dev/zero ends at its first byte");
	fclose(f);
	free(buf);
}

static void test_sha256(void)
{
	char hex[65];

	put("abc", "abc");
	ok(skipper_sha256_file(at("abc"), hex, &err) == SKIPPER_OK &&
	       !strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
	   "SHA-256 of \"abc\" (FIPS 180-2)");
	ok(skipper_sha256_file(at("zero"), hex, &err) == SKIPPER_OK &&
	       !strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
	   "of an empty file");
	ok(skipper_sha256_file(at("missing"), hex, &err) == SKIPPER_ERR_NOT_FOUND && strstr(err.msg, at("missing")),
	   "a missing file names it");
	alarm(10);
	ok(skipper_sha256_file(at("fifo"), hex, &err) != SKIPPER_OK && strstr(err.msg, "not a regular file"),
	   "a FIFO is refused, not read (%s)", err.msg);
	alarm(0);
}

/* The streams as they were before the generators moved to core/base
 * (core/policy/rng.c and plugins/common/rng.h): a seed must reproduce
 * every sampled run and every seeded search. */
static void test_rng(void)
{
	static const uint64_t xo[] = { UINT64_C(0x15780b2e0c2ec716), UINT64_C(0x6104d9866d113a7e),
		                       UINT64_C(0xae17533239e499a1) };
	static const uint64_t sm[] = { UINT64_C(0xfae33298a8399d50), UINT64_C(0x61c943293fff298c),
		                       UINT64_C(0xa09a68803af15238) };
	struct skipper_rng r;
	uint64_t x = 7 ^ UINT64_C(0x5851f42d4c957f2d);
	int same = 1;

	skipper_rng_seed(&r, 42);
	for (int i = 0; i < 3; i++)
		same &= skipper_rng_u64(&r) == xo[i];
	ok(same, "xoshiro256** seeded with 42: the stream it always gave");
	same = 1;
	for (int i = 0; i < 3; i++)
		same &= skipper_splitmix64(&x) == sm[i];
	ok(same, "splitmix64 (the plugins' cm_rng seeded with 7): the stream it always gave");
	double d = 0;
	int in = 1;
	for (int i = 0; i < 1000; i++)
		in &= (d = skipper_rng_double(&r)) >= 0 && d < 1;
	ok(in, "doubles in [0, 1)");
}

static void test_module(void)
{
	struct skipper_module_path mp;
	char tried[256], *p;
	void (*fn)(void);
	const char *top = getenv("top_builddir");

	setenv("SKIPPER_PLUGIN_PATH", "/nonexistent-a::/nonexistent-b", 1);
	ok(skipper_module_path_get(&mp, "/first") == SKIPPER_OK && mp.n == 4 && !strcmp(mp.dir[0], "/first") &&
	       !strcmp(mp.dir[1], "/nonexistent-a") && !strcmp(mp.dir[2], "/nonexistent-b"),
	   "the path: the caller's directory, then $SKIPPER_PLUGIN_PATH's (empty entries skipped), then the "
	   "installed one");
	p = skipper_module_find(&mp, "nothing.so", tried, sizeof tried);
	ok(!p && strstr(tried, "/first, /nonexistent-a, /nonexistent-b"), "not found: tried lists them (%s)", tried);
	skipper_module_path_free(&mp);

	setenv("SKIPPER_PLUGIN_PATH", dir, 1);
	put("mod.so", "not an ELF file\n");
	skipper_module_path_get(&mp, NULL);
	p = skipper_module_find(&mp, "mod.so", tried, sizeof tried);
	ok(p && !strcmp(p, at("mod.so")), "found in the first directory that has it");
	skipper_module_path_free(&mp);
	ok(!skipper_module_open(p, "test module", "entry", 0, &fn, &err) && strstr(err.msg, "cannot load test module"),
	   "a file that is not a shared object: %s", err.msg);
	free(p);
	alarm(10);
	ok(!skipper_module_open(at("fifo"), "test module", "entry", 0, &fn, &err) &&
	       strstr(err.msg, "not a regular file"),
	   "a FIFO is refused before dlopen would block on it");
	alarm(0);
	if (top) {
		char so[1024];
		snprintf(so, sizeof so, "%s/tests/plugins/.libs/bad-nosym.so", top);
		void *h = skipper_module_open(so, "test module", "no_such_entry", 0, &fn, &err);
		ok(!h && strstr(err.msg, "not a test module: no exported no_such_entry"), "no entry symbol: %s", err.msg);
	} else {
		tap_skip(1, "top_builddir not set");
	}
}

int main(void)
{
	if (!mkdtemp(dir))
		BAIL("mkdtemp");
	test_atomic();
	test_open();
	test_lines();
	test_sha256();
	test_rng();
	test_module();
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return tap_done();
}
