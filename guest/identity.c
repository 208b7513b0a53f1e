/* The program's own identity, and the run directory lent to it (identity.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/securebits.h>

#include "cover.h"
#include "identity.h"
#include "protocol.h"
#include "spawn.h"
#include "util.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* The program's files in R/work the launch takes over at most: a host's inputs, not a
 * tree to walk without end. Past it the rest stays the host's (readable, not writable). */
#define LEND_DEPTH_MAX 32
#define LEND_ENTRIES_MAX 100000

/* Whether this process may take another identity and give it the run's directories: uid 0
 * with CAP_SETUID, CAP_SETGID and CAP_CHOWN in its effective set. A container started with
 * every capability dropped (maf-sandbox-docker's default) runs its root without them: that
 * root is then a launcher like any unprivileged one. */
static int may_take_identities(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[2];
	static const int needed[] = {CAP_SETUID, CAP_SETGID, CAP_CHOWN};
	size_t i;

	memset(caps, 0, sizeof(caps));
	if (syscall(SYS_capget, &hdr, caps) < 0)
		return 0;
	for (i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (!(caps[needed[i] / 32].effective & (1u << (needed[i] % 32))))
			return 0;
	return 1;
}

int mafl_identity_choose(const struct run_opts *o, pid_t supervisor, struct mafl_identity *id,
			 char *why, size_t why_size)
{
	uid_t euid = geteuid();
	int privileged = euid == 0 && may_take_identities();

	memset(id, 0, sizeof(*id));
	if (o->user_uid >= 0) {
		if (!privileged && (uid_t)o->user_uid != euid) {
			if (euid == 0)
				snprintf(why, why_size, "--user %lld needs a privileged launcher (this "
					 "one runs as uid 0 without CAP_SETUID, CAP_SETGID and "
					 "CAP_CHOWN)", o->user_uid);
			else
				snprintf(why, why_size, "--user %lld needs a privileged launcher (this "
					 "one runs as uid %u)", o->user_uid, (unsigned)euid);
			return -1;
		}
		/* --user 0 keeps root: the launcher's own identity. */
		id->own = privileged && o->user_uid != 0;
		id->uid = (uid_t)o->user_uid;
		id->gid = (gid_t)o->user_gid;
		id->per_run = mafl_is_run_id(id->uid);
		return 0;
	}
	if (privileged) {
		id->own = id->per_run = 1;
		id->uid = mafl_run_id(supervisor);
		id->gid = mafl_run_id(supervisor);
		return 0;
	}
	id->uid = euid;
	id->gid = getegid();
	return 0;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Gives what dirfd holds to uid:gid, on dev only, without following a symlink. (getdents64
 * rather than readdir: nothing more of the C library in a launcher baked into images.) */
static void lend_tree(int dirfd, dev_t dev, uid_t uid, gid_t gid, int depth, long *budget)
{
	char buf[4096] __attribute__((aligned(8)));
	long n;

	lseek(dirfd, 0, SEEK_SET);
	while ((n = syscall(SYS_getdents64, dirfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 *e = (struct linux_dirent64 *)(buf + off);
			struct stat st;
			int sub;

			off += e->d_reclen;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (--*budget <= 0)
				return;
			if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    st.st_dev != dev)
				continue;   /* a mount point: not ours to change */
			if (fchownat(dirfd, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISDIR(st.st_mode) || depth >= LEND_DEPTH_MAX)
				continue;
			sub = openat(dirfd, e->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				lend_tree(sub, dev, uid, gid, depth + 1, budget);
				close(sub);
			}
		}
	}
}

/* Removes what uid owns below dirfd, on dev only, without following a symlink. */
static void remove_owned(int dirfd, dev_t dev, uid_t uid, int depth)
{
	char buf[4096] __attribute__((aligned(8)));
	long n;

	while ((n = syscall(SYS_getdents64, dirfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 *e = (struct linux_dirent64 *)(buf + off);
			struct stat st;
			int sub;

			off += e->d_reclen;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
			    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    st.st_dev != dev)
				continue;
			if (S_ISDIR(st.st_mode) && depth < LEND_DEPTH_MAX) {
				sub = openat(dirfd, e->d_name,
					     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0) {
					remove_owned(sub, dev, uid, depth + 1);
					close(sub);
				}
			}
			if (st.st_uid == uid)
				unlinkat(dirfd, e->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
		}
	}
}

void mafl_identity_clean_shared(const struct mafl_identity *id)
{
	struct stat st;
	int fd;

	if (!id->own || !id->per_run)
		return;
	fd = openat(AT_FDCWD, "/dev/shm", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0)
		remove_owned(fd, st.st_dev, id->uid, 0);
	close(fd);
}

/* 1 if id may search (pass through) a directory of st, by its mode bits. */
static int searchable(const struct stat *st, const struct mafl_identity *id)
{
	if (st->st_uid == id->uid)
		return !!(st->st_mode & S_IXUSR);
	if (st->st_gid == id->gid)
		return !!(st->st_mode & S_IXGRP);
	return !!(st->st_mode & S_IXOTH);
}

/* The program reaches its files by absolute path (R/host_tools/program.py, PYTHONPATH):
 * every directory above R must let its identity pass, or be covered in the program's mount
 * namespace (cover.h). Finds the topmost directory above R that does not let it pass: with
 * none, cover is "" and 0 is returned; with one and a launcher able to cover it, its path
 * goes into cover and 0 is returned; else -1, with a sentence in why. */
static int ancestors_open(const struct mafl_identity *id, const char *run_dir, char *cover,
			  size_t cover_size, char *why, size_t why_size)
{
	char path[MAFP_RUN_DIR_MAX + 1];
	struct stat st, blocked_st;
	char *slash;
	int blocked = 0;

	cover[0] = '\0';
	snprintf(path, sizeof(path), "%s", run_dir);
	while ((slash = strrchr(path, '/'))) {
		slash[slash == path ? 1 : 0] = '\0';
		if (stat(path, &st) < 0) {
			snprintf(why, why_size, "cannot look at %s, above the run directory: %s",
				 path, strerror(errno));
			return -1;
		}
		if (!searchable(&st, id)) {
			blocked = 1;
			blocked_st = st;
			snprintf(cover, cover_size, "%s", path);
		}
		if (slash == path)
			break;
	}
	if (!blocked)
		return 0;
	if (strcmp(cover, "/") != 0 && mafl_cover_possible())
		return 0;
	snprintf(why, why_size, "the run directory's parent %s does not let the program's uid %u "
		 "pass (mode %04o), and without CAP_SYS_ADMIN (a container with the engine's "
		 "default capabilities has none) the launcher cannot show the program its run "
		 "alone below it: make R where any user may pass, such as under /tmp, or give "
		 "--user", cover, (unsigned)id->uid, (unsigned)(blocked_st.st_mode & 07777));
	cover[0] = '\0';
	return -1;
}

int mafl_identity_lend_dirs(const struct mafl_identity *id, const struct run_dirs *d, int work,
			    int calls, int tmp, const char *run_dir, struct mafl_lent_dirs *lent,
			    char *why, size_t why_size)
{
	struct stat run_st, tools_st, work_st;
	int rc = 0;
	long budget = LEND_ENTRIES_MAX;

	memset(lent, 0, sizeof(*lent));
	if (!id->own)
		goto out;
	if (ancestors_open(id, run_dir, lent->cover, sizeof(lent->cover), why, why_size) < 0) {
		rc = -1;
		goto out;
	}
	if (fstat(d->run, &run_st) < 0 || fstat(d->host_tools, &tools_st) < 0 ||
	    fstat(work, &work_st) < 0) {
		snprintf(why, why_size, "cannot look at the run directory %s: %s", run_dir,
			 strerror(errno));
		rc = -1;
		goto out;
	}
	lent->saved = 1;
	lent->run_mode = run_st.st_mode & 07777;
	lent->run_gid = run_st.st_gid;
	lent->tools_mode = tools_st.st_mode & 07777;
	lent->tools_gid = tools_st.st_gid;
	/* The group is the run's own, so nobody but the program (and the owner) may pass:
	 * other runs, concurrent or later, have other ids. */
	if (fchown(d->run, (uid_t)-1, id->gid) < 0 || fchmod(d->run, 0710) < 0 ||
	    fchown(d->host_tools, (uid_t)-1, id->gid) < 0 || fchmod(d->host_tools, 0750) < 0 ||
	    fchown(calls, (uid_t)-1, id->gid) < 0 || fchmod(calls, 01770) < 0 ||
	    fchown(work, id->uid, id->gid) < 0 || fchmod(work, 0700) < 0 ||
	    fchown(tmp, id->uid, id->gid) < 0 || fchmod(tmp, 0700) < 0) {
		snprintf(why, why_size, "cannot lend the run directory %s to uid %u: %s", run_dir,
			 (unsigned)id->uid, strerror(errno));
		rc = -1;
		goto out;
	}
	/* The channel's socket, for a process of the run without the inherited descriptor:
	 * connecting takes write permission on it (0660), the run's group's alone. */
	if (fchownat(d->host_tools, MAFP_FILE_CHANNEL_SOCKET, (uid_t)-1, id->gid,
		     AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT) {
		/* without it the inherited channel still serves; nothing to undo */
	}
	lend_tree(work, work_st.st_dev, id->uid, id->gid, 0, &budget);
out:
	close(tmp);
	close(calls);
	return rc;
}

void mafl_identity_take_back(const struct mafl_identity *id, const struct run_dirs *d,
			     const struct mafl_lent_dirs *lent)
{
	/* Best effort, and nothing to do on failure: the run is over either way. The mode first,
	 * so that no moment gives the group back its old access. */
	if (!id->own || !lent->saved)
		return;
	if (fchmod(d->host_tools, lent->tools_mode & 0700) < 0 ||
	    fchown(d->host_tools, (uid_t)-1, lent->tools_gid) < 0) {
		/* left to the run's group, but closed to it by the mode */
	}
	if (fchmod(d->run, lent->run_mode & 0700) < 0 ||
	    fchown(d->run, (uid_t)-1, lent->run_gid) < 0) {
		/* likewise */
	}
}

/* A system call with its unused arguments zero, not whatever the registers held: prctl
 * options such as PR_CAP_AMBIENT_CLEAR_ALL fail unless they are, and newfstatat reads its
 * fourth as flags. */
static long sys(long nr, long a, long b, long c)
{
	long r = syscall(nr, a, b, c, 0L, 0L, 0L);

	return r < 0 ? -errno : r;
}

/* Empties this process's bounding set. Returns 0 or a negative errno. */
static long drop_bounding(void)
{
	for (int cap = 0; cap < 64; cap++) {
		long rc = sys(SYS_prctl, PR_CAPBSET_DROP, cap, 0);

		if (rc == -EINVAL)
			break;   /* past the kernel's last capability */
		if (rc < 0)
			return rc;
	}
	return 0;
}

void mafl_identity_drop_bounding(struct mafl_identity *id)
{
	id->bounding_dropped = id->own && drop_bounding() == 0;
}

int mafl_identity_take(const struct mafl_identity *id, const char **step)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[2];
	uid_t r, e, s;
	gid_t gr, ge, gs;
	long rc;
	int cap;

	if (!id->own)
		return 0;
	*step = "drop the supplementary groups";
	if ((rc = sys(SYS_setgroups, 0, 0, 0)) < 0)
		return (int)rc;
	*step = "take the run's gid";
	if ((rc = sys(SYS_setresgid, id->gid, id->gid, id->gid)) < 0)
		return (int)rc;
	*step = "clear the ambient capabilities";
	if ((rc = sys(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0)) < 0)
		return (int)rc;
	*step = "drop the bounding capabilities";
	if (!id->bounding_dropped && (rc = drop_bounding()) < 0)
		return (int)rc;
	/* No uid 0 may bring capabilities back (an exec of a setuid-root file, were
	 * no_new_privs ever lifted), and none of it may be undone. */
	*step = "lock the securebits";
	rc = sys(SYS_prctl, PR_SET_SECUREBITS,
		 SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NOROOT |
			 SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
			 SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED, 0);
	if (rc < 0)
		return (int)rc;
	*step = "take the run's uid";
	if ((rc = sys(SYS_setresuid, id->uid, id->uid, id->uid)) < 0)
		return (int)rc;
	*step = "empty the capability sets";
	memset(caps, 0, sizeof(caps));
	if ((rc = sys(SYS_capset, (long)&hdr, (long)caps, 0)) < 0)
		return (int)rc;
	/* Checked, not assumed: each step above is one the kernel may have refused in part. */
	*step = "check the identity taken";
	if (sys(SYS_getresuid, (long)&r, (long)&e, (long)&s) < 0)
		return -EPERM;
	if (r != id->uid || e != id->uid || s != id->uid)
		return -EPERM;
	if (sys(SYS_getresgid, (long)&gr, (long)&ge, (long)&gs) < 0)
		return -EPERM;
	if (gr != id->gid || ge != id->gid || gs != id->gid)
		return -EPERM;
	if (sys(SYS_getgroups, 0, 0, 0) != 0)
		return -EPERM;
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	hdr.pid = 0;
	if (sys(SYS_capget, (long)&hdr, (long)caps, 0) < 0)
		return -EPERM;
	for (cap = 0; cap < 2; cap++)
		if (caps[cap].effective || caps[cap].permitted || caps[cap].inheritable)
			return -EPERM;
	if (sys(SYS_prctl, PR_CAPBSET_READ, 0, 0) != 0)
		return -EPERM;
	return 0;
}

/* The value of the status-file field key (e.g. "Uid:\t") in buf[0..n), or NULL. */
static const char *status_field(const char *buf, long n, const char *key, size_t klen)
{
	const char *p = buf, *end = buf + n;

	while (p < end && (size_t)(end - p) > klen) {
		const char *nl;

		if (memcmp(p, key, klen) == 0)
			return p + klen;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;
		p = nl + 1;
	}
	return NULL;
}

/* 1 if a process other than the caller that is not a zombie has uid as its real uid,
 * looking through /proc/PID/status with raw system calls (for sweep_child); 1 also when
 * /proc cannot be read. The status file, not the owner of /proc/PID: a process that made
 * itself non-dumpable has a /proc/PID of root's. */
static int live_of_uid(uid_t uid)
{
	char buf[4096] __attribute__((aligned(8))), status[2048], self[24], want[24];
	int proc = (int)sys(SYS_openat, AT_FDCWD, (long)"/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t wlen;
	long n;
	int live = 0;

	if (proc < 0)
		return 1;
	snprintf(self, sizeof(self), "%ld", sys(SYS_getpid, 0, 0, 0));
	wlen = (size_t)snprintf(want, sizeof(want), "%u\t", (unsigned)uid);
	while (!live && (n = sys(SYS_getdents64, proc, (long)buf, sizeof(buf))) > 0) {
		for (long off = 0; !live && off < n;) {
			struct linux_dirent64 *e = (struct linux_dirent64 *)(buf + off);
			const char *u, *st;
			char path[32];
			long fd, got;

			off += e->d_reclen;
			if (e->d_name[0] < '1' || e->d_name[0] > '9' || strcmp(e->d_name, self) == 0)
				continue;
			snprintf(path, sizeof(path), "%s/status", e->d_name);
			fd = sys(SYS_openat, proc, (long)path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			got = sys(SYS_read, fd, (long)status, sizeof(status));
			sys(SYS_close, fd, 0, 0);
			if (got <= 0)
				continue;
			u = status_field(status, got, "Uid:\t", 5);
			st = status_field(status, got, "State:\t", 7);
			live = u && st && (size_t)(status + got - u) > wlen &&
			       memcmp(u, want, wlen) == 0 && *st != 'Z' && *st != 'X';
		}
	}
	sys(SYS_close, proc, 0, 0);
	return live;
}

struct sweep {
	const struct mafl_identity *id;
	int look;
};

/* In the sweeping child (mafl_spawn_vfork: it borrows the caller's memory, so raw system
 * calls only, and it ends in _exit): takes the identity and kills all it may. One kill(-1)
 * is enough: it signals every process of the uid under the kernel's task list lock, and a
 * fork still under way then either has its child in that list or is abandoned (the kernel
 * completes no fork with a fatal signal pending). Nobody can take the uid up again after
 * (no_new_privs, no capability). kill(-1) itself cannot say whether it reached anyone (it
 * fails if any process it met was exiting), so with look, a scan first: exits 1 if a live
 * process of the uid was there, once it is gone. */
static int sweep_child(void *arg)
{
	const struct sweep *w = arg;
	const struct mafl_identity *id = w->id;
	int found, rounds;

	if (sys(SYS_setgroups, 0, 0, 0) < 0 || sys(SYS_setresgid, id->gid, id->gid, id->gid) < 0 ||
	    sys(SYS_setresuid, id->uid, id->uid, id->uid) < 0)
		_exit(255);
	found = w->look && live_of_uid(id->uid);
	sys(SYS_kill, -1, SIGKILL, 0);
	/* Killed is not yet gone: a process exits once it is next scheduled. Whoever looked
	 * is told only once none is left alive (or after a second, for one stuck in the
	 * kernel). */
	for (rounds = 0; found && rounds < 1000 && live_of_uid(id->uid); rounds++) {
		struct timespec ts = {0, 1000000};

		sys(SYS_nanosleep, (long)&ts, 0, 0);
	}
	_exit(found);
}

int mafl_identity_sweep(const struct mafl_identity *id, int look)
{
	struct sweep w = {id, look};
	int st = 0;
	pid_t p;

	if (!id->own)
		return 0;
	p = mafl_spawn_vfork(sweep_child, &w);
	if (p < 0)
		return -1;
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) != 255 ? WEXITSTATUS(st) : -1;
}
