/* measure OUT PROGRAM [ARG]...: runs PROGRAM as its child and reports, in the file OUT, the
 * child's pid (a line, at once) and, once it has ended, its peak resident set in KiB and its
 * wait status (a second line: "MAXRSS STATUS"). Exits 0 when it could report.
 *
 * The suite's memory figure for maf-host. A child forked from the test's own process would
 * carry that process's peak in its ru_maxrss (exec keeps the largest resident set the
 * process had, and a child starts with its parent's memory); forked from this small
 * program instead, the floor is this program's few hundred KiB, so the figure is the host's
 * (and its own children's, each no larger than it was when it forked them). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rusage ru;
	FILE *out;
	pid_t pid;
	int st;

	if (argc < 3) {
		fprintf(stderr, "usage: measure OUT PROGRAM [ARG]...\n");
		return 2;
	}
	out = fopen(argv[1], "w");
	if (!out) {
		perror(argv[1]);
		return 125;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 125;
	}
	if (pid == 0) {
		fclose(out);
		execv(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	fprintf(out, "%d\n", (int)pid);
	fflush(out);
	while (wait4(pid, &st, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("wait4");
			return 125;
		}
	}
	fprintf(out, "%ld %d\n", ru.ru_maxrss, st);
	return fclose(out) == 0 ? 0 : 125;
}
