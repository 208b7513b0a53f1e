/* The program's view of a run directory below a private one (cover.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "cover.h"
#include "kstatx.h"
#include "protocol.h"

/* The mount API's numbers are alike on every architecture (424 on); Debian 12's headers
 * have them, older ones may not. */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

/* Newer than Debian 12's headers (Linux 6.8), asked for at run time: statx's unique mount
 * id and statmount(2), which says how a mount propagates. */
#define COVER_STATX_MNT_ID_UNIQUE 0x4000u
#define COVER_SYS_statmount 457
#define COVER_MNT_ID_REQ_SIZE 24
#define COVER_STATMOUNT_MNT_BASIC 0x2u

struct cover_mnt_id_req {
	uint32_t size, spare;
	uint64_t mnt_id, param;
};

/* The kernel's struct statmount, its whole fixed part (520 bytes), without the strings. */
struct cover_statmount {
	uint32_t size, mnt_opts;
	uint64_t mask;
	uint32_t sb_dev_major, sb_dev_minor;
	uint64_t sb_magic;
	uint32_t sb_flags, fs_type;
	uint64_t mnt_id, mnt_parent_id;
	uint32_t mnt_id_old, mnt_parent_id_old;
	uint64_t mnt_attr, mnt_propagation, mnt_peer_group, mnt_master, propagate_from;
	uint32_t mnt_root, mnt_point;
	uint64_t spare[50];
};

/* What to do instead, for both sentences of cover_stays_here. */
#define COVER_INSTEAD ": mount --bind DIR DIR before chroot, unshare --mount --propagation " \
		      "private, put R under /tmp, or give --user"

/* The cover holds directories only, one a component of R below it (MAFP_RUN_DIR_MAX bytes
 * make at most 512): no data, few inodes. */
#define COVER_OPTIONS "mode=0711,size=64k,nr_inodes=1024"
#define COVER_FLAGS (MS_NOSUID | MS_NODEV | MS_NOEXEC)

int mafl_cover_possible(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[2];

	memset(caps, 0, sizeof(caps));
	if (syscall(SYS_capget, &hdr, caps) < 0)
		return 0;
	return !!(caps[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32)));
}

static int same_dir(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Makes, in the cover open as dirfd, the directories of rest ("a/b/R", relative), each
 * mode 0711 whatever the umask. Returns 0 or -errno. */
static int make_way(int dirfd, const char *rest)
{
	char name[MAFP_RUN_DIR_MAX + 1];
	const char *p = rest;
	int fd = dup(dirfd);

	if (fd < 0)
		return -errno;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		int next;

		if (len == 0 || len >= sizeof(name)) {
			close(fd);
			return -EINVAL;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		if (mkdirat(fd, name, 0700) < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0 || fchmod(next, 0711) < 0) {
			int e = errno;

			if (next >= 0)
				close(next);
			return -e;
		}
		fd = next;
		p += len;
		while (*p == '/')
			p++;
	}
	close(fd);
	return 0;
}

/* How the mount holding path propagates in this namespace (MS_SHARED, MS_SLAVE, ...), into
 * *prop. Returns 0, or -errno: -ENOSYS before Linux 6.8. */
static int propagation(const char *path, uint64_t *prop)
{
	struct mafl_statx sx;
	struct cover_mnt_id_req req = {.size = COVER_MNT_ID_REQ_SIZE,
				       .param = COVER_STATMOUNT_MNT_BASIC};
	struct cover_statmount sm;

	memset(&sx, 0, sizeof(sx));
	if (syscall(SYS_statx, AT_FDCWD, path, 0, COVER_STATX_MNT_ID_UNIQUE, &sx) < 0)
		return -errno;
	if (!(sx.mask & COVER_STATX_MNT_ID_UNIQUE))
		return -ENOSYS;
	req.mnt_id = sx.mnt_id;
	memset(&sm, 0, sizeof(sm));
	if (syscall(COVER_SYS_statmount, &req, &sm, sizeof(sm), 0) < 0)
		return -errno;
	if (!(sm.mask & COVER_STATMOUNT_MNT_BASIC))
		return -ENOSYS;
	*prop = sm.mnt_propagation;
	return 0;
}

/* Where / is not the root of a mount (a chroot whose directory was not made a mount point),
 * the run's mounts cannot be made slaves: MS_SLAVE and mount_setattr take a mount's root, and
 * the root of the mount holding / is outside it, out of reach. The copy unshare made of a
 * shared mount is a peer of the original (a systemd host's / is shared), so a cover put on a
 * shared mount would appear in the launcher's namespace and every other peer's; one put on a
 * mount that is not shared (private, or a slave only) propagates nowhere, and neither does
 * anything mounted on it. statmount says which, of a mount outside the root too, to a caller
 * with CAP_SYS_ADMIN. Returns 0 if the mount the cover goes on is not shared in this
 * namespace; -EXDEV with the sentence in why if it is, or if the kernel cannot say (ENOSYS
 * before Linux 6.8; EPERM where a filter denies it); else -errno with *step set. */
static int cover_stays_here(const char *cover, const char **step, char *why, size_t why_size)
{
	uint64_t prop = 0;
	int rc = propagation(cover, &prop);

	if (rc == -ENOSYS || rc == -EPERM) {
		snprintf(why, why_size, "cannot hide R's private parent in a chroot whose / is not "
			 "a mount point, on a mount not known to be unshared (%s)" COVER_INSTEAD,
			 strerror(-rc));
		return -EXDEV;
	}
	if (rc < 0) {
		*step = "learn whether the mount holding the private directory is shared";
		return rc;
	}
	if (prop & MS_SHARED) {
		snprintf(why, why_size, "cannot hide R's private parent in a chroot whose / is not "
			 "a mount point, on a shared mount (the run's mounts would reach the host)"
			 COVER_INSTEAD);
		return -EXDEV;
	}
	return 0;
}

int mafl_cover_apply(const char *cover, const char *run_dir, int run_fd, const char **step,
		     char *why, size_t why_size)
{
	size_t clen = strlen(cover);
	char self[64];
	int tree, covered, r, work = -1, rc, e, slaves = 1;

	why[0] = '\0';
	if (clen < 2 || strncmp(run_dir, cover, clen) != 0 || run_dir[clen] != '/') {
		*step = "find the private directory above the run directory";
		return -EINVAL;
	}
	*step = "make the run's mount namespace";
	if (unshare(CLONE_NEWNS) < 0)
		return -errno;
	/* Every mount of the copy a slave: what is mounted here never reaches the launcher's
	 * namespace (a systemd host's / is shared), while the host's later mounts still
	 * arrive. / must be a mount's root: in a chroot not made a mount point it is not
	 * (EINVAL), and the cover goes ahead only on a mount that is not shared. */
	*step = "cut the run's mounts off from the host's";
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
		if (errno != EINVAL)
			return -errno;
		rc = cover_stays_here(cover, step, why, why_size);
		if (rc < 0)
			return rc;
		slaves = 0;
	}
	/* R's mount tree, cloned in this namespace before the cover hides it (a mount can only
	 * be cloned from the namespace it is in, so not from run_fd, which is the launcher's).
	 * Without open_tree (Linux before 5.2), a descriptor, bound through /proc later. */
	*step = "take hold of the run directory's mounts";
	tree = (int)syscall(SYS_open_tree, AT_FDCWD, run_dir,
			    OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE, 0, 0);
	if (tree < 0 && errno == ENOSYS)
		tree = openat(AT_FDCWD, run_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tree < 0)
		return -errno;
	if (!same_dir(tree, run_fd)) {
		*step = "find the run directory in the run's mount namespace";
		close(tree);
		return -ESTALE;
	}
	*step = "cover the private directory";
	if (mount("maf-launch", cover, "tmpfs", COVER_FLAGS, COVER_OPTIONS) < 0)
		goto fail;
	covered = openat(AT_FDCWD, cover, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (covered < 0)
		goto fail;
	*step = "make the way down to the run directory";
	rc = make_way(covered, run_dir + clen + 1);
	close(covered);
	if (rc < 0) {
		errno = -rc;
		goto fail;
	}
	*step = "put the run directory back at its path";
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, run_dir, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		if (errno != EINVAL && errno != ENOSYS)
			goto fail;
		/* An O_PATH descriptor (no open_tree), or a kernel refusing to move it: a bind
		 * mount of what it names, through /proc. */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", tree);
		if (mount(self, run_dir, NULL, MS_BIND | MS_REC, NULL) < 0)
			goto fail;
	}
	close(tree);
	tree = -1;
	/* R's clone is a peer of R's mount where that is shared, as long as / could not make
	 * it a slave; it is its own mount's root here, so it can be made one now. */
	if (!slaves) {
		*step = "cut the run directory's mounts off from the host's";
		if (mount(NULL, run_dir, NULL, MS_REC | MS_SLAVE, NULL) < 0)
			goto fail;
	}
	*step = "make the cover read-only";
	if (mount(NULL, cover, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | COVER_FLAGS, NULL) < 0)
		goto fail;
	/* The working directory by the new path, so that its ".." is the cover's, not the
	 * private directory's (a descriptor opened before would lead back into it). */
	*step = "enter the work directory";
	r = openat(AT_FDCWD, run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r < 0)
		goto fail;
	if (!same_dir(r, run_fd)) {
		close(r);
		return -ESTALE;
	}
	work = openat(r, MAFP_DIR_WORK, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(r);
	if (work < 0 || fchdir(work) < 0)
		goto fail;
	close(work);
	return 0;
fail:
	e = errno;
	if (tree >= 0)
		close(tree);
	if (work >= 0)
		close(work);
	return -e;
}
