/* The kernel's struct statx (256 bytes), for statx(2) called through syscall(): musl 1.2.3
 * declares none, and glibc's and the kernel's headers clash. */
#ifndef MAFL_KSTATX_H
#define MAFL_KSTATX_H

#include <stdint.h>

struct mafl_statx {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, spare0;
	uint64_t ino, size, blocks, attributes_mask;
	struct {
		int64_t sec;
		uint32_t nsec;
		int32_t reserved;
	} atime, btime, ctime, mtime;
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t mnt_id;
	uint64_t spare2[13];
};

#endif
