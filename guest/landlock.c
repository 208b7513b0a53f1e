/* Landlock, applied just before seccomp. Debian 12's headers predate most of the ABI the
 * running kernel may have, so the structures and flags are defined here and the ABI is
 * probed at run time; each right is used only where the probed ABI has it. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "contain.h"

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

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

static int ll_abi(void)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);

	return abi < 0 ? 0 : (int)abi;
}

static int allow_beneath(int ruleset, const char *path, uint64_t access)
{
	struct ll_path_beneath_attr pb;
	int fd = openat(AT_FDCWD, path, O_PATH | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;	/* an absent /var/tmp is no error */
	pb.allowed_access = access;
	pb.parent_fd = fd;
	if (syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int mafl_landlock_apply(const struct mafl_policy *p, const char *run_dir)
{
	static const char *const writable[] = {"/tmp", "/var/tmp", "/dev"};
	struct ll_ruleset_attr attr;
	uint64_t read_x = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
	size_t attr_size = sizeof(attr);
	int abi = ll_abi(), ruleset, rc;
	size_t i;

	if (abi <= 0)
		return 0;
	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = (LL_FS_MAKE_SYM << 1) - 1;
	if (abi >= 2)
		attr.handled_access_fs |= LL_FS_REFER;
	if (abi >= 3)
		attr.handled_access_fs |= LL_FS_TRUNCATE;
	if (abi >= 5)
		attr.handled_access_fs |= LL_FS_IOCTL_DEV;
	if (abi >= 4 && !p->egress_open)
		attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
	if (abi >= 6)
		attr.scoped = LL_SCOPE_SIGNAL | (p->egress_open ? 0 : LL_SCOPE_ABSTRACT_UNIX);
	/* Older kernels reject a larger struct than they know. */
	if (abi < 4)
		attr_size = offsetof(struct ll_ruleset_attr, handled_access_net);
	else if (abi < 6)
		attr_size = offsetof(struct ll_ruleset_attr, scoped);
	ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0);
	if (ruleset < 0)
		return -errno;
	rc = allow_beneath(ruleset, "/", read_x);
	if (rc == 0)
		rc = allow_beneath(ruleset, run_dir, attr.handled_access_fs);
	for (i = 0; rc == 0 && i < sizeof(writable) / sizeof(writable[0]); i++)
		rc = allow_beneath(ruleset, writable[i], attr.handled_access_fs);
	if (rc == 0 && syscall(__NR_landlock_restrict_self, ruleset, 0) < 0)
		rc = -errno;
	close(ruleset);
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
