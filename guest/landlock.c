/* Landlock, applied just before seccomp. Debian 12's headers predate most of the ABI the
 * running kernel may have, so the structures and flags are defined here and the ABI is
 * probed at run time; each right is used only where the probed ABI has it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "contain.h"
#include "launch.h"
#include "protocol.h"
#include "spawn.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_REMOVE_DIR (1ull << 4)
#define LL_FS_REMOVE_FILE (1ull << 5)
#define LL_FS_MAKE_CHAR (1ull << 6)
#define LL_FS_MAKE_DIR (1ull << 7)
#define LL_FS_MAKE_REG (1ull << 8)
#define LL_FS_MAKE_SOCK (1ull << 9)
#define LL_FS_MAKE_FIFO (1ull << 10)
#define LL_FS_MAKE_BLOCK (1ull << 11)
#define LL_FS_MAKE_SYM (1ull << 12)
#define LL_FS_REFER (1ull << 13)         /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14)      /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15)     /* ABI 5 */
#define LL_NET_BIND_TCP (1ull << 0)      /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ull << 1)   /* ABI 4 */
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)      /* ABI 6 */

/* The rights a rule on a file (not a directory) may hold. */
#define LL_FS_FILE_RIGHTS (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | \
			   LL_FS_IOCTL_DEV)

struct ll_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

/* Raw system calls throughout (spawn.h): the launcher builds the ruleset while it shares
 * the supervisor's memory, where the C library's errno is the supervisor's. */
static int ll_abi(void)
{
	long abi = mafl_raw_syscall(__NR_landlock_create_ruleset, 0, 0, LL_CREATE_RULESET_VERSION);

	return abi < 0 ? 0 : (int)abi;
}

/* Adds a rule: access beneath fd (a directory), or on it (a file: only the rights Landlock
 * takes for a file). is_dir is 1 or 0 when the caller knows, -1 to look. */
static int allow_fd(int ruleset, int fd, uint64_t access, int is_dir)
{
	struct ll_path_beneath_attr pb;
	struct stat st;
	long r;

	if (is_dir < 0) {
		r = mafl_raw_syscall(SYS_fstat, fd, (long)&st, 0);
		if (r < 0)
			return (int)r;
		is_dir = S_ISDIR(st.st_mode);
	}
	if (!is_dir)
		access &= LL_FS_FILE_RIGHTS;
	pb.allowed_access = access;
	pb.parent_fd = fd;
	r = mafl_raw_syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, (long)&pb);
	return r < 0 ? (int)r : 0;
}

/* allow_fd on path, resolved as the program would (a path it cannot reach or that is not
 * there adds nothing: it could not write there anyway). */
static int allow_path(int ruleset, int at, const char *path, uint64_t access)
{
	long fd = mafl_raw_openat(at, path, O_PATH | O_CLOEXEC, 0);
	int rc;

	if (fd < 0)
		return fd == -ENOENT || fd == -EACCES || fd == -ENOTDIR ? 0 : (int)fd;
	rc = allow_fd(ruleset, (int)fd, access, -1);
	mafl_raw_close((int)fd);
	return rc;
}

/* Reads and execution everywhere but /dev: each entry of / but dev gets its own rule (a rule
 * on / would take in /dev, and no later rule can take a right back). What /dev holds that a
 * program needs is added apart. An entry that resolves to /dev itself is skipped, and so is
 * a symlink: what it leads to is below / as well, and is allowed (or not) by its own entry
 * here; a rule for it would only widen the rules (a link to / or into /dev). Debian's /bin,
 * /lib and /sbin are links to usr/, which its entry covers. */
static int allow_reads(int ruleset, uint64_t read_x)
{
	char buf[4096] __attribute__((aligned(8)));
	struct stat dev, st;
	long root = mafl_raw_openat(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0), n, fd;
	int rc = 0;

	if (root < 0)
		return (int)root;
	fd = mafl_raw_openat((int)root, "dev", O_PATH | O_CLOEXEC, 0);
	if (fd < 0 || mafl_raw_syscall(SYS_fstat, fd, (long)&dev, 0) < 0)
		dev.st_ino = 0;
	if (fd >= 0)
		mafl_raw_close((int)fd);
	while (rc == 0 && (n = mafl_raw_syscall(SYS_getdents64, root, (long)buf, sizeof(buf))) > 0) {
		for (long off = 0; rc == 0 && off < n;) {
			struct ll_dirent64 *e = (struct ll_dirent64 *)(buf + off);
			int flags = O_PATH | O_CLOEXEC;

			off += e->d_reclen;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
			    strcmp(e->d_name, "dev") == 0 || e->d_type == DT_LNK)
				continue;
			/* An entry of unknown type is opened as itself, and looked at below. */
			if (e->d_type == DT_UNKNOWN)
				flags |= O_NOFOLLOW;
			fd = mafl_raw_openat((int)root, e->d_name, flags, 0);
			if (fd < 0)
				continue;
			/* A file needs no look; a directory may be /dev again (a bind mount of it). */
			if (e->d_type == DT_REG)
				rc = allow_fd(ruleset, (int)fd, read_x, 0);
			else if (mafl_raw_syscall(SYS_fstat, fd, (long)&st, 0) == 0 &&
				 !S_ISLNK(st.st_mode) &&
				 !(dev.st_ino && st.st_ino == dev.st_ino && st.st_dev == dev.st_dev))
				rc = allow_fd(ruleset, (int)fd, read_x, S_ISDIR(st.st_mode));
			mafl_raw_close((int)fd);
		}
	}
	if (n < 0 && rc == 0)
		rc = (int)n;
	mafl_raw_close((int)root);
	return rc;
}

/* The rights the ruleset handles for ABI abi and policy p, in *attr (its size returned):
 * everything the ABI knows of the file system, TCP with egress closed, and signals and
 * abstract sockets outside the run. */
static size_t ruleset_attr(const struct mafl_policy *p, int abi, struct ll_ruleset_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->handled_access_fs = (LL_FS_MAKE_SYM << 1) - 1;
	if (abi >= 2)
		attr->handled_access_fs |= LL_FS_REFER;
	if (abi >= 3)
		attr->handled_access_fs |= LL_FS_TRUNCATE;
	/* Handled and granted nowhere: no ioctl on any device the program opens. */
	if (abi >= 5)
		attr->handled_access_fs |= LL_FS_IOCTL_DEV;
	if (abi >= 4 && !p->egress_open)
		attr->handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
	if (abi >= 6)
		attr->scoped = LL_SCOPE_SIGNAL | (p->egress_open ? 0 : LL_SCOPE_ABSTRACT_UNIX);
	/* Older kernels reject a larger struct than they know. */
	if (abi < 4)
		return offsetof(struct ll_ruleset_attr, handled_access_net);
	if (abi < 6)
		return offsetof(struct ll_ruleset_attr, scoped);
	return sizeof(*attr);
}

/* Where the program may write: everything handled but making devices and device ioctls. */
static uint64_t write_rights(const struct ll_ruleset_attr *attr)
{
	return attr->handled_access_fs & ~(LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK | LL_FS_IOCTL_DEV);
}

int mafl_landlock_ruleset(const struct mafl_policy *p)
{
	/* The devices a program needs; the rest of /dev is out of its reach. */
	static const char *const devices[] = {"/dev/null", "/dev/zero", "/dev/full",
					      "/dev/random", "/dev/urandom"};
	struct ll_ruleset_attr attr;
	uint64_t read_x = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
	int abi = ll_abi(), rc;
	size_t attr_size, i;
	long ruleset;

	if (abi <= 0)
		return -ENOSYS;
	attr_size = ruleset_attr(p, abi, &attr);
	ruleset = mafl_raw_syscall(__NR_landlock_create_ruleset, (long)&attr, (long)attr_size, 0);
	if (ruleset < 0)
		return (int)ruleset;
	rc = allow_reads((int)ruleset, read_x);
	if (rc == 0)
		rc = allow_path((int)ruleset, AT_FDCWD, "/dev", LL_FS_READ_DIR);
	for (i = 0; rc == 0 && i < sizeof(devices) / sizeof(devices[0]); i++)
		rc = allow_path((int)ruleset, AT_FDCWD, devices[i],
				LL_FS_READ_FILE | LL_FS_WRITE_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0));
	/* Shared memory between the run's processes (Python's multiprocessing): only with an
	 * identity of the run's own, whose files there no other run can read (its umask is
	 * 077); under the launcher's identity every run could reach them. */
	if (rc == 0 && p->own_identity)
		rc = allow_path((int)ruleset, AT_FDCWD, "/dev/shm", write_rights(&attr));
	if (rc < 0) {
		mafl_raw_close((int)ruleset);
		return rc;
	}
	return (int)ruleset;
}

int mafl_landlock_apply(const struct mafl_policy *p, int ruleset, const char *run_dir,
			const char *const *writable)
{
	/* The run's own: its work, its temporary directory, the files of its calls. */
	static const char *const own[] = {MAFP_DIR_WORK, MAFL_DIR_TMP,
					  MAFP_DIR_HOST_TOOLS "/" MAFP_DIR_CALLS};
	struct ll_ruleset_attr attr;
	uint64_t write_all;
	int abi = ll_abi(), rc = 0;
	long run;
	size_t i;

	if (abi <= 0) {
		if (ruleset >= 0)
			mafl_raw_close(ruleset);
		return 0;
	}
	ruleset_attr(p, abi, &attr);
	write_all = write_rights(&attr);
	if (ruleset < 0)
		ruleset = mafl_landlock_ruleset(p);
	if (ruleset < 0)
		return ruleset;
	run = mafl_raw_openat(AT_FDCWD, run_dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (run < 0)
		rc = (int)run;
	for (i = 0; rc == 0 && i < sizeof(own) / sizeof(own[0]); i++)
		rc = allow_path(ruleset, (int)run, own[i], write_all);
	for (i = 0; rc == 0 && writable && writable[i]; i++)
		rc = allow_path(ruleset, AT_FDCWD, writable[i], write_all);
	if (run >= 0)
		mafl_raw_close((int)run);
	if (rc == 0) {
		long r = mafl_raw_syscall(__NR_landlock_restrict_self, ruleset, 0, 0);

		if (r < 0)
			rc = (int)r;
	}
	mafl_raw_close(ruleset);
	return rc < 0 ? rc : abi;
}

void mafl_landlock_name(int result, char *buf, size_t size)
{
	if (result > 0)
		snprintf(buf, size, "abi-%d", result);
	else if (result == 0)
		snprintf(buf, size, "unsupported");
	else
		snprintf(buf, size, "failed");
}
