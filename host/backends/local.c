/* The local backend: the run directory is on this machine. exec is fork/execvp of argv with
 * pipes and a timeout; files are the filesystem, reached without following symlinks, since
 * every name under the run directory may have been planted by the program. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define ERR_CAP (64u << 10)
#define LOCAL_PATH_MAX 4096
/* wait_change: names and subdirectories one wait may name, and how often it looks where
 * inotify is unavailable (out of instances: a per-user limit, 128 by default). */
#define WAIT_NAMES_MAX 8
#define WAIT_SUBS_MAX 4
#define WAIT_FALLBACK_MS 5
/* How long a wait goes without a look at whether the directories it holds were removed. */
#define WAIT_GONE_CHECK_MS 50

/* One watched directory: open without following symlinks (its fd is what existence is
 * checked against) and watched through that fd. fd -1: not there (yet). */
struct watched {
	char name[NAME_MAX + 1];        /* subdirectories: the name in the top directory */
	int fd;
	int wd;
};

/* The inotify state of the last directory waited on, kept between waits: setting it up
 * costs a dozen system calls, a wait on it a read of the queued events, a look at its names
 * (an fstatat each) and a poll. */
struct watch_cache {
	int ino;                        /* -1: none yet, or inotify is unavailable */
	char *dir;                      /* the directory it was set up for */
	struct watched top;             /* dir itself */
	struct watched anc;             /* dir missing: the deepest ancestor that exists */
	char anc_next[NAME_MAX + 1];    /* the component of dir to be created in anc */
	struct watched sub[WAIT_SUBS_MAX];
	size_t n_sub;
	int stale;                      /* rebuild before the next wait */
};

struct local {
	char *launcher;
	long pid;                       /* in temporary names; read once (O_EXCL keeps them apart) */
	pthread_mutex_t wait_lock;      /* guards cache: one waiter uses it, others their own */
	struct watch_cache cache;
};

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
	/* One system call where the kernel has openat2 (5.6): RESOLVE_NO_SYMLINKS refuses a
	 * symlink in any component, as the walk below does (".." is refused by hand first).
	 * Missing directories, or a kernel or seccomp policy without openat2, take the walk. */
	if (!strstr(copy, "/../") && !(strlen(copy) >= 3 && strcmp(copy + strlen(copy) - 3,
								    "/..") == 0)) {
		struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				       .resolve = RESOLVE_NO_SYMLINKS};

		dfd = (int)syscall(SYS_openat2, AT_FDCWD, copy[0] ? copy : "/", &how, sizeof(how));
		if (dfd >= 0) {
			*slash = '/';
			return dfd;
		}
		if (errno == ELOOP || errno == ENOTDIR || (errno == ENOENT && !create))
			return -1;
	}
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

static int write_fresh(void *ctx, const char *path, const void *data, size_t len,
		       struct mafh_error *err)
{
	const struct local *l = ctx;
	char copy[LOCAL_PATH_MAX], tmp[NAME_MAX + 1];
	const char *base;
	const char *p = data;
	size_t done = 0;
	int dfd, fd = -1, e, i;

	dfd = open_parent(path, 1, copy, sizeof(copy), &base);
	if (dfd < 0) {
		e = errno;
		return mafh__error_set(err, -e, "cannot reach the directory of %s without "
				       "following a symlink: %s", path, strerror(e));
	}
	if (strlen(base) > NAME_MAX - 24) {
		close(dfd);
		return mafh__error_set(err, MAFH_EINVAL, "the file name in %s is too long", path);
	}
	/* A temporary name and a rename: a symlink the program planted at path is replaced,
	 * never followed, and the reader in the guest never sees a half-written file. */
	for (i = 0; i < 100 && fd < 0; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(tmp, sizeof(tmp), ".%s.%ld.%lx.tmp", base, l->pid,
			 (unsigned long)(ts.tv_nsec ^ ((unsigned long)i << 20)));
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = errno;
		close(dfd);
		return mafh__error_set(err, -e, "cannot create a temporary file for %s: %s",
				       path, strerror(e));
	}
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Nothing taken, and no errno to say why: MAFH_EIO. */
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
	return mafh__error_set(err, -e, "cannot write %s: %s", path, strerror(e));
}

/* write_file into donor's inode, renamed to path: no new inode (see mafhost.h). donor must
 * be in path's directory and still be a regular file with one link, looked at before it is
 * opened (opening a device or FIFO can have effects of its own) and again once open
 * (mafp_call_file_hand_over: the same file). Anything else, or a failure before the rename,
 * writes path afresh. */
static int local_write_file(void *ctx, const char *path, const void *data, size_t len,
			    const char *donor, struct mafh_error *err)
{
	char copy[LOCAL_PATH_MAX];
	const char *base, *dslash = donor ? strrchr(donor, '/') : NULL;
	const char *pslash = path ? strrchr(path, '/') : NULL;
	struct stat st;
	int dfd;

	if (!dslash || !pslash || dslash - donor != pslash - path ||
	    memcmp(donor, path, (size_t)(pslash - path)) != 0 || !dslash[1] ||
	    strcmp(dslash + 1, ".") == 0 || strcmp(dslash + 1, "..") == 0 ||
	    strcmp(dslash + 1, pslash + 1) == 0)
		return write_fresh(ctx, path, data, len, err);
	dfd = open_parent(path, 0, copy, sizeof(copy), &base);
	if (dfd < 0)
		return write_fresh(ctx, path, data, len, err);
	if (fstatat(dfd, dslash + 1, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_nlink != 1)
		goto fresh;
	if (mafp_call_file_hand_over(dfd, dslash + 1, base, (uint64_t)st.st_dev,
				     (uint64_t)st.st_ino, data, len) < 0)
		goto fresh;
	close(dfd);
	return 0;
fresh:
	close(dfd);
	return write_fresh(ctx, path, data, len, err);
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
		e = errno;
		if (e == ENOENT) {
			res->status = MAFH_READ_ABSENT;
			return 0;
		}
		return mafh__error_set(err, -e, "cannot reach the directory of %s without "
				       "following a symlink: %s", path, strerror(e));
	}
	/* Look before opening: opening a device or FIFO can have effects of its own. */
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		e = errno;
		close(dfd);
		if (e == ENOENT) {
			res->status = MAFH_READ_ABSENT;
			return 0;
		}
		return mafh__error_set(err, -e, "cannot stat %s: %s", path, strerror(e));
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
		return mafh__error_set(err, -e, "cannot open %s: %s", path, strerror(e));
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
			return mafh__error_set(err, -e, "cannot read %s: %s", path, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		/* Short of what was asked: a regular file's end, with no read more to learn it. */
		if (len < room)
			break;
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
		e = errno;
		if (e == ENOENT)
			return 0;
		return mafh__error_set(err, -e, "cannot reach the directory of %s without "
				       "following a symlink: %s", path, strerror(e));
	}
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		e = errno;
		close(dfd);
		if (e == ENOENT)
			return 0;
		return mafh__error_set(err, -e, "cannot stat %s: %s", path, strerror(e));
	}
	close(dfd);
	out->exists = 1;
	out->size = st.st_size;
	out->type = S_ISREG(st.st_mode) ? MAFH_FILE_REGULAR
		    : S_ISDIR(st.st_mode) ? MAFH_FILE_DIR
		    : S_ISLNK(st.st_mode) ? MAFH_FILE_SYMLINK : MAFH_FILE_OTHER;
	return 0;
}

/* ---- wait_change ------------------------------------------------------------------------- */

/* Which events wake a wait. In a subdirectory (host_tool_calls): a file renamed in, as
 * every request is published (PROTOCOL.md), and the directory itself removed or moved (the
 * watch then no longer says anything about the path). Not IN_CREATE nor IN_CLOSE_WRITE:
 * each call's claim and .part would wake the wait twice for nothing, a context switch each
 * (measured: 3.9 -> 2.2 switches and 140 -> 118 us of host CPU per call on a 2-CPU VM). A
 * request written in place is still seen: every wait begins with a look, and the blocking
 * driver waits in slices of 50 ms. */
#define WATCH_MASK (IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
/* The top directory (few events: the markers) also wakes on a file written and closed, and
 * says when a subdirectory comes or leaves. */
#define WATCH_MASK_TOP (WATCH_MASK | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM)

static void watched_reset(struct watched *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->wd = -1;
}

static void cache_reset(struct watch_cache *c)
{
	size_t i;

	if (c->ino >= 0)
		close(c->ino);
	c->ino = -1;
	free(c->dir);
	c->dir = NULL;
	watched_reset(&c->top);
	watched_reset(&c->anc);
	for (i = 0; i < c->n_sub; i++)
		watched_reset(&c->sub[i]);
	c->n_sub = 0;
	c->stale = 0;
}

static void cache_init(struct watch_cache *c)
{
	memset(c, 0, sizeof(*c));
	c->ino = -1;
	c->top.fd = c->anc.fd = -1;
	c->top.wd = c->anc.wd = -1;
}

/* Opens the directory path, every component without following a symlink. */
static int open_dir_nofollow(const char *path)
{
	char copy[LOCAL_PATH_MAX];
	const char *base;
	int dfd, fd, e;

	if (strcmp(path, "/") == 0)
		return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dfd = open_parent(path, 0, copy, sizeof(copy), &base);
	if (dfd < 0)
		return -1;
	fd = openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	e = errno;
	close(dfd);
	errno = e;
	return fd;
}

/* Watches the directory open as w->fd: through /proc/self/fd, which names the very
 * directory opened (no path walked again, so no symlink swapped in since is followed); by
 * path, not following a final symlink, where /proc is not mounted. */
static int watch_fd(int ino, struct watched *w, const char *path, uint32_t mask)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->fd);
	w->wd = inotify_add_watch(ino, proc, mask);
	if (w->wd < 0)
		w->wd = inotify_add_watch(ino, path, mask | IN_DONT_FOLLOW);
	return w->wd < 0 ? -1 : 0;
}

/* Opens and watches subdirectory w->name of the top directory, if it exists now. Returns 0
 * (watched, or absent: its creation in the top directory will be seen), -1 on failure. */
static int watch_sub(struct watch_cache *c, struct watched *w)
{
	char path[LOCAL_PATH_MAX];

	watched_reset(w);
	if (c->top.fd < 0)
		return 0;
	w->fd = openat(c->top.fd, w->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w->fd < 0)
		return errno == ENOENT ? 0 : -1;
	snprintf(path, sizeof(path), "%s/%s", c->dir, w->name);
	if (watch_fd(c->ino, w, path, WATCH_MASK) < 0) {
		watched_reset(w);
		return -1;
	}
	return 0;
}

/* Sets the cache up for dir: an inotify instance, dir watched, or while dir does not exist,
 * its deepest existing ancestor watched for the next component. Returns 0, or -1 with errno
 * set (then the caller looks every WAIT_FALLBACK_MS instead). */
static int cache_setup(struct watch_cache *c, const char *dir)
{
	char path[LOCAL_PATH_MAX];
	char *slash;

	cache_reset(c);
	c->dir = strdup(dir);
	if (!c->dir)
		return -1;
	c->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (c->ino < 0)
		return -1;
	c->top.fd = open_dir_nofollow(dir);
	if (c->top.fd >= 0)
		return watch_fd(c->ino, &c->top, dir, WATCH_MASK_TOP);
	if (errno != ENOENT)
		return -1;
	/* Not there yet: wait for it to be made, one component at a time. */
	snprintf(path, sizeof(path), "%s", dir);
	for (;;) {
		slash = strrchr(path, '/');
		if (!slash)
			return -1;
		snprintf(c->anc_next, sizeof(c->anc_next), "%s", slash + 1);
		if (slash == path)
			slash[1] = '\0';
		else
			*slash = '\0';
		c->anc.fd = open_dir_nofollow(path);
		if (c->anc.fd >= 0)
			return watch_fd(c->ino, &c->anc, path,
					IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
					IN_ONLYDIR);
		if (errno != ENOENT || slash == path)
			return -1;
	}
}

/* A name's directory fd and last component (names are NAME or SUB/NAME); the fd is -1 when
 * that directory does not exist (yet). */
static int name_at(const struct watch_cache *c, const char *name, const char **base)
{
	const char *slash = strchr(name, '/');
	size_t i;

	if (!slash) {
		*base = name;
		return c->top.fd;
	}
	*base = slash + 1;
	for (i = 0; i < c->n_sub; i++)
		if (strlen(c->sub[i].name) == (size_t)(slash - name) &&
		    memcmp(c->sub[i].name, name, (size_t)(slash - name)) == 0)
			return c->sub[i].fd;
	return -1;
}

static int any_exists(const struct watch_cache *c, const char *const *names)
{
	struct stat st;
	const char *base;
	size_t i;
	int fd;

	for (i = 0; names[i]; i++) {
		fd = name_at(c, names[i], &base);
		if (fd >= 0 && fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return 1;
	}
	return 0;
}

/* Where inotify cannot be had: each name looked up by path, as read_file would. */
static int any_exists_by_path(const char *dir, const char *const *names)
{
	char path[LOCAL_PATH_MAX], copy[LOCAL_PATH_MAX];
	const char *base;
	struct stat st;
	size_t i;
	int dfd, found;

	for (i = 0; names[i]; i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path))
			continue;
		dfd = open_parent(path, 0, copy, sizeof(copy), &base);
		if (dfd < 0)
			continue;
		found = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
		close(dfd);
		if (found)
			return 1;
	}
	return 0;
}

/* Checks the names: NAME or SUB/NAME, components neither empty nor "." nor "..". */
static int names_valid(const char *const *names)
{
	size_t i;

	for (i = 0; names[i]; i++) {
		const char *n = names[i], *slash = strchr(n, '/');
		size_t first = slash ? (size_t)(slash - n) : strlen(n);
		const char *last = slash ? slash + 1 : n;

		if (i >= WAIT_NAMES_MAX || first == 0 || first > NAME_MAX || !*last ||
		    strchr(last, '/') || strlen(last) > NAME_MAX ||
		    (first == 1 && n[0] == '.') || (first == 2 && n[0] == '.' && n[1] == '.') ||
		    strcmp(last, ".") == 0 || strcmp(last, "..") == 0)
			return 0;
	}
	return 1;
}

/* Makes sure every subdirectory the names mention is known (and watched if it exists). */
static int cache_subs(struct watch_cache *c, const char *const *names)
{
	size_t i, j;

	for (i = 0; names[i]; i++) {
		const char *slash = strchr(names[i], '/');
		size_t len = slash ? (size_t)(slash - names[i]) : 0;

		if (!slash)
			continue;
		for (j = 0; j < c->n_sub; j++)
			if (strlen(c->sub[j].name) == len &&
			    memcmp(c->sub[j].name, names[i], len) == 0)
				break;
		if (j < c->n_sub)
			continue;
		if (c->n_sub == WAIT_SUBS_MAX) {
			errno = E2BIG;
			return -1;
		}
		memcpy(c->sub[j].name, names[i], len);
		c->sub[j].name[len] = '\0';
		c->sub[j].fd = c->sub[j].wd = -1;
		c->n_sub++;
		if (watch_sub(c, &c->sub[j]) < 0)
			return -1;
	}
	return 0;
}

/* Whether name (NAME or SUB/NAME) is the file an event named in directory w. */
static int names_event(const struct watched *w, int is_top, const char *ev_name,
		       const char *const *names)
{
	size_t i;

	for (i = 0; names[i]; i++) {
		const char *slash = strchr(names[i], '/');

		if (is_top && !slash && strcmp(names[i], ev_name) == 0)
			return 1;
		if (!is_top && slash && strlen(w->name) == (size_t)(slash - names[i]) &&
		    memcmp(w->name, names[i], (size_t)(slash - names[i])) == 0 &&
		    strcmp(slash + 1, ev_name) == 0)
			return 1;
	}
	return 0;
}

/* Whether a cached directory was removed. The fd we hold keeps its inode alive, so the
 * kernel holds its IN_DELETE_SELF back until we close it: a link count of 0 says it. */
static int cache_gone(const struct watch_cache *c)
{
	struct stat st;
	size_t i;

	if (c->top.fd >= 0 && (fstat(c->top.fd, &st) < 0 || st.st_nlink == 0))
		return 1;
	if (c->anc.fd >= 0 && (fstat(c->anc.fd, &st) < 0 || st.st_nlink == 0))
		return 1;
	for (i = 0; i < c->n_sub; i++)
		if (c->sub[i].fd >= 0 && (fstat(c->sub[i].fd, &st) < 0 || st.st_nlink == 0))
			return 1;
	return 0;
}

/* Whether wd is one of the current watches (not one removed when a subdirectory was
 * replaced, whose IN_IGNORED still arrives). */
static int ours(const struct watch_cache *c, int wd)
{
	size_t i;

	if (wd < 0)
		return 0;
	if (wd == c->top.wd || wd == c->anc.wd)
		return 1;
	for (i = 0; i < c->n_sub; i++)
		if (wd == c->sub[i].wd)
			return 1;
	return 0;
}

/* Takes the queued events. Returns 1 if one of them means a named file may be there (or
 * the watches no longer describe the paths: the cache is then marked stale), 0 if none
 * does, -1 on a read error. */
static int take_events(struct watch_cache *c, const char *const *names)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	int hit = 0;

	for (int drained = 0; !drained;) {
		ssize_t n = read(c->ino, buf, sizeof(buf));
		char *p;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return hit;
		if (n <= 0)
			return -1;
		/* Room left for another event: the queue was empty (no second read to learn it). */
		drained = sizeof(buf) - (size_t)n >= sizeof(struct inotify_event) + NAME_MAX + 1;
		for (p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			const char *name = ev->len ? ev->name : "";
			size_t i;

			p += sizeof(*ev) + ev->len;
			if ((ev->mask & IN_Q_OVERFLOW) ||
			    ((ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) &&
			     ours(c, ev->wd))) {
				/* Events lost, or a watched directory gone or moved: the files
				 * may be anywhere now. Look, and watch afresh next time. */
				c->stale = 1;
				hit = 1;
				continue;
			}
			if (c->anc.wd >= 0 && ev->wd == c->anc.wd) {
				if (strcmp(name, c->anc_next) == 0) {
					c->stale = 1;   /* a step of dir was made */
					hit = 1;
				}
				continue;
			}
			if (c->top.wd >= 0 && ev->wd == c->top.wd) {
				/* Created is not yet written: a hit once closed or renamed in. */
				if ((ev->mask & (IN_MOVED_TO | IN_CLOSE_WRITE)) &&
				    names_event(&c->top, 1, name, names))
					hit = 1;
				/* A subdirectory made or renamed in: watch it (replacing any
				 * watch on an older one), then see what it holds already. One
				 * removed or renamed away: forget it until it comes back. */
				for (i = 0; i < c->n_sub; i++) {
					if (strcmp(c->sub[i].name, name) != 0)
						continue;
					if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
						if (c->sub[i].wd >= 0)
							inotify_rm_watch(c->ino, c->sub[i].wd);
						watched_reset(&c->sub[i]);
						continue;
					}
					if (!(ev->mask & (IN_CREATE | IN_MOVED_TO)))
						continue;
					if (c->sub[i].wd >= 0)
						inotify_rm_watch(c->ino, c->sub[i].wd);
					if (watch_sub(c, &c->sub[i]) < 0) {
						c->stale = 1;
						hit = 1;
					} else if (any_exists(c, names)) {
						hit = 1;
					}
				}
				continue;
			}
			for (i = 0; i < c->n_sub; i++)
				if (c->sub[i].wd >= 0 && ev->wd == c->sub[i].wd &&
				    names_event(&c->sub[i], 0, name, names))
					hit = 1;
		}
	}
	return hit;
}

/* Waits on c (set up for dir). Returns 1, 0 or -1 (errno set) as wait_change does. */
static int cache_wait(struct watch_cache *c, const char *dir, const char *const *names,
		      int64_t timeout_ms)
{
	int64_t deadline = mafh__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int r, tries;

	/* Watches first, then the look: a file that appears after the look wakes the poll,
	 * one that appeared before it is seen by it. Events already queued are taken first:
	 * a file they name is there, or was. */
	for (tries = 0;; tries++) {
		if (tries == 3)
			return 1;       /* the tree keeps changing under us: let the caller look */
		if (c->ino < 0 || c->stale || !c->dir || strcmp(c->dir, dir) != 0) {
			if (cache_setup(c, dir) < 0)
				return -1;
		}
		if (cache_subs(c, names) < 0)
			return -1;
		r = take_events(c, names);
		if (r < 0)
			return -1;
		if (!c->stale) {
			if (r > 0)
				return 1;
			break;
		}
	}
	if (c->anc.wd < 0 && any_exists(c, names))
		return 1;
	for (;;) {
		struct pollfd pf = {.fd = c->ino, .events = POLLIN};
		int64_t left = deadline - mafh__now_ms();

		if (left <= 0)
			return 0;
		r = poll(&pf, 1, left > WAIT_GONE_CHECK_MS ? WAIT_GONE_CHECK_MS : (int)left);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r == 0 && cache_gone(c)) {
			/* Removed under the fd we hold (which keeps its IN_DELETE_SELF back): the
			 * paths may hold anything now. */
			c->stale = 1;
			return 1;
		}
		if (r <= 0)
			continue;
		r = take_events(c, names);
		if (r != 0)
			return r;
	}
}

static int local_wait_change(void *ctx, const char *dir, const char *const *names,
			     int64_t timeout_ms, struct mafh_error *err)
{
	struct local *l = ctx;
	struct watch_cache own, *c = &l->cache;
	int64_t deadline;
	int r, e;

	if (!dir || dir[0] != '/' || strlen(dir) >= LOCAL_PATH_MAX - 2 * NAME_MAX - 2 || !names ||
	    !names_valid(names))
		return mafh__error_set(err, MAFH_EINVAL, "wait_change takes an absolute directory "
				       "and at most %d names, NAME or SUB/NAME", WAIT_NAMES_MAX);
	/* Another thread is waiting on this backend (another run): a watch of our own. */
	if (pthread_mutex_trylock(&l->wait_lock) != 0) {
		cache_init(&own);
		c = &own;
	}
	r = cache_wait(c, dir, names, timeout_ms);
	e = errno;
	if (r < 0)
		cache_reset(c);
	if (c == &own)
		cache_reset(c);
	else
		pthread_mutex_unlock(&l->wait_lock);
	if (r >= 0)
		return r;
	if (e == ENOMEM)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory waiting on %s", dir);
	/* No inotify (out of instances or watches) or a directory that cannot be opened: look
	 * every few milliseconds, as `maf-launch wait` does, rather than fail the run. */
	deadline = mafh__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		int64_t left;

		if (any_exists_by_path(dir, names))
			return 1;
		left = deadline - mafh__now_ms();
		if (left <= 0)
			return 0;
		mafh__sleep_until_ms(mafh__now_ms() + (left < WAIT_FALLBACK_MS ? left
									 : WAIT_FALLBACK_MS));
	}
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
	return mafh__error_set(err, -e, "cannot run %s: %s", argv[0], strerror(e));
}

static void local_destroy(void *ctx)
{
	struct local *l = ctx;

	if (!l)
		return;
	cache_reset(&l->cache);
	pthread_mutex_destroy(&l->wait_lock);
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
	l->pid = (long)getpid();
	if (!l->launcher) {
		free(l);
		return MAFH_ENOMEM;
	}
	cache_init(&l->cache);
	pthread_mutex_init(&l->wait_lock, NULL);
	memset(&ops, 0, sizeof(ops));
	ops.size = sizeof(ops);
	ops.caps = MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT |
		   MAFH_CAP_DETACHED_EXEC | MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_WAIT_CHANGE;
	ops.ctx = l;
	ops.launcher_path = l->launcher;
	ops.exec = local_exec;
	ops.write_file = local_write_file;
	ops.read_file = local_read_file;
	ops.stat = local_stat;
	ops.destroy = local_destroy;
	ops.wait_change = local_wait_change;
	return mafh_backend_new(&ops, out, NULL);
}
