/* The local backend's exec: argv started with mafh__local_spawn (local_spawn.c), stdout and
 * stderr through pipes, the child in its own process group so that a timeout kills whatever
 * it started. exec_input's
 * bytes are the child's stdin as a memfd, read from its start: a pipe would have to be fed
 * while stdout is drained, and a command that exits without reading it (a launcher that
 * refuses its arguments) would raise SIGPIPE in the host.
 * The exec is a task: it waits on the two pipes and a pidfd of the child (the child's exit
 * is what ends it, not the pipes' end), until the exec's deadline. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "local.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434  /* the same number on every architecture */
#endif

/* The stderr an exec keeps (stdout's cap is the caller's); the rest is read and dropped. */
#define ERR_CAP (64u << 10)
/* Without a pidfd, how often the child is looked at with waitpid(WNOHANG). */
#define LOOK_MS 50
/* Reads of 16 KiB a pipe gets in one step (a flood cannot keep the caller in it), and once
 * the child has exited (what is already in the pipes, bounded). */
#define STEP_READS 16
#define FINAL_READS 64

struct sink {
	char *buf;
	size_t len, size, cap;
	int fd;                        /* -1 once at its end */
};

struct exec_task {
	struct mafh__local_task head;
	const char *name;              /* argv[0], borrowed from the op */
	pid_t pid;                     /* -1 once reaped */
	int pidfd;                     /* -1: none, waitpid on a timer */
	struct sink so, se;
	int64_t deadline;              /* INT64_MAX: no timeout */
	int64_t next_look;             /* without a pidfd: the next waitpid */
};

/* Takes what fd holds now, at most reads reads, keeping up to cap bytes; the rest is
 * dropped so the child never blocks. The fd is closed at its end (or on a read error).
 * 0, or -1 with errno ENOMEM. */
static int sink_drain(struct sink *s, int reads)
{
	char tmp[16384];

	while (s->fd >= 0 && reads-- > 0) {
		ssize_t n = read(s->fd, tmp, sizeof(tmp));

		if (n < 0 && errno == EINTR) {
			reads++;
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			close(s->fd);
			s->fd = -1;
			return 0;
		}
		if (mafh__append(&s->buf, &s->len, &s->size, s->cap, tmp, (size_t)n) < 0)
			return -1;
	}
	return 0;
}

/* Writes "what: why\n" on stderr, in a child about to exit. */
static void child_says(const char *what, const char *why)
{
	if (write(2, what, strlen(what)) < 0 || write(2, why, strlen(why)) < 0 ||
	    write(2, "\n", 1) < 0)
		return;
}

void mafh__local_child(const char *const *argv, const char *cwd, int in_fd, int out_fd,
		       int err_fd)
{
	mafh__local_child_in(argv, cwd, in_fd, out_fd, err_fd, 1);
}

void mafh__local_child_in(const char *const *argv, const char *cwd, int in_fd, int out_fd,
			  int err_fd, int own_group)
{
	sigset_t all;
	int in = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
	const char *msg;

	if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
		_exit(125);
	if (cwd && chdir(cwd) < 0) {
		int e = errno;

		child_says(cwd, e == ENOENT ? ": no such working directory"
					   : ": cannot enter the working directory");
		_exit(e == ENOENT ? 127 : 126);
	}
	/* Nothing of the host beyond stdio reaches the launcher. */
	syscall(SYS_close_range, 3u, ~0u, 0u);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	/* Its own process group, so a timeout can end whatever it started in it. */
	if (own_group)
		setpgid(0, 0);
	execvp(argv[0], (char *const *)argv);
	msg = errno == ENOENT ? ": command not found\n" : ": cannot execute\n";
	if (write(2, argv[0], strlen(argv[0])) < 0 || write(2, msg, strlen(msg)) < 0)
		_exit(errno == ENOENT ? 127 : 126);
	_exit(errno == ENOENT ? 127 : 126);
}

int mafh__local_pidfd(int pid)
{
	/* Always close-on-exec; PIDFD_NONBLOCK is not needed, it is only polled. */
	return (int)syscall(SYS_pidfd_open, pid, 0u);
}

void mafh__local_kill(int pid)
{
	if (pid <= 0)
		return;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* A memfd holding in[0..len), its offset at the start; -1 with errno set. */
static int input_fd(const void *in, size_t len)
{
	const char *p = in;
	int fd = memfd_create("mafh-exec-input", MFD_CLOEXEC), e;

	if (fd < 0)
		return -1;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			close(fd);
			errno = e;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static void task_release(struct exec_task *t)
{
	mafh__local_kill(t->pid);
	if (t->pidfd >= 0)
		close(t->pidfd);
	if (t->so.fd >= 0)
		close(t->so.fd);
	if (t->se.fd >= 0)
		close(t->se.fd);
	free(t->so.buf);
	free(t->se.buf);
	free(t);
}

/* now + ms, INT64_MAX past it. */
static int64_t later(int64_t now, int64_t ms)
{
	return ms > INT64_MAX - now ? INT64_MAX : now + ms;
}

int mafh__local_exec_start(const struct mafh__local_enter *enter, const struct mafh_op *op,
			   int64_t now, struct mafh__local_task **task,
			   struct mafh_op_result *res)
{
	const char *const *argv = op->argv;
	int opipe[2] = {-1, -1}, epipe[2] = {-1, -1}, in_fd = -1, e;
	struct exec_task *t;

	*task = NULL;
	t = calloc(1, sizeof(*t));
	if (!t) {
		res->error = mafh__error_set(&res->detail, MAFH_ENOMEM, "out of memory");
		return 0;
	}
	t->head.kind = MAFH_OP_EXEC;
	t->name = argv[0];
	t->pid = -1;
	t->pidfd = -1;
	t->so = (struct sink){.fd = -1, .cap = op->out_cap};
	t->se = (struct sink){.fd = -1, .cap = ERR_CAP};
	t->deadline = op->timeout_ms > 0 ? later(now, op->timeout_ms) : INT64_MAX;
	if (op->data && (in_fd = input_fd(op->data, op->len)) < 0) {
		e = errno;
		free(t);
		res->error = mafh__error_set(&res->detail, -e, "cannot hold the input of %s: %s",
					     argv[0], strerror(e));
		return 0;
	}
	if (pipe2(opipe, O_CLOEXEC) < 0 || pipe2(epipe, O_CLOEXEC) < 0)
		goto fail;
	t->pid = mafh__local_spawn_in(enter, argv, op->cwd, in_fd, opipe[1], epipe[1]);
	if (t->pid < 0)
		goto fail;
	setpgid(t->pid, t->pid);	/* both sides, so a timeout's kill(-pid) never races it */
	close(opipe[1]);
	close(epipe[1]);
	if (in_fd >= 0)
		close(in_fd);
	fcntl(opipe[0], F_SETFL, O_NONBLOCK);
	fcntl(epipe[0], F_SETFL, O_NONBLOCK);
	t->so.fd = opipe[0];
	t->se.fd = epipe[0];
	t->pidfd = mafh__local_pidfd(t->pid);
	t->next_look = later(now, LOOK_MS);
	*task = &t->head;
	return 1;
fail:
	e = errno;
	for (int i = 0; i < 2; i++) {
		if (opipe[i] >= 0)
			close(opipe[i]);
		if (epipe[i] >= 0)
			close(epipe[i]);
	}
	if (in_fd >= 0)
		close(in_fd);
	free(t);
	res->error = mafh__error_set(&res->detail, -e, "cannot run %s: %s", argv[0], strerror(e));
	return 0;
}

int mafh__local_exec_want(struct mafh__local_task *task, struct mafh_pollfd *fds,
			  int64_t *until)
{
	struct exec_task *t = (struct exec_task *)task;
	int n = 0;

	if (t->so.fd >= 0)
		fds[n++] = (struct mafh_pollfd){.fd = t->so.fd, .events = POLLIN};
	if (t->se.fd >= 0)
		fds[n++] = (struct mafh_pollfd){.fd = t->se.fd, .events = POLLIN};
	if (t->pidfd >= 0)
		fds[n++] = (struct mafh_pollfd){.fd = t->pidfd, .events = POLLIN};
	*until = t->deadline;
	if (t->pidfd < 0 && t->next_look < *until)
		*until = t->next_look;
	return n;
}

/* The exec is over: its result moves to res. */
static void finish(struct exec_task *t, struct mafh_op_result *res, int exit_code,
		   int timed_out)
{
	res->exec.exit_code = exit_code;
	res->exec.timed_out = timed_out;
	res->exec.out = t->so.buf;
	res->exec.out_len = t->so.len;
	res->exec.err = t->se.buf;
	res->exec.err_len = t->se.len;
	t->so.buf = t->se.buf = NULL;
}

int mafh__local_exec_step(struct mafh__local_task *task, int64_t now,
			  struct mafh_op_result *res)
{
	struct exec_task *t = (struct exec_task *)task;
	int status = 0;
	pid_t r;

	if (sink_drain(&t->so, STEP_READS) < 0 || sink_drain(&t->se, STEP_READS) < 0) {
		res->error = mafh__error_set(&res->detail, MAFH_ENOMEM, "cannot run %s: %s",
					     t->name, strerror(ENOMEM));
		return 0;               /* the child is killed when the task is freed */
	}
	if (t->pidfd >= 0 || now >= t->next_look) {
		t->next_look = later(now, LOOK_MS);
		while ((r = waitpid(t->pid, &status, WNOHANG)) < 0 && errno == EINTR)
			;
		/* ECHILD: reaped by someone else (SIGCHLD ignored by the host); its status is
		 * lost, and its pid no longer ours to signal. */
		if (r == t->pid || (r < 0 && errno == ECHILD)) {
			t->pid = -1;
			/* A grandchild (the launcher's detached supervisor must not, but a careless
			 * command may) can hold the pipes open after the child is gone: once the
			 * child has exited, take what is already in the pipes and stop. */
			if (sink_drain(&t->so, FINAL_READS) < 0 ||
			    sink_drain(&t->se, FINAL_READS) < 0) {
				res->error = mafh__error_set(&res->detail, MAFH_ENOMEM,
							     "cannot run %s: %s", t->name,
							     strerror(ENOMEM));
				return 0;
			}
			finish(t, res, r == -1 ? 0 : mafp_exit_code_from_wait_status(status), 0);
			return 0;
		}
	}
	if (now >= t->deadline) {
		mafh__local_kill(t->pid);
		t->pid = -1;
		finish(t, res, -1, 1);
		return 0;
	}
	return 1;
}

void mafh__local_exec_free(struct mafh__local_task *task)
{
	/* Abandoned under way: the child and its group are killed, and reaped. */
	task_release((struct exec_task *)task);
}
