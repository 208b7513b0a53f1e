/* The local backend's exec: fork and execvp of argv, stdout and stderr through pipes, the
 * child in its own process group so that a timeout kills whatever it started. exec_input's
 * bytes are the child's stdin as a memfd, read from its start: a pipe would have to be fed
 * while stdout is drained, and a command that exits without reading it (a launcher that
 * refuses its arguments) would raise SIGPIPE in the host. */
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

/* The stderr an exec keeps (stdout's cap is the caller's); the rest is read and dropped. */
#define ERR_CAP (64u << 10)

struct sink {
	char *buf;
	size_t len, size, cap;
	int fd;
};

/* Keeps at most cap bytes; the rest is drained and dropped so the child never blocks.
 * Returns 1 after data, 2 when nothing is ready now, 0 at end of file, -1 on error. */
static int sink_read(struct sink *s)
{
	char tmp[16384];
	ssize_t n = read(s->fd, tmp, sizeof(tmp));

	if (n < 0)
		return (errno == EINTR || errno == EAGAIN) ? 2 : -1;
	if (n == 0)
		return 0;
	if (mafh__append(&s->buf, &s->len, &s->size, s->cap, tmp, (size_t)n) < 0)
		return -1;
	return 1;
}

void mafh__local_child(const char *const *argv, int in_fd, int out_fd, int err_fd)
{
	sigset_t all;
	int in = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
	const char *msg;

	if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
		_exit(125);
	/* Nothing of the host beyond stdio reaches the launcher. */
	syscall(SYS_close_range, 3u, ~0u, 0u);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	/* Its own process group, so a timeout can end whatever it started in it. */
	setpgid(0, 0);
	execvp(argv[0], (char *const *)argv);
	msg = errno == ENOENT ? ": command not found\n" : ": cannot execute\n";
	if (write(2, argv[0], strlen(argv[0])) < 0 || write(2, msg, strlen(msg)) < 0)
		_exit(errno == ENOENT ? 127 : 126);
	_exit(errno == ENOENT ? 127 : 126);
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

int mafh__local_exec(const char *const *argv, const void *in, size_t in_len,
		     int64_t timeout_ms, size_t out_cap, struct mafh_exec_result *res,
		     struct mafh_error *err)
{
	int opipe[2] = {-1, -1}, epipe[2] = {-1, -1}, in_fd = -1;
	struct sink so = {0}, se = {0};
	int64_t deadline = timeout_ms > 0 ? mafh__now_ms() + timeout_ms : 0;
	int status = 0, reaped = 0, killed = 0, e;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (in && (in_fd = input_fd(in, in_len)) < 0) {
		e = errno;
		return mafh__error_set(err, -e, "cannot hold the input of %s: %s", argv[0],
				       strerror(e));
	}
	if (pipe2(opipe, O_CLOEXEC) < 0 || pipe2(epipe, O_CLOEXEC) < 0) {
		e = errno;
		goto fail_errno;
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		goto fail_errno;
	}
	if (pid == 0)
		mafh__local_child(argv, in_fd, opipe[1], epipe[1]);
	setpgid(pid, pid);	/* both sides, so a timeout's kill(-pid) never races it */
	close(opipe[1]);
	close(epipe[1]);
	opipe[1] = epipe[1] = -1;
	if (in_fd >= 0) {
		close(in_fd);
		in_fd = -1;
	}
	fcntl(opipe[0], F_SETFL, O_NONBLOCK);
	fcntl(epipe[0], F_SETFL, O_NONBLOCK);
	so.fd = opipe[0];
	so.cap = out_cap;
	se.fd = epipe[0];
	se.cap = ERR_CAP;

	while (so.fd >= 0 || se.fd >= 0) {
		struct pollfd pf[2];
		int nf = 0, slice = 50, r;

		if (deadline) {
			int64_t left = deadline - mafh__now_ms();

			if (left <= 0) {
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				killed = 1;
				break;
			}
			if (left < slice)
				slice = (int)left;
		}
		if (so.fd >= 0)
			pf[nf++] = (struct pollfd){.fd = so.fd, .events = POLLIN};
		if (se.fd >= 0)
			pf[nf++] = (struct pollfd){.fd = se.fd, .events = POLLIN};
		r = poll(pf, (nfds_t)nf, slice);
		if (r < 0 && errno != EINTR) {
			e = errno;
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			goto fail_errno;
		}
		for (int i = 0, any = r; i < nf && any > 0; i++) {
			struct sink *s = pf[i].fd == so.fd ? &so : &se;

			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = sink_read(s);
			if (r <= 0) {
				if (r < 0 && errno == ENOMEM) {
					kill(pid, SIGKILL);
					waitpid(pid, NULL, 0);
					e = ENOMEM;
					goto fail_errno;
				}
				close(s->fd);
				s->fd = -1;
			}
		}
		/* A grandchild (the launcher's detached supervisor must not, but a careless
		 * command may) can hold the pipes open after the child is gone: once the child
		 * has exited, take what is already in the pipes and stop. */
		if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
			reaped = 1;
			for (int k = 0; k < 64 && so.fd >= 0 && sink_read(&so) == 1; k++)
				;
			for (int k = 0; k < 64 && se.fd >= 0 && sink_read(&se) == 1; k++)
				;
			break;
		}
	}
	if (so.fd >= 0)
		close(so.fd);
	if (se.fd >= 0)
		close(se.fd);
	if (!reaped) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	res->timed_out = killed;
	res->exit_code = killed ? -1 : mafp_exit_code_from_wait_status(status);
	res->out = so.buf;
	res->out_len = so.len;
	res->err = se.buf;
	res->err_len = se.len;
	return 0;
fail_errno:
	free(so.buf);
	free(se.buf);
	if (in_fd >= 0)
		close(in_fd);
	if (opipe[0] >= 0)
		close(opipe[0]);
	if (opipe[1] >= 0)
		close(opipe[1]);
	if (epipe[0] >= 0)
		close(epipe[0]);
	if (epipe[1] >= 0)
		close(epipe[1]);
	return mafh__error_set(err, -e, "cannot run %s: %s", argv[0], strerror(e));
}
