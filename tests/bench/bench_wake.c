/* The machine's floor for `make bench-calls`: the round trip of one byte between two
 * processes over a socketpair, each blocking in read until the other writes. A host-tool
 * call through the channel wakes four processes in turn (program, supervisor, host,
 * supervisor, program): two such round trips, before any work is done. Printed beside the
 * call figures, measured in the same run, because on a VM this floor moves with the host.
 *
 * usage: bench_wake [ROUND_TRIPS]   prints one JSON object: {"round_trips", "p50_us", "p99_us"} */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5000, sv[2], i, status;
	long long *t;
	char c = 'x';
	pid_t pid;

	if (n < 100) {
		fprintf(stderr, "usage: bench_wake [ROUND_TRIPS (100 or more)]\n");
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	if (!t || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("bench_wake");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("bench_wake: fork");
		return 1;
	}
	if (pid == 0) {
		close(sv[0]);
		while (read(sv[1], &c, 1) == 1)
			if (write(sv[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	close(sv[1]);
	for (i = 0; i < n; i++) {
		long long t0 = now_ns();

		if (write(sv[0], &c, 1) != 1 || read(sv[0], &c, 1) != 1) {
			perror("bench_wake: the echo process went away");
			return 1;
		}
		t[i] = now_ns() - t0;
	}
	close(sv[0]);
	waitpid(pid, &status, 0);
	qsort(t, (size_t)n, sizeof(*t), cmp_ll);
	printf("{\"round_trips\": %d, \"p50_us\": %.1f, \"p99_us\": %.1f}\n", n,
	       t[n / 2] / 1e3, t[(int)((long long)n * 99 / 100)] / 1e3);
	return 0;
}
