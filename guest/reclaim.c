/* maf-launch reclaim: delete a run directory tree without following symlinks and without
 * crossing mount points.
 *
 * Upstream cleans up with 'rm -rf' over exec. The tree was written by a hostile program, so
 * every step goes through directory descriptors: each directory is opened relative to its
 * parent with O_NOFOLLOW|O_DIRECTORY (a symlink is unlinked as a link, never followed), and
 * every entry's mount is compared with R's before anything is done to it (the mount id from
 * statx, which also tells a bind mount of the same filesystem apart; st_dev where the kernel
 * has no mount id). A mount below R is left alone, with all it holds, and reported.
 *
 * With --keep NAME, R and R/NAME stay and everything else below R goes the same way: a host
 * that lends R to one run after another keeps what it wants to carry over (its own files,
 * or a work directory) and still trusts nothing else the program left. R/NAME is never
 * looked into: whatever it is (a symlink, a mount, a file), it is the caller's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "commands.h"
#include "kstatx.h"
#include "protocol.h"
#include "util.h"

#ifndef AT_NO_AUTOMOUNT
#define AT_NO_AUTOMOUNT 0x800
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#define RECLAIM_RENAME_NOREPLACE 1u
#define RECLAIM_STATX_TYPE 0x1u
#define RECLAIM_STATX_MODE 0x2u
#define RECLAIM_STATX_INO 0x100u
#define RECLAIM_STATX_MNT_ID 0x1000u
#define RECLAIM_ATTR_MOUNT_ROOT 0x2000u

/* Directories deeper than this below R are moved up to R and emptied from there, so the
 * descriptors held at once stay bounded however deep the program nested them. */
#define RECLAIM_DEPTH_MAX 64
#define RECLAIM_REPORT_MAX 20	/* lines naming what was left; then a count */
#define RECLAIM_EXIT_LEFT 1

/* What reclaim needs to know of one entry. */
struct node {
	mode_t mode;
	dev_t dev;
	uint64_t mnt_id;
	int has_mnt_id;
	int mount_root;		/* the kernel says it is the root of a mount */
};

struct reclaim {
	int root_fd;		/* R */
	struct node root;
	const char *keep;	/* the entry of R to leave, or NULL */
	char path[4096];	/* the entry being worked on, for messages */
	size_t path_len;
	unsigned left;		/* entries that could not be removed */
	unsigned moved;		/* deep directories moved up to R */
	char (*pending)[32];	/* names, in R, of directories moved up and not yet emptied */
	size_t npending, cap_pending;
};

static int look(int dirfd, const char *name, int flags, struct node *n)
{
	struct mafl_statx sx;
	struct stat st;

	memset(n, 0, sizeof(*n));
	memset(&sx, 0, sizeof(sx));
	if (syscall(SYS_statx, dirfd, name, flags | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
		    RECLAIM_STATX_TYPE | RECLAIM_STATX_MODE | RECLAIM_STATX_INO |
		    RECLAIM_STATX_MNT_ID, &sx) == 0) {
		n->mode = sx.mode;
		n->dev = makedev(sx.dev_major, sx.dev_minor);
		n->has_mnt_id = (sx.mask & RECLAIM_STATX_MNT_ID) != 0;
		n->mnt_id = sx.mnt_id;
		n->mount_root = (sx.attributes_mask & RECLAIM_ATTR_MOUNT_ROOT) &&
				(sx.attributes & RECLAIM_ATTR_MOUNT_ROOT);
		return 0;
	}
	if (errno != ENOSYS)
		return -1;
	/* Before Linux 4.11: st_dev only, which cannot see a bind mount of R's filesystem. */
	if (fstatat(dirfd, name, &st, flags | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) < 0)
		return -1;
	n->mode = st.st_mode;
	n->dev = st.st_dev;
	return 0;
}

/* 1 if n is on another mount than R. */
static int other_mount(const struct reclaim *r, const struct node *n)
{
	if (n->dev != r->root.dev || n->mount_root)
		return 1;
	return n->has_mnt_id && r->root.has_mnt_id && n->mnt_id != r->root.mnt_id;
}

static __attribute__((format(printf, 2, 3))) void left(struct reclaim *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (r->left++ >= RECLAIM_REPORT_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mafl_warnx("%s %s", r->path, msg);
}

static size_t path_push(struct reclaim *r, const char *name)
{
	size_t old = r->path_len, n = strlen(name);

	if (old + 1 + n < sizeof(r->path)) {
		r->path[old] = '/';
		memcpy(r->path + old + 1, name, n + 1);
		r->path_len = old + 1 + n;
	} else if (old + 5 < sizeof(r->path)) {
		memcpy(r->path + old, "/...", 5);
		r->path_len = old + 4;
	}
	return old;
}

static void path_pop(struct reclaim *r, size_t old)
{
	r->path_len = old;
	r->path[old] = '\0';
}

/* Gives the owner write and search permission on a directory so its entries can be removed
 * (a read-only directory, chmod 0500, is the program's to make). fd may be O_PATH. */
static void make_writable(int fd, mode_t mode)
{
	char proc[64];

	if ((mode & 0700) == 0700)
		return;
	if (fchmod(fd, (mode & 07777) | 0700) == 0)
		return;
	/* An O_PATH descriptor: chmod through its /proc link, which names that very inode. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	chmod(proc, (mode & 07777) | 0700);
}

static int remove_entry(struct reclaim *r, int dfd, const char *name, int depth);

/* Removes every entry of the directory open as fd (consumed). Returns 0 if all went. */
static int empty_dir(struct reclaim *r, int fd, mode_t mode, int depth)
{
	struct dirent *de;
	int rc = 0;
	DIR *d;

	make_writable(fd, mode);
	d = fdopendir(fd);
	if (!d) {
		left(r, "cannot be listed: %s", strerror(errno));
		close(fd);
		return -1;
	}
	errno = 0;
	while ((de = readdir(d))) {
		size_t old;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* depth 0 is R itself, the only directory whose entries are judged by name. */
		if (depth == 0 && r->keep && strcmp(de->d_name, r->keep) == 0)
			continue;
		old = path_push(r, de->d_name);
		if (remove_entry(r, dirfd(d), de->d_name, depth) < 0)
			rc = -1;
		path_pop(r, old);
		errno = 0;
	}
	if (errno) {
		left(r, "cannot be listed: %s", strerror(errno));
		rc = -1;
	}
	closedir(d);
	return rc;
}

/* Moves a directory nested too deep up to R, to be emptied from there. Returns 0 or -1. */
static int move_up(struct reclaim *r, int dfd, const char *name)
{
	char tmp[32];

	if (r->npending == r->cap_pending) {
		size_t ncap = r->cap_pending ? r->cap_pending * 2 : 16;
		char (*np)[32] = realloc(r->pending, ncap * sizeof(*np));

		if (!np)
			return -1;
		r->pending = np;
		r->cap_pending = ncap;
	}
	for (;;) {
		snprintf(tmp, sizeof(tmp), ".maf-reclaim-%u", r->moved++);
		/* Never the kept name: R/NAME may be absent, and what is moved up must go. */
		if (r->keep && strcmp(tmp, r->keep) == 0)
			continue;
		if (syscall(SYS_renameat2, dfd, name, r->root_fd, tmp,
			    RECLAIM_RENAME_NOREPLACE) == 0)
			break;
		if (errno != EEXIST)
			return -1;
	}
	memcpy(r->pending[r->npending++], tmp, sizeof(tmp));
	return 0;
}

/* Removes dfd/name and all below it. Returns 0 if it is gone, else -1 (reported). */
static int remove_entry(struct reclaim *r, int dfd, const char *name, int depth)
{
	struct node n, opened;
	int fd, rc;

	if (look(dfd, name, 0, &n) < 0) {
		if (errno == ENOENT)
			return 0;
		left(r, "cannot be examined: %s", strerror(errno));
		return -1;
	}
	if (other_mount(r, &n)) {
		left(r, "is a mount point; left in place with everything below it");
		return -1;
	}
	if (!S_ISDIR(n.mode)) {
		/* A symlink goes as a link; a FIFO or socket is never opened. */
		if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
			return 0;
		left(r, "cannot be removed: %s", strerror(errno));
		return -1;
	}
	if (depth >= RECLAIM_DEPTH_MAX && move_up(r, dfd, name) == 0)
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		/* No read or search permission (chmod 0000): grant it to ourselves, on the very
		 * directory we looked at, then open it again. */
		int pfd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (pfd >= 0) {
			if (look(pfd, "", AT_EMPTY_PATH, &opened) == 0 && !other_mount(r, &opened))
				make_writable(pfd, opened.mode);
			close(pfd);
		}
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		left(r, "cannot be opened: %s", strerror(errno));
		return -1;
	}
	/* What was opened may not be what was looked at: check it again. */
	if (look(fd, "", AT_EMPTY_PATH, &opened) < 0 || !S_ISDIR(opened.mode) ||
	    other_mount(r, &opened)) {
		close(fd);
		left(r, "changed while being removed, or is a mount point; left in place");
		return -1;
	}
	rc = empty_dir(r, fd, opened.mode, depth + 1);
	if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
		return rc;
	if (rc == 0)
		left(r, "cannot be removed: %s", strerror(errno));
	return -1;
}

const char *mafl_reclaim_keep_check(const char *name)
{
	if (!name[0])
		return "it is empty";
	if (strchr(name, '/'))
		return "it holds a '/' (NAME is one entry of R)";
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return "it is '.' or '..'";
	if (strlen(name) > NAME_MAX)
		return "it is longer than 255 bytes";
	return NULL;
}

/* Reads reclaim's options: R, without its trailing slashes, into run_dir, and --keep's NAME
 * (NULL without it). */
static void reclaim_parse(int argc, char **argv, char *run_dir, const char **keep)
{
	const char *run_dir_arg = NULL, *v, *why;
	struct mafl_args a;
	size_t len;
	int key;

	*keep = NULL;
	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_RECLAIM], argc, argv);
	while ((key = mafl_opt_next(&a, &v)) != MAFL_OPT_END) {
		if (key == MAFL_O_RUN_DIR) {
			run_dir_arg = v;
		} else {
			/* A second would be lost or mean two: say so rather than delete either. */
			if (*keep)
				mafl_die(MAFP_EXIT_USAGE, "--keep may be given once");
			*keep = v;
		}
	}
	if (*keep && (why = mafl_reclaim_keep_check(*keep)))
		mafl_die(MAFP_EXIT_USAGE, "bad --keep NAME: %s", why);
	if (!run_dir_arg)
		mafl_die(MAFP_EXIT_USAGE, "--run-dir is required (try 'maf-launch reclaim "
			 "--help')");
	if (mafp_run_dir_check(run_dir_arg, &why) < 0)
		mafl_die(MAFP_EXIT_USAGE, "bad --run-dir '%s': %s", run_dir_arg, why);
	len = strlen(run_dir_arg);
	while (len > 1 && run_dir_arg[len - 1] == '/')
		len--;
	memcpy(run_dir, run_dir_arg, len);
	run_dir[len] = '\0';
}

/* Opens R, entry base of parent_fd, as r->root_fd, and r->root as what was opened. Dies when
 * R is not a directory. Returns 0, or 1 when R is absent. */
static int open_root(struct reclaim *r, int parent_fd, const char *base, const char *run_dir)
{
	if (look(parent_fd, base, 0, &r->root) < 0) {
		if (errno == ENOENT)
			return 1;
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot examine %s", run_dir);
	}
	if (S_ISLNK(r->root.mode))
		mafl_die(MAFP_EXIT_USAGE, "the run directory %s is a symlink; nothing was removed",
			 run_dir);
	if (!S_ISDIR(r->root.mode))
		mafl_die(MAFP_EXIT_USAGE, "the run directory %s is not a directory; nothing "
			 "was removed", run_dir);
	r->root_fd = openat(parent_fd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r->root_fd < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot open the run directory %s", run_dir);
	/* The baseline is what was opened, not what was looked at. */
	if (look(r->root_fd, "", AT_EMPTY_PATH, &r->root) < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot examine %s", run_dir);
	r->root.mount_root = 0;	/* R may itself be a mount; what is below it may not */
	return 0;
}

int mafl_cmd_reclaim(int argc, char **argv)
{
	const char *keep;
	char run_dir[MAFP_RUN_DIR_MAX + 1];

	reclaim_parse(argc, argv, run_dir, &keep);
	return mafl_reclaim(run_dir, keep);
}

int mafl_reclaim(const char *run_dir, const char *keep)
{
	const char *base;
	char parent[MAFP_RUN_DIR_MAX + 1];
	struct reclaim r;
	struct rlimit rl;
	int parent_fd, rc;

	/* R is removed from its parent by name, so split it. */
	base = strrchr(run_dir, '/') + 1;
	if (base == run_dir + 1) {
		parent[0] = '/';
		parent[1] = '\0';
	} else {
		memcpy(parent, run_dir, (size_t)(base - run_dir - 1));
		parent[base - run_dir - 1] = '\0';
	}
	parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent_fd < 0) {
		if (errno == ENOENT)
			return 0;	/* nothing to reclaim */
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot open the directory that holds %s",
			       run_dir);
	}

	memset(&r, 0, sizeof(r));
	r.keep = keep;
	if (open_root(&r, parent_fd, base, run_dir))
		return 0;
	/* Each level of the walk holds a descriptor: allow as many as we may. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	mafl_str_copy(r.path, sizeof(r.path), run_dir);
	r.path_len = strlen(r.path);
	rc = empty_dir(&r, dup(r.root_fd), r.root.mode, 0);
	while (r.npending > 0) {
		char name[32];
		size_t old;

		memcpy(name, r.pending[--r.npending], sizeof(name));
		old = path_push(&r, name);
		if (remove_entry(&r, r.root_fd, name, 0) < 0)
			rc = -1;
		path_pop(&r, old);
	}
	free(r.pending);
	if (keep) {
		/* R stays: as it was found, not with the write permission the walk gave it. */
		if ((r.root.mode & 0700) != 0700)
			fchmod(r.root_fd, r.root.mode & 07777);
		if (rc == 0)
			return 0;
	} else if (rc == 0) {
		if (unlinkat(parent_fd, base, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return 0;
		left(&r, "cannot be removed: %s", strerror(errno));
	}
	if (r.left > RECLAIM_REPORT_MAX)
		mafl_warnx("... and %u more", r.left - RECLAIM_REPORT_MAX);
	if (keep)
		mafl_die(RECLAIM_EXIT_LEFT, "%s was not emptied but for %s: %u %s could not be "
			 "removed (named above)", run_dir, keep, r.left,
			 r.left == 1 ? "entry" : "entries");
	mafl_die(RECLAIM_EXIT_LEFT, "%s was not removed entirely: %u %s could not be removed "
		 "(named above)", run_dir, r.left, r.left == 1 ? "entry" : "entries");
}
