/* maf-launch stop: end a run's whole process tree through its supervisor, after proving that
 * the pid the host holds really is that supervisor.
 *
 * The pid comes from the launch line the host read itself, but a pid is only a number: the
 * supervisor may be long gone and the number recycled. So a pidfd is opened first (it names
 * one process for good), the process behind /proc/P is checked (same executable as us, a
 * session leader, a 'maf-launch run' whose --run-dir is R), the pidfd is checked still live
 * (while it is, /proc/P was that same process), and only then is SIGTERM sent through the
 * pidfd. The supervisor then ends the run as it does for any SIGTERM: SIGTERM to every
 * descendant, the grace, SIGKILL, the exit record, the exit marker. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "identity.h"
#include "prove.h"
#include "protocol.h"
#include "tree.h"
#include "util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

#define STOP_DEFAULT_TIMEOUT_MS 10000
#define STOP_EXIT_NOT_SUPERVISOR 1
#define STOP_EXIT_LOST 3
#define STOP_EXIT_NOT_RECLAIMED 4
#define STOP_OUTPUT_MAX (1ULL << 40)	/* --output's N: at most 1 TiB */
#define STOP_KILL_WAIT_MS 5000		/* for P to die after SIGKILL */

/* What stop was asked: R without its trailing slashes, P, and what comes after the end. */
struct stop_args {
	char run_dir[MAFP_RUN_DIR_MAX + 1];
	unsigned long long pid;
	long long timeout_ms;
	int output;			/* --output given: its N in output_max */
	unsigned long long output_max;
	int reclaim;
	const char *keep;
};

/* The process the host named: pidfd is -1 when the kernel has no pidfd_open. */
struct target {
	pid_t pid;
	int pidfd;
};

static void strip_slashes(const char *s, size_t *len)
{
	while (*len > 1 && s[*len - 1] == '/')
		(*len)--;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* 1 if the process has exited (a zombie counts) or is gone, else 0. */
static int target_exited(const struct target *t)
{
	char path[64], buf[512];
	ssize_t n;
	char *p;
	int fd;

	if (t->pidfd >= 0) {
		struct pollfd pf = {.fd = t->pidfd, .events = POLLIN};

		/* A pidfd polls readable once its process has exited. */
		while (poll(&pf, 1, 0) < 0 && errno == EINTR)
			;
		return (pf.revents & (POLLIN | POLLHUP)) != 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = mafl_read_full(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

/* Waits up to ms for the target to exit. Returns 1 if it has, else 0. */
static int target_wait(const struct target *t, long long ms)
{
	long long deadline = mafl_now_ms() + ms;

	for (;;) {
		long long left;

		if (target_exited(t))
			return 1;
		left = deadline - mafl_now_ms();
		if (left <= 0)
			return 0;
		if (t->pidfd >= 0) {
			struct pollfd pf = {.fd = t->pidfd, .events = POLLIN};

			if (poll(&pf, 1, left > 60000 ? 60000 : (int)left) < 0 && errno != EINTR)
				return target_exited(t);
		} else {
			sleep_ms(left < 10 ? (long)left : 10);
		}
	}
}

static int target_signal(const struct target *t, int sig)
{
	if (t->pidfd >= 0)
		return (int)syscall(SYS_pidfd_send_signal, t->pidfd, sig, NULL, 0);
	return kill(t->pid, sig);
}

/* Opens R/host_tools without following a symlink. Returns the descriptor or -1. */
static int open_host_tools(const char *run_dir)
{
	int run = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd;

	if (run < 0)
		return -1;
	fd = openat(run, MAFP_DIR_HOST_TOOLS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(run);
	return fd;
}

static int has_exit_marker(const char *run_dir)
{
	struct stat st;
	int ht = open_host_tools(run_dir), rc;

	if (ht < 0)
		return 0;
	rc = fstatat(ht, MAFP_MARKER_EXIT_CODE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	     S_ISREG(st.st_mode);
	close(ht);
	return rc;
}

/* Writes to stdout, or dies. */
static void out(const void *buf, size_t len)
{
	if (mafl_write_all(1, buf, len) < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot write to stdout");
}

/* Prints program_exit.json, as it is, on stdout. Returns 1 if there was one, else 0. */
static int print_exit_record(const char *run_dir)
{
	char buf[MAFP_EXIT_RECORD_MAX + 1];
	struct stat st;
	ssize_t n;
	int ht = open_host_tools(run_dir), fd;

	if (ht < 0)
		return 0;
	fd = mafl_open_regular_at(ht, MAFP_FILE_EXIT_RECORD, &st);
	close(ht);
	if (fd < 0)
		return 0;
	n = mafl_read_full(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return 0;
	if (n > MAFP_EXIT_RECORD_MAX) {
		mafl_warnx("the exit record of %s is larger than %d bytes; not printed", run_dir,
			   MAFP_EXIT_RECORD_MAX);
		return 0;
	}
	out(buf, (size_t)n);
	if (buf[n - 1] != '\n')
		out("\n", 1);
	return 1;
}

/* --output: the output's line, and the output after it when it is there whole. Returns 0
 * when it could not be read (R is then not reclaimed), else 1. */
static int print_output(const char *run_dir, unsigned long long max)
{
	char line[64], *buf = NULL;
	size_t len = 0, size = 0;
	struct stat st;
	int ht = open_host_tools(run_dir), fd = -1, err;

	if (ht >= 0) {
		fd = mafl_open_regular_at(ht, MAFP_FILE_OUTPUT, &st);
		err = errno;
		close(ht);
	} else {
		err = errno;
	}
	/* Not a regular file is no output, as the host's read-if-present has it. */
	if (fd < 0 && (err == ENOENT || err == EINVAL || err == ENOTDIR)) {
		out("output absent\n", 14);
		return 1;
	}
	if (fd < 0) {
		mafl_warnx("cannot open the output of %s: %s", run_dir, strerror(err));
		out("output unreadable\n", 18);
		return 0;
	}
	if ((unsigned long long)st.st_size > max) {
		close(fd);
		out("output over\n", 12);
		return 1;
	}
	/* The size read, not the size looked at: whatever the file holds at the end, once. */
	for (;;) {
		ssize_t n;

		if (len == size) {
			size_t want = size ? size * 2 : (size_t)st.st_size + 1;
			char *p;

			if (want > max + 1)
				want = (size_t)max + 1;
			if (want <= size || !(p = realloc(buf, want))) {
				if (want <= size)
					break;	/* max + 1 bytes held: over */
				free(buf);
				close(fd);
				mafl_warnx("out of memory reading the output of %s", run_dir);
				out("output unreadable\n", 18);
				return 0;
			}
			buf = p;
			size = want;
		}
		n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			free(buf);
			close(fd);
			mafl_warnx("cannot read the output of %s: %s", run_dir, strerror(err));
			out("output unreadable\n", 18);
			return 0;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > max) {
		free(buf);
		out("output over\n", 12);
		return 1;
	}
	snprintf(line, sizeof(line), "output %zu\n", len);
	out(line, strlen(line));
	out(buf, len);
	free(buf);
	return 1;
}

/* reclaim's work in a child of its own, since it ends by exiting. Returns stop's exit code. */
static int reclaim_run_dir(const char *run_dir, const char *keep)
{
	int status;
	pid_t child = fork();

	if (child < 0) {
		mafl_warnx("cannot fork to reclaim %s: %s", run_dir, strerror(errno));
		return STOP_EXIT_NOT_RECLAIMED;
	}
	if (child == 0)
		_exit(mafl_reclaim(run_dir, keep));
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR) {
			mafl_warnx("cannot wait for the reclaim of %s: %s", run_dir,
				   strerror(errno));
			return STOP_EXIT_NOT_RECLAIMED;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	mafl_warnx("run %s has ended, and it was not reclaimed", run_dir);
	return STOP_EXIT_NOT_RECLAIMED;
}

/* The run has ended and its record is printed if had: --output's part, then --reclaim's.
 * Returns stop's exit code. */
static int finish(const struct stop_args *o, int had)
{
	int whole = 1;

	if (o->output) {
		if (!had)
			out("\n", 1);
		whole = print_output(o->run_dir, o->output_max);
	}
	if (!o->reclaim || !had || !whole)
		return 0;
	return reclaim_run_dir(o->run_dir, o->keep);
}

/* When the launcher was root, the run's processes are every process of its own identity,
 * derived from the supervisor's pid (identity.h): killing them needs no supervisor. An
 * identity --user gave is not derived, and not swept here. */
static void sweep(pid_t supervisor)
{
	struct mafl_identity id = {.own = 1, .per_run = 1,
				   .uid = mafl_run_id(supervisor),
				   .gid = mafl_run_id(supervisor)};

	if (geteuid() == 0 && mafl_identity_sweep(&id, 1) > 0)
		mafl_warnx("killed what was left of the run of supervisor %d", (int)supervisor);
}

/* The markers a supervisor wrote are regular files of its own uid (the uid of whoever stops
 * it, who launched it) that no one else may write. A program under an identity of its own
 * can make neither; under the launcher's identity the check cannot tell, and Landlock is
 * what keeps the program out of R/host_tools. */
static int written_by_supervisor(const char *run_dir, const char *name)
{
	struct stat st;
	int ht = open_host_tools(run_dir), rc;

	if (ht < 0)
		return 0;
	rc = fstatat(ht, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	     st.st_uid == geteuid() && !(st.st_mode & 022);
	close(ht);
	return rc;
}

/* P is gone (or exited) before we signalled anything: what it left is accepted only if it
 * wrote it. */
static int already_gone(const struct target *t, const struct stop_args *o)
{
	const char *run_dir = o->run_dir;
	int had;

	sweep(t->pid);
	if (!has_exit_marker(run_dir))
		mafl_die(STOP_EXIT_LOST, "the supervisor %d is gone and run %s has no exit "
			 "marker: the run is lost", (int)t->pid, run_dir);
	if (!written_by_supervisor(run_dir, MAFP_MARKER_EXIT_CODE) ||
	    !written_by_supervisor(run_dir, MAFP_FILE_EXIT_RECORD))
		mafl_die(STOP_EXIT_LOST, "the supervisor %d is gone and the exit marker or "
			 "record of run %s is not one it wrote: the run is lost", (int)t->pid,
			 run_dir);
	had = print_exit_record(run_dir);
	mafl_warnx("run %s had already ended", run_dir);
	return finish(o, had);
}

/* SIGKILL to every descendant of P until a scan finds none, then to P. */
static void kill_tree(const struct target *t)
{
	int i;

	for (i = 0; i < 1000 && !target_exited(t); i++) {
		int n = mafl_tree_signal(t->pid, SIGKILL, 0);

		if (n <= 0)
			break;
		sleep_ms(1);
	}
	target_signal(t, SIGKILL);
}

/* Reads stop's options into *o. */
static void stop_parse(int argc, char **argv, struct stop_args *o)
{
	const char *run_dir_arg = NULL, *pid_arg = NULL, *v, *why;
	struct mafl_args a;
	size_t len;
	int key;

	memset(o, 0, sizeof(*o));
	o->timeout_ms = STOP_DEFAULT_TIMEOUT_MS;
	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_STOP], argc, argv);
	while ((key = mafl_opt_next(&a, &v)) != MAFL_OPT_END) {
		if (key == MAFL_O_RUN_DIR) {
			run_dir_arg = v;
		} else if (key == MAFL_O_SUPERVISOR_PID) {
			pid_arg = v;
		} else if (key == MAFL_O_OUTPUT) {
			if (mafl_parse_u64(v, STOP_OUTPUT_MAX, &o->output_max) < 0)
				mafl_die(MAFP_EXIT_USAGE, "--output takes a number of bytes up to "
					 "%llu, not '%s'", STOP_OUTPUT_MAX, v);
			o->output = 1;
		} else if (key == MAFL_O_RECLAIM) {
			o->reclaim = 1;
		} else if (key == MAFL_O_KEEP) {
			if (o->keep)
				mafl_die(MAFP_EXIT_USAGE, "--keep may be given once");
			if ((why = mafl_reclaim_keep_check(v)))
				mafl_die(MAFP_EXIT_USAGE, "bad --keep NAME: %s", why);
			o->keep = v;
		} else if (mafl_parse_seconds_ms(v, 86400000LL, &o->timeout_ms) < 0) {
			mafl_die(MAFP_EXIT_USAGE, "--timeout takes a number of seconds up to "
				 "86400, not '%s'", v);
		}
	}
	if (!run_dir_arg || !pid_arg)
		mafl_die(MAFP_EXIT_USAGE, "--run-dir and --supervisor-pid are required (try "
			 "'maf-launch stop --help')");
	if (o->keep && !o->reclaim)
		mafl_die(MAFP_EXIT_USAGE, "--keep goes with --reclaim");
	if (mafp_run_dir_check(run_dir_arg, &why) < 0)
		mafl_die(MAFP_EXIT_USAGE, "bad --run-dir '%s': %s", run_dir_arg, why);
	if (mafl_parse_u64(pid_arg, 0x7fffffff, &o->pid) < 0 || o->pid < 2)
		mafl_die(MAFP_EXIT_USAGE, "--supervisor-pid takes a process id greater than 1, "
			 "not '%s'", pid_arg);
	len = strlen(run_dir_arg);
	memcpy(o->run_dir, run_dir_arg, len + 1);
	strip_slashes(o->run_dir, &len);
	o->run_dir[len] = '\0';
}

int mafl_cmd_stop(int argc, char **argv)
{
	struct stop_args o;
	char reason[768];
	const char *run_dir = o.run_dir;
	long long timeout_ms;
	unsigned long long pid;
	struct target t;
	struct stat self;
	int had;

	stop_parse(argc, argv, &o);
	pid = o.pid;
	timeout_ms = o.timeout_ms;
	if ((pid_t)pid == getpid())
		mafl_die(STOP_EXIT_NOT_SUPERVISOR, "process %llu is this stop command; nothing was "
			 "signalled", pid);
	if (stat("/proc/self/exe", &self) < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot read /proc/self/exe (is /proc "
			       "mounted?)");

	t.pid = (pid_t)pid;
	t.pidfd = (int)syscall(SYS_pidfd_open, t.pid, 0);
	if (t.pidfd < 0) {
		if (errno == ESRCH)
			return already_gone(&t, &o);
		if (errno != ENOSYS)
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot open a pidfd for process %d",
				       t.pid);
		/* Before Linux 5.3: plain kill, each one preceded by a fresh check. */
	}
	if (target_exited(&t))
		return already_gone(&t, &o);
	if (mafl_prove_supervisor(t.pid, run_dir, &self, reason, sizeof(reason)) < 0) {
		/* A supervisor that exited just now fails the checks as a zombie, and one still
		 * exiting (it publishes the exit marker, then exits) fails them too, since its
		 * /proc/P/exe goes before it is a zombie: give an exiting process a moment. Nothing
		 * is signalled either way. */
		if (t.pidfd >= 0) {
			struct pollfd pf = {.fd = t.pidfd, .events = POLLIN};

			while (poll(&pf, 1, 1000) < 0 && errno == EINTR)
				;
		}
		if (target_exited(&t))
			return already_gone(&t, &o);
		mafl_die(STOP_EXIT_NOT_SUPERVISOR, "process %d is not the supervisor of run "
			 "%s: %s; nothing was signalled", t.pid, run_dir, reason);
	}
	/* While the pidfd's process has not exited, pid P cannot have been reused, so what
	 * /proc/P showed was that process. */
	if (target_exited(&t))
		return already_gone(&t, &o);
	if (target_signal(&t, SIGTERM) < 0) {
		if (errno == ESRCH)
			return already_gone(&t, &o);
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot signal the supervisor %d", t.pid);
	}
	if (!target_wait(&t, timeout_ms)) {
		mafl_warnx("the supervisor %d did not end run %s within the timeout; killing every "
			   "process of the run and the supervisor", t.pid, run_dir);
		if (t.pidfd < 0 && mafl_prove_supervisor(t.pid, run_dir, &self, reason,
							 sizeof(reason)) < 0) {
			if (!target_exited(&t))
				mafl_die(MAFP_EXIT_LAUNCHER, "process %d is no longer the "
					 "supervisor of run %s (%s); nothing more was signalled",
					 t.pid, run_dir, reason);
		} else {
			kill_tree(&t);
		}
		if (!target_wait(&t, STOP_KILL_WAIT_MS))
			mafl_die(MAFP_EXIT_LAUNCHER, "the supervisor %d did not die after "
				 "SIGKILL", t.pid);
	}
	sweep(t.pid);
	had = print_exit_record(run_dir);
	if (!had && !has_exit_marker(run_dir))
		mafl_warnx("run %s has ended without an exit record", run_dir);
	return finish(&o, had);
}
