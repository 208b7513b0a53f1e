/* Probe for tests/integration/test_seccomp_live.py: can the program reach its supervisor
 * (its parent) with a signal? Every check sends signal 0, which tests permission and delivers
 * nothing, and prints "NAME 0" or "NAME errno=N" like seccomp_syscalls.
 *   seccomp_signal checks     all the signal-0 checks, then "done"
 *   seccomp_signal sigio-kill arms SIGKILL to the supervisor through F_SETOWN/F_SETSIG on a
 *                             pipe and triggers it (destructive: for the gap test only) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static void report(const char *name, long rc)
{
	if (rc < 0)
		printf("%s errno=%d\n", name, errno);
	else
		printf("%s 0\n", name);
	fflush(stdout);
}

static long close_rc(long fd)
{
	if (fd >= 0)
		close((int)fd);
	return fd;
}

static long queue0(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_code = SI_QUEUE; /* the kernel refuses si_code >= 0 to another process itself */
	si.si_pid = getpid();
	si.si_uid = getuid();
	return syscall(SYS_rt_sigqueueinfo, pid, 0, &si);
}

static long tgqueue0(pid_t tgid, pid_t tid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	return syscall(SYS_rt_tgsigqueueinfo, tgid, tid, 0, &si);
}

static void checks(void)
{
	pid_t sup = getppid(), me = getpid();
	char path[64];
	long fd;

	printf("supervisor %d\n", (int)sup);
	report("kill", kill(sup, 0));
	report("kill_group", kill(-sup, 0));
	report("kill_all", kill(-1, 0));
	report("tkill", syscall(SYS_tkill, sup, 0));
	report("tgkill", syscall(SYS_tgkill, sup, sup, 0));
	report("rt_sigqueueinfo", queue0(sup));
	report("rt_tgsigqueueinfo", tgqueue0(sup, sup));
	report("pidfd_open", close_rc(syscall(SYS_pidfd_open, sup, 0)));
	/* A /proc/PID directory descriptor is accepted as a pidfd by pidfd_send_signal. */
	snprintf(path, sizeof(path), "/proc/%d", (int)sup);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		report("pidfd_send_signal_procfd", -1);
	} else {
		report("pidfd_send_signal_procfd",
		       syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0));
		close((int)fd);
	}
	/* Not over-blocking: the program may signal itself. */
	report("kill_self", kill(me, 0));
	report("tgkill_self", syscall(SYS_tgkill, me, me, 0));
	report("pidfd_open_self", close_rc(syscall(SYS_pidfd_open, me, 0)));
	printf("done\n");
}

/* fcntl(F_SETOWN) names a process the kernel will signal when the descriptor is ready; no
 * kill-family syscall is made, so a seccomp filter on them never sees it. */
static int sigio_kill(void)
{
	pid_t sup = getppid();
	int p[2], fl;

	printf("supervisor %d\n", (int)sup);
	fflush(stdout);
	sleep(1); /* let the launch be reported first */
	if (pipe(p) < 0 || fcntl(p[0], F_SETOWN, sup) < 0 || fcntl(p[0], F_SETSIG, SIGKILL) < 0)
		return perror("arm"), 1;
	fl = fcntl(p[0], F_GETFL);
	if (fl < 0 || fcntl(p[0], F_SETFL, fl | O_ASYNC) < 0)
		return perror("O_ASYNC"), 1;
	if (write(p[1], "x", 1) != 1)
		return perror("write"), 1;
	sleep(1);
	printf("sigio sent\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "checks") == 0) {
		checks();
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "sigio-kill") == 0)
		return sigio_kill();
	fprintf(stderr, "usage: seccomp_signal checks|sigio-kill\n");
	return 2;
}
