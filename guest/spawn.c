/* Starting processes without copying the launcher's memory, and the raw system calls the
 * launcher makes while it shares the supervisor's: see spawn.h. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"

#if MAFL_SPAWN_FORK

pid_t mafl_spawn_shared(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	return pid;
}

pid_t mafl_spawn_vfork(int (*fn)(void *), void *arg)
{
	return mafl_spawn_shared(fn, arg);
}

pid_t mafl_spawn_vfork_signal(int (*fn)(void *), void *arg, int exit_signal)
{
	/* fork(), with another signal at the end: the raw call (the supervisor that uses it
	 * is single-threaded, so no lock of the C library's can be held across it). */
	long pid = syscall(SYS_clone, (unsigned long)exit_signal, 0UL, 0UL, 0UL, 0UL);

	if (pid == 0)
		_exit(fn(arg));
	return (pid_t)pid;
}

/* Separate memory: errno is the launcher's own, so the C library will do. */
static long ret(long r)
{
	return r < 0 ? -errno : r;
}

long mafl_raw_read(int fd, void *buf, size_t len)
{
	return ret(read(fd, buf, len));
}

long mafl_raw_syscall(long nr, long a, long b, long c)
{
	return ret(syscall(nr, a, b, c, 0L, 0L, 0L));
}

long mafl_raw_write(int fd, const void *buf, size_t len)
{
	return ret(write(fd, buf, len));
}

long mafl_raw_close(int fd)
{
	return ret(close(fd));
}

long mafl_raw_wait(pid_t pid)
{
	return ret(waitpid(pid, NULL, 0));
}

long mafl_raw_openat(int dirfd, const char *path, int flags, int mode)
{
	return ret(openat(dirfd, path, flags, mode));
}

long mafl_raw_unlinkat(int dirfd, const char *path)
{
	return ret(unlinkat(dirfd, path, 0));
}

long mafl_raw_mkdirat(int dirfd, const char *path, int mode)
{
	return ret(mkdirat(dirfd, path, (mode_t)mode));
}

static long send_fd(int sock, struct msghdr *mh)
{
	return ret(sendmsg(sock, mh, MSG_NOSIGNAL));
}

void mafl_raw_exit(int code)
{
	_exit(code);
}

#else

/* The supervisor's stack: it runs for the whole run, so it gets as much room as a main
 * thread would (only the pages it touches are ever allocated), above a guard page. */
#define SHARED_STACK (8u << 20)
#define GUARD 4096u
/* The program's process, from clone to exec: signal resets, Landlock, the seccomp filter
 * (a few KiB of instructions) and execvpe's path buffer. */
#define VFORK_STACK (128u << 10)

static long sc(long n, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	unsigned long r;
	register long r10 __asm__("r10") = d;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return (long)r;
#else /* __aarch64__ */
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory", "cc");
	return x0;
#endif
}

pid_t mafl_spawn_shared(int (*fn)(void *), void *arg)
{
	char *stack = mmap(NULL, SHARED_STACK + GUARD, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	pid_t pid;

	if (stack == MAP_FAILED)
		return -1;
	if (mprotect(stack, GUARD, PROT_NONE) < 0) {
		int err = errno;

		munmap(stack, SHARED_STACK + GUARD);
		errno = err;
		return -1;
	}
	pid = clone(fn, stack + SHARED_STACK + GUARD, CLONE_VM | SIGCHLD, arg);
	if (pid < 0) {
		int err = errno;

		munmap(stack, SHARED_STACK + GUARD);
		errno = err;
	}
	return pid;
}

pid_t mafl_spawn_vfork_signal(int (*fn)(void *), void *arg, int exit_signal)
{
	/* One child at a time uses it, and only until its exec. */
	static char stack[VFORK_STACK] __attribute__((aligned(16)));

	return clone(fn, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | exit_signal, arg);
}

pid_t mafl_spawn_vfork(int (*fn)(void *), void *arg)
{
	return mafl_spawn_vfork_signal(fn, arg, SIGCHLD);
}

long mafl_raw_read(int fd, void *buf, size_t len)
{
	long r;

	do
		r = sc(SYS_read, fd, (long)buf, (long)len, 0);
	while (r == -EINTR);
	return r;
}

long mafl_raw_write(int fd, const void *buf, size_t len)
{
	long r;

	do
		r = sc(SYS_write, fd, (long)buf, (long)len, 0);
	while (r == -EINTR);
	return r;
}

long mafl_raw_close(int fd)
{
	return sc(SYS_close, fd, 0, 0, 0);
}

long mafl_raw_syscall(long nr, long a, long b, long c)
{
	return sc(nr, a, b, c, 0);
}

long mafl_raw_wait(pid_t pid)
{
	long r;

	do
		r = sc(SYS_wait4, pid, 0, 0, 0);
	while (r == -EINTR);
	return r;
}

long mafl_raw_openat(int dirfd, const char *path, int flags, int mode)
{
	long r;

	do
		r = sc(SYS_openat, dirfd, (long)path, flags, mode);
	while (r == -EINTR);
	return r;
}

long mafl_raw_unlinkat(int dirfd, const char *path)
{
	return sc(SYS_unlinkat, dirfd, (long)path, 0, 0);
}

long mafl_raw_mkdirat(int dirfd, const char *path, int mode)
{
	return sc(SYS_mkdirat, dirfd, (long)path, mode, 0);
}

static long send_fd(int sock, struct msghdr *mh)
{
	long r;

	do
		r = sc(SYS_sendmsg, sock, (long)mh, MSG_NOSIGNAL, 0);
	while (r == -EINTR);
	return r;
}

void mafl_raw_exit(int code)
{
	for (;;)
		sc(SYS_exit_group, code, 0, 0, 0);
}

#endif

long mafl_raw_send_fd(int sock, int fd, int err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = &err, .iov_len = sizeof(err)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return send_fd(sock, &mh);
}
