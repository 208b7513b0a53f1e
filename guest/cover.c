/* The program's view of a run directory below a private one (cover.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "cover.h"
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

int mafl_cover_apply(const char *cover, const char *run_dir, int run_fd, const char **step)
{
	size_t clen = strlen(cover);
	char self[64];
	int tree, covered, r, work = -1, rc, e;

	if (clen < 2 || strncmp(run_dir, cover, clen) != 0 || run_dir[clen] != '/') {
		*step = "find the private directory above the run directory";
		return -EINVAL;
	}
	*step = "make the run's mount namespace";
	if (unshare(CLONE_NEWNS) < 0)
		return -errno;
	/* Every mount of the copy a slave: what is mounted here never reaches the launcher's
	 * namespace (a systemd host's / is shared), while the host's later mounts still
	 * arrive. / must be a mount's root (it is, but in a chroot not made a mount point). */
	*step = "cut the run's mounts off from the host's";
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return -errno;
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
