/* The local backend inside another process's sandbox (mafh_backend_local_enter_new): what a
 * container engine's exec does, for a sandbox that has no engine (bubblewrap's, whose own
 * exec is a broker's, one at a time, that kills every process it leaves behind). A command
 * joins the process's cgroup v2 group and namespaces, and runs with no capability and
 * no_new_privs, as bubblewrap's --cap-drop ALL leaves its own; paths are reached below the
 * process's root (/proc/PID/root) by local_files.c, never leaving it.
 *
 * Why a stand-in: a new PID namespace takes only the children of the process that joined
 * it, so the child that joins forks the command and stays on this side, in its process
 * group (a timeout's kill of the group reaches both), waiting for it and exiting as it did.
 * The command holds the stand-in's death signal: killed with it, never orphaned to run on. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "local.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* The namespaces a command joins where the process's differs from ours. */
static const struct {
	const char *name;
	int flag;
} namespaces[] = {
	{"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS}, {"pid", CLONE_NEWPID},
	{"net", CLONE_NEWNET},   {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
	{"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
};

/* The largest /proc/N/cgroup or mountinfo line read. */
#define LINE_MAX_BYTES 4096

/* The cgroup v2 path of /proc/WHO/cgroup ("0::PATH"), in out; 0, or -1 (none). */
static int unified_path(const char *who, char *out, size_t size)
{
	char path[64], line[LINE_MAX_BYTES];
	FILE *f;
	int found = -1;

	snprintf(path, sizeof(path), "/proc/%s/cgroup", who);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (strncmp(line, "0::", 3) != 0 || n < 5 || line[n - 1] != '\n')
			continue;
		line[n - 1] = '\0';
		if (n - 3 < size) {
			memcpy(out, line + 3, n - 3);
			found = 0;
		}
		break;
	}
	fclose(f);
	return found;
}

/* Where this process sees the cgroup v2 hierarchy's root mounted, in out; 0, or -1. */
static int unified_mount(char *out, size_t size)
{
	char line[LINE_MAX_BYTES];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = -1;

	if (!f)
		return -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		char root[LINE_MAX_BYTES], point[LINE_MAX_BYTES];
		const char *sep = strstr(line, " - ");

		/* "ID PARENT MAJ:MIN ROOT POINT ..." then " - TYPE ...": the hierarchy's own root,
		 * at a mount point without escapes (a space would be \040). */
		if (!sep || strncmp(sep, " - cgroup2 ", 11) != 0 ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
		    strcmp(root, "/") != 0 || strchr(point, '\\') || strlen(point) >= size)
			continue;
		memcpy(out, point, strlen(point) + 1);
		found = 0;
	}
	fclose(f);
	return found;
}

/* The group of pid to join, opened, in *fd (-1: it is ours, or it has none); 0, or a
 * negative errno with the sentence in err. */
static int open_cgroup(int pid, int *fd, struct mafh_error *err)
{
	char who[32], theirs[LINE_MAX_BYTES], ours[LINE_MAX_BYTES], mount[LINE_MAX_BYTES];
	char path[2 * LINE_MAX_BYTES];
	int e;

	*fd = -1;
	snprintf(who, sizeof(who), "%d", pid);
	if (unified_path(who, theirs, sizeof(theirs)) < 0)
		return 0;
	if (unified_path("self", ours, sizeof(ours)) == 0 && strcmp(ours, theirs) == 0)
		return 0;
	if (unified_mount(mount, sizeof(mount)) < 0)
		return mafh__error_set(err, MAFH_EINVAL, "process %d is in cgroup %s, and no "
				       "cgroup v2 hierarchy is mounted here to join it", pid,
				       theirs);
	snprintf(path, sizeof(path), "%s%s", mount, strcmp(theirs, "/") == 0 ? "" : theirs);
	*fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0) {
		e = errno;
		return mafh__error_set(err, -e, "cannot open cgroup %s of process %d: %s", path,
				       pid, strerror(e));
	}
	return 0;
}

/* The namespaces of pid that are not ours, as CLONE_NEW* flags. */
static int foreign_namespaces(int pid)
{
	char mine[64], theirs[64];
	struct stat a, b;
	size_t i;
	int flags = 0;

	for (i = 0; i < sizeof(namespaces) / sizeof(namespaces[0]); i++) {
		snprintf(mine, sizeof(mine), "/proc/self/ns/%s", namespaces[i].name);
		snprintf(theirs, sizeof(theirs), "/proc/%d/ns/%s", pid, namespaces[i].name);
		/* A kind the kernel lacks is no one's. */
		if (stat(theirs, &b) < 0 || stat(mine, &a) < 0)
			continue;
		if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
			flags |= namespaces[i].flag;
	}
	return flags;
}

/* Whether the process of pidfd has ended. A pidfd is readable once its process has exited,
 * a zombie not reaped yet included (a signal to it would still be taken): by then its root
 * and namespaces are let go, and what is reached through them is no longer its sandbox. */
static int ended(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	int n;

	while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR)
		;
	return n > 0;
}

int mafh__local_enter_check(const struct mafh__local_enter *e, struct mafh_error *err)
{
	if (!e || !ended(e->pidfd))
		return 0;
	return mafh__error_set(err, -ESRCH, "process %d has ended: its sandbox is gone",
			       e->pid);
}

int mafh__local_enter_open(int pid, struct mafh__local_enter *e, struct mafh_error *err)
{
	char path[64];
	int rc, saved;

	memset(e, 0, sizeof(*e));
	e->pidfd = e->root = e->cgroup = -1;
	e->pid = pid;
	e->pidfd = (int)syscall(SYS_pidfd_open, pid, 0u);
	if (e->pidfd < 0 && errno == ESRCH)
		return mafh__error_set(err, MAFH_EINVAL, "there is no process %d to enter", pid);
	if (e->pidfd < 0) {
		saved = errno;
		return mafh__error_set(err, -saved, "cannot open process %d: %s", pid,
				       strerror(saved));
	}
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	e->root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (e->root < 0) {
		saved = errno;
		rc = mafh__error_set(err, -saved, "cannot open the root of process %d: %s", pid,
				     strerror(saved));
		goto fail;
	}
	e->ns = foreign_namespaces(pid);
	rc = open_cgroup(pid, &e->cgroup, err);
	if (rc < 0)
		goto fail;
	/* All of it looked up by pid: the process the pidfd names must still be the one, or
	 * another may have taken its number since. */
	if (ended(e->pidfd)) {
		rc = mafh__error_set(err, MAFH_EINVAL, "process %d ended while it was looked at",
				     pid);
		goto fail;
	}
	return 0;
fail:
	mafh__local_enter_close(e);
	return rc;
}

void mafh__local_enter_close(struct mafh__local_enter *e)
{
	if (!e || !e->pid)
		return;
	if (e->pidfd >= 0)
		close(e->pidfd);
	if (e->root >= 0)
		close(e->root);
	if (e->cgroup >= 0)
		close(e->cgroup);
	memset(e, 0, sizeof(*e));
	e->pidfd = e->root = e->cgroup = -1;
}

/* Writes "maf-host: what: why\n" on fd 2 (err_fd once dup'd) and exits 125. */
static void __attribute__((noreturn)) fail(int fd, const char *what)
{
	const char *why = strerror(errno);

	if (write(fd, "maf-host: cannot enter the sandbox: ", 36) < 0 ||
	    write(fd, what, strlen(what)) < 0 || write(fd, ": ", 2) < 0 ||
	    write(fd, why, strlen(why)) < 0 || write(fd, "\n", 1) < 0)
		_exit(125);
	_exit(125);
}

/* Every capability set emptied, the bounding set and the ambient one included, and
 * no_new_privs: what bubblewrap's --cap-drop ALL leaves its own processes. */
static void drop_everything(int err_fd)
{
	struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	int cap;

	for (cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;          /* past the kernel's last capability */
			fail(err_fd, "PR_CAPBSET_DROP");
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		fail(err_fd, "PR_CAP_AMBIENT_CLEAR_ALL");
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &head, data) < 0)
		fail(err_fd, "capset");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(err_fd, "PR_SET_NO_NEW_PRIVS");
}

void mafh__local_enter_child(const struct mafh__local_enter *e, const char *const *argv,
			     const char *cwd, int in_fd, int out_fd, int err_fd)
{
	pid_t self = getpid(), child;
	int status, fd;

	setpgid(0, 0);
	/* The group first, while the host's cgroup tree is still the one seen. */
	if (e->cgroup >= 0) {
		fd = openat(e->cgroup, "cgroup.procs", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1)
			fail(err_fd, "its cgroup");
		close(fd);
	}
	/* One call for all of them, through the pidfd: the namespaces of that very process.
	 * The mount namespace's root becomes ours, and our working directory its root. */
	if (e->ns && syscall(SYS_setns, e->pidfd, e->ns) < 0)
		fail(err_fd, "setns");
	child = fork();
	if (child < 0)
		fail(err_fd, "fork");
	if (child == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
			fail(err_fd, "PR_SET_PDEATHSIG");
		/* The stand-in gone before the signal was set: no one would end this. A parent
		 * outside a new PID namespace is 0 seen from in it. */
		if (getppid() != ((e->ns & CLONE_NEWPID) ? 0 : self))
			_exit(125);
		drop_everything(err_fd);
		mafh__local_child_in(argv, cwd, in_fd, out_fd, err_fd, 0);
	}
	/* Nothing of the command's stays open here: its pipes end when it and what it starts
	 * close them. */
	syscall(SYS_close_range, 0u, ~0u, 0u);
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR)
			_exit(125);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}
