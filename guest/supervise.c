/* The supervisor: the process maf-launch run leaves behind with the program. It leads its
 * own session, is the child subreaper of the whole run, relays the program's output into the
 * capped output file, enforces the timeout, ends every process of the run when the program
 * ends, and publishes the exit record and the legacy markers. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "contain.h"
#include "cover.h"
#include "identity.h"
#include "profile.h"
#include "protocol.h"
#include "run.h"
#include "spawn.h"
#include "tree.h"
#include "util.h"
#include "witness.h"

/* Messages from the program's process to the supervisor over a close-on-exec pipe: EOF
 * without a FAIL message means exec succeeded. */
enum child_msg_kind { CHILD_LANDLOCK = 1, CHILD_FAIL = 2, CHILD_WITNESS = 3 };
struct child_msg {
	int kind;
	int code;               /* FAIL: the launcher exit code; LANDLOCK: the ABI or <= 0;
				 * WITNESS: the witness's pid */
	int err;                /* errno */
	char what[96];          /* FAIL: the step that failed */
};

/* Tells the launcher how the launch went, once: the error line for its stderr. */
static void send_report(int fd, int code, const char *fmt,
			...) __attribute__((format(printf, 3, 4)));
static void send_report(int fd, int code, const char *fmt, ...)
{
	struct launch_report rep;
	char line[sizeof(rep.text) - 64];
	va_list ap;
	int n;

	memset(&rep, 0, sizeof(rep));
	rep.exit_code = code;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = snprintf(rep.text, sizeof(rep.text), "%s: %s\n", mafl_prog, line);
	rep.len = n < (int)sizeof(rep.text) ? (unsigned)n : (unsigned)sizeof(rep.text) - 1;
	mafl_write_all(fd, &rep, sizeof(rep));
	close(fd);
}

/* Tells the launcher the program runs: the lines for its stdout, with what contains it. */
static void send_started(int fd, pid_t pid, const struct mafl_identity *id,
			 const char *landlock)
{
	struct launch_report rep;
	struct mafp_launch_info info = {.pid = pid, .supervisor_pid = getpid(), .session = pid,
					.uid = id->uid, .gid = id->gid};
	int n;

	mafl_str_copy(info.identity, sizeof(info.identity),
		      id->own ? MAFP_IDENTITY_OWN : MAFP_IDENTITY_LAUNCHER);
	mafl_str_copy(info.landlock, sizeof(info.landlock), landlock);
	memset(&rep, 0, sizeof(rep));
	n = mafp_launch_info_format(&info, rep.text, sizeof(rep.text));
	if (n < 0 || (size_t)n + strlen(MAFP_SESSION_LINE) + 3 > sizeof(rep.text)) {
		send_report(fd, MAFP_EXIT_LAUNCHER, "cannot format the launch line");
		return;
	}
	n += snprintf(rep.text + n, sizeof(rep.text) - (size_t)n, "\n%s\n", MAFP_SESSION_LINE);
	rep.len = (unsigned)n;
	mafl_write_all(fd, &rep, sizeof(rep));
	close(fd);
}

static __attribute__((noreturn)) void child_fail(int fd, int code, int err, const char *what)
{
	struct child_msg m;

	memset(&m, 0, sizeof(m));
	m.kind = CHILD_FAIL;
	m.code = code;
	m.err = err;
	mafl_str_copy(m.what, sizeof(m.what), what);
	mafl_write_all(fd, &m, sizeof(m));
	_exit(code);
}

/* The signals this process ignores, from SigIgn in /proc/self/status (bit N-1 for signal
 * N): three system calls rather than one sigaction per signal. Without /proc, all of them. */
static uint64_t ignored_signals(void)
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
		int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;

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
 * (child_exec), and this one once it returns (release_cpu). Nothing is held where the
 * affinity cannot be read whole (over 1024 CPUs) or changed, or allows one CPU only. The
 * CPU is asked by system call: sched_getcpu() would map the vDSO (util.h). */
static void hold_cpu(struct mafl_cpu_hold *h)
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

/* Restores the affinity hold_cpu() found, if it held. Returns 0 or -1 with errno set. */
static int release_cpu(const struct mafl_cpu_hold *h)
{
	return h->held ? sched_setaffinity(0, sizeof(h->saved), &h->saved) : 0;
}

struct child_args {
	const struct run_opts *o;
	const struct mafl_identity *id;
	int work;               /* R/work */
	int run;                /* R */
	const char *cover;      /* the directory above R to cover (cover.h); "": none */
	int host_tools;         /* R/host_tools, for the witness */
	int ruleset;            /* the Landlock ruleset the launcher began (run.c), or -1 */
	uint64_t ignored;       /* the signals this process ignores (ignored_signals) */
	int marker_r;           /* the witness's end of the hand-over pipe */
	int out_w, msg_w, chan_fd;
	char **envp;
	const struct mafl_cpu_hold *cpus;
};

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

/* In the program's process: session and witness, stdio, containment (rlimits, no_new_privs,
 * Landlock, seccomp, in that order), exec. */
static __attribute__((noreturn)) void child_exec(const struct child_args *a)
{
	const struct run_opts *o = a->o;
	int out_w = a->out_w, msg_fd = a->msg_w, chan_fd = a->chan_fd;
	char **envp = a->envp;
	struct mafl_policy policy = o->policy;
	pid_t supervisor = getppid();
	const char *step = "";
	sigset_t none;
	uint64_t ignored;
	int devnull, i, rc;

	MAFL_MARK("program: process started");
	/* Raw syscalls: the C library refuses its own signals (32 and up) in sigaction and
	 * keeps them in the mask, yet an ignored or blocked one would survive exec. Handled
	 * signals go back to the default at exec by themselves; ignored ones are reset here. */
	sigemptyset(&none);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, (size_t)(_NSIG / 8));
	ignored = a->ignored;
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
	if (setsid() < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, errno, "create a session");
	MAFL_MARK("program: signals reset, session made");
	{
		/* Before anything of the program's containment: the witness is the launcher's. */
		struct child_msg m;
		pid_t w = mafl_witness_start(a->marker_r, a->host_tools, supervisor,
					     a->id->own ? a->id->uid : (uid_t)-1);

		if (w < 0)
			child_fail(msg_fd, MAFP_EXIT_LAUNCHER, errno, "start the run's witness");
		memset(&m, 0, sizeof(m));
		m.kind = CHILD_WITNESS;
		m.code = (int)w;
		mafl_write_all(msg_fd, &m, sizeof(m));
	}
	MAFL_MARK("program: witness started");
	devnull = openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, errno, "open /dev/null");
	if (dup2(devnull, 0) < 0 || dup2(out_w, 1) < 0 || dup2(out_w, 2) < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, errno, "set up stdio");
	if (fcntl(chan_fd, F_SETFD, 0) < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, errno, "pass on the call channel");
	if (a->cover[0]) {
		/* Before the identity is taken: it needs CAP_SYS_ADMIN. */
		rc = mafl_cover_apply(a->cover, o->run_dir, a->run, &step);
		if (rc < 0)
			child_fail(msg_fd, MAFP_EXIT_LAUNCHER, -rc, step);
	} else if (fchdir(a->work) < 0) {
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, errno, "enter the work directory");
	}
	MAFL_MARK("program: stdio, channel, working directory");
	rc = limit_child(o, a->id, &step);
	if (rc < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, -rc, step);
	MAFL_MARK("program: limits");
	rc = mafl_identity_take(a->id, &step);
	if (rc < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, -rc, step);
	MAFL_MARK("program: identity taken");
	/* What the program makes is its own alone: other runs may share a place it writes
	 * (/dev/shm, a --writable directory). */
	umask(077);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, errno, "set no_new_privs");
	MAFL_MARK("program: no_new_privs");
	if (o->policy.landlock) {
		struct child_msg m;
		int abi;

		policy.own_identity = a->id->own;
		abi = mafl_landlock_apply(&policy, a->ruleset, o->run_dir, o->writable);

		memset(&m, 0, sizeof(m));
		m.kind = CHILD_LANDLOCK;
		m.code = abi;
		policy.signals_scoped = abi >= MAFL_LANDLOCK_ABI_SCOPE;
		mafl_write_all(msg_fd, &m, sizeof(m));
	}
	MAFL_MARK("program: Landlock");
	/* Should the supervisor die anyway (SIGKILL from outside the run), the program goes too.
	 * Set after the identity is taken: a change of credentials clears it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, errno, "tie to the supervisor");
	if (getppid() != supervisor)
		_exit(MAFP_EXIT_LAUNCHER);	/* it died before the tie: nobody to tell */
	policy.supervisor = supervisor;
	/* The caller's affinity, not the CPU the launch kept to (hold_cpu): before the seccomp
	 * filter, which may not allow it. */
	if (release_cpu(a->cpus) < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, errno, "restore the CPU affinity");
	MAFL_MARK("program: tied, CPU affinity back");
	rc = mafl_seccomp_load(&policy);
	if (rc < 0)
		child_fail(msg_fd, MAFP_EXIT_LAUNCHER, -rc, "load the seccomp filter");
	MAFL_MARK("program: seccomp loaded, exec");
	exec_search(o->argv[0], o->argv, envp);
	child_fail(msg_fd, errno == ENOENT ? MAFP_EXIT_NOT_FOUND : MAFP_EXIT_CANNOT_EXEC, errno,
		   "exec");
}

/* The program's process, started by mafl_spawn_vfork: until exec it borrows the supervisor's
 * memory, so it allocates nothing and leaves only through exec or _exit. */
static int child_main(void *arg)
{
	child_exec(arg);
}

struct sup {
	const struct run_opts *o;
	const struct run_dirs *d;
	struct mafl_identity id;
	struct mafl_lent_dirs lent;
	pid_t pid;               /* the program */
	pid_t witness;           /* the run's witness (witness.h); 0: none made */
	int witness_alive;
	int witness_killed;      /* it died of a signal (a witness that exited could not work) */
	int marker_w;            /* the supervisor's end of the hand-over pipe; -1: closed */
	int session_killed;      /* the witness died before the end: the host ended the run */
	int sfd;                 /* the signalfd */
	int out_fd;              /* program_output.txt */
	int out_r;               /* the read end of the program's stdout/stderr */
	unsigned long long out_bytes, out_kept;
	int out_truncated, out_broken;
	int main_alive, main_wstatus;
	long long start_ms;
	enum mafp_status status;
	char landlock[32];
};

/* Moves whatever the program wrote into the output file, keeping at most max_output bytes
 * and counting the rest. Returns 0 at EOF, 1 after moving some, 2 if there is nothing to
 * read just now. */
static int relay_output(struct sup *s)
{
	char buf[65536];
	ssize_t n = read(s->out_r, buf, sizeof(buf));

	if (n < 0)
		return (errno == EINTR || errno == EAGAIN) ? 2 : 0;
	if (n == 0)
		return 0;
	s->out_bytes += (unsigned long long)n;
	if (!s->out_broken && s->out_kept < s->o->max_output) {
		unsigned long long room = s->o->max_output - s->out_kept;
		size_t keep = (unsigned long long)n < room ? (size_t)n : (size_t)room;

		if (mafl_write_all(s->out_fd, buf, keep) < 0)
			s->out_broken = 1;	/* e.g. ENOSPC: stop writing, keep draining */
		else
			s->out_kept += keep;
		if (keep < (size_t)n)
			s->out_truncated = 1;
	} else {
		s->out_truncated = 1;
	}
	return 1;
}

/* Reaps every child that has ended, the program's process and the witness included
 * (__WALL: they are clone children, witness.h). */
static void reap(struct sup *s)
{
	int st;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
		if (p == s->pid) {
			s->main_alive = 0;
			s->main_wstatus = st;
		} else if (p == s->witness) {
			s->witness_alive = 0;
			s->witness_killed = WIFSIGNALED(st);
		}
	}
}

/* Ends every process of the run: SIGKILL to each descendant until none is left. Orphans are
 * reparented to us (child subreaper), so "no child left" means "no descendant left" (the
 * witness, which is spared, is a clone child that waitpid() without __WALL does not see). A
 * process forked between a scan and the kills is found by the next scan. */
static void kill_run(struct sup *s)
{
	for (;;) {
		int n = mafl_tree_signal(getpid(), SIGKILL, s->witness);

		reap(s);
		if (n == 0 && waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			break;
		if (n < 0)
			break;	/* /proc is unreadable: the sweep below is all there is */
		{
			struct timespec ts = {0, 1000000};

			nanosleep(&ts, NULL);
		}
	}
	/* With an identity of its own, the run is every process of it, wherever it went. The
	 * tree is reaped by now, so in the usual case the sweep finds nobody at once. */
	mafl_identity_sweep(&s->id, 0);
	reap(s);
}

static void arm(int tfd, long long ms)
{
	struct itimerspec it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_nsec = (ms % 1000) * 1000000;
	if (ms <= 0)
		it.it_value.tv_nsec = 1;
	timerfd_settime(tfd, 0, &it, NULL);
}

/* SIGTERM to the whole run now, SIGKILL after the grace (the timer fires again). */
static void begin_end(struct sup *s, enum mafp_status why, int tfd, int *phase)
{
	if (*phase != 0)
		return;
	s->status = why;
	mafl_tree_signal(getpid(), SIGTERM, s->witness);
	*phase = 1;
	arm(tfd, s->o->grace_ms);
}

/* How long the witness may take to publish what it was handed (two fsyncs) before it is
 * killed, the markers then missing. */
#define WITNESS_WAIT_MS 10000

/* Waits for the witness to exit and reaps it; kills it if it takes too long. Returns 1 if
 * it could not publish (WITNESS_EXIT_FAILED), else 0. */
static int wait_witness(struct sup *s)
{
	long long end = mafl_now_ms() + WITNESS_WAIT_MS;

	while (s->witness_alive) {
		struct pollfd pf = {.fd = s->sfd, .events = POLLIN};
		struct signalfd_siginfo si;
		long long left = end - mafl_now_ms();
		int st;
		pid_t p = waitpid(s->witness, &st, WNOHANG | __WALL);

		if (p == s->witness || (p < 0 && errno != EINTR)) {
			s->witness_alive = 0;
			return p == s->witness && WIFEXITED(st) &&
			       WEXITSTATUS(st) == WITNESS_EXIT_FAILED;
		}
		if (left <= 0) {
			kill(s->witness, SIGKILL);
			while (waitpid(s->witness, &st, __WALL) < 0 && errno == EINTR)
				;
			s->witness_alive = 0;
			break;
		}
		if (poll(&pf, 1, (int)left) > 0)
			while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
	}
	return 0;
}

/* Ends the witness, for a run whose launch failed (its record is the supervisor's to write:
 * the host has not heard of the run yet). */
static void end_witness(struct sup *s)
{
	if (!s->witness_alive)
		return;
	kill(s->witness, SIGKILL);
	while (waitpid(s->witness, NULL, __WALL) < 0 && errno == EINTR)
		;
	s->witness_alive = 0;
}

/* Publishes the record and the exit marker: through the witness once the run has started
 * (witness.h), nothing at all if the host killed the session meanwhile, or directly for a
 * launch that failed (direct), when no host can know of the run yet. */
static void write_markers(struct sup *s, const struct mafp_exit_record *rec, int direct)
{
	char num[32];
	char *json = mafp_exit_record_encode(rec);
	int n;

	/* The run is over: its directory goes back to its owner before a host may see the
	 * end (the markers) and clean up, and what it left in /dev/shm is removed. */
	mafl_identity_take_back(&s->id, s->d, &s->lent);
	mafl_identity_clean_shared(&s->id);
	n = snprintf(num, sizeof(num), "%d", rec->exit_code);
	if (!direct && s->witness_alive && !s->session_killed) {
		int rc = mafl_witness_hand_over(s->marker_w, json ? json : "",
						json ? strlen(json) : 0, num, (size_t)n);

		s->marker_w = -1;
		/* The witness could not publish (it runs with no capability, as the owner of
		 * R/host_tools only when that is the launcher): the supervisor does. */
		direct = rc == 0 ? wait_witness(s) : (end_witness(s), 0);
	} else if (!direct && s->witness && !s->witness_killed && !s->session_killed) {
		/* The witness exited by itself at its start, unable to take its uid. */
		direct = 1;
	}
	if (direct) {
		/* The record first, durably: once program_exit_code exists a host may reclaim
		 * the run. */
		if (json)
			mafl_publish_at(s->d->host_tools, MAFP_FILE_EXIT_RECORD, json,
					strlen(json), 1);
		mafl_publish_at(s->d->host_tools, MAFP_MARKER_EXIT_CODE, num, (size_t)n, 1);
	}
	free(json);
}

static void fill_usage(struct mafp_exit_record *rec, long long start_ms)
{
	struct rusage ru;

	rec->wall_ms = mafl_now_ms() - start_ms;
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		rec->cpu_ms = (int64_t)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 +
			      (int64_t)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
		rec->peak_rss_kb = ru.ru_maxrss;
	}
}

/* The program could not be started: say so in the output file, the exit record and the
 * legacy marker (as sh would have, with 126 or 127), and to the launcher. */
static __attribute__((noreturn)) void launch_failed(struct sup *s, int report_fd,
						    const struct child_msg *m)
{
	struct mafp_exit_record rec;
	char line[512];
	int n;

	reap(s);
	if (m->code == MAFP_EXIT_NOT_FOUND)
		n = snprintf(line, sizeof(line), "%s: not found", s->o->argv[0]);
	else if (m->code == MAFP_EXIT_CANNOT_EXEC)
		n = snprintf(line, sizeof(line), "%s: cannot execute: %s", s->o->argv[0],
			     strerror(m->err));
	else
		n = snprintf(line, sizeof(line), "cannot %s: %s", m->what, strerror(m->err));
	if (n >= (int)sizeof(line))
		n = sizeof(line) - 1;
	dprintf(s->out_fd, "maf-launch: %s\n", line);
	memset(&rec, 0, sizeof(rec));
	rec.status = MAFP_STATUS_LAUNCH_FAILED;
	rec.exit_code = m->code;
	mafl_str_copy(rec.seccomp, sizeof(rec.seccomp), mafl_seccomp_name(&s->o->policy));
	mafl_str_copy(rec.landlock, sizeof(rec.landlock), s->landlock);
	mafl_str_copy(rec.error, sizeof(rec.error), line);
	fill_usage(&rec, s->start_ms);
	end_witness(s);
	write_markers(s, &rec, 1);
	send_report(report_fd, m->code, "%s", line);
	_exit(0);
}

/* Reads the program process's messages until exec or failure. Returns the failure
 * message's kind (CHILD_FAIL) with *fail filled, or 0 when exec succeeded.
 *
 * After a fork, exec is known by EOF: the write end is close-on-exec. After
 * mafl_spawn_vfork, the child has already exec'd or exited by the time we run, and every
 * message it wrote is in the pipe: the pipe is non-blocking, and a pipe with nothing left
 * in it means exec (the close-on-exec itself may still be on its way). */
static int await_exec(struct sup *s, int msg_r, struct child_msg *fail)
{
	struct child_msg m;

	for (;;) {
		ssize_t n = read(msg_r, &m, sizeof(m));

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && errno == EAGAIN))
			return 0;
		if (n != (ssize_t)sizeof(m)) {
			/* Died between fork and exec without a word (e.g. killed). Messages are
			 * smaller than PIPE_BUF, so one is never read in part. */
			memset(fail, 0, sizeof(*fail));
			fail->kind = CHILD_FAIL;
			fail->code = MAFP_EXIT_LAUNCHER;
			fail->err = n < 0 ? errno : EIO;
			snprintf(fail->what, sizeof(fail->what), "start the program");
			return CHILD_FAIL;
		}
		if (m.kind == CHILD_LANDLOCK) {
			mafl_landlock_name(m.code, s->landlock, sizeof(s->landlock));
		} else if (m.kind == CHILD_WITNESS) {
			s->witness = (pid_t)m.code;
			s->witness_alive = 1;
		} else if (m.kind == CHILD_FAIL) {
			*fail = m;
			return CHILD_FAIL;
		}
	}
}

/* The run's environment plus MAF_HOST_TOOLS_FD, MAF_HOST_TOOLS_SOCKET and MAF_HOST_TOOLS, in
 * the launch arena (util.h). NULL on ENOMEM. */
static char **channel_env(char **envp, int fd, char **tools, const char *run_dir)
{
	size_t n = 0, len = 1, i;
	char **out, *list, *fd_var, *sock_var;
	int fd_len, sock_len;

	while (envp[n])
		n++;
	for (i = 0; tools && tools[i]; i++)
		len += strlen(tools[i]) + 1;
	fd_len = snprintf(NULL, 0, "%s=%d", MAFL_CHANNEL_FD_ENV, fd) + 1;
	sock_len = snprintf(NULL, 0, "%s=%s/%s/%s", MAFL_CHANNEL_SOCKET_ENV, run_dir,
			    MAFP_DIR_HOST_TOOLS, MAFP_FILE_CHANNEL_SOCKET) + 1;
	out = mafl_arena_calloc(n + 4, sizeof(*out));
	list = mafl_arena_calloc(strlen(MAFL_CHANNEL_TOOLS_ENV "=") + len, 1);
	fd_var = mafl_arena_calloc((size_t)fd_len, 1);
	sock_var = mafl_arena_calloc((size_t)sock_len, 1);
	if (!out || !list || !fd_var || !sock_var) {
		mafl_arena_free(sock_var);
		mafl_arena_free(fd_var);
		mafl_arena_free(list);
		mafl_arena_free(out);
		return NULL;
	}
	memcpy(out, envp, n * sizeof(*out));
	snprintf(fd_var, (size_t)fd_len, "%s=%d", MAFL_CHANNEL_FD_ENV, fd);
	snprintf(sock_var, (size_t)sock_len, "%s=%s/%s/%s", MAFL_CHANNEL_SOCKET_ENV, run_dir,
		 MAFP_DIR_HOST_TOOLS, MAFP_FILE_CHANNEL_SOCKET);
	strcpy(list, MAFL_CHANNEL_TOOLS_ENV "=");
	for (i = 0; tools && tools[i]; i++) {
		if (i)
			strcat(list, " ");
		strcat(list, tools[i]);
	}
	out[n] = fd_var;
	out[n + 1] = sock_var;
	out[n + 2] = list;
	return out;
}

/* The next file the launcher made for the launch (run.c): its descriptor, or -1 with *err
 * set (the launcher's errno, or EPIPE if it has gone without a word). */
static int take_launcher_file(int sock, int *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = err, .iov_len = sizeof(*err)};
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;
	ssize_t n;
	int fd = -1;

	*err = 0;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	/* A failed recvmsg leaves the control buffer as it was: unset, so not read. */
	for (c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	if (n != (ssize_t)sizeof(*err) || *err != 0 || fd < 0) {
		if (fd >= 0)
			close(fd);
		if (n != (ssize_t)sizeof(*err) || *err <= 0)
			*err = EPIPE;
		return -1;
	}
	return fd;
}

/* R/name, a directory the launcher made (MAFL_WORK_MKDIR, run.h): its descriptor. A failure
 * ends the launch, in the words used for R/host_tools (mafl_run_subdir_error). */
static int take_subdir(int sock, const char *run_dir, const char *name)
{
	char why[MAFP_RUN_DIR_MAX + 128];
	int err, fd = take_launcher_file(sock, &err);

	if (fd >= 0)
		return fd;
	if (err > MAFL_WORK_MKDIR)
		mafl_run_subdir_error(why, sizeof(why), run_dir, name, err - MAFL_WORK_MKDIR, 0);
	else
		mafl_run_subdir_error(why, sizeof(why), run_dir, name, 0, err);
	send_report(sock, MAFP_EXIT_LAUNCHER, "%s", why);
	_exit(1);
}

static void publish_pid_markers(struct sup *s, int report_fd)
{
	int ht = s->d->host_tools, err, staged = take_launcher_file(report_fd, &err), rc;
	char num[32];
	int n = snprintf(num, sizeof(num), "%d", (int)s->pid);

	/* Upstream's inner shell writes the session first, then the pid. The program leads its
	 * own session, so both are its pid: the second is a hard link to the first, which
	 * appears whole as a rename would, for one system call rather than four. The session
	 * marker's .part is the file the launcher made, or failing that one made here. A name
	 * left by an earlier run in R is replaced. */
	rc = staged >= 0 ? mafl_publish_staged_at(ht, MAFP_MARKER_SESSION, staged, num,
						  (size_t)n, 0)
			 : -1;
	if (rc < 0)
		rc = mafl_publish_at(ht, MAFP_MARKER_SESSION, num, (size_t)n, 0);
	if (rc < 0 || linkat(ht, MAFP_MARKER_SESSION, ht, MAFP_MARKER_PID, 0) < 0)
		mafl_publish_at(ht, MAFP_MARKER_PID, num, (size_t)n, 0);
}

void mafl_supervise(const struct run_opts *o, const struct run_dirs *d, int report_fd,
		    const struct mafl_cpu_hold *away)
{
	struct sup s;
	struct child_msg fail;
	struct mafp_exit_record rec;
	struct channel *ch = NULL;
	struct channel_opts copts = {.tools = o->tools, .max_calls = o->max_calls};
	char **envp;
	sigset_t mask;
	int out_pipe[2], msg_pipe[2], marker_pipe[2], devnull, sfd, tfd, phase = 0, out_open = 1;
	int chan_fd, rc, work;
	int calls, tmp, listener, id_ok;
	char why[MAFP_RUN_DIR_MAX + 128];
	uint64_t ignored;

	MAFL_MARK("supervisor: started");
	memset(&s, 0, sizeof(s));
	s.o = o;
	s.d = d;
	s.status = MAFP_STATUS_EXITED;
	snprintf(s.landlock, sizeof(s.landlock), "off");

	/* Let go of the caller: its session, its terminal and its pipes (docker exec reads
	 * them to EOF, and must get EOF as soon as the launcher returns). */
	setsid();
	devnull = openat(AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	/* Nobody but root may read this process's memory, environment or descriptors through
	 * /proc or ptrace, even a program that runs as the same uid. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	/* Limits set on this process from outside must not kill it: a write past RLIMIT_FSIZE
	 * fails (and the output is then dropped and recorded), CPU time is not its to count. */
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGXCPU, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, MAFL_CHILD_EXIT_SIGNAL);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sfd < 0 || tfd < 0) {
		send_report(report_fd, MAFP_EXIT_LAUNCHER, "cannot create the supervisor's "
			    "signal and timer descriptors: %s", strerror(errno));
		_exit(1);
	}
	s.sfd = sfd;
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		send_report(report_fd, MAFP_EXIT_LAUNCHER, "cannot become the run's child "
			    "subreaper: %s", strerror(errno));
		_exit(1);
	}
	if (pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(marker_pipe, O_CLOEXEC) < 0 ||
	    pipe2(msg_pipe, O_CLOEXEC | (MAFL_SPAWN_FORK ? 0 : O_NONBLOCK)) < 0) {
		send_report(report_fd, MAFP_EXIT_LAUNCHER, "cannot create a pipe: %s",
			    strerror(errno));
		_exit(1);
	}
	MAFL_MARK("supervisor: descriptors, subreaper, pipes");
	/* While the launcher makes the launch's files: the program's identity, and what of its
	 * process's set-up needs none of them (the bounding set, the signals to reset). */
	id_ok = mafl_identity_choose(o, getpid(), &s.id, why, sizeof(why)) == 0;
	if (id_ok)
		mafl_identity_drop_bounding(&s.id);
	ignored = ignored_signals();
	/* What the launcher made meanwhile (run.c): R/work, program_output.txt, the calls
	 * directory, R/tmp and the channel's listening socket. */
	work = take_subdir(report_fd, o->run_dir, MAFP_DIR_WORK);
	s.out_fd = take_launcher_file(report_fd, &rc);
	if (s.out_fd < 0) {
		send_report(report_fd, MAFP_EXIT_LAUNCHER, "cannot create %s/%s/%s: %s",
			    o->run_dir, MAFP_DIR_HOST_TOOLS, MAFP_FILE_OUTPUT, strerror(rc));
		_exit(1);
	}
	calls = take_subdir(report_fd, o->run_dir, MAFP_DIR_HOST_TOOLS "/" MAFP_DIR_CALLS);
	tmp = take_subdir(report_fd, o->run_dir, MAFL_DIR_TMP);
	listener = take_launcher_file(report_fd, &rc);
	MAFL_MARK("supervisor: the launcher's files taken");
	rc = mafl_channel_open(&ch, d->host_tools, listener, &copts, &chan_fd);
	envp = rc == 0 ? channel_env(o->envp, chan_fd, o->tools, o->run_dir) : NULL;
	if (!envp) {
		send_report(report_fd, MAFP_EXIT_LAUNCHER, "cannot open the call channel: %s",
			    strerror(rc < 0 ? -rc : ENOMEM));
		_exit(1);
	}
	s.out_r = out_pipe[0];
	MAFL_MARK("supervisor: channel open, environment");
	if (!id_ok || mafl_identity_lend_dirs(&s.id, d, work, calls, tmp, o->run_dir, &s.lent,
					      why, sizeof(why)) < 0) {
		mafl_identity_take_back(&s.id, d, &s.lent);
		send_report(report_fd, MAFP_EXIT_LAUNCHER, "%s", why);
		_exit(1);
	}
	MAFL_MARK("supervisor: identity chosen, run directory lent");
	/* The launch path: nothing before it has used the vDSO (util.h). */
	s.start_ms = mafl_now_ms_syscall();
	{
		/* Every descriptor the child should not keep is close-on-exec. */
		struct mafl_cpu_hold cpus;
		int err, ruleset = take_launcher_file(report_fd, &err);
		struct child_args a = {o, &s.id, work, d->run, s.lent.cover, d->host_tools,
				       ruleset, ignored, marker_pipe[0], out_pipe[1], msg_pipe[1],
				       chan_fd, envp, &cpus};

		/* Held to one CPU already (run.c), or held here to this one. */
		if (away->held)
			cpus = *away;
		else
			hold_cpu(&cpus);
		/* A clone child (witness.h), as the witness it makes will be. */
		s.pid = mafl_spawn_vfork_signal(child_main, &a, MAFL_CHILD_EXIT_SIGNAL);
		MAFL_MARK("supervisor: the program's process has exec'd (vfork returned)");
		if (s.pid >= 0)
			release_cpu(&cpus);
		if (ruleset >= 0)
			close(ruleset);
	}
	if (s.pid < 0) {
		int e = errno;

		mafl_identity_take_back(&s.id, d, &s.lent);
		send_report(report_fd, MAFP_EXIT_LAUNCHER, "cannot start the program's process: %s",
			    strerror(e));
		_exit(1);
	}
	close(chan_fd);
	close(work);
	s.main_alive = 1;
	close(out_pipe[1]);
	close(msg_pipe[1]);
	close(marker_pipe[0]);
	s.marker_w = marker_pipe[1];
	if (await_exec(&s, msg_pipe[0], &fail) == CHILD_FAIL) {
		/* Drain what the child may have written before failing. */
		close(msg_pipe[0]);
		kill_run(&s);
		while (relay_output(&s))
			;
		launch_failed(&s, report_fd, &fail);
	}
	close(msg_pipe[0]);
	MAFL_MARK("supervisor: exec confirmed (its messages read)");
	mafl_channel_set_witness(ch, s.witness);
	publish_pid_markers(&s, report_fd);
	MAFL_MARK("supervisor: pid and session markers published");
	send_started(report_fd, s.pid, &s.id, s.landlock);
	if (o->timeout_ms > 0)
		arm(tfd, o->timeout_ms);
	fcntl(s.out_r, F_SETFL, O_NONBLOCK);

	while (s.main_alive) {
		struct pollfd pf[3 + MAFL_CHANNEL_POLLFDS] = {
			{.fd = sfd, .events = POLLIN},
			{.fd = tfd, .events = POLLIN},
			{.fd = out_open ? s.out_r : -1, .events = POLLIN},
		};
		int wait = -1, nch = s.session_killed ? 0 : mafl_channel_pollfds(ch, pf + 3, &wait);

		/* Each turn does bounded work (the output relay, the channel), so the signals and
		 * the timer are seen at the next turn whatever the program floods us with. */
		if (poll(pf, (nfds_t)(3 + nch), wait) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD ||
				    si.ssi_signo == MAFL_CHILD_EXIT_SIGNAL)
					reap(&s);
				else
					begin_end(&s, MAFP_STATUS_STOPPED, tfd, &phase);
			}
			if (!s.witness_alive && s.witness_killed && !s.session_killed) {
				/* The witness is gone before the end: the run's session was killed
				 * from outside (witness.h). The host has ended the run and may be
				 * removing R/host_tools: the rest of the run ends now, and nothing
				 * more is made there. */
				s.session_killed = 1;
				s.status = MAFP_STATUS_STOPPED;
				mafl_tree_signal(getpid(), SIGKILL, 0);
			}
		}
		if (pf[1].revents & POLLIN) {
			unsigned long long ticks;

			if (read(tfd, &ticks, sizeof(ticks)) == (ssize_t)sizeof(ticks)) {
				if (phase == 0) {
					begin_end(&s, MAFP_STATUS_TIMEOUT, tfd, &phase);
				} else {
					phase = 2;
					mafl_tree_signal(getpid(), SIGKILL, s.witness);
				}
			}
		}
		if (pf[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			int more, i;

			/* Until the pipe is empty, but bounded so signals and the timer are not
			 * starved by a flood. */
			for (i = 0, more = 1; more == 1 && i < 64; i++)
				more = relay_output(&s);
			if (!more)
				out_open = 0;
		}
		if (!s.session_killed)
			mafl_channel_handle(ch, pf + 3, nch);
	}

	/* The program has ended: end the rest of the run, then take the last of its output. */
	kill_run(&s);
	if (out_open) {
		struct pollfd pf = {.fd = s.out_r, .events = POLLIN};

		/* Every writer in the run is gone; only a descriptor passed outside the run could
		 * keep the pipe open, so stop at EOF or after a quiet 200 ms. */
		while (poll(&pf, 1, 200) > 0 && relay_output(&s))
			;
	}
	fsync(s.out_fd);
	close(s.out_fd);

	memset(&rec, 0, sizeof(rec));
	rec.exit_code = mafp_exit_code_from_wait_status(s.main_wstatus);
	if (s.status == MAFP_STATUS_EXITED && WIFSIGNALED(s.main_wstatus))
		s.status = MAFP_STATUS_SIGNALED;
	rec.status = s.status;
	rec.signal = WIFSIGNALED(s.main_wstatus) ? WTERMSIG(s.main_wstatus) : 0;
	rec.output_bytes = (int64_t)s.out_bytes;
	rec.output_truncated = s.out_truncated;
	rec.calls = mafl_channel_calls(ch);
	rec.n_undelivered = mafl_channel_undelivered(ch, rec.undelivered, MAFP_UNDELIVERED_MAX);
	mafl_channel_free(ch);
	mafl_str_copy(rec.seccomp, sizeof(rec.seccomp), mafl_seccomp_name(&o->policy));
	mafl_str_copy(rec.landlock, sizeof(rec.landlock), s.landlock);
	fill_usage(&rec, s.start_ms);
	write_markers(&s, &rec, 0);
	_exit(0);
}
