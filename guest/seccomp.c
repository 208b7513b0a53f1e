/* The default seccomp policy (README.md, `maf-launch run`): libseccomp's filter, by name and
 * with the arguments compared, then a small filter by number, the floor (below). Denials
 * return an errno so the program sees an ordinary error (PermissionError in Python); a
 * syscall of another architecture kills the process, since nothing legitimate in the sandbox
 * makes one. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef MAFL_FILTERGEN
#include <seccomp.h>
#endif

#include "contain.h"
#include "util.h"

#ifndef MAFL_FILTERGEN
/* mafl_prebuilt[egress_open][signals_scoped]: the filters build() makes, exported by
 * guest/gen/filtergen.c when the launcher is built, with the supervisor's pid left for
 * the run to fill in. */
#include "seccomp_filters.h"
#endif

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

#ifdef MAFL_FILTERGEN
/* Syscalls denied outright with EPERM, whatever the program's capabilities: tracing or
 * comparing other processes, loading code into the kernel, mounting, changing the root,
 * namespaces, the kernel keyring, and the machine's own state (the clock, the host and domain
 * names, the kernel log, swap, quotas, I/O ports, fanotify's view of every file system,
 * hanging up the terminal). Those numbered from 424 on are in floor_denied. Names unknown to
 * the running libseccomp are skipped (seccomp_syscall_resolve_name returns __NR_SCMP_ERROR),
 * but all of these are older than Linux 4.0 and in every libseccomp's table. */
static const char *const denied[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "bpf", "perf_event_open",
	"userfaultfd", "kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"keyctl", "add_key", "request_key", "swapon", "swapoff", "reboot", "acct", "quotactl",
	"lookup_dcookie", "open_by_handle_at", "name_to_handle_at", "sethostname",
	"setdomainname", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog",
	"iopl", "ioperm", "fanotify_init", "vhangup", "nfsservctl",
};
#endif

/* Syscalls numbered from 424 on have the same number on every architecture (Linux 5.1 on),
 * and a libseccomp release may not know them by name: the numbers are written here, each
 * with the kernel release that added it. */
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425		/* 5.1 */
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426		/* 5.1 */
#endif
#ifndef __NR_io_uring_register
#define __NR_io_uring_register 427	/* 5.1 */
#endif
#ifndef __NR_open_tree
#define __NR_open_tree 428		/* 5.2 */
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429		/* 5.2 */
#endif
#ifndef __NR_fsopen
#define __NR_fsopen 430			/* 5.2 */
#endif
#ifndef __NR_fsconfig
#define __NR_fsconfig 431		/* 5.2 */
#endif
#ifndef __NR_fsmount
#define __NR_fsmount 432		/* 5.2 */
#endif
#ifndef __NR_fspick
#define __NR_fspick 433			/* 5.2 */
#endif
#ifndef __NR_clone3
#define __NR_clone3 435			/* 5.3 */
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438		/* 5.6 */
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440	/* 5.10 */
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442		/* 5.12 */
#endif
#ifndef __NR_quotactl_fd
#define __NR_quotactl_fd 443		/* 5.14 */
#endif
#ifndef __NR_memfd_secret
#define __NR_memfd_secret 447		/* 5.14 */
#endif
#ifndef __NR_process_mrelease
#define __NR_process_mrelease 448	/* 5.15 */
#endif
#ifndef __NR_cachestat
#define __NR_cachestat 451		/* 6.5 */
#endif
#ifndef __NR_statmount
#define __NR_statmount 457		/* 6.8 */
#endif
#ifndef __NR_listmount
#define __NR_listmount 458		/* 6.8 */
#endif
#ifndef __NR_lsm_set_self_attr
#define __NR_lsm_set_self_attr 460	/* 6.8 */
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467		/* 6.15 */
#endif
#ifndef __NR_file_setattr
#define __NR_file_setattr 469		/* 6.17 */
#endif

#if MAFL_SECCOMP_MAX_KNOWN != __NR_file_setattr
#error "MAFL_SECCOMP_MAX_KNOWN is file_setattr: decide about the syscalls after it first"
#endif

/* The first number every architecture shares. */
#define FIRST_SHARED_NR 424

/* The floor's architecture. Below FIRST_SHARED_NR each architecture numbers its own calls,
 * up to OWN_MAX_NR. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define FLOOR_ARCH AUDIT_ARCH_X86_64
#define FLOOR_ARCH_NAME "AUDIT_ARCH_X86_64"
#define OWN_MAX_NR 336			/* uprobe */
#define OWN_MAX_NAME "uprobe"
/* Set in the number of an x32 syscall, which the x86_64 entry point also takes. */
#define X32_SYSCALL_BIT 0x40000000u
#elif defined(__aarch64__)
#define FLOOR_ARCH AUDIT_ARCH_AARCH64
#define FLOOR_ARCH_NAME "AUDIT_ARCH_AARCH64"
#define OWN_MAX_NR 294			/* kexec_file_load */
#define OWN_MAX_NAME "kexec_file_load"
#else
#error "the seccomp floor knows x86_64 and aarch64"
#endif

/* The syscalls numbered from FIRST_SHARED_NR on that the policy denies, in both filters:
 * libseccomp's by name where it knows the name, the floor by number always. With EPERM:
 * io_uring (its operations bypass this filter entirely), the mount API (statmount and
 * listmount included: they read other mount namespaces by id), pidfd_getfd and
 * process_madvise (another process's descriptors and memory), quotas, process_mrelease,
 * lsm_set_self_attr (the program's LSM context, which Landlock keeps it from writing through
 * /proc/self/attr). With ENOSYS, as a kernel without them answers, so callers fall back:
 * clone3, whose flags are in memory the filter cannot read (libc falls back to clone(), whose
 * flags it can); memfd_secret (memory the kernel takes out of its own mappings, which nothing
 * here needs); cachestat (the page-cache state of any file the program can open, a side
 * channel on what other processes read, which mincore answers only for files the caller may
 * write).
 *
 * Allowed from 436 to MAFL_SECCOMP_MAX_KNOWN, and why:
 * - close_range 436, openat2 437, faccessat2 439, epoll_pwait2 441, fchmodat2 452: newer
 *   forms of calls the filter allows (Landlock governs the paths);
 * - landlock_create_ruleset 444, landlock_add_rule 445, landlock_restrict_self 446: Landlock
 *   only narrows what the program may do;
 * - futex_waitv 449, futex_wake 454, futex_wait 455, futex_requeue 456: the program's own
 *   futexes, as futex;
 * - set_mempolicy_home_node 450, map_shadow_stack 453 (libc makes one for each thread under
 *   CET), mseal 462: the program's own memory;
 * - lsm_get_self_attr 459, lsm_list_modules 461: what /proc/self/attr and
 *   /sys/kernel/security/lsm show;
 * - setxattrat 463, getxattrat 464, listxattrat 465, removexattrat 466: the *xattr calls
 *   relative to a directory descriptor;
 * - file_getattr 468, file_setattr 469: the FS_IOC_FSGETXATTR/FSSETXATTR ioctls by path.
 * x86_64's own uretprobe (335, 6.11) and uprobe (336) are allowed: the kernel honours them only
 * from the trampolines it maps for a probe attached to the program, and a denial would break
 * the probe. */
static const struct floor_rule {
	unsigned short nr;
	unsigned short err;
	const char *name;
} floor_denied[] = {
#define DENY(name, err) {__NR_##name, err, #name}
	DENY(io_uring_setup, EPERM), DENY(io_uring_enter, EPERM), DENY(io_uring_register, EPERM),
	DENY(open_tree, EPERM), DENY(move_mount, EPERM), DENY(fsopen, EPERM),
	DENY(fsconfig, EPERM), DENY(fsmount, EPERM), DENY(fspick, EPERM), DENY(clone3, ENOSYS),
	DENY(pidfd_getfd, EPERM), DENY(process_madvise, EPERM), DENY(mount_setattr, EPERM),
	DENY(quotactl_fd, EPERM), DENY(memfd_secret, ENOSYS), DENY(process_mrelease, EPERM),
	DENY(cachestat, ENOSYS), DENY(statmount, EPERM), DENY(listmount, EPERM),
	DENY(lsm_set_self_attr, EPERM), DENY(open_tree_attr, EPERM),
#undef DENY
};

#define NFLOOR_DENIED (sizeof(floor_denied) / sizeof(floor_denied[0]))
/* The floor's length: its fixed part (floor_build) and two instructions a denial. */
#define FLOOR_MAX (14 + 2 * NFLOOR_DENIED)

const char *mafl_seccomp_name(const struct mafl_policy *p)
{
	if (!p->seccomp)
		return "off";
	return p->egress_open ? "default+egress" : "default";
}

#ifdef MAFL_FILTERGEN
/* Without Landlock's signal scope, these reach a process through a descriptor or a pointer
 * the filter cannot read (a pidfd of /proc/<supervisor>, an owner set with F_SETOWN_EX or
 * FIOSETOWN/SIOCSPGRP, whose signal F_SETSIG may make SIGKILL), so they are denied
 * outright. fcntl(F_SETOWN, pid) is checked by value below. */
static const char *const denied_unscoped[] = {"pidfd_send_signal"};

#define FCNTL_F_SETOWN 8
#define FCNTL_F_SETOWN_EX 15
#define IOCTL_FIOSETOWN 0x8901
#define IOCTL_SIOCSPGRP 0x8902
/* Terminal injection: TIOCSTI pushes input into a terminal as if typed; TIOCLINUX's
 * subcommands paste the selection into a virtual console and read its screen. */
#define IOCTL_TIOCSTI 0x5412
#define IOCTL_TIOCLINUX 0x541c
#define IOPRIO_WHO_USER 3

/* Calls that act on another process named by a pid, or a "who" that may name one: only 0,
 * the caller itself (its process group, for setpriority and ioprio_set), passes. Every other
 * value is denied, high bits included: the kernel reads these as ints, so high bits could
 * only make the filter deny a call on the caller, never let one through to another process.
 * libc's setrlimit, nice and setpriority(PRIO_PROCESS, 0) pass 0; pthread_setaffinity_np and
 * pthread_setschedparam, which pass a thread's id, are denied. */
static const struct {
	const char *name;
	unsigned arg;
} self_only[] = {
	{"prlimit64", 0}, {"setpriority", 1}, {"ioprio_set", 1}, {"sched_setaffinity", 0},
	{"sched_setscheduler", 0}, {"sched_setparam", 0}, {"sched_setattr", 0},
	{"migrate_pages", 0}, {"move_pages", 0},
};

/* clone() flags that would create a namespace; each is denied on its own because
 * libseccomp compares a masked argument for equality only. CLONE_NEWTIME (0x80) is left
 * out: for clone() that bit is part of the exit signal. */
static const unsigned long clone_ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
	CLONE_NEWCGROUP,
};

/* Denies each syscall in names outright (names the running libseccomp does not know are
 * skipped: seccomp_syscall_resolve_name returns __NR_SCMP_ERROR). */
static int deny_all(scmp_filter_ctx ctx, const char *const *names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]), rc;

		if (nr == __NR_SCMP_ERROR)
			continue;
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Adds floor_denied to libseccomp's filter by name, skipping the names it does not know
 * (the floor holds those). A name it knows under another number is an error (EINVAL): the
 * floor would deny the wrong call. */
static int deny_floor_names(scmp_filter_ctx ctx)
{
	size_t i;

	for (i = 0; i < NFLOOR_DENIED; i++) {
		const struct floor_rule *r = &floor_denied[i];
		int nr = seccomp_syscall_resolve_name(r->name), rc;

		if (nr == __NR_SCMP_ERROR)
			continue;
		if (nr != r->nr)
			return -EINVAL;
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(r->err), nr, 0);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Denies syscall nr when the low 32 bits of argument arg equal value. */
static int deny_arg_eq(scmp_filter_ctx ctx, int nr, unsigned arg, uint32_t value)
{
	const struct scmp_arg_cmp is_value = {
		.arg = arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffu, .datum_b = value,
	};

	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, is_value);
}

/* Denies sending a signal to pid (and, for kill, to its process group and to every
 * process at once): without Landlock's signal scope the program could otherwise kill its
 * supervisor, outlive the timeout and leave no exit marker. Pids are ints: the low 32 bits
 * are compared. */
static int protect_pid(scmp_filter_ctx ctx, int pid)
{
	static const struct {
		const char *name;
		unsigned arg;
	} targets[] = {
		{"kill", 0}, {"tkill", 0}, {"tgkill", 0}, {"tgkill", 1}, {"rt_sigqueueinfo", 0},
		{"rt_tgsigqueueinfo", 0}, {"rt_tgsigqueueinfo", 1}, {"pidfd_open", 0},
	};
	const uint32_t values[] = {(uint32_t)pid, (uint32_t)-pid, 0xffffffffu};
	size_t i, v;

	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		int nr = seccomp_syscall_resolve_name(targets[i].name);
		/* kill takes a group (-pid) and "everyone" (-1); the others a pid or tid. */
		size_t nvalues = strcmp(targets[i].name, "kill") == 0 ? 3 : 1;

		if (nr == __NR_SCMP_ERROR)
			continue;
		for (v = 0; v < nvalues; v++) {
			int rc = deny_arg_eq(ctx, nr, targets[i].arg, values[v]);

			if (rc < 0)
				return rc;
		}
	}
	/* fcntl(fd, F_SETOWN, pid or -pgrp) makes pid the target of the descriptor's signal. */
	for (v = 0; v < 2; v++) {
		const struct scmp_arg_cmp setown = {
			.arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffu,
			.datum_b = FCNTL_F_SETOWN,
		};
		const struct scmp_arg_cmp owner = {
			.arg = 2, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffu,
			.datum_b = values[v],
		};
		int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fcntl), 2, setown,
					  owner);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static int deny_unscoped_signals(scmp_filter_ctx ctx)
{
	int rc = deny_all(ctx, denied_unscoped, sizeof(denied_unscoped) / sizeof(denied_unscoped[0]));

	if (rc == 0)
		rc = deny_arg_eq(ctx, SCMP_SYS(fcntl), 1, FCNTL_F_SETOWN_EX);
	if (rc == 0)
		rc = deny_arg_eq(ctx, SCMP_SYS(ioctl), 1, IOCTL_FIOSETOWN);
	if (rc == 0)
		rc = deny_arg_eq(ctx, SCMP_SYS(ioctl), 1, IOCTL_SIOCSPGRP);
	return rc;
}

/* Denies each call of self_only unless its pid argument is exactly 0, and the kinds of "who"
 * that name a user rather than a process: setpriority(PRIO_USER, 0) would reach every process
 * of the program's user, the supervisor's included. Only PRIO_PROCESS and PRIO_PGRP (and
 * ioprio's IOPRIO_WHO_PROCESS and IOPRIO_WHO_PGRP) pass: anything from the user kind up is
 * denied, compared in all 64 bits, so that 0x100000002, PRIO_USER to the kernel, is denied
 * too. (An order rather than an equality also keeps these rules unlike the supervisor's:
 * libseccomp merges identical blocks, which would make a prebuilt filter's layout depend on
 * whether the supervisor's pid is 2 or 3.) */
static int deny_other_processes(scmp_filter_ctx ctx)
{
	static const struct {
		const char *name;
		uint32_t user_kind;
	} who[] = {{"setpriority", PRIO_USER}, {"ioprio_set", IOPRIO_WHO_USER}};
	size_t i;

	for (i = 0; i < sizeof(self_only) / sizeof(self_only[0]); i++) {
		const struct scmp_arg_cmp not_self = {
			.arg = self_only[i].arg, .op = SCMP_CMP_NE, .datum_a = 0, .datum_b = 0,
		};
		int nr = seccomp_syscall_resolve_name(self_only[i].name), rc;

		if (nr == __NR_SCMP_ERROR)
			continue;
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, not_self);
		if (rc < 0)
			return rc;
	}
	for (i = 0; i < sizeof(who) / sizeof(who[0]); i++) {
		const struct scmp_arg_cmp user = {
			.arg = 0, .op = SCMP_CMP_GE, .datum_a = who[i].user_kind, .datum_b = 0,
		};
		int nr = seccomp_syscall_resolve_name(who[i].name), rc;

		if (nr == __NR_SCMP_ERROR)
			continue;
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, user);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* mknod and mknodat may make FIFOs, sockets and regular files, not character or block
 * devices: a device node is a way around every other rule here. The kernel reads the mode as
 * a umode_t; the mask takes S_IFMT alone, so no other bit can hide the type. */
static int deny_device_nodes(scmp_filter_ctx ctx)
{
	static const struct {
		const char *name;
		unsigned arg;
	} calls[] = {{"mknod", 1}, {"mknodat", 2}};
	static const uint32_t types[] = {S_IFCHR, S_IFBLK};
	size_t i, t;

	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		int nr = seccomp_syscall_resolve_name(calls[i].name);

		/* Unknown, or not a call of this architecture (aarch64 has mknodat alone). */
		if (nr < 0)
			continue;
		for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			const struct scmp_arg_cmp is_type = {
				.arg = calls[i].arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = S_IFMT,
				.datum_b = types[t],
			};
			int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, is_type);

			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int build(const struct mafl_policy *p, scmp_filter_ctx *out)
{
	scmp_filter_ctx ctx;
	size_t i;
	int rc;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	/* Only the native architecture is in the filter; anything else is killed. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* The syscall number is found by a binary search, not a linear scan. Besides every
	 * call the program makes, this speeds up the load: the kernel runs the filter once for
	 * each syscall number to build its allow cache, so a linear filter's cost grows with its
	 * length at each launch. */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0)
		goto fail;
	rc = deny_all(ctx, denied, sizeof(denied) / sizeof(denied[0]));
	if (rc < 0)
		goto fail;
	for (i = 0; i < sizeof(clone_ns_flags) / sizeof(clone_ns_flags[0]); i++) {
		const struct scmp_arg_cmp has_flag = {
			.arg = 0, .op = SCMP_CMP_MASKED_EQ,
			.datum_a = clone_ns_flags[i], .datum_b = clone_ns_flags[i],
		};

		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, has_flag);
		if (rc < 0)
			goto fail;
	}
	rc = deny_floor_names(ctx);
	if (rc == 0)
		rc = deny_other_processes(ctx);
	if (rc == 0)
		rc = deny_device_nodes(ctx);
	if (rc == 0)
		rc = deny_arg_eq(ctx, SCMP_SYS(ioctl), 1, IOCTL_TIOCSTI);
	if (rc == 0)
		rc = deny_arg_eq(ctx, SCMP_SYS(ioctl), 1, IOCTL_TIOCLINUX);
	if (rc < 0)
		goto fail;
	if (p->supervisor > 0) {
		rc = protect_pid(ctx, p->supervisor);
		if (rc == 0 && !p->signals_scoped)
			rc = deny_unscoped_signals(ctx);
		if (rc < 0)
			goto fail;
	}
	if (!p->egress_open) {
		/* The kernel reads the domain as an int, so 0x100000002 is AF_INET. The
		 * comparison is of all 64 bits: anything but exactly AF_UNIX is denied, so high
		 * bits can only turn an allowed call into a denied one, never the reverse. */
		const struct scmp_arg_cmp not_unix = {
			.arg = 0, .op = SCMP_CMP_NE, .datum_a = AF_UNIX, .datum_b = 0,
		};

		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1, not_unix);
		if (rc < 0)
			goto fail;
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1,
				      not_unix);
		if (rc < 0)
			goto fail;
	}
	*out = ctx;
	return 0;
fail:
	seccomp_release(ctx);
	return rc;
}
#endif

void mafl_seccomp_fill_pid(struct sock_filter *f, const unsigned short *pid_at, size_t npid,
			   const unsigned short *negpid_at, size_t nnegpid, int pid)
{
	size_t i;

	for (i = 0; i < npid; i++)
		f[pid_at[i]].k = (uint32_t)pid;
	for (i = 0; i < nnegpid; i++)
		f[negpid_at[i]].k = (uint32_t)-pid;
}

#ifndef MAFL_FILTERGEN
/* Writes the floor into f (room for FLOOR_MAX instructions); returns its length. It reads the
 * architecture and the number alone, so the kernel's action cache answers every call it
 * allows without running it, and the load costs little: the kernel runs it once a number. */
static size_t floor_build(struct sock_filter *f)
{
	static const struct sock_filter head[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FLOOR_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef X32_SYSCALL_BIT
		/* As in libseccomp's filter, -1 is not an x32 call: the kernel answers it ENOSYS
		 * (a tracer sets it to skip a call). */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 2),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#endif
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, MAFL_SECCOMP_MAX_KNOWN, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		/* floor_denied's numbers are all shared ones. */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, FIRST_SHARED_NR, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, OWN_MAX_NR, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	size_t n = sizeof(head) / sizeof(head[0]), i;

	memcpy(f, head, sizeof(head));
	for (i = 0; i < NFLOOR_DENIED; i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, floor_denied[i].nr,
						      0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						      SECCOMP_RET_ERRNO | floor_denied[i].err);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	return n;
}

/* Loads the floor over libseccomp's filter. Filters stack: for each call the kernel runs
 * both and takes the more restrictive answer, the newer filter's (the floor's) errno when
 * both return one. */
static int load_floor(void)
{
	struct sock_filter f[FLOOR_MAX];
	struct sock_fprog prog = {.filter = f};

	prog.len = (unsigned short)floor_build(f);
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 ? -errno : 0;
}
#endif

#ifndef MAFL_FILTERGEN
/* What the constant k of a comparison stands for: after a load of the architecture, or of
 * the syscall number. */
static const char *floor_note(uint32_t k, int is_nr)
{
	size_t i;

	if (!is_nr)
		return k == FLOOR_ARCH ? FLOOR_ARCH_NAME : NULL;
	for (i = 0; i < NFLOOR_DENIED; i++)
		if (floor_denied[i].nr == k)
			return floor_denied[i].name;
	switch (k) {
#ifdef X32_SYSCALL_BIT
	case X32_SYSCALL_BIT:
		return "the x32 bit";
#endif
	case 0xffffffffu:
		return "-1, no call";
	case MAFL_SECCOMP_MAX_KNOWN:
		return "file_setattr, the highest number known";
	case FIRST_SHARED_NR:
		return "the first number every architecture shares";
	case OWN_MAX_NR:
		return OWN_MAX_NAME ", the last of this architecture's own";
	}
	return NULL;
}

/* Instruction i of the floor f as a line of text into buf; is_nr says whether the number
 * (or the architecture) was loaded last. */
static void floor_line(const struct sock_filter *f, size_t i, int is_nr, char *buf, size_t size)
{
	const struct sock_filter *x = &f[i];
	const char *op = NULL, *note;
	int n;

	switch (x->code) {
	case BPF_LD | BPF_W | BPF_ABS:
		snprintf(buf, size, "%3zu: A = %s\n", i, x->k == offsetof(struct seccomp_data, nr) ?
			 "nr" : x->k == offsetof(struct seccomp_data, arch) ? "arch" : "?");
		return;
	case BPF_RET | BPF_K:
		if ((x->k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO)
			snprintf(buf, size, "%3zu: return ERRNO(%u)\n", i, x->k & SECCOMP_RET_DATA);
		else
			snprintf(buf, size, "%3zu: return %s\n", i,
				 x->k == SECCOMP_RET_ALLOW ? "ALLOW" :
				 x->k == SECCOMP_RET_KILL_PROCESS ? "KILL_PROCESS" : "?");
		return;
	case BPF_JMP | BPF_JEQ | BPF_K:
		op = "==";
		break;
	case BPF_JMP | BPF_JGT | BPF_K:
		op = ">";
		break;
	case BPF_JMP | BPF_JGE | BPF_K:
		op = ">=";
		break;
	}
	if (!op) {
		snprintf(buf, size, "%3zu: {0x%04x, %u, %u, 0x%08x}\n", i, x->code, x->jt, x->jf,
			 x->k);
		return;
	}
	n = snprintf(buf, size, x->k > 0xffff ? "%3zu: if (A %s 0x%08x) goto %zu else goto %zu" :
		     "%3zu: if (A %s %u) goto %zu else goto %zu", i, op, x->k, i + 1 + x->jt,
		     i + 1 + x->jf);
	note = floor_note(x->k, is_nr);
	if (n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, note ? "%*s# %s\n" : "\n",
			 n < 50 ? 50 - n : 1, "", note);
}

int mafl_seccomp_export_floor(const struct mafl_policy *p, int fd)
{
	static const char head[] =
		"# The floor, a filter by syscall number alone, loaded after libseccomp's:\n"
		"# for each call the kernel takes the more restrictive answer, the floor's\n"
		"# errno when both return one. Every number it does not know answers ENOSYS.\n";
	struct sock_filter f[FLOOR_MAX];
	char line[160];
	size_t n, i;
	int is_nr = 0;

	if (!p->seccomp)
		return 0;
	if (mafl_write_all(fd, head, sizeof(head) - 1) < 0)
		return -errno;
	n = floor_build(f);
	for (i = 0; i < n; i++) {
		floor_line(f, i, is_nr, line, sizeof(line));
		if (f[i].code == (BPF_LD | BPF_W | BPF_ABS))
			is_nr = f[i].k == offsetof(struct seccomp_data, nr);
		if (mafl_write_all(fd, line, strlen(line)) < 0)
			return -errno;
	}
	return 0;
}
#endif

#ifndef MAFL_FILTERGEN
/* The prebuilt filter for p with p->supervisor filled in, into f (room for
 * MAFL_PREBUILT_MAX instructions). Returns its length, or 0 when none applies. Every
 * supervisor pid above 1 gives the same layout (filtergen checks it at build time, and
 * `maf-launch policy --check` against libseccomp at run time): pid 1 would make -pid equal
 * -1 in kill's rules, which libseccomp would merge. */
static size_t prebuilt(const struct mafl_policy *p, struct sock_filter *f)
{
	const struct mafl_prebuilt *t = &mafl_prebuilt[!!p->egress_open][!!p->signals_scoped];

	if (p->supervisor <= 1)
		return 0;
	memcpy(f, t->insns, t->len * sizeof(*f));
	mafl_seccomp_fill_pid(f, t->pid_at, t->npid, t->negpid_at, t->nnegpid, p->supervisor);
	return t->len;
}
#endif

#ifndef MAFL_FILTERGEN
int mafl_seccomp_load(const struct mafl_policy *p)
{
	/* No libseccomp in the launcher (it takes most of a millisecond to build the filter,
	 * allocates, and would be most of the binary): the filter libseccomp built when the
	 * launcher was, with the supervisor's pid filled in, and the kernel call seccomp_load
	 * would make. */
	struct sock_filter f[MAFL_PREBUILT_MAX];
	struct sock_fprog prog = {.filter = f};

	if (!p->seccomp)
		return 0;
	prog.len = (unsigned short)prebuilt(p, f);
	if (prog.len == 0)
		return -EINVAL;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return load_floor();
}

int mafl_seccomp_export_pfc(const struct mafl_policy *p, int fd)
{
	const struct mafl_pfc *t = &mafl_pfc[!!p->egress_open];
	char num[16];
	size_t i;

	if (!p->seccomp)
		return 0;
	for (i = 0; i < t->nseg; i++) {
		if (mafl_write_all(fd, t->seg[i], strlen(t->seg[i])) < 0)
			return -errno;
		if (!t->sub[i])
			continue;
		snprintf(num, sizeof(num), "%u", t->sub[i] == 1 ? (uint32_t)p->supervisor
								  : (uint32_t)-p->supervisor);
		if (mafl_write_all(fd, num, strlen(num)) < 0)
			return -errno;
	}
	return 0;
}
#else

/* Builds the filter for p and writes it to fd with export (libseccomp's PFC or BPF). */
static int export_filter(const struct mafl_policy *p, int fd,
			 int (*export)(const scmp_filter_ctx, int))
{
	scmp_filter_ctx ctx;
	int rc = build(p, &ctx);

	if (rc < 0)
		return rc;
	rc = export(ctx, fd);
	seccomp_release(ctx);
	return rc;
}

int mafl_seccomp_export_pfc(const struct mafl_policy *p, int fd)
{
	return p->seccomp ? export_filter(p, fd, seccomp_export_pfc) : 0;
}

ssize_t mafl_seccomp_build_bpf(const struct mafl_policy *p, struct sock_filter *f, size_t max)
{
	ssize_t n;
	off_t len;
	int rc, fd;

	if (!p->seccomp)
		return 0;
	fd = memfd_create("maf-launch-bpf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = export_filter(p, fd, seccomp_export_bpf);
	if (rc < 0)
		goto out;
	len = lseek(fd, 0, SEEK_END);
	if (len < 0 || len % (off_t)sizeof(*f) != 0) {
		rc = -EIO;
		goto out;
	}
	if ((size_t)len / sizeof(*f) > max) {
		rc = -E2BIG;
		goto out;
	}
	n = pread(fd, f, (size_t)len, 0);
	rc = n == len ? (int)(len / (off_t)sizeof(*f)) : -EIO;
out:
	close(fd);
	return rc;
}

#endif
