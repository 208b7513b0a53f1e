/* The local backend's WAIT_UNTIL: with a directory, inotify on it and the subdirectories its
 * names mention, the watches kept in the slot for its next wait on the same directory; the
 * task waits on the inotify descriptor until the op's time. Where inotify cannot be had (a
 * user out of instances: a per-user limit, 128 by default, which a thousand runs pass), or
 * without a directory, the wait is a timer. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "local.h"

/* Names and subdirectories one wait may name. */
#define WAIT_NAMES_MAX 8
#define WAIT_SUBS_MAX 4

/* One watched directory: open without following symlinks (its fd is what existence is
 * checked against) and watched through that fd. fd -1: not there (yet). */
struct watched {
	char name[NAME_MAX + 1];        /* subdirectories: the name in the top directory */
	int fd;
	int wd;
};

/* The inotify state of the last directory a slot waited on, kept between its waits: setting
 * it up costs a dozen system calls, a wait on it a read of the queued events, a look at its
 * names (an fstatat each) and a poll. */
struct watch_cache {
	int ino;                        /* -1: none yet, or inotify is unavailable */
	char *dir;                      /* the directory it was set up for */
	struct watched top;             /* dir itself */
	/* dir's parent, watched for dir's removal: the fd we hold on dir keeps the kernel from
	 * sending dir's own IN_DELETE_SELF until it is closed, but the parent says at once. */
	struct watched guard;
	const char *top_name;           /* dir's last component, in dir */
	struct watched anc;             /* dir missing: the deepest ancestor that exists */
	char anc_next[NAME_MAX + 1];    /* the component of dir to be created in anc */
	struct watched sub[WAIT_SUBS_MAX];
	size_t n_sub;
	int stale;                      /* rebuild before the next wait */
};

/* What a slot keeps (struct mafh__local_state.wait). */
struct mafh__local_wait {
	struct watch_cache cache;
};

/* A wait under way: on c's inotify descriptor, or a timer when c is NULL. */
struct wait_task {
	struct mafh__local_task head;
	struct watch_cache *c;
	const char *dir;                /* borrowed from the op, as names */
	const char *const *names;
	int64_t until;
};

/* Which events wake a wait. In a subdirectory (host_tool_calls): a file renamed in, as
 * every request is published (PROTOCOL.md), and the directory itself removed or moved (the
 * watch then no longer says anything about the path). Not IN_CREATE nor IN_CLOSE_WRITE:
 * each call's claim and .part would wake the wait twice for nothing, a context switch each. A
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
	watched_reset(&c->guard);
	c->top_name = NULL;
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
	c->top.fd = c->anc.fd = c->guard.fd = -1;
	c->top.wd = c->anc.wd = c->guard.wd = -1;
}

/* Opens the directory path, every component without following a symlink. */
static int open_dir_nofollow(const char *path)
{
	char copy[LOCAL_PATH_MAX];
	const char *base;
	int dfd, fd, e;

	if (strcmp(path, "/") == 0)
		return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dfd = mafh__local_open_parent(-1, path, 0, copy, sizeof(copy), &base);
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

/* Watches dir's parent for dir's removal or renaming away. Best effort: without it, a
 * removed dir is seen at the next wait's start (cache_gone). */
static void watch_guard(struct watch_cache *c)
{
	char parent[LOCAL_PATH_MAX];
	char *slash;

	snprintf(parent, sizeof(parent), "%s", c->dir);
	slash = strrchr(parent, '/');
	if (!slash || !slash[1])
		return;
	c->top_name = c->dir + (slash + 1 - parent);
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	c->guard.fd = open_dir_nofollow(parent);
	if (c->guard.fd < 0 ||
	    watch_fd(c->ino, &c->guard, parent, IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR) < 0)
		watched_reset(&c->guard);
}

/* Sets the cache up for dir: an inotify instance, dir watched, or while dir does not exist,
 * its deepest existing ancestor watched for the next component. Returns 0, or -1 with errno
 * set (then the wait is a timer). */
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
	if (c->top.fd >= 0) {
		if (watch_fd(c->ino, &c->top, dir, WATCH_MASK_TOP) < 0)
			return -1;
		watch_guard(c);
		return 0;
	}
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

/* Where inotify cannot be had: each name looked up by path, as READ would. */
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
		dfd = mafh__local_open_parent(-1, path, 0, copy, sizeof(copy), &base);
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
			if (c->guard.wd >= 0 && ev->wd == c->guard.wd) {
				/* dir itself removed or renamed away (its IN_DELETE_SELF is held
				 * back by our fd): the paths may hold anything now. */
				if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) && c->top_name &&
				    strcmp(name, c->top_name) == 0) {
					c->stale = 1;
					hit = 1;
				}
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

/* Arms c for a wait on dir: the watches (rebuilt when dir is another, or was removed, or
 * events were lost), then the events queued since the last wait, then a look: a file that
 * appears after the look wakes the task, one that appeared before it is seen by it. Returns
 * 1 when one of names may be there already, 0 when armed, -1 with errno set. */
static int cache_arm(struct watch_cache *c, const char *dir, const char *const *names)
{
	int r, tries;

	for (tries = 0;; tries++) {
		if (tries == 3)
			return 1;       /* the tree keeps changing under us: let the caller look */
		if (c->ino < 0 || c->stale || !c->dir || strcmp(c->dir, dir) != 0 ||
		    cache_gone(c)) {
			if (cache_setup(c, dir) < 0)
				return -1;
		}
		if (cache_subs(c, names) < 0)
			return -1;
		/* Events queued since the last wait: a file they name is there, or was. */
		r = take_events(c, names);
		if (r < 0)
			return -1;
		if (!c->stale) {
			if (r > 0)
				return 1;
			break;
		}
	}
	return c->anc.wd < 0 && any_exists(c, names);
}

static int names_ok(const char *dir, const char *const *names)
{
	return dir && dir[0] == '/' && strlen(dir) < LOCAL_PATH_MAX - 2 * NAME_MAX - 2 && names &&
	       names_valid(names);
}

int mafh__local_wait_start(struct mafh__local_state *st, const struct mafh_op *op, int64_t now,
			   struct mafh__local_task **task, struct mafh_op_result *res)
{
	struct wait_task *t;
	struct watch_cache *c = NULL;
	int r;

	*task = NULL;
	if (op->wait_dir) {
		if (!names_ok(op->wait_dir, op->wait_names)) {
			res->error = mafh__error_set(&res->detail, MAFH_EINVAL, "wait_change takes "
						     "an absolute directory and at most %d "
						     "names, NAME or SUB/NAME", WAIT_NAMES_MAX);
			return 0;
		}
		if (!st->wait) {
			st->wait = malloc(sizeof(*st->wait));
			if (!st->wait)
				goto nomem;
			cache_init(&st->wait->cache);
		}
		c = &st->wait->cache;
		r = cache_arm(c, op->wait_dir, op->wait_names);
		if (r < 0) {
			int e = errno;

			cache_reset(c);
			c = NULL;
			if (e == ENOMEM)
				goto nomem;
			/* No inotify (out of instances or watches) or a directory that cannot be
			 * opened: not a failure of the run, which looks at the wait's end. */
			r = any_exists_by_path(op->wait_dir, op->wait_names);
		}
		if (r > 0) {
			res->woke = 1;
			return 0;
		}
	}
	if (op->until_ms <= now)
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	t->head.kind = MAFH_OP_WAIT_UNTIL;
	t->c = c;
	t->dir = op->wait_dir;
	t->names = op->wait_names;
	t->until = op->until_ms;
	*task = &t->head;
	return 1;
nomem:
	res->error = mafh__error_set(&res->detail, MAFH_ENOMEM, "out of memory waiting on %s",
				     op->wait_dir ? op->wait_dir : "a timer");
	return 0;
}

int mafh__local_wait_want(struct mafh__local_task *task, struct mafh_pollfd *fds,
			  int64_t *until)
{
	struct wait_task *t = (struct wait_task *)task;

	*until = t->until;
	if (!t->c)
		return 0;
	fds[0] = (struct mafh_pollfd){.fd = t->c->ino, .events = POLLIN};
	return 1;
}

int mafh__local_wait_step(struct mafh__local_task *task, int64_t now,
			  struct mafh_op_result *res)
{
	struct wait_task *t = (struct wait_task *)task;

	if (t->c) {
		int r = take_events(t->c, t->names);

		if (r > 0) {
			res->woke = 1;
			return 0;
		}
		if (r < 0) {
			/* The instance broke: a timer for the rest, after a look. */
			cache_reset(t->c);
			t->c = NULL;
			if (any_exists_by_path(t->dir, t->names)) {
				res->woke = 1;
				return 0;
			}
		}
	}
	return now < t->until;
}

void mafh__local_wait_free(struct mafh__local_task *task)
{
	/* The watches stay in the slot, for its next wait. */
	free(task);
}

void mafh__local_watches_free(struct mafh__local_wait *w)
{
	if (!w)
		return;
	cache_reset(&w->cache);
	free(w);
}
