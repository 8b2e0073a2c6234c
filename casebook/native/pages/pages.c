/*
 * pages: a native HTTP service for the casebook, profiled with Linux perf.
 *
 * It serves one 64 KiB page and an ETag over HTTP/1.1 keep-alive from a
 * fixed pool of threads (started before any profiler attaches, so `perf
 * record -p` sees every one). The ETag is a 64-bit FNV-1a hash of the page.
 *
 *   bad:   the hash is computed for every request, byte by byte: the
 *          service's CPU goes to page_etag.
 *   fixed: the page never changes, so its hash is computed once at start.
 *
 * Usage: pages bad|fixed PORT   (PORT 0 picks one; "listening PORT" is
 * printed on stdout once the service accepts connections). It stops on
 * SIGTERM or SIGINT.
 */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PAGE_SIZE (64 * 1024)
#define WORKERS 8
#define REQ_MAX 8192

static unsigned char page[PAGE_SIZE];
static uint64_t cached_etag;
static int fixed;
static int listener;

/* page_etag hashes the page: the bad variant's hot path. */
__attribute__((noinline)) static uint64_t page_etag(const unsigned char *p, size_t n) {
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static int write_all(int fd, const void *buf, size_t n) {
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* serve answers requests on one connection until the client closes it. */
static void serve(int fd) {
	char req[REQ_MAX];
	size_t have = 0;
	for (;;) {
		char *end;
		while ((end = memmem(req, have, "\r\n\r\n", 4)) == NULL) {
			if (have == sizeof req)
				return; /* header too large */
			ssize_t r = read(fd, req + have, sizeof req - have);
			if (r <= 0)
				return;
			have += (size_t)r;
		}
		uint64_t etag = fixed ? cached_etag : page_etag(page, sizeof page);
		char head[256];
		int hn = snprintf(head, sizeof head,
				  "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: \"%016llx\"\r\nContent-Length: %d\r\n\r\n",
				  (unsigned long long)etag, PAGE_SIZE);
		if (write_all(fd, head, (size_t)hn) < 0 || write_all(fd, page, sizeof page) < 0)
			return;
		size_t used = (size_t)(end + 4 - req);
		memmove(req, req + used, have - used);
		have -= used;
	}
}

static void *worker(void *arg) {
	(void)arg;
	for (;;) {
		int fd = accept(listener, NULL, NULL);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		serve(fd);
		close(fd);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 3 || (strcmp(argv[1], "bad") != 0 && strcmp(argv[1], "fixed") != 0)) {
		fprintf(stderr, "usage: pages bad|fixed PORT\n");
		return 2;
	}
	fixed = strcmp(argv[1], "fixed") == 0;
	for (size_t i = 0; i < sizeof page; i++)
		page[i] = (unsigned char)("<p>perfdoctor casebook</p>\n"[i % 27]);
	cached_etag = page_etag(page, sizeof page);

	signal(SIGPIPE, SIG_IGN);
	listener = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* loopback only */
	socklen_t alen = sizeof addr;
	if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(listener, 128) < 0 ||
	    getsockname(listener, (struct sockaddr *)&addr, &alen) < 0) {
		perror("pages: listen");
		return 1;
	}

	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL); /* the workers inherit the mask */
	for (int i = 0; i < WORKERS; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL) != 0) {
			perror("pages: thread");
			return 1;
		}
	}
	printf("listening %d\n", ntohs(addr.sin_port));
	fflush(stdout);
	int sig;
	sigwait(&stop, &sig);
	return 0;
}
