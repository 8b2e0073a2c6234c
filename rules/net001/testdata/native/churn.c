// churn: a client and a server in one process tree on loopback. With
// "churn" the client dials a new TCP connection for every request and
// closes it; with "reuse" it keeps one. Each request is 64 bytes each way.
// Stops by itself after the given seconds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int full(int fd, char *b, int n, int rd) {
	for (int d = 0; d < n;) {
		int k = rd ? read(fd, b + d, n - d) : write(fd, b + d, n - d);
		if (k <= 0) return -1;
		d += k;
	}
	return 0;
}

static void serve(int lfd) {
	char b[64];
	for (;;) {
		int c = accept(lfd, NULL, NULL);
		if (c < 0) continue;
		// One client at a time: the client is sequential.
		while (full(c, b, sizeof b, 1) == 0 && full(c, b, sizeof b, 0) == 0) {}
		close(c);
	}
}

static int dial(struct sockaddr_in *a) {
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)a, sizeof *a) < 0) { perror("connect"); exit(1); }
	return fd;
}

int main(int argc, char **argv) {
	if (argc != 3 || (strcmp(argv[1], "churn") && strcmp(argv[1], "reuse"))) {
		fprintf(stderr, "usage: churn churn|reuse SECONDS\n");
		return 2;
	}
	int churn = !strcmp(argv[1], "churn");
	double secs = atof(argv[2]);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 512) < 0 || getsockname(lfd, (struct sockaddr *)&a, &al) < 0) {
		perror("listen");
		return 1;
	}
	pid_t server = fork();
	if (server == 0) { serve(lfd); }
	close(lfd);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char b[64] = "request";
	long n = 0;
	int fd = churn ? -1 : dial(&a);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 > secs) break;
		if (churn) fd = dial(&a);
		if (full(fd, b, sizeof b, 0) || full(fd, b, sizeof b, 1)) { perror("request"); return 1; }
		if (churn) close(fd);
		n++;
	}
	kill(server, SIGTERM);
	waitpid(server, NULL, 0);
	printf("%ld requests in %.1f s\n", n, secs);
	return 0;
}
