/* A static probe that waits forever and reaps whatever is reparented to it: the init of a
 * FROM scratch test container (orphaned supervisors must not pile up as zombies there), or a
 * program that only a signal ends. */
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	for (;;) {
		if (wait(NULL) < 0 && errno == ECHILD)
			sleep(1);
	}
}
