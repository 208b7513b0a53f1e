/* The program's process (program.h): from the supervisor's vfork to the exec of the program.
 * It shares the supervisor's memory until then (spawn.h), so it allocates nothing; what goes
 * wrong it tells the supervisor through the message pipe, then it exits. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "contain.h"
#include "cover.h"
#include "identity.h"
#include "launch.h"
#include "profile.h"
#include "program.h"
#include "protocol.h"
#include "util.h"
#include "witness.h"

static __attribute__((noreturn)) void child_fail(int fd, int code, int err, const char *what)
{
	struct mafl_program_msg m;

	memset(&m, 0, sizeof(m));
	m.kind = MAFL_PROGRAM_FAIL;
	m.code = code;
	m.err = err;
	mafl_str_copy(m.what, sizeof(m.what), what);
	mafl_write_all(fd, &m, sizeof(m));
	_exit(code);
}

uint64_t mafl_program_ignored_signals(void)
{
	static const char key[] = "SigIgn:\t";
	char buf[2048], *p, *end;
	uint64_t mask = 0;
	ssize_t n = -1;
	int fd = openat(AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = mafl_read_full(fd, buf, sizeof(buf));
		close(fd);
	}
	if (n <= 0)
		return ~(uint64_t)0;
	end = buf + n;
	for (p = buf; (size_t)(end - p) > sizeof(key) && memcmp(p, key, sizeof(key) - 1) != 0;) {
		p = memchr(p, '\n', (size_t)(end - p));
		if (!p)
			return ~(uint64_t)0;
		p++;
	}
	if ((size_t)(end - p) <= sizeof(key))
		return ~(uint64_t)0;
	for (p += sizeof(key) - 1; p < end && *p != '\n'; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;

		if (d < 0 || mask >> 60)
			return ~(uint64_t)0;
		mask = mask << 4 | (uint64_t)d;
	}
	return p < end ? mask : ~(uint64_t)0;
}

/* Keeps this process on the CPU it runs on, and so the program's process it is about to
 * start, which inherits the affinity: a new process is otherwise placed on the idlest CPU,
 * which on an idle machine wakes another CPU only to have this one wait for it (the vfork
 * lasts until the exec). The program's process gives the affinity back before exec
 * (mafl_program_main), and the supervisor once it returns (mafl_cpu_release). Nothing is
 * held where the affinity cannot be read whole (over 1024 CPUs) or changed, or allows one
 * CPU only. The CPU is asked by system call: sched_getcpu() would map the vDSO (util.h). */
void mafl_cpu_hold(struct mafl_cpu_hold *h)
{
	cpu_set_t one;
	unsigned cpu;

	h->held = 0;
	if (sched_getaffinity(0, sizeof(h->saved), &h->saved) < 0 ||
	    CPU_COUNT(&h->saved) < 2 || syscall(SYS_getcpu, &cpu, NULL, NULL) < 0 ||
	    cpu >= CPU_SETSIZE)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	h->held = sched_setaffinity(0, sizeof(one), &one) == 0;
}

int mafl_cpu_release(const struct mafl_cpu_hold *h)
{
	return h->held ? sched_setaffinity(0, sizeof(h->saved), &h->saved) : 0;
}


/* The limits of the program's process: no core, and with an identity of the run's own, at
 * most max_procs processes and threads of it (RLIMIT_NPROC counts per uid: the run's own
 * count); each process at most max_memory of address space. Its oom_score_adj is the
 * highest, so that the kernel's OOM killer takes the run's processes before the host's. */
static int limit_child(const struct run_opts *o, const struct mafl_identity *id,
		       const char **step)
{
	struct rlimit core = {0, 0};
	int fd;

	*step = "set RLIMIT_CORE";
	if (setrlimit(RLIMIT_CORE, &core) < 0)
		return -errno;
	if (id->own && o->max_procs) {
		struct rlimit nproc = {o->max_procs, o->max_procs};

		*step = "set RLIMIT_NPROC";
		if (setrlimit(RLIMIT_NPROC, &nproc) < 0)
			return -errno;
	}
	if (o->max_memory) {
		struct rlimit as = {o->max_memory, o->max_memory};

		*step = "set RLIMIT_AS";
		if (setrlimit(RLIMIT_AS, &as) < 0)
			return -errno;
	}
	/* Best effort: a /proc that is not there (a scratch container without one) takes
	 * nothing from the rest. */
	fd = openat(AT_FDCWD, "/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1000", 4) < 0) {
			/* not worth failing the launch */
		}
		close(fd);
	}
	return 0;
}


/* execvpe, but a directory of PATH that the program's identity may not search is skipped
 * as sh skips it: a PATH that names root's private directories (/root/.local/bin) must not
 * turn "not found" into "permission denied". EACCES is kept only for a file that is there
 * but cannot be executed. PATH is the program's (envp), as its own execvp would read it. */
static int exec_search(const char *file, char *const argv[], char *const envp[])
{
	const char *path = "/usr/local/bin:/bin:/usr/bin", *p, *z;
	size_t flen = strlen(file);
	int eacces = 0, i;

	if (!*file || strchr(file, '/'))
		return execve(file, argv, envp);
	for (i = 0; envp[i]; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			path = envp[i] + 5;
	for (p = path;; p = z + 1) {
		char buf[PATH_MAX];
		struct stat st;
		size_t l;

		z = strchr(p, ':');
		if (!z)
			z = p + strlen(p);
		l = (size_t)(z - p);
		if (l + flen + 2 <= sizeof(buf)) {
			memcpy(buf, p, l);
			buf[l] = '/';
			memcpy(buf + l + (l > 0), file, flen + 1);
			execve(buf, argv, envp);
			if (errno == EACCES && stat(buf, &st) == 0)
				eacces = 1;
			else if (errno != EACCES && errno != ENOENT && errno != ENOTDIR &&
				 errno != ELOOP && errno != ENAMETOOLONG)
				return -1;
		}
		if (!*z)
			break;
	}
	errno = eacces ? EACCES : ENOENT;
	return -1;
}

/* Raw system calls: the C library refuses its own signals (32 and up) in sigaction and keeps
 * them in the mask, yet an ignored or blocked one would survive exec. Handled signals go back
 * to the default at exec by themselves; ignored ones are reset here. */
static void reset_signals(uint64_t ignored)
{
	sigset_t none;
	int i;

	sigemptyset(&none);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, (size_t)(_NSIG / 8));
	for (i = 1; i < _NSIG && i <= 64; i++) {
		struct {
			void (*handler)(int);
			unsigned long flags;
			void (*restorer)(void);
			unsigned long mask;
		} dfl = {SIG_DFL, 0, NULL, 0};

		if (i != SIGKILL && i != SIGSTOP && (ignored >> (i - 1) & 1))
			syscall(SYS_rt_sigaction, i, &dfl, NULL, sizeof(dfl.mask));
	}
}

/* The run's witness, started before anything of the program's containment: it is the
 * launcher's. Its pid goes to the supervisor. */
static void start_witness(const struct mafl_program_args *a, pid_t supervisor)
{
	struct mafl_program_msg m;
	pid_t w = mafl_witness_start(a->marker_r, a->host_tools, supervisor,
				     a->id->own ? a->id->uid : (uid_t)-1);

	if (w < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, errno, "start the run's witness");
	memset(&m, 0, sizeof(m));
	m.kind = MAFL_PROGRAM_WITNESS;
	m.code = (int)w;
	mafl_write_all(a->msg_w, &m, sizeof(m));
}

/* stdin from /dev/null, stdout and stderr into the output pipe, the channel inherited, and
 * the working directory: R/work, under the cover when there is one. */
static void set_up_files(const struct mafl_program_args *a)
{
	char why[sizeof(((struct mafl_program_msg *)0)->what)];
	const char *step = "";
	int devnull, rc;

	devnull = openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, errno, "open /dev/null");
	if (dup2(devnull, 0) < 0 || dup2(a->out_w, 1) < 0 || dup2(a->out_w, 2) < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, errno, "set up stdio");
	if (fcntl(a->chan_fd, F_SETFD, 0) < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, errno, "pass on the call channel");
	if (a->cover[0]) {
		/* Before the identity is taken: it needs CAP_SYS_ADMIN. */
		rc = mafl_cover_apply(a->cover, a->o->run_dir, a->run, &step, why, sizeof(why));
		if (rc < 0 && why[0])
			child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, 0, why);
		if (rc < 0)
			child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, -rc, step);
	} else if (fchdir(a->work) < 0) {
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, errno, "enter the work directory");
	}
}

/* Landlock, best effort: the ABI it found (or why none) goes to the supervisor. */
static void apply_landlock(const struct mafl_program_args *a, struct mafl_policy *policy)
{
	struct mafl_program_msg m;
	int abi;

	policy->own_identity = a->id->own;
	abi = mafl_landlock_apply(policy, a->ruleset, a->o->run_dir, a->o->writable);
	memset(&m, 0, sizeof(m));
	m.kind = MAFL_PROGRAM_LANDLOCK;
	m.code = abi;
	policy->signals_scoped = abi >= MAFL_LANDLOCK_ABI_SCOPE;
	mafl_write_all(a->msg_w, &m, sizeof(m));
}

int mafl_program_main(void *arg)
{
	const struct mafl_program_args *a = arg;
	const struct run_opts *o = a->o;
	struct mafl_policy policy = o->policy;
	pid_t supervisor = getppid();
	const char *step = "";
	int rc;

	MAFL_MARK("program: process started");
	reset_signals(a->ignored);
	if (setsid() < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, errno, "create a session");
	MAFL_MARK("program: signals reset, session made");
	start_witness(a, supervisor);
	MAFL_MARK("program: witness started");
	set_up_files(a);
	MAFL_MARK("program: stdio, channel, working directory");
	rc = limit_child(o, a->id, &step);
	if (rc < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, -rc, step);
	MAFL_MARK("program: limits");
	rc = mafl_identity_take(a->id, &step);
	if (rc < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, -rc, step);
	MAFL_MARK("program: identity taken");
	/* What the program makes is its own alone: other runs may share a place it writes
	 * (/dev/shm, a --writable directory). */
	umask(077);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, errno, "set no_new_privs");
	MAFL_MARK("program: no_new_privs");
	if (o->policy.landlock)
		apply_landlock(a, &policy);
	MAFL_MARK("program: Landlock");
	/* Should the supervisor die anyway (SIGKILL from outside the run), the program goes too.
	 * Set after the identity is taken: a change of credentials clears it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, errno, "tie to the supervisor");
	if (getppid() != supervisor)
		_exit(MAFP_EXIT_LAUNCHER);	/* it died before the tie: nobody to tell */
	policy.supervisor = supervisor;
	/* The caller's affinity, not the CPU the launch kept to (mafl_cpu_hold): before the
	 * seccomp filter, which may not allow it. */
	if (mafl_cpu_release(a->cpus) < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, errno, "restore the CPU affinity");
	MAFL_MARK("program: tied, CPU affinity back");
	rc = mafl_seccomp_load(&policy);
	if (rc < 0)
		child_fail(a->msg_w, MAFP_EXIT_LAUNCHER, -rc, "load the seccomp filter");
	MAFL_MARK("program: seccomp loaded, exec");
	exec_search(o->argv[0], o->argv, a->envp);
	child_fail(a->msg_w, errno == ENOENT ? MAFP_EXIT_NOT_FOUND : MAFP_EXIT_CANNOT_EXEC, errno,
		   "exec");
}
