/* Shared helpers for the hub tests: temporary trees, a real nginx on a free
 * loopback port, the fault proxy, and access-log inspection. Test code only;
 * helpers abort the test (bail out) when the environment is broken. */
#ifndef SKIPPER_TEST_HUB_HARNESS_H
#define SKIPPER_TEST_HUB_HARNESS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static __attribute__((unused)) void h_bail(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(99);
}

static __attribute__((unused)) char *h_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static __attribute__((unused)) char *h_fmt(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		h_bail("vasprintf");
	va_end(ap);
	return s;
}

static __attribute__((unused)) void h_mkdirs(const char *dir)
{
	char *d = strdup(dir);
	for (char *p = d + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(d, 0755);
			*p = '/';
		}
	if (mkdir(d, 0755) < 0 && errno != EEXIST)
		h_bail(d);
	free(d);
}

static __attribute__((unused)) void h_write(const char *path, const void *data, size_t n)
{
	char *dir = strdup(path), *slash = strrchr(dir, '/');
	FILE *f;
	if (slash) {
		*slash = '\0';
		h_mkdirs(dir);
	}
	free(dir);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0)
		h_bail(path);
}

static __attribute__((unused)) void h_write_str(const char *path, const char *s) { h_write(path, s, strlen(s)); }

/* n deterministic pseudo-random bytes (xorshift64). Caller frees. */
static __attribute__((unused)) unsigned char *h_bytes(size_t n, unsigned long long seed)
{
	unsigned char *b = malloc(n);
	unsigned long long x = seed ? seed : 88172645463325252ULL;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (unsigned char)(x >> 32);
	}
	return b;
}

static __attribute__((unused)) char *h_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n)
		n = 0;
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

static __attribute__((unused)) int h_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		h_bail("free port");
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static __attribute__((unused)) int h_wait_port(int port, int tenths)
{
	for (int i = 0; i < tenths; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
		int fd = socket(AF_INET, SOCK_STREAM, 0), ok;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
		close(fd);
		if (ok)
			return 0;
		usleep(100000);
	}
	return -1;
}

static __attribute__((unused)) pid_t h_spawn(char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		h_bail("fork");
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		/* nginx reads $NGINX as inherited listening sockets. */
		unsetenv("NGINX");
		dup2(devnull, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static __attribute__((unused)) void h_stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
}

/* Count lines of a log containing every one of the given substrings
 * (NULL-terminated list). */
/* nginx logs a request after the response is sent, so the client can be
 * done before the line is written: wait until the log stops growing. */
static __attribute__((unused)) void h_settle(const char *path)
{
	struct stat st;
	long long last = -1;
	for (int i = 0; i < 20; i++) {
		long long now = stat(path, &st) == 0 ? (long long)st.st_size : 0;
		if (now == last)
			return;
		last = now;
		usleep(40000);
	}
}

static __attribute__((unused)) int h_count_lines(const char *path, ...)
{
	char *text, *line, *save = NULL;
	const char *subs[8];
	int n = 0, k = 0;
	va_list ap;

	h_settle(path);
	if (!(text = h_read(path, NULL)))
		return 0;
	va_start(ap, path);
	while (k < 8 && (subs[k] = va_arg(ap, const char *)))
		k++;
	va_end(ap);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int all = 1;
		for (int i = 0; i < k; i++)
			all = all && strstr(line, subs[i]);
		n += all;
	}
	free(text);
	return n;
}

static __attribute__((unused)) int h_count_all_lines(const char *path)
{
	return h_count_lines(path, (const char *)NULL);
}

/* Start the fault proxy in front of upstream; returns its pid, *port its port. */
static __attribute__((unused)) pid_t h_faultproxy(const char *exe, const char *dir, int upstream, const char *mode, long long arg, int *port)
{
	char *portfile = h_fmt("%s/proxy.port", dir), *up = h_fmt("%d", upstream), *a = h_fmt("%lld", arg);
	char *argv[] = {(char *)exe, portfile, up, (char *)mode, a, NULL};
	pid_t pid;
	char *text = NULL;

	unlink(portfile);
	pid = h_spawn(argv);
	for (int i = 0; i < 100 && !(text = h_read(portfile, NULL)); i++)
		usleep(50000);
	if (!text)
		h_bail("faultproxy did not start");
	*port = atoi(text);
	free(text);
	free(portfile);
	free(up);
	free(a);
	return pid;
}

#endif
