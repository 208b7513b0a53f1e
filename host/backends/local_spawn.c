/* The local backend's spawn: every command (an exec's, a stream's) is started with
 * posix_spawnp from a thread of the library's whose descriptor table is its own.
 *
 * Why a thread: posix_spawn's clone copies the calling thread's descriptor table, a
 * reference taken on every open file, and that copy is the caller's time. A host holding a
 * thousand runs holds some five thousand descriptors (each run's pipes, pidfds and stream),
 * and paid for all of them at every launch, stream and stop: in make bench-python the clone
 * was the largest part of the kernel time that grew with the runs. The spawner's table holds
 * stdio and its end of a socket pair; a command's three descriptors are handed to it over
 * the socket (SCM_RIGHTS), so each spawn copies six descriptors whatever the host holds.
 *
 * The hand-over has its own cost (two system calls each way and the thread woken: on this
 * project's 2-CPU virtual machine about 150 us a spawn when a CPU is idle, an IPI that traps
 * to the hypervisor), which a host holding few descriptors does not win back: make
 * bench-python's host CPU per call was 361 us through the thread and 314 us in place at 10
 * runs at once, 396 and 425 at 1,000. So a command whose descriptors are all below
 * SPAWNER_FROM_FD is spawned in the caller's thread: its pipes were just made, and the
 * kernel gives the lowest free numbers, so every number below them is open, and past this
 * many the copy costs more than the hand-over.
 *
 * The thread is started at the first spawn in a process that needs it (fork leaves no thread
 * behind: a forked child starts its own) and lives as long as the process. The commands it
 * starts are its children, which any thread of the process may wait for (wait4, pidfds); none
 * of them sets a parent-death signal toward the host, which would follow the thread rather
 * than the process. Where it cannot be started (close_range with CLOSE_RANGE_UNSHARE is Linux
 * 5.9; a seccomp policy may deny it), or a hand-over fails, the command is spawned in the
 * caller's thread, as it always was; the result is the same either way. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "local.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1u << 1)
#endif

/* A command with a descriptor at or above this is spawned through the thread (see above). */
#define SPAWNER_FROM_FD 2048

/* Its stack: posix_spawn gives the child a stack of its own, so this is only the thread's
 * few frames (with room for a sanitizer's larger ones). */
#define SPAWNER_STACK (256u << 10)

/* One command, on the caller's stack while the caller waits for its answer. */
struct spawn_req {
	const char *const *argv;
	const char *cwd;
	int with_in;                   /* whether an stdin descriptor comes with the request */
	int rc;                        /* posix_spawnp's answer: 0, or an errno; NOT_HERE */
	pid_t pid;
};

enum { SP_NONE, SP_READY, SP_IN_PLACE };
/* A request's rc until it is spawned, and after a hand-over that lost its descriptors (the
 * caller then spawns in place). */
#define NOT_HERE (-1)

static pthread_mutex_t sp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t sp_once = PTHREAD_ONCE_INIT;
static int sp_state = SP_NONE;     /* under sp_lock */
static int sp_fd = -1;             /* the callers' end, in the process's table */

/* posix_spawnp of argv with in (or /dev/null when < 0), out and err as its stdio, nothing
 * else open, in cwd, in a process group of its own, signals as at a shell's start. 0 with
 * *pid, or posix_spawn's errno. */
static int spawn_here(const char *const *argv, const char *cwd, int in, int out, int err,
		      pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int rc;

	rc = posix_spawn_file_actions_init(&fa);
	if (rc)
		return rc;
	rc = posix_spawnattr_init(&at);
	if (rc) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	sigemptyset(&none);
	sigfillset(&all);
	rc = (in >= 0 ? posix_spawn_file_actions_adddup2(&fa, in, 0)
	      : posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) ||
	     posix_spawn_file_actions_adddup2(&fa, out, 1) ||
	     posix_spawn_file_actions_adddup2(&fa, err, 2) ||
	     posix_spawn_file_actions_addclosefrom_np(&fa, 3) ||
	     (cwd && posix_spawn_file_actions_addchdir_np(&fa, cwd)) ||
	     posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
				      POSIX_SPAWN_SETSIGDEF) ||
	     posix_spawnattr_setpgroup(&at, 0) ||
	     posix_spawnattr_setsigmask(&at, &none) ||
	     posix_spawnattr_setsigdefault(&at, &all);
	if (rc == 0)
		rc = posix_spawnp(pid, argv[0], &fa, &at, (char *const *)argv, environ);
	else
		rc = ENOMEM;
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

/* The thread's table, made its own: a copy of the process's up to and including fd, the
 * thread's socket (posix_spawn's dup2 would leave a descriptor already at 0, 1 or 2
 * close-on-exec, so stdio is kept, or /dev/null where the process has none), then everything
 * else closed. 0, or -1 with errno. */
static int own_table(int fd)
{
	int i;

	if (syscall(SYS_close_range, (unsigned)fd + 1, ~0u, CLOSE_RANGE_UNSHARE) < 0)
		return -1;
	if (fd > 3 && syscall(SYS_close_range, 3u, (unsigned)fd - 1, 0u) < 0)
		return -1;
	for (i = 0; i < 3; i++)
		if (fcntl(i, F_GETFD) < 0 && open("/dev/null", O_RDWR | O_CLOEXEC) != i)
			return -1;
	return 0;
}

/* A request and its descriptors off the socket (fds: [in,] out, err, as sent): the request,
 * or NULL at the socket's end (the process is going). A request whose descriptors did not
 * all come is left NOT_HERE with none in fds. */
static struct spawn_req *take(int s, int fds[3])
{
	struct spawn_req *req = NULL;
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = &req, .iov_len = sizeof(req) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n;
	int got = 0, want;

	do
		n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(req))
		return NULL;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			got = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds, CMSG_DATA(c), (size_t)(got > 3 ? 3 : got) * sizeof(int));
		}
	want = req->with_in ? 3 : 2;
	if (got != want || (m.msg_flags & MSG_CTRUNC)) {
		for (int i = 0; i < 3; i++) {
			if (i < got && fds[i] >= 0)
				close(fds[i]);
			fds[i] = -1;
		}
		req->rc = NOT_HERE;
	}
	return req;
}

static void *spawner(void *arg)
{
	int s = (int)(intptr_t)arg;
	char ok = own_table(s) == 0 ? 'y' : 'n';

	if (send(s, &ok, 1, MSG_NOSIGNAL) != 1 || ok != 'y')
		return NULL;
	for (;;) {
		int fds[3] = { -1, -1, -1 };
		struct spawn_req *req = take(s, fds);
		char done = 'd';

		if (!req)
			break;
		if (fds[0] >= 0) {
			/* [in,] out, err, in the order they were sent */
			int w = req->with_in;

			req->rc = spawn_here(req->argv, req->cwd, w ? fds[0] : -1, fds[w],
					     fds[w + 1], &req->pid);
			for (int i = 0; i < 3; i++)
				if (fds[i] >= 0)
					close(fds[i]);
		}
		if (send(s, &done, 1, MSG_NOSIGNAL) != 1)
			break;
	}
	close(s);
	return NULL;
}

/* fork: the child has no spawner (and must not write to the parent's), so it starts its own
 * at its first spawn; the lock is held across the fork so that no request is half sent. */
static void at_prepare(void)
{
	pthread_mutex_lock(&sp_lock);
}

static void at_parent(void)
{
	pthread_mutex_unlock(&sp_lock);
}

static void at_child(void)
{
	if (sp_fd >= 0)
		close(sp_fd);
	sp_fd = -1;
	sp_state = SP_NONE;
	pthread_mutex_unlock(&sp_lock);
}

static void register_fork(void)
{
	pthread_atfork(at_prepare, at_parent, at_child);
}

/* Under sp_lock: the thread started, SP_READY; or SP_IN_PLACE for good. */
static void start(void)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int sv[2], rc;
	char ok = 0;

	sp_state = SP_IN_PLACE;
	if (pthread_once(&sp_once, register_fork) != 0)
		return;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	/* own_table keeps 0, 1 and 2 as the process has them: the thread's end goes above. */
	if (sv[1] < 3) {
		int high = fcntl(sv[1], F_DUPFD_CLOEXEC, 3);

		close(sv[1]);
		sv[1] = high;
		if (high < 0) {
			close(sv[0]);
			return;
		}
	}
	if (pthread_attr_init(&attr) != 0)
		goto out_close;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, SPAWNER_STACK);
	/* No signal is the thread's to take: the host's handlers run on its own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, &attr, spawner, (void *)(intptr_t)sv[1]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		goto out_close;
#ifdef __GLIBC__
	pthread_setname_np(t, "mafh-spawn");
#endif
	/* Its answer comes once its table is its own (the socket's other end is then the
	 * thread's alone, and a thread that ends is read here as the socket's end). */
	while (recv(sv[0], &ok, 1, 0) < 0 && errno == EINTR)
		;
	close(sv[1]);
	if (ok != 'y') {
		close(sv[0]);
		return;
	}
	sp_fd = sv[0];
	sp_state = SP_READY;
	return;
out_close:
	close(sv[0]);
	close(sv[1]);
}

/* Under sp_lock: no spawner from now on. */
static void forget(void)
{
	close(sp_fd);
	sp_fd = -1;
	sp_state = SP_IN_PLACE;
}

/* Hands the request to the spawner and waits for its answer. 0 with req->rc set; -1 when the
 * spawner is not there (the caller spawns in place). */
static int hand_over(struct spawn_req *req, int in, int out, int err)
{
	struct spawn_req *p = req;
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	int fds[3], n = 0;
	struct iovec iov = { .iov_base = &p, .iov_len = sizeof(p) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf };
	struct cmsghdr *c;
	ssize_t r;
	char done = 0;

	if (in >= 0)
		fds[n++] = in;
	fds[n++] = out;
	fds[n++] = err;
	memset(u.buf, 0, sizeof(u.buf));
	m.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
	req->with_in = in >= 0;
	do
		r = sendmsg(sp_fd, &m, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r != (ssize_t)sizeof(p)) {
		/* Not taken: spawned in place; for good when the thread is gone. */
		if (r < 0 && (errno == EPIPE || errno == ECONNRESET))
			forget();
		return -1;
	}
	do
		r = recv(sp_fd, &done, 1, 0);
	while (r < 0 && errno == EINTR);
	if (r != 1) {
		/* Taken, and no answer: the thread is gone mid-spawn, and what it started (if
		 * anything) is not known, so this is reported, not tried again. */
		req->rc = EAGAIN;
		forget();
	}
	return 0;
}

pid_t mafh__local_spawn(const char *const *argv, const char *cwd, int in_fd, int out_fd,
			int err_fd)
{
	struct spawn_req req = { .argv = argv, .cwd = cwd, .rc = -1, .pid = -1 };
	pid_t pid;
	int handed = 0;

	if (in_fd >= SPAWNER_FROM_FD || out_fd >= SPAWNER_FROM_FD || err_fd >= SPAWNER_FROM_FD) {
		pthread_mutex_lock(&sp_lock);
		if (sp_state == SP_NONE)
			start();
		handed = sp_state == SP_READY && hand_over(&req, in_fd, out_fd, err_fd) == 0;
		pthread_mutex_unlock(&sp_lock);
	}
	if (!handed || req.rc == NOT_HERE) {
		handed = 0;
		req.rc = spawn_here(argv, cwd, in_fd, out_fd, err_fd, &req.pid);
	}
	if (req.rc == 0)
		return req.pid;
	if (req.rc == EAGAIN && handed) {
		errno = EAGAIN;
		return -1;
	}
	/* Not spawned: a child of our own fails the same way, and says so as a shell would. */
	pid = fork();
	if (pid == 0)
		mafh__local_child(argv, cwd, in_fd, out_fd, err_fd);
	return pid;
}

pid_t mafh__local_spawn_in(const struct mafh__local_enter *enter, const char *const *argv,
			   const char *cwd, int in_fd, int out_fd, int err_fd)
{
	pid_t pid;

	if (!enter)
		return mafh__local_spawn(argv, cwd, in_fd, out_fd, err_fd);
	/* Entering takes setns, which posix_spawn cannot do in its child: a fork, whose copy
	 * of this process the child leaves at its exec. */
	pid = fork();
	if (pid == 0)
		mafh__local_enter_child(enter, argv, cwd, in_fd, out_fd, err_fd);
	return pid;
}
