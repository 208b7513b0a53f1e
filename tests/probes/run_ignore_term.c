/* A static probe: execs argv[1...] with SIGTERM ignored from the first instruction on (an
 * ignored disposition survives exec), so a test of the timeout's SIGKILL does not depend on
 * how fast the real program starts and installs its own handler. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs("usage: run_ignore_term PROGRAM [ARG]...\n", stderr);
		return 2;
	}
	signal(SIGTERM, SIG_IGN);
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
