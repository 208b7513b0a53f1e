/* A static program that calls host tools the way any program in a FROM scratch image can:
 * it runs `maf-launch call TOOL JSON` (the launcher at argv[1]) and prints what it got.
 * usage: chan_call LAUNCHER TOOL JSON [TOOL JSON]... */
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	int i;

	if (argc < 4 || (argc - 2) % 2) {
		fprintf(stderr, "usage: chan_call LAUNCHER TOOL JSON [TOOL JSON]...\n");
		return 2;
	}
	for (i = 2; i + 1 < argc; i += 2) {
		char *args[] = {argv[1], "call", argv[i], argv[i + 1], NULL};
		posix_spawn_file_actions_t fa;
		char buf[4096];
		int p[2], st;
		ssize_t n, got = 0;
		pid_t pid;

		if (pipe(p) < 0)
			return 1;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, p[1], 1);
		posix_spawn_file_actions_addclose(&fa, p[0]);
		if (posix_spawn(&pid, argv[1], &fa, NULL, args, environ) != 0) {
			perror("posix_spawn");
			return 1;
		}
		close(p[1]);
		while ((n = read(p[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
			got += n;
		buf[got] = '\0';
		close(p[0]);
		waitpid(pid, &st, 0);
		printf("%s rc=%d value=%s", argv[i], WIFEXITED(st) ? WEXITSTATUS(st) : -1,
		       got ? buf : "\n");
	}
	return 0;
}
