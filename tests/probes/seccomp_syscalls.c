/* Probe for tests/integration/test_seccomp.py: makes each syscall the default seccomp filter
 * has an opinion on and prints one line per check, "NAME 0" when the call succeeded or
 * "NAME errno=N" when it failed, so the test can compare a filtered run with an unfiltered
 * one. Calls that would change the probe itself (namespaces, tracing) are made in a forked
 * child that reports through its exit status. Usage: seccomp_syscalls CHECK... | all */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif

/* A result: >= 0 success, else -errno. */
static long res(long rc)
{
	return rc < 0 ? -errno : 0;
}

static long close_res(long fd)
{
	if (fd < 0)
		return -errno;
	close((int)fd);
	return 0;
}

/* Runs fn in a forked child; the child's exit status carries fn's errno (0: success). */
static long in_child(long (*fn)(void))
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1000 - errno;
	if (pid == 0)
		_exit((int)-fn());
	if (waitpid(pid, &st, 0) < 0)
		return -1000 - errno;
	if (!WIFEXITED(st))
		return -2000 - (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return -WEXITSTATUS(st);
}

static long socket_raw(unsigned long domain)
{
	return close_res(syscall(SYS_socket, domain, SOCK_STREAM, 0));
}

static long socketpair_of(int domain)
{
	int sv[2];

	if (socketpair(domain, SOCK_STREAM, 0, sv) < 0)
		return -errno;
	close(sv[0]);
	close(sv[1]);
	return 0;
}

static long c_socket_inet(void) { return close_res(socket(AF_INET, SOCK_STREAM, 0)); }
static long c_socket_inet6(void) { return close_res(socket(AF_INET6, SOCK_DGRAM, 0)); }
static long c_socket_unix(void) { return close_res(socket(AF_UNIX, SOCK_STREAM, 0)); }
static long c_socket_netlink(void) { return close_res(socket(AF_NETLINK, SOCK_RAW, 0)); }
/* The kernel reads the domain as an int: 0x100000002 is AF_INET to it. */
static long c_socket_inet_highbit(void) { return socket_raw(0x100000002UL); }
static long c_socket_unix_highbit(void) { return socket_raw(0x100000001UL); }
static long c_socketpair_unix(void) { return socketpair_of(AF_UNIX); }
static long c_socketpair_inet(void) { return socketpair_of(AF_INET); }

static long c_io_uring_setup(void)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	return close_res(syscall(SYS_io_uring_setup, 1, &p));
}

static long traceme(void)
{
	return res(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
}

static long c_ptrace_traceme(void) { return in_child(traceme); }

static long c_ptrace_attach(void)
{
	long rc;
	pid_t pid = fork();

	if (pid < 0)
		return -1000 - errno;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	rc = res(ptrace(PTRACE_ATTACH, pid, NULL, NULL));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return rc;
}

/* An invalid command: EINVAL from the kernel, EPERM from the filter. */
static long c_bpf(void) { return res(syscall(SYS_bpf, 0xffff, NULL, 0)); }

static long c_perf_event_open(void)
{
	return close_res(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
}

static long c_userfaultfd(void) { return close_res(syscall(SYS_userfaultfd, O_CLOEXEC)); }

static long c_process_vm_readv(void)
{
	char a = 0, b = 1;
	struct iovec l = {&a, 1}, r = {&b, 1};

	return res(syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0));
}

static long c_keyctl(void)
{
	/* KEYCTL_GET_KEYRING_ID (0) of KEY_SPEC_PROCESS_KEYRING (-2), not creating it. */
	return res(syscall(SYS_keyctl, 0, -2, 0));
}

static long unshare_user(void) { return res(unshare(CLONE_NEWUSER)); }
static long unshare_net(void) { return res(unshare(CLONE_NEWNET)); }
static long c_unshare_user(void) { return in_child(unshare_user); }
static long c_unshare_net(void) { return in_child(unshare_net); }

static long c_setns(void) { return res(setns(-1, 0)); }

/* A mount point that does not exist: ENOENT from the kernel, EPERM from the filter. */
static long c_mount(void)
{
	return res(mount("none", "/nonexistent-maf-probe/dir", "tmpfs", 0, NULL));
}

static long c_umount2(void) { return res(umount2("/nonexistent-maf-probe/dir", 0)); }

/* clone() with a NULL stack behaves like fork(); the child leaves at once. */
static long clone_flags(unsigned long flags)
{
	int st;
	long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);

	if (pid < 0)
		return -errno;
	if (pid == 0)
		syscall(SYS_exit, 0);
	waitpid((pid_t)pid, &st, 0);
	return 0;
}

static long c_clone_plain(void) { return clone_flags(0); }
static long c_clone_newuser(void) { return clone_flags(CLONE_NEWUSER); }
static long c_clone_newnet(void) { return clone_flags(CLONE_NEWNET); }
static long c_clone_newpid(void) { return clone_flags(CLONE_NEWPID); }
static long c_clone_newns(void) { return clone_flags(CLONE_NEWNS); }

/* A zero size: EINVAL from the kernel (no child is made), ENOSYS from the filter. */
static long c_clone3(void) { return res(syscall(SYS_clone3, NULL, 0)); }

static long c_fork(void)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(7);
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : -1000;
}

/* pidfd_getfd takes a descriptor out of another process, like ptrace. */
static long c_pidfd_getfd(void)
{
	long pidfd, fd, rc;
	pid_t pid = fork();

	if (pid < 0)
		return -1000 - errno;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		rc = -1000 - errno;
	} else {
		fd = syscall(SYS_pidfd_getfd, pidfd, 1, 0);
		rc = close_res(fd);
		close((int)pidfd);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return rc;
}

static const struct check {
	const char *name;
	long (*fn)(void);
} checks[] = {
#define C(n) {#n, c_##n}
	C(socket_inet), C(socket_inet6), C(socket_unix), C(socket_netlink),
	C(socket_inet_highbit), C(socket_unix_highbit), C(socketpair_unix), C(socketpair_inet),
	C(io_uring_setup), C(ptrace_traceme), C(ptrace_attach), C(bpf), C(perf_event_open),
	C(userfaultfd), C(process_vm_readv), C(keyctl), C(unshare_user), C(unshare_net),
	C(setns), C(mount), C(umount2), C(clone_plain), C(clone_newuser), C(clone_newnet),
	C(clone_newpid), C(clone_newns), C(clone3), C(fork), C(pidfd_getfd),
#undef C
};

#define NCHECKS (sizeof(checks) / sizeof(checks[0]))

static void run(const struct check *c)
{
	long rc = c->fn();

	if (rc == 0)
		printf("%s 0\n", c->name);
	else
		printf("%s errno=%ld\n", c->name, -rc);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t j;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: seccomp_syscalls CHECK... | all\n");
		return 2;
	}
	for (i = 1; i < argc; i++) {
		int found = 0;

		for (j = 0; j < NCHECKS; j++) {
			if (strcmp(argv[i], "all") == 0 || strcmp(argv[i], checks[j].name) == 0) {
				run(&checks[j]);
				found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "seccomp_syscalls: unknown check '%s'\n", argv[i]);
			return 2;
		}
	}
	printf("done\n");
	return 0;
}
