/* The local backend: the run directory is on this machine. exec is fork/execvp of argv with
 * pipes and a timeout; files are the filesystem, reached without following symlinks, since
 * every name under the run directory may have been planted by the program. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define ERR_CAP (64u << 10)
#define LOCAL_PATH_MAX 4096

struct local {
	char *launcher;
};

static int errno_code(int e)
{
	switch (e) {
	case ENOENT:
		return MAFH_ENOENT;
	case ENOMEM:
		return MAFH_ENOMEM;
	case EINVAL:
		return MAFH_EINVAL;
	default:
		return MAFH_EIO;
	}
}

/* ---- paths -------------------------------------------------------------------------------- */

/* Opens the directory holding path's last component, walking every component with
 * O_NOFOLLOW: a symlink anywhere on the way is refused (ELOOP/ENOTDIR), so a program that
 * swaps host_tools or host_tool_calls for a symlink cannot redirect the host's reads and
 * writes. With create, missing directories are made (0755). Returns the directory fd and
 * points *base at the last component, or -1 with errno set. */
static int open_parent(const char *path, int create, char *copy, size_t copy_size,
		       const char **base)
{
	char *p, *slash;
	int dfd, nfd;

	if (!path || path[0] != '/' || strlen(path) >= copy_size) {
		errno = EINVAL;
		return -1;
	}
	memcpy(copy, path, strlen(path) + 1);
	slash = strrchr(copy, '/');
	*base = slash + 1;
	if (!**base || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0) {
		errno = EINVAL;
		return -1;
	}
	*slash = '\0';
	dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	for (p = copy; *p;) {
		char *next;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		next = strchr(p, '/');
		if (next)
			*next = '\0';
		if (strcmp(p, "..") == 0) {
			close(dfd);
			errno = EINVAL;
			return -1;
		}
		nfd = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && create) {
			if (mkdirat(dfd, p, 0755) < 0 && errno != EEXIST) {
				int e = errno;

				close(dfd);
				errno = e;
				return -1;
			}
			nfd = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd < 0) {
			int e = errno;

			close(dfd);
			errno = e;
			return -1;
		}
		close(dfd);
		dfd = nfd;
		if (next) {
			*next = '/';
			p = next + 1;
		} else {
			break;
		}
	}
	*slash = '/';
	return dfd;
}

/* ---- files -------------------------------------------------------------------------------- */

static int local_write_file(void *ctx, const char *path, const void *data, size_t len,
			    struct mafh_error *err)
{
	char copy[LOCAL_PATH_MAX], tmp[NAME_MAX + 1];
	const char *base;
	const char *p = data;
	size_t done = 0;
	int dfd, fd = -1, e, i;

	(void)ctx;
	dfd = open_parent(path, 1, copy, sizeof(copy), &base);
	if (dfd < 0)
		return mafh__error_set(err, errno_code(errno), "cannot reach the directory of %s "
				       "without following a symlink: %s", path, strerror(errno));
	if (strlen(base) > NAME_MAX - 24) {
		close(dfd);
		return mafh__error_set(err, MAFH_EINVAL, "the file name in %s is too long", path);
	}
	/* A temporary name and a rename: a symlink the program planted at path is replaced,
	 * never followed, and the reader in the guest never sees a half-written file. */
	for (i = 0; i < 100 && fd < 0; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(tmp, sizeof(tmp), ".%s.%ld.%lx.tmp", base, (long)getpid(),
			 (unsigned long)(ts.tv_nsec ^ ((unsigned long)i << 20)));
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = errno;
		close(dfd);
		return mafh__error_set(err, errno_code(e), "cannot create a temporary file for "
				       "%s: %s", path, strerror(e));
	}
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			goto fail;
		}
		done += (size_t)n;
	}
	if (close(fd) < 0) {
		fd = -1;
		e = errno;
		goto fail;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, base) < 0) {
		e = errno;
		goto fail;
	}
	close(dfd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(dfd, tmp, 0);
	close(dfd);
	return mafh__error_set(err, errno_code(e), "cannot write %s: %s", path, strerror(e));
}

static int local_read_file(void *ctx, const char *path, size_t cap,
			   struct mafh_read_result *res, struct mafh_error *err)
{
	char copy[LOCAL_PATH_MAX];
	const char *base;
	struct stat st;
	char *buf = NULL;
	size_t len = 0, room;
	int dfd, fd, e;

	(void)ctx;
	memset(res, 0, sizeof(*res));
	dfd = open_parent(path, 0, copy, sizeof(copy), &base);
	if (dfd < 0) {
		if (errno == ENOENT) {
			res->status = MAFH_READ_ABSENT;
			return 0;
		}
		return mafh__error_set(err, errno_code(errno), "cannot reach the directory of %s "
				       "without following a symlink: %s", path, strerror(errno));
	}
	/* Look before opening: opening a device or FIFO can have effects of its own. */
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		e = errno;
		close(dfd);
		if (e == ENOENT) {
			res->status = MAFH_READ_ABSENT;
			return 0;
		}
		return mafh__error_set(err, errno_code(e), "cannot stat %s: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(dfd);
		res->status = MAFH_READ_NOT_REGULAR;
		return 0;
	}
	/* The name may have been swapped since: O_NOFOLLOW, O_NONBLOCK (a FIFO put there now
	 * must not block us) and fstat again on what was really opened. */
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	e = errno;
	close(dfd);
	if (fd < 0) {
		if (e == ENOENT) {
			res->status = MAFH_READ_ABSENT;
			return 0;
		}
		if (e == ELOOP) {
			res->status = MAFH_READ_NOT_REGULAR;
			return 0;
		}
		return mafh__error_set(err, errno_code(e), "cannot open %s: %s", path, strerror(e));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		res->status = MAFH_READ_NOT_REGULAR;
		return 0;
	}
	if ((uint64_t)st.st_size > cap) {
		close(fd);
		res->status = MAFH_READ_TOO_BIG;
		res->size = st.st_size;
		return 0;
	}
	/* Read up to cap + 1 bytes: the file may grow after the fstat. */
	room = (size_t)st.st_size + 1;
	if (room > cap + 1)
		room = cap + 1;
	buf = malloc(room + 1);
	if (!buf) {
		close(fd);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading %s", path);
	}
	for (;;) {
		ssize_t n;

		if (len == room) {
			char *nb;

			if (room > cap)
				break;
			room = room * 2 > cap + 1 ? cap + 1 : room * 2;
			nb = realloc(buf, room + 1);
			if (!nb) {
				free(buf);
				close(fd);
				return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading %s",
						       path);
			}
			buf = nb;
		}
		n = read(fd, buf + len, room - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			free(buf);
			close(fd);
			return mafh__error_set(err, errno_code(e), "cannot read %s: %s", path,
					       strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > cap) {
		free(buf);
		res->status = MAFH_READ_TOO_BIG;
		res->size = -1;
		return 0;
	}
	buf[len] = '\0';
	res->status = MAFH_READ_OK;
	res->data = buf;
	res->len = len;
	res->size = (int64_t)len;
	return 0;
}

static int local_stat(void *ctx, const char *path, struct mafh_stat *out,
		      struct mafh_error *err)
{
	char copy[LOCAL_PATH_MAX];
	const char *base;
	struct stat st;
	int dfd, e;

	(void)ctx;
	memset(out, 0, sizeof(*out));
	dfd = open_parent(path, 0, copy, sizeof(copy), &base);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		return mafh__error_set(err, errno_code(errno), "cannot reach the directory of %s "
				       "without following a symlink: %s", path, strerror(errno));
	}
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		e = errno;
		close(dfd);
		if (e == ENOENT)
			return 0;
		return mafh__error_set(err, errno_code(e), "cannot stat %s: %s", path, strerror(e));
	}
	close(dfd);
	out->exists = 1;
	out->size = st.st_size;
	out->type = S_ISREG(st.st_mode) ? MAFH_FILE_REGULAR
		    : S_ISDIR(st.st_mode) ? MAFH_FILE_DIR
		    : S_ISLNK(st.st_mode) ? MAFH_FILE_SYMLINK : MAFH_FILE_OTHER;
	return 0;
}

/* ---- exec --------------------------------------------------------------------------------- */

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
	if (s->len < s->cap) {
		size_t keep = (size_t)n < s->cap - s->len ? (size_t)n : s->cap - s->len;

		if (s->len + keep + 1 > s->size) {
			size_t ns = s->size ? s->size : 4096;
			char *nb;

			while (ns < s->len + keep + 1)
				ns *= 2;
			nb = realloc(s->buf, ns);
			if (!nb)
				return -1;
			s->buf = nb;
			s->size = ns;
		}
		memcpy(s->buf + s->len, tmp, keep);
		s->len += keep;
		s->buf[s->len] = '\0';
	}
	return 1;
}

static void child_exec(const char *const *argv, int out_fd, int err_fd)
{
	sigset_t all;
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	const char *msg;

	if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
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

static int local_exec(void *ctx, const char *const *argv, int64_t timeout_ms, size_t out_cap,
		      struct mafh_exec_result *res, struct mafh_error *err)
{
	int opipe[2] = {-1, -1}, epipe[2] = {-1, -1};
	struct sink so = {0}, se = {0};
	int64_t deadline = timeout_ms > 0 ? mafh__now_ms() + timeout_ms : 0;
	int status = 0, reaped = 0, killed = 0, e;
	pid_t pid;

	(void)ctx;
	memset(res, 0, sizeof(*res));
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
		child_exec(argv, opipe[1], epipe[1]);
	setpgid(pid, pid);	/* both sides, so a timeout's kill(-pid) never races it */
	close(opipe[1]);
	close(epipe[1]);
	opipe[1] = epipe[1] = -1;
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
	if (opipe[0] >= 0)
		close(opipe[0]);
	if (opipe[1] >= 0)
		close(opipe[1]);
	if (epipe[0] >= 0)
		close(epipe[0]);
	if (epipe[1] >= 0)
		close(epipe[1]);
	return mafh__error_set(err, errno_code(e), "cannot run %s: %s", argv[0], strerror(e));
}

static void local_destroy(void *ctx)
{
	struct local *l = ctx;

	if (l)
		free(l->launcher);
	free(l);
}

int mafh_backend_local_new(const char *launcher_path, struct mafh_backend **out)
{
	struct mafh_backend_ops ops;
	struct local *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return MAFH_ENOMEM;
	l->launcher = strdup(launcher_path ? launcher_path : "maf-launch");
	if (!l->launcher) {
		free(l);
		return MAFH_ENOMEM;
	}
	memset(&ops, 0, sizeof(ops));
	ops.size = sizeof(ops);
	ops.caps = MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT |
		   MAFH_CAP_DETACHED_EXEC | MAFH_CAP_BLOCKING_EXEC;
	ops.ctx = l;
	ops.launcher_path = l->launcher;
	ops.exec = local_exec;
	ops.write_file = local_write_file;
	ops.read_file = local_read_file;
	ops.stat = local_stat;
	ops.destroy = local_destroy;
	return mafh_backend_new(&ops, out, NULL);
}
