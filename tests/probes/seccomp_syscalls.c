/* Probe for tests/integration/test_seccomp_live.py: makes each syscall the default seccomp
 * filter has an opinion on and prints one line per check, "NAME 0" when the call succeeded or
 * "NAME errno=N" when it failed, so the test can compare a filtered run with an unfiltered one.
 * Calls that would change the probe itself (namespaces, tracing) are made in a forked child
 * that reports through its exit status. Usage: seccomp_syscalls CHECK... | all */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
/* Numbers newer than the C library's headers (the same on every architecture). */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_futex_wake
#define SYS_futex_wake 454
#endif
#ifndef SYS_statmount
#define SYS_statmount 457
#endif
#ifndef SYS_listmount
#define SYS_listmount 458
#endif
#ifndef SYS_lsm_set_self_attr
#define SYS_lsm_set_self_attr 460
#endif
#ifndef SYS_mseal
#define SYS_mseal 462
#endif
#ifndef SYS_getxattrat
#define SYS_getxattrat 464
#endif
#ifndef SYS_open_tree_attr
#define SYS_open_tree_attr 467
#endif
#ifndef SYS_file_getattr
#define SYS_file_getattr 468
#endif
#ifndef SYS_file_setattr
#define SYS_file_setattr 469
#endif

/* A result: >= 0 success, else -errno. */
static long res(long rc)
{
	return rc < 0 ? -errno : 0;
}

static long close_res(long fd)
{
	if (fd < 0)
		return -errno;
	close((int)fd);
	return 0;
}

/* Runs fn in a forked child; the child's exit status carries fn's errno (0: success). */
static long in_child(long (*fn)(void))
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1000 - errno;
	if (pid == 0)
		_exit((int)-fn());
	if (waitpid(pid, &st, 0) < 0)
		return -1000 - errno;
	if (!WIFEXITED(st))
		return -2000 - (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return -WEXITSTATUS(st);
}

static long socket_raw(unsigned long domain)
{
	return close_res(syscall(SYS_socket, domain, SOCK_STREAM, 0));
}

static long socketpair_of(int domain)
{
	int sv[2];

	if (socketpair(domain, SOCK_STREAM, 0, sv) < 0)
		return -errno;
	close(sv[0]);
	close(sv[1]);
	return 0;
}

static long c_socket_inet(void) { return close_res(socket(AF_INET, SOCK_STREAM, 0)); }
static long c_socket_inet6(void) { return close_res(socket(AF_INET6, SOCK_DGRAM, 0)); }
static long c_socket_unix(void) { return close_res(socket(AF_UNIX, SOCK_STREAM, 0)); }
static long c_socket_netlink(void) { return close_res(socket(AF_NETLINK, SOCK_RAW, 0)); }
/* The kernel reads the domain as an int: 0x100000002 is AF_INET to it. */
static long c_socket_inet_highbit(void) { return socket_raw(0x100000002UL); }
static long c_socket_unix_highbit(void) { return socket_raw(0x100000001UL); }
static long c_socketpair_unix(void) { return socketpair_of(AF_UNIX); }
static long c_socketpair_inet(void) { return socketpair_of(AF_INET); }

static long c_io_uring_setup(void)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	return close_res(syscall(SYS_io_uring_setup, 1, &p));
}

static long traceme(void)
{
	return res(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
}

static long c_ptrace_traceme(void) { return in_child(traceme); }

static long c_ptrace_attach(void)
{
	long rc;
	pid_t pid = fork();

	if (pid < 0)
		return -1000 - errno;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	rc = res(ptrace(PTRACE_ATTACH, pid, NULL, NULL));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return rc;
}

/* An invalid command: EINVAL from the kernel, EPERM from the filter. */
static long c_bpf(void) { return res(syscall(SYS_bpf, 0xffff, NULL, 0)); }

static long c_perf_event_open(void)
{
	return close_res(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
}

static long c_userfaultfd(void) { return close_res(syscall(SYS_userfaultfd, O_CLOEXEC)); }

static long c_process_vm_readv(void)
{
	char a = 0, b = 1;
	struct iovec l = {&a, 1}, r = {&b, 1};

	return res(syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0));
}

static long c_keyctl(void)
{
	/* KEYCTL_GET_KEYRING_ID (0) of KEY_SPEC_PROCESS_KEYRING (-2), not creating it. */
	return res(syscall(SYS_keyctl, 0, -2, 0));
}

static long unshare_user(void) { return res(unshare(CLONE_NEWUSER)); }
static long unshare_net(void) { return res(unshare(CLONE_NEWNET)); }
static long c_unshare_user(void) { return in_child(unshare_user); }
static long c_unshare_net(void) { return in_child(unshare_net); }

static long c_setns(void) { return res(setns(-1, 0)); }

/* A mount point that does not exist: ENOENT from the kernel, EPERM from the filter. */
static long c_mount(void)
{
	return res(mount("none", "/nonexistent-maf-probe/dir", "tmpfs", 0, NULL));
}

static long c_umount2(void) { return res(umount2("/nonexistent-maf-probe/dir", 0)); }

/* clone() with a NULL stack behaves like fork(); the child leaves at once. */
static long clone_flags(unsigned long flags)
{
	int st;
	long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);

	if (pid < 0)
		return -errno;
	if (pid == 0)
		syscall(SYS_exit, 0);
	waitpid((pid_t)pid, &st, 0);
	return 0;
}

static long c_clone_plain(void) { return clone_flags(0); }
static long c_clone_newuser(void) { return clone_flags(CLONE_NEWUSER); }
static long c_clone_newnet(void) { return clone_flags(CLONE_NEWNET); }
static long c_clone_newpid(void) { return clone_flags(CLONE_NEWPID); }
static long c_clone_newns(void) { return clone_flags(CLONE_NEWNS); }

/* A zero size: EINVAL from the kernel (no child is made), ENOSYS from the filter. */
static long c_clone3(void) { return res(syscall(SYS_clone3, NULL, 0)); }

static long c_fork(void)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(7);
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : -1000;
}

/* pidfd_getfd takes a descriptor out of another process, like ptrace. */
static long c_pidfd_getfd(void)
{
	long pidfd, fd, rc;
	pid_t pid = fork();

	if (pid < 0)
		return -1000 - errno;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		rc = -1000 - errno;
	} else {
		fd = syscall(SYS_pidfd_getfd, pidfd, 1, 0);
		rc = close_res(fd);
		close((int)pidfd);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return rc;
}

/* The checks below pass arguments that fail harmlessly without the filter (a path that does
 * not exist, invalid flags, a bad pointer) or change nothing, so the control never changes
 * the machine, and as root the kernel's answer is not EPERM. */
#define NOWHERE "/nonexistent-maf-probe/dir"
#define BAD_PTR ((void *)1)

/* Calls from 424 on that the policy denies. open_tree_attr, statmount, listmount and
 * lsm_set_self_attr are unknown to libseccomp 2.5.4 by name: only the floor denies them. */
static long c_open_tree_attr(void)
{
	return close_res(syscall(SYS_open_tree_attr, AT_FDCWD, NOWHERE, 0, NULL, 0));
}

static long c_quotactl_fd(void) { return res(syscall(SYS_quotactl_fd, -1, 0, 0, NULL)); }
static long c_process_mrelease(void) { return res(syscall(SYS_process_mrelease, -1, 0)); }
static long c_statmount(void) { return res(syscall(SYS_statmount, NULL, NULL, 0, 0)); }
static long c_listmount(void) { return res(syscall(SYS_listmount, NULL, NULL, 0, 0)); }

static long c_lsm_set_self_attr(void)
{
	return res(syscall(SYS_lsm_set_self_attr, 0, NULL, 0, 0));
}

/* Answered ENOSYS, as by a kernel without them. Invalid flags: EINVAL without the filter. */
static long c_memfd_secret(void) { return close_res(syscall(SYS_memfd_secret, ~0u)); }
static long c_cachestat(void) { return res(syscall(SYS_cachestat, -1, NULL, NULL, 0)); }

/* Numbers the filter does not know answer ENOSYS; -1 is no call at all. */
static long c_nr_after_known(void) { return res(syscall(470)); }
static long c_nr_1000(void) { return res(syscall(1000)); }
static long c_nr_minus_1(void) { return res(syscall(-1)); }
#if defined(__x86_64__)
/* Between x86_64's own numbers and the shared ones. */
static long c_nr_own_gap(void) { return res(syscall(337)); }
#else
static long c_nr_own_gap(void) { return -ENOSYS; }
#endif

/* Newer calls the policy allows: the filter answers as the kernel does. */
static long c_file_setattr(void)
{
	return res(syscall(SYS_file_setattr, AT_FDCWD, NOWHERE, NULL, 0, 0));
}

static long c_file_getattr(void)
{
	return res(syscall(SYS_file_getattr, AT_FDCWD, NOWHERE, NULL, 0, 0));
}

static long c_getxattrat(void)
{
	return res(syscall(SYS_getxattrat, AT_FDCWD, NOWHERE, 0, "user.x", NULL, 0));
}

static long c_fchmodat2(void) { return res(syscall(SYS_fchmodat2, AT_FDCWD, NOWHERE, 0600, 0)); }
/* An address that is not page-aligned: EINVAL. */
static long c_mseal(void) { return res(syscall(SYS_mseal, 1, 4096, 0)); }

static long c_futex_wake(void)
{
	static unsigned int word;

	/* Any bit of a 32-bit futex, FUTEX2_SIZE_U32 | FUTEX2_PRIVATE: wakes nobody. */
	return res(syscall(SYS_futex_wake, &word, 0xfffffffful, 1, 0x02 | 128));
}

/* LANDLOCK_CREATE_RULESET_VERSION: the ABI version, or EOPNOTSUPP when Landlock is off. */
static long c_landlock_abi(void) { return res(syscall(SYS_landlock_create_ruleset, NULL, 0, 1)); }

/* The mount API and the machine's own state. */
static long c_open_tree(void) { return close_res(syscall(SYS_open_tree, AT_FDCWD, NOWHERE, 0)); }
static long c_move_mount(void) { return res(syscall(SYS_move_mount, -1, "", -1, "", ~0u)); }
static long c_fsopen(void) { return close_res(syscall(SYS_fsopen, "tmpfs", ~0u)); }
static long c_fsconfig(void) { return res(syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0)); }
static long c_fsmount(void) { return close_res(syscall(SYS_fsmount, -1, 0, 0)); }
static long c_fspick(void) { return close_res(syscall(SYS_fspick, -1, "", ~0u)); }

static long c_mount_setattr(void)
{
	return res(syscall(SYS_mount_setattr, -1, "", ~0u, NULL, 0));
}

/* No device and a command that is not Q_SYNC: ENODEV. */
static long c_quotactl(void) { return res(syscall(SYS_quotactl, 0, NULL, 0, NULL)); }
/* A negative length: EINVAL once the capability check has passed. */
static long c_sethostname(void) { return res(syscall(SYS_sethostname, BAD_PTR, -1)); }
static long c_setdomainname(void) { return res(syscall(SYS_setdomainname, BAD_PTR, -1)); }
/* The time is read from a bad pointer before anything is set: EFAULT. */
static long c_settimeofday(void) { return res(syscall(SYS_settimeofday, BAD_PTR, NULL)); }
/* CLOCK_MONOTONIC cannot be set: EINVAL. */
static long c_clock_settime(void)
{
	return res(syscall(SYS_clock_settime, CLOCK_MONOTONIC, BAD_PTR));
}

static long c_clock_adjtime(void)
{
	return res(syscall(SYS_clock_adjtime, CLOCK_REALTIME, BAD_PTR));
}

static long c_adjtimex(void) { return res(syscall(SYS_adjtimex, BAD_PTR)); }
static long c_fanotify_init(void) { return close_res(syscall(SYS_fanotify_init, ~0u, 0)); }
static long c_chroot(void) { return res(syscall(SYS_chroot, NOWHERE)); }

/* Level 4 does not exist: EINVAL (ENOSYS on kernels built without I/O port access). */
static long c_iopl(void)
{
#ifdef SYS_iopl
	return res(syscall(SYS_iopl, 4));
#else
	return -ENOSYS;
#endif
}

/* An empty range: EINVAL (or ENOSYS, as iopl). */
static long c_ioperm(void)
{
#ifdef SYS_ioperm
	return res(syscall(SYS_ioperm, 0, 0, 0));
#else
	return -ENOSYS;
#endif
}

/* SYSLOG_ACTION_SIZE_BUFFER: reads the size of the kernel log, nothing more. */
static long c_syslog(void) { return res(syscall(SYS_syslog, 10, NULL, 0)); }

/* In a new session, which has no controlling terminal to hang up. */
static long vhangup_alone(void)
{
	if (setsid() < 0)
		return -1000 - errno;
	return res(syscall(SYS_vhangup));
}

static long c_vhangup(void) { return in_child(vhangup_alone); }
/* Gone from the kernel since 3.1: ENOSYS. */
static long c_nfsservctl(void) { return res(syscall(SYS_nfsservctl, 0, NULL, NULL)); }
static long c_add_key(void) { return res(syscall(SYS_add_key, NULL, NULL, NULL, 0, 0)); }
static long c_request_key(void) { return res(syscall(SYS_request_key, NULL, NULL, NULL, 0)); }

/* An unknown kind of object: EINVAL (ENOSYS without CONFIG_KCMP). */
static long c_kcmp(void) { return res(syscall(SYS_kcmp, getpid(), getpid(), 99, 0, 0)); }

/* Calls that name another process: the parent (the supervisor) is denied; the same call on
 * pid 0, the caller, answers as without the filter. Arguments that would change the parent
 * are invalid (a bad pointer: EFAULT) or change nothing (its own value set again). */
static long c_prlimit_parent(void)
{
	struct rlimit old;

	return res(syscall(SYS_prlimit64, getppid(), RLIMIT_NOFILE, NULL, &old));
}

/* The kernel reads the pid as an int: high bits still name the parent. */
static long c_prlimit_parent_highbit(void)
{
	struct rlimit old;

	return res(syscall(SYS_prlimit64, (1ul << 32) | (unsigned long)getppid(), RLIMIT_NOFILE,
			   NULL, &old));
}

static long c_prlimit_self(void)
{
	struct rlimit old;

	return res(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &old));
}

/* libc's setrlimit is prlimit64 on pid 0. */
static long c_setrlimit_self(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) < 0)
		return -1000 - errno;
	return res(setrlimit(RLIMIT_NOFILE, &r));
}

/* Its nice value set again: nothing changes. getpriority is allowed. */
static long set_same_priority(int which, int who, int of)
{
	int nice;

	errno = 0;
	nice = getpriority(which, of);
	if (nice == -1 && errno)
		return -1000 - errno;
	return res(setpriority(which, who, nice));
}

static long c_setpriority_parent(void)
{
	return set_same_priority(PRIO_PROCESS, getppid(), getppid());
}

static long c_setpriority_self(void) { return set_same_priority(PRIO_PROCESS, 0, 0); }
/* The probe leads its session (the run's): its process group is its own. */
static long c_setpriority_pgrp_self(void) { return set_same_priority(PRIO_PGRP, 0, 0); }

/* PRIO_USER with who 0 is every process of the caller's user: in a child that has become a
 * user with no other process, so that the control touches nothing else. 255: no such user
 * could be had (not root). */
#define LONELY_UID 2147357236u

static long priority_user_alone(void)
{
	if (setresuid(LONELY_UID, LONELY_UID, LONELY_UID) < 0)
		return -255;
	return set_same_priority(PRIO_USER, 0, 0);
}

static long c_setpriority_user(void) { return in_child(priority_user_alone); }

static long c_sched_setaffinity_parent(void)
{
	return res(syscall(SYS_sched_setaffinity, getppid(), 8, BAD_PTR));
}

static long c_sched_setaffinity_self(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return -1000 - errno;
	return res(syscall(SYS_sched_setaffinity, 0, sizeof(set), &set));
}

/* musl has no sched_setscheduler: the system call itself. */
static long c_sched_setscheduler_parent(void)
{
	return res(syscall(SYS_sched_setscheduler, getppid(), SCHED_OTHER, BAD_PTR));
}

static long c_sched_setscheduler_self(void)
{
	struct sched_param sp = {.sched_priority = 0};

	return res(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &sp));
}

static long c_sched_setparam_parent(void)
{
	return res(syscall(SYS_sched_setparam, getppid(), BAD_PTR));
}

static long c_sched_setparam_self(void)
{
	struct sched_param sp = {.sched_priority = 0};

	return res(syscall(SYS_sched_setparam, 0, &sp));
}

static long c_sched_setattr_parent(void)
{
	return res(syscall(SYS_sched_setattr, getppid(), BAD_PTR, 0));
}

static long c_sched_setattr_self(void) { return res(syscall(SYS_sched_setattr, 0, BAD_PTR, 0)); }

/* I/O priority class 7 does not exist: EINVAL before any process is looked at. */
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_WHO_USER 3
#define IOPRIO_BAD (7 << 13)

static long c_ioprio_set_parent(void)
{
	return res(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, getppid(), IOPRIO_BAD));
}

/* Class none: the default, which the probe may set on itself. */
static long c_ioprio_set_self(void)
{
	return res(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, 0));
}

static long c_ioprio_set_user(void)
{
	return res(syscall(SYS_ioprio_set, IOPRIO_WHO_USER, 0, IOPRIO_BAD));
}

/* A node mask longer than a page: EINVAL before any page moves. */
static long c_migrate_pages_parent(void)
{
	return res(syscall(SYS_migrate_pages, getppid(), 1ul << 30, BAD_PTR, BAD_PTR));
}

static long c_migrate_pages_self(void)
{
	return res(syscall(SYS_migrate_pages, 0, 1ul << 30, BAD_PTR, BAD_PTR));
}

/* Unknown flags: EINVAL. */
static long c_move_pages_parent(void)
{
	return res(syscall(SYS_move_pages, getppid(), 1, BAD_PTR, NULL, BAD_PTR, ~0u));
}

/* Device nodes: denied whatever the path; without the filter the path's missing directory
 * makes the call fail (ENOENT) before a node is made. FIFOs, sockets and regular files are
 * made in the working directory (the run's) and removed. */
#define NOWHERE_NODE "nonexistent-maf-probe/node"

static long mknod_res(int (*make)(const char *, mode_t, dev_t), const char *path, mode_t mode)
{
	long rc = res(make(path, mode, 0));

	if (rc == 0)
		unlink(path);
	return rc;
}

static int mknodat_cwd(const char *path, mode_t mode, dev_t dev)
{
	return mknodat(AT_FDCWD, path, mode, dev);
}

static long c_mknod_chr(void) { return res(mknod(NOWHERE_NODE, S_IFCHR | 0600, makedev(1, 3))); }
static long c_mknod_blk(void) { return res(mknod(NOWHERE_NODE, S_IFBLK | 0600, makedev(7, 0))); }

static long c_mknodat_chr(void)
{
	return res(mknodat(AT_FDCWD, NOWHERE_NODE, S_IFCHR | 0600, makedev(1, 3)));
}

static long c_mknodat_blk(void)
{
	return res(mknodat(AT_FDCWD, NOWHERE_NODE, S_IFBLK | 0600, makedev(7, 0)));
}

/* The kernel reads a umode_t: bits above it do not hide the type. */
static long c_mknodat_chr_highbits(void)
{
	return res(syscall(SYS_mknodat, AT_FDCWD, NOWHERE_NODE, 0xffff0000ul | S_IFCHR | 0600,
			   makedev(1, 3)));
}

static long c_mknod_fifo(void) { return mknod_res(mknod, "maf-probe-fifo", S_IFIFO | 0600); }
static long c_mknodat_fifo(void)
{
	return mknod_res(mknodat_cwd, "maf-probe-fifo", S_IFIFO | 0600);
}

static long c_mknod_sock(void) { return mknod_res(mknod, "maf-probe-sock", S_IFSOCK | 0600); }
static long c_mknod_reg(void) { return mknod_res(mknod, "maf-probe-reg", S_IFREG | 0600); }

/* Terminal injection on a pipe, which is no terminal: ENOTTY without the filter. */
static long pipe_ioctl(unsigned long cmd, void *arg)
{
	int p[2];
	long rc;

	if (pipe(p) < 0)
		return -1000 - errno;
	rc = res(ioctl(p[0], cmd, arg));
	close(p[0]);
	close(p[1]);
	return rc;
}

static long c_tiocsti(void) { return pipe_ioctl(TIOCSTI, "x"); }

static long c_tioclinux(void)
{
	char subcode = 0;

	return pipe_ioctl(TIOCLINUX, &subcode);
}

/* Other ioctls still pass. */
static long c_fionread(void)
{
	int n;

	return pipe_ioctl(FIONREAD, &n);
}

static const struct check {
	const char *name;
	long (*fn)(void);
} checks[] = {
#define C(n) {#n, c_##n}
	C(socket_inet), C(socket_inet6), C(socket_unix), C(socket_netlink),
	C(socket_inet_highbit), C(socket_unix_highbit), C(socketpair_unix), C(socketpair_inet),
	C(io_uring_setup), C(ptrace_traceme), C(ptrace_attach), C(bpf), C(perf_event_open),
	C(userfaultfd), C(process_vm_readv), C(keyctl), C(unshare_user), C(unshare_net),
	C(setns), C(mount), C(umount2), C(clone_plain), C(clone_newuser), C(clone_newnet),
	C(clone_newpid), C(clone_newns), C(clone3), C(fork), C(pidfd_getfd),
	C(open_tree_attr), C(quotactl_fd), C(process_mrelease), C(statmount), C(listmount),
	C(lsm_set_self_attr), C(memfd_secret), C(cachestat), C(nr_after_known), C(nr_1000),
	C(nr_minus_1), C(nr_own_gap), C(file_setattr), C(file_getattr), C(getxattrat),
	C(fchmodat2), C(mseal), C(futex_wake), C(landlock_abi),
	C(open_tree), C(move_mount), C(fsopen), C(fsconfig), C(fsmount), C(fspick),
	C(mount_setattr), C(quotactl), C(sethostname), C(setdomainname), C(settimeofday),
	C(clock_settime), C(clock_adjtime), C(adjtimex), C(fanotify_init), C(chroot), C(iopl),
	C(ioperm), C(syslog), C(vhangup), C(nfsservctl), C(add_key), C(request_key),
	C(kcmp), C(prlimit_parent), C(prlimit_parent_highbit), C(prlimit_self),
	C(setrlimit_self), C(setpriority_parent), C(setpriority_self), C(setpriority_pgrp_self),
	C(setpriority_user), C(sched_setaffinity_parent), C(sched_setaffinity_self),
	C(sched_setscheduler_parent), C(sched_setscheduler_self), C(sched_setparam_parent),
	C(sched_setparam_self), C(sched_setattr_parent), C(sched_setattr_self),
	C(ioprio_set_parent), C(ioprio_set_self), C(ioprio_set_user), C(migrate_pages_parent),
	C(migrate_pages_self), C(move_pages_parent),
	C(mknod_chr), C(mknod_blk), C(mknodat_chr), C(mknodat_blk), C(mknodat_chr_highbits),
	C(mknod_fifo), C(mknodat_fifo), C(mknod_sock), C(mknod_reg),
	C(tiocsti), C(tioclinux), C(fionread),
#undef C
};

#define NCHECKS (sizeof(checks) / sizeof(checks[0]))

static void run(const struct check *c)
{
	long rc = c->fn();

	if (rc == 0)
		printf("%s 0\n", c->name);
	else
		printf("%s errno=%ld\n", c->name, -rc);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t j;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: seccomp_syscalls CHECK... | all\n");
		return 2;
	}
	for (i = 1; i < argc; i++) {
		int found = 0;

		for (j = 0; j < NCHECKS; j++) {
			if (strcmp(argv[i], "all") == 0 || strcmp(argv[i], checks[j].name) == 0) {
				run(&checks[j]);
				found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "seccomp_syscalls: unknown check '%s'\n", argv[i]);
			return 2;
		}
	}
	printf("done\n");
	return 0;
}
