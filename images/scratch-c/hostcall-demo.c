/* hostcall-demo: a static C program that calls the host tool add with {"a": 40, "b": 2}
 * through 'maf-launch call', as any program in any image can, and prints the answer.
 *
 * Run it under 'maf-launch run --tool add -- /hostcall-demo'. It starts
 * /usr/local/bin/maf-launch call add '{"a": 40, "b": 2}' with its stdout on a pipe and its
 * stderr this program's own, reads the value, and prints "40 + 2 = VALUE".
 *
 * Exit codes: 0 the answer was printed; 1 the host refused the call (maf-launch call has
 * printed the refusal's sentence on stderr); 2 the call could not be made (maf-launch call
 * has said why on stderr, or this program says why it could not start it). */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAUNCHER "/usr/local/bin/maf-launch"
#define VALUE_MAX 4096

extern char **environ;

int main(void)
{
	char *argv[] = {"maf-launch", "call", "add", "{\"a\": 40, \"b\": 2}", NULL};
	char value[VALUE_MAX + 1];
	posix_spawn_file_actions_t fa;
	size_t len = 0;
	int pipefd[2], status, err;
	ssize_t n;
	pid_t pid;

	if (pipe(pipefd) < 0) {
		fprintf(stderr, "hostcall-demo: cannot make a pipe: %s\n", strerror(errno));
		return 2;
	}
	/* The child's stdout is the pipe's write end; neither end stays open in it beyond. */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	posix_spawn_file_actions_addclose(&fa, pipefd[1]);
	err = posix_spawn(&pid, LAUNCHER, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (err) {
		fprintf(stderr, "hostcall-demo: cannot start %s: %s\n", LAUNCHER, strerror(err));
		return 2;
	}
	/* Up to VALUE_MAX bytes of the value; the rest is read and dropped, so the child never
	 * blocks on a full pipe. */
	for (;;) {
		char drop[512];

		if (len < VALUE_MAX)
			n = read(pipefd[0], value + len, VALUE_MAX - len);
		else
			n = read(pipefd[0], drop, sizeof(drop));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len < VALUE_MAX)
			len += (size_t)n;
	}
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "hostcall-demo: cannot wait for maf-launch call: %s\n",
				strerror(errno));
			return 2;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1) {
		fprintf(stderr, "hostcall-demo: the host refused the call to add\n");
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "hostcall-demo: maf-launch call failed (%s %d)\n",
			WIFEXITED(status) ? "exit code" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return 2;
	}
	while (len > 0 && value[len - 1] == '\n')
		len--;
	value[len] = '\0';
	printf("40 + 2 = %s\n", value);
	return 0;
}
