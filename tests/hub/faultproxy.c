/* Fault-injecting TCP relay for the hub tests: sits in front of nginx on
 * 127.0.0.1 and does what nginx cannot: answer the first N connections with
 * a 500, or cut the first connection after a number of response bytes.
 *
 *   faultproxy PORTFILE UPSTREAM_PORT fail500 N
 *   faultproxy PORTFILE UPSTREAM_PORT drop BYTES
 *
 * Listens on an ephemeral loopback port written to PORTFILE (written to a
 * temporary name and renamed, so readers never see half a number). Every
 * accepted connection is served by a child; the proxy exits on SIGTERM or
 * after 120 s at most, so a failed test cannot leave it running. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int connect_upstream(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		return -1;
	return fd;
}

/* Read until the end of the request headers so the 500 is a reply, not a
 * reset the client could mistake for something else. */
static void answer_500(int c)
{
	static const char resp[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	char buf[8192];
	size_t have = 0;

	while (have < sizeof buf - 1) {
		ssize_t n = read(c, buf + have, sizeof buf - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	if (write(c, resp, sizeof resp - 1) < 0)
		return;
	shutdown(c, SHUT_WR);
}

/* Pump bytes both ways; stop after limit bytes downstream (< 0: never). */
static void relay(int c, int u, long long limit)
{
	struct pollfd p[2] = {{.fd = c, .events = POLLIN}, {.fd = u, .events = POLLIN}};
	char buf[65536];
	long long sent = 0;

	for (;;) {
		if (poll(p, 2, 30000) <= 0)
			return;
		for (int i = 0; i < 2; i++) {
			ssize_t n;
			size_t want = sizeof buf;
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (i == 1 && limit >= 0 && (long long)want > limit - sent)
				want = (size_t)(limit - sent);
			n = read(p[i].fd, buf, want);
			if (n <= 0)
				return;
			if (write(p[1 - i].fd, buf, (size_t)n) != n)
				return;
			if (i == 1) {
				sent += n;
				if (limit >= 0 && sent >= limit)
					return; /* the fault: hang up mid-response */
			}
		}
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof a;
	int upstream, lfd, one = 1;
	long long arg;
	char tmp[4096];
	FILE *f;

	if (argc != 5 || (strcmp(argv[3], "fail500") != 0 && strcmp(argv[3], "drop") != 0)) {
		fprintf(stderr, "usage: faultproxy PORTFILE UPSTREAM_PORT fail500 N | drop BYTES\n");
		return 2;
	}
	upstream = atoi(argv[2]);
	arg = atoll(argv[4]);
	alarm(120);
	signal(SIGCHLD, SIG_IGN);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 16) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen) < 0) {
		perror("faultproxy: listen");
		return 1;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 || rename(tmp, argv[1]) < 0) {
		perror("faultproxy: port file");
		return 1;
	}
	for (long nconn = 1;; nconn++) {
		int c = accept(lfd, NULL, NULL);
		if (c < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (fork() == 0) {
			close(lfd);
			if (argv[3][0] == 'f' && nconn <= arg) {
				answer_500(c);
			} else {
				int u = connect_upstream(upstream);
				if (u >= 0)
					relay(c, u, argv[3][0] == 'd' && nconn == 1 ? arg : -1);
			}
			_exit(0);
		}
		close(c);
	}
}
