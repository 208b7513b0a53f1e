/* The default seccomp policy (README.md, `maf-launch run`), built with libseccomp. Denials return an errno so
 * the program sees an ordinary error (PermissionError in Python); a syscall of another
 * architecture kills the process, since nothing legitimate in the sandbox makes one. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>

#include "contain.h"

#ifndef MAFL_FILTERGEN
/* mafl_prebuilt[egress_open][signals_scoped]: the filters build() makes, exported by
 * guest/gen/filtergen.c when the launcher is built, with the supervisor's pid left for
 * the run to fill in. */
#include "seccomp_filters.h"
#endif

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* Syscalls denied outright with EPERM: tracing other processes, loading code into the
 * kernel, mounting, namespaces and the kernel keyring. io_uring is denied because its
 * operations bypass this filter entirely. Names unknown to the running libseccomp are
 * skipped (seccomp_syscall_resolve_name returns __NR_SCMP_ERROR). */
static const char *const denied[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open",
	"userfaultfd", "kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "mount", "umount2", "pivot_root", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "unshare", "setns",
	"keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter",
	"io_uring_register", "swapon", "swapoff", "reboot", "acct", "quotactl",
	"lookup_dcookie", "open_by_handle_at", "name_to_handle_at", "pidfd_getfd",
	"process_madvise",
};

/* Without Landlock's signal scope, these reach a process through a descriptor or a pointer
 * the filter cannot read (a pidfd of /proc/<supervisor>, an owner set with F_SETOWN_EX or
 * FIOSETOWN/SIOCSPGRP, whose signal F_SETSIG may make SIGKILL), so they are denied
 * outright. fcntl(F_SETOWN, pid) is checked by value below. */
static const char *const denied_unscoped[] = {"pidfd_send_signal"};

#define FCNTL_F_SETOWN 8
#define FCNTL_F_SETOWN_EX 15
#define IOCTL_FIOSETOWN 0x8901
#define IOCTL_SIOCSPGRP 0x8902

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

const char *mafl_seccomp_name(const struct mafl_policy *p)
{
	if (!p->seccomp)
		return "off";
	return p->egress_open ? "default+egress" : "default";
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
	/* clone3 passes its flags in memory the filter cannot read; ENOSYS makes libc fall back
	 * to clone(), whose flags it can. */
	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
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

int mafl_seccomp_load(const struct mafl_policy *p)
{
	scmp_filter_ctx ctx;
	int rc;

	if (!p->seccomp)
		return 0;
#ifndef MAFL_FILTERGEN
	{
		/* The run's path: no libseccomp (it takes most of a millisecond to build the
		 * filter, and allocates), just the kernel call seccomp_load would make. */
		struct sock_filter f[MAFL_PREBUILT_MAX];
		struct sock_fprog prog = {.len = (unsigned short)prebuilt(p, f), .filter = f};

		if (prog.len > 0)
			return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 ? -errno
											    : 0;
	}
#endif
	rc = build(p, &ctx);
	if (rc < 0)
		return rc;
	rc = seccomp_load(ctx);
	seccomp_release(ctx);
	return rc;
}

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

#ifndef MAFL_FILTERGEN
int mafl_seccomp_check(const struct mafl_policy *p, char *why, size_t size)
{
	struct sock_filter built[MAFL_PREBUILT_MAX], pre[MAFL_PREBUILT_MAX];
	ssize_t n = mafl_seccomp_build_bpf(p, built, MAFL_PREBUILT_MAX);
	size_t m, i;

	if (n < 0) {
		snprintf(why, size, "libseccomp cannot build the filter: %s", strerror((int)-n));
		return -1;
	}
	if (!p->seccomp)
		return 0;
	m = prebuilt(p, pre);
	if (m == 0) {
		snprintf(why, size, "no prebuilt filter applies to supervisor pid %d; a run would "
			 "build it with libseccomp", p->supervisor);
		return 1;
	}
	if ((size_t)n != m) {
		snprintf(why, size, "libseccomp builds %zd instructions, the prebuilt filter has %zu",
			 n, m);
		return -1;
	}
	for (i = 0; i < m; i++) {
		if (memcmp(&built[i], &pre[i], sizeof(pre[i])) != 0) {
			snprintf(why, size, "instruction %zu differs: libseccomp {0x%04x, %u, %u, "
				 "0x%08x}, prebuilt {0x%04x, %u, %u, 0x%08x}", i, built[i].code,
				 built[i].jt, built[i].jf, built[i].k, pre[i].code, pre[i].jt,
				 pre[i].jf, pre[i].k);
			return -1;
		}
	}
	return 0;
}
#endif
