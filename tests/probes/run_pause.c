/* A static probe that waits forever and reaps whatever is reparented to it: a program that
 * only a signal ends, for images without a libc too. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>

static void on_child(int sig)
{
	(void)sig;
}

int main(void)
{
	struct sigaction sa = {.sa_handler = on_child};
	sigset_t block, old;

	/* SIGCHLD is blocked except inside sigsuspend, so none is lost between the reaping and
	 * the wait. */
	sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		sigsuspend(&old);
	}
}
