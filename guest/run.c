/* maf-launch run: validate, prepare the run directory, start the supervisor and return once
 * the program has really been exec'd (or report why not). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel.h"
#include "commands.h"
#include "contain.h"
#include "identity.h"
#include "launch.h"
#include "profile.h"
#include "protocol.h"
#include "spawn.h"
#include "util.h"

extern char **environ;

/* UID or UID:GID, each 1 .. 2^32-2 (-1 means "unchanged" to setresuid); or 0 (0:0), which
 * keeps the launcher's root. */
static int parse_user(const char *s, long long *uid, long long *gid)
{
	char buf[32];
	const char *colon = strchr(s, ':');
	unsigned long long u, g;

	if (strlen(s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, strlen(s) + 1);
	if (colon)
		buf[colon - s] = '\0';
	if (mafl_parse_u64(buf, UINT32_MAX - 1, &u) < 0)
		return -1;
	g = u;
	if (colon && mafl_parse_u64(colon + 1, UINT32_MAX - 1, &g) < 0)
		return -1;
	if ((u == 0) != (g == 0))
		return -1;  /* root keeps all of root, or none of it */
	*uid = (long long)u;
	*gid = (long long)g;
	return 0;
}

/* A byte count with an optional K, M or G (powers of 1024): 0 (none), or at least 16 MiB
 * (less cannot even load a dynamic program). */
static int parse_bytes(const char *s, unsigned long long *out)
{
	char buf[32];
	size_t n = strlen(s);
	unsigned shift = 0;
	unsigned long long v;

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n + 1);
	switch (buf[n - 1]) {
	case 'K': case 'k': shift = 10; break;
	case 'M': case 'm': shift = 20; break;
	case 'G': case 'g': shift = 30; break;
	}
	if (shift)
		buf[n - 1] = '\0';
	if (mafl_parse_u64(buf, (1ull << 50) >> shift, &v) < 0)
		return -1;
	v <<= shift;
	if (v != 0 && v < (16ull << 20))
		return -1;
	*out = v;
	return 0;
}

/* Applies one option of run's to o. */
static void run_option(struct run_opts *o, int key, const char *v, size_t *ntools,
		       size_t *nwritable)
{
	switch (key) {
	case MAFL_O_TIMEOUT:
		if (mafl_parse_seconds_ms(v, 86400000LL * 365, &o->timeout_ms) < 0 ||
		    o->timeout_ms == 0)
			mafl_die(MAFP_EXIT_USAGE, "--timeout takes a positive number of seconds, "
				 "not '%s'", v);
		break;
	case MAFL_O_GRACE:
		if (mafl_parse_seconds_ms(v, 3600000LL, &o->grace_ms) < 0)
			mafl_die(MAFP_EXIT_USAGE, "--grace takes a number of seconds up to 3600, "
				 "not '%s'", v);
		break;
	case MAFL_O_MAX_OUTPUT_BYTES:
		if (mafl_parse_u64(v, 1ull << 50, &o->max_output) < 0)
			mafl_die(MAFP_EXIT_USAGE, "--max-output-bytes takes a byte count, not '%s'",
				 v);
		break;
	case MAFL_O_TOOL:
		if (!mafp_tool_name_valid(v))
			mafl_die(MAFP_EXIT_USAGE, "--tool takes a tool name (1 to %d printable "
				 "characters, no space, '/', '\\' or '\"'), not '%s'",
				 MAFP_TOOL_NAME_MAX, v);
		o->tools = realloc(o->tools, (*ntools + 2) * sizeof(*o->tools));
		if (!o->tools)
			mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
		o->tools[(*ntools)++] = (char *)v;
		o->tools[*ntools] = NULL;
		break;
	case MAFL_O_USER:
		if (parse_user(v, &o->user_uid, &o->user_gid) < 0)
			mafl_die(MAFP_EXIT_USAGE, "--user takes UID or UID:GID, numbers from 1 to "
				 "%u, or 0 (root), not '%s'", UINT32_MAX - 1, v);
		break;
	case MAFL_O_MAX_PROCS:
		if (mafl_parse_u64(v, 1u << 22, &o->max_procs) < 0)
			mafl_die(MAFP_EXIT_USAGE, "--max-procs takes a count up to %u, not '%s'",
				 1u << 22, v);
		break;
	case MAFL_O_MAX_MEMORY:
		if (parse_bytes(v, &o->max_memory) < 0)
			mafl_die(MAFP_EXIT_USAGE, "--max-memory takes a byte count (suffixes K, M, "
				 "G), 0 for none, or at least 16M, not '%s'", v);
		break;
	case MAFL_O_WRITABLE:
		if (*nwritable == MAFL_WRITABLE_MAX)
			mafl_die(MAFP_EXIT_USAGE, "--writable is given more than %d times",
				 MAFL_WRITABLE_MAX);
		if (v[0] != '/')
			mafl_die(MAFP_EXIT_USAGE, "--writable takes an absolute path, not '%s'", v);
		o->writable[(*nwritable)++] = v;
		break;
	case MAFL_O_MAX_CALLS:
		if (mafl_parse_u64(v, MAFP_CALL_ID_MAX, &o->max_calls) < 0 || o->max_calls == 0)
			mafl_die(MAFP_EXIT_USAGE, "--max-calls takes a positive count up to %d, "
				 "not '%s'", MAFP_CALL_ID_MAX, v);
		break;
	case MAFL_O_EGRESS:
		mafl_policy_option(&o->policy, "--egress", v);
		break;
	case MAFL_O_SECCOMP:
		mafl_policy_option(&o->policy, "--seccomp", v);
		break;
	case MAFL_O_LANDLOCK:
		mafl_policy_option(&o->policy, "--landlock", v);
		break;
	case MAFL_O_FILES_STDIN:
		o->files_stdin = 1;
		break;
	}
}

void mafl_run_parse_args(int argc, char **argv, struct run_opts *o)
{
	const char *run_dir = NULL, *why, *v;
	size_t ntools = 0, nwritable = 0;
	struct mafl_args a;
	int key;

	memset(o, 0, sizeof(*o));
	o->grace_ms = MAFL_DEFAULT_GRACE_MS;
	o->max_output = MAFL_DEFAULT_MAX_OUTPUT;
	o->user_uid = o->user_gid = -1;
	o->max_procs = MAFL_DEFAULT_MAX_PROCS;
	o->max_memory = MAFL_DEFAULT_MAX_MEMORY;
	o->policy.seccomp = 1;
	o->policy.landlock = 1;

	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_RUN], argc, argv);
	while ((key = mafl_opt_next(&a, &v)) != MAFL_OPT_END) {
		if (key == MAFL_O_RUN_DIR)
			run_dir = v;
		else
			run_option(o, key, v, &ntools, &nwritable);
	}
	if (!run_dir)
		mafl_die(MAFP_EXIT_USAGE, "--run-dir is required (try 'maf-launch run --help')");
	if (a.i >= argc)
		mafl_die(MAFP_EXIT_USAGE, "no PROGRAM to run (try 'maf-launch run --help')");
	if (argv[a.i][0] == '\0')
		mafl_die(MAFP_EXIT_USAGE, "PROGRAM is an empty string");
	if (mafp_run_dir_check(run_dir, &why) < 0)
		mafl_die(MAFP_EXIT_USAGE, "bad --run-dir '%s': %s", run_dir, why);
	snprintf(o->run_dir, sizeof(o->run_dir), "%s", run_dir);
	while (strlen(o->run_dir) > 1 && o->run_dir[strlen(o->run_dir) - 1] == '/')
		o->run_dir[strlen(o->run_dir) - 1] = '\0';
	o->argv = argv + a.i;
}

int mafl_run_pythonpath_entry_ok(const char *e, size_t len, const char *run_dir)
{
	size_t rlen = strlen(run_dir), i;

	if (len == 0 || e[0] != '/')
		return 0;
	for (i = 0; i + 1 < len; i++) {
		if (e[i] != '/')
			continue;
		if (e[i + 1] == '/')
			return 0;
		if (e[i + 1] == '.' && (i + 2 == len || e[i + 2] == '/'))
			return 0;
		if (e[i + 1] == '.' && i + 2 < len && e[i + 2] == '.' &&
		    (i + 3 == len || e[i + 3] == '/'))
			return 0;
	}
	if (len >= rlen && memcmp(e, run_dir, rlen) == 0 && (len == rlen || e[rlen] == '/'))
		return 0;
	return 1;
}

static int env_is(const char *entry, const char *name)
{
	size_t n = strlen(name);

	return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

char **mafl_run_build_env(char *const *env, const char *run_dir)
{
	const char *old_pp = NULL;
	size_t count = 0, i, out = 0, pplen, tlen;
	char **newenv, *pp, *w, *tmp;

	for (i = 0; env[i]; i++) {
		count++;
		if (env_is(env[i], "PYTHONPATH"))
			old_pp = env[i] + strlen("PYTHONPATH=");
	}
	newenv = mafl_arena_calloc(count + 7, sizeof(*newenv));
	if (!newenv)
		return NULL;
	pplen = strlen("PYTHONPATH=") + strlen(run_dir) + strlen("/" MAFP_DIR_HOST_TOOLS) +
		(old_pp ? strlen(old_pp) + 1 : 0) + 1;
	/* PYTHONPATH, then TMPDIR, TMP and TEMP, in one allocation (mafl_run_free_env). */
	tlen = strlen(run_dir) + strlen("/" MAFL_DIR_TMP) + 1;
	pp = mafl_arena_calloc(pplen + 3 * (strlen("TMPDIR=") + tlen), 1);
	if (!pp) {
		mafl_arena_free(newenv);
		return NULL;
	}
	w = pp + sprintf(pp, "PYTHONPATH=%s/%s", run_dir, MAFP_DIR_HOST_TOOLS);
	while (old_pp && *old_pp) {
		size_t n = strcspn(old_pp, ":");

		if (mafl_run_pythonpath_entry_ok(old_pp, n, run_dir)) {
			*w++ = ':';
			memcpy(w, old_pp, n);
			w += n;
		}
		old_pp += n;
		if (*old_pp == ':')
			old_pp++;
	}
	*w = '\0';
	newenv[out++] = pp;
	for (i = 0; env[i]; i++) {
		/* The channel variables of an enclosing run are not this run's. maf_kept and
		 * maf_entry are the shell launcher's own variables, which it unsets: an image
		 * exporting either does not pass it to the program there, nor here. */
		if (env_is(env[i], "maf_kept") || env_is(env[i], "maf_entry") ||
		    env_is(env[i], "PYTHONPATH") || env_is(env[i], "PYTHONUNBUFFERED") ||
		    env_is(env[i], "PYTHONNOUSERSITE") || env_is(env[i], "MAF_HOST_TOOLS_FD") ||
		    env_is(env[i], "MAF_HOST_TOOLS_SOCKET") || env_is(env[i], "MAF_HOST_TOOLS") ||
		    env_is(env[i], "TMPDIR") || env_is(env[i], "TMP") || env_is(env[i], "TEMP"))
			continue;
		newenv[out++] = env[i];
	}
	newenv[out++] = (char *)"PYTHONUNBUFFERED=1";
	newenv[out++] = (char *)"PYTHONNOUSERSITE=1";
	/* The run's private temporary directory; the shared ones are not writable (Landlock). */
	tmp = pp + pplen;
	for (i = 0; i < 3; i++) {
		static const char *const names[] = {"TMPDIR", "TMP", "TEMP"};

		newenv[out++] = tmp;
		tmp += sprintf(tmp, "%s=%s/%s", names[i], run_dir, MAFL_DIR_TMP) + 1;
	}
	newenv[out] = NULL;
	return newenv;
}

void mafl_run_free_env(char **env)
{
	if (env) {
		mafl_arena_free(env[0]);
		mafl_arena_free(env);
	}
}

/* Opens R/name as a directory, creating it if absent; a symlink there is refused. */
void mafl_run_subdir_error(char *buf, size_t size, const char *run_dir, const char *name,
			   int mkdir_err, int open_err)
{
	if (mkdir_err)
		snprintf(buf, size, "cannot create %s/%s: %s", run_dir, name, strerror(mkdir_err));
	else if (open_err == ELOOP || open_err == ENOTDIR)
		snprintf(buf, size, "%s/%s is not a directory (a symlink or a file)", run_dir,
			 name);
	else
		snprintf(buf, size, "cannot open %s/%s: %s", run_dir, name, strerror(open_err));
}

static int open_subdir(int run_fd, const char *run_dir, const char *name)
{
	char why[MAFP_RUN_DIR_MAX + 128];
	int fd;

	if (mkdirat(run_fd, name, 0777) < 0 && errno != EEXIST) {
		mafl_run_subdir_error(why, sizeof(why), run_dir, name, errno, 0);
		mafl_die(MAFP_EXIT_LAUNCHER, "%s", why);
	}
	fd = openat(run_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		mafl_run_subdir_error(why, sizeof(why), run_dir, name, 0, errno);
		mafl_die(MAFP_EXIT_LAUNCHER, "%s", why);
	}
	return fd;
}

/* --files-stdin: R made where it is missing, with its parents (mode 0755), as the host's
 * write of a file below it would make them. */
static void make_run_dir(const char *run_dir)
{
	char path[MAFP_RUN_DIR_MAX + 1];
	size_t i, n = strlen(run_dir);

	memcpy(path, run_dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot make %s for the run directory %s",
				       path, run_dir);
		path[i] = i < n ? '/' : '\0';
	}
}

static void open_dirs(const struct run_opts *o, struct run_dirs *d)
{
	struct stat st;

	if (o->files_stdin && lstat(o->run_dir, &st) < 0 && errno == ENOENT)
		make_run_dir(o->run_dir);
	if (lstat(o->run_dir, &st) < 0) {
		if (errno == ENOENT)
			mafl_die(MAFP_EXIT_USAGE, "the run directory %s does not exist",
				 o->run_dir);
		mafl_die_errno(MAFP_EXIT_USAGE, "cannot use the run directory %s", o->run_dir);
	}
	if (S_ISLNK(st.st_mode))
		mafl_die(MAFP_EXIT_USAGE, "the run directory %s is a symlink", o->run_dir);
	if (!S_ISDIR(st.st_mode))
		mafl_die(MAFP_EXIT_USAGE, "the run directory %s is not a directory", o->run_dir);
	/* openat rather than open here and on the rest of the launch: musl's open() follows
	 * O_CLOEXEC with an fcntl(F_SETFD) for kernels older than 2.6.23, one system call
	 * more for nothing. */
	d->run = openat(AT_FDCWD, o->run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->run < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot open the run directory %s", o->run_dir);
	d->host_tools = open_subdir(d->run, o->run_dir, MAFP_DIR_HOST_TOOLS);
}

struct supervisor_args {
	const struct run_opts *o;
	const struct run_dirs *d;
	int report_r, report_w;
	struct mafl_cpu_hold away;
};

static int supervisor_main(void *arg)
{
	const struct supervisor_args *a = arg;

	close(a->report_r);
	mafl_supervise(a->o, a->d, a->report_w, &a->away);
}

/* The CPU the supervisor is put on, other than the one this process runs on, into *one; -1
 * where there is none (one CPU allowed, over 1024, or the affinity cannot be read). The
 * caller's affinity goes into *saved. */
static int other_cpu(cpu_set_t *saved, cpu_set_t *one)
{
	unsigned cpu;
	int n = (int)(sizeof(*saved) * 8), i;

	if (sched_getaffinity(0, sizeof(*saved), saved) < 0 || CPU_COUNT(saved) < 2 ||
	    syscall(SYS_getcpu, &cpu, NULL, NULL) < 0 || cpu >= (unsigned)n)
		return -1;
	for (i = 1; i < n; i++) {
		int c = (int)((cpu + (unsigned)i) % (unsigned)n);

		if (CPU_ISSET(c, saved)) {
			CPU_ZERO(one);
			CPU_SET(c, one);
			return c;
		}
	}
	return -1;
}

/* mafl_die() for finish(): "maf-launch run" and the rest of the line (": ...\n"), raw. */
static __attribute__((noreturn)) void raw_die(int code, const char *rest, size_t len)
{
	mafl_raw_write(2, mafl_prog, strlen(mafl_prog));
	mafl_raw_write(2, rest, len);
	mafl_raw_exit(code);
}

/* The session marker's staging name, which the launcher makes and removes. */
static const char session_part[] = MAFP_MARKER_SESSION MAFP_PART_SUFFIX;

/* Sends on sock the result of an open (a descriptor, or -errno): an int, 0 with the
 * descriptor attached, or the errno of the failure. Closes ours. Returns 1 if it was open. */
static int send_opened(int sock, long fd)
{
	mafl_raw_send_fd(sock, fd >= 0 ? (int)fd : -1, fd >= 0 ? 0 : (int)-fd);
	if (fd < 0)
		return 0;
	mafl_raw_close((int)fd);
	return 1;
}

/* Makes dir/name as mafl_publish_at() makes its files (MAFL_OPEN_STAGED) and sends it on sock
 * (send_opened). Returns 1 if made. */
static int hand_over(int dirfd, const char *name, int sock)
{
	return send_opened(sock, mafl_raw_openat(dirfd, name, MAFL_OPEN_STAGED, 0666));
}

/* Makes R/work (absent) and opens it as open_subdir() does, and sends it on sock as
 * MAFL_WORK_MKDIR (launch.h) says. Returns 1 if sent. */
static int hand_over_work(int run_fd, int sock)
{
	long r = mafl_raw_mkdirat(run_fd, MAFP_DIR_WORK, 0777);

	if (r < 0 && r != -EEXIST) {
		mafl_raw_send_fd(sock, -1, MAFL_WORK_MKDIR + (int)-r);
		return 0;
	}
	return send_opened(sock, mafl_raw_openat(run_fd, MAFP_DIR_WORK,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
						 0));
}

/* Makes dir/name (absent) and opens it, and sends it on sock as hand_over_work does. */
static int hand_over_dir(int dirfd, const char *name, int mode, int sock)
{
	long r = mafl_raw_mkdirat(dirfd, name, mode);

	if (r < 0 && r != -EEXIST) {
		mafl_raw_send_fd(sock, -1, MAFL_WORK_MKDIR + (int)-r);
		return 0;
	}
	return send_opened(sock, mafl_raw_openat(dirfd, name,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
						 0));
}

/* The channel's second way in: a unix stream socket listening at
 * R/host_tools/channel.sock, mode 0660, sent on sock (or why not). A name an earlier run
 * left there goes first (a symlink is removed, never followed; an empty directory too).
 * bind() takes a path, and R may be longer than a socket address holds: the name is bound
 * from R/host_tools as this process's working directory and with a umask of its own, which
 * the supervisor does not share. Returns 1: a failure here takes nothing from the launch. */
static int hand_over_listener(int host_tools, int sock)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	long fd, r = 0, mask;

	if (mafl_raw_syscall(SYS_unlinkat, host_tools, (long)MAFP_FILE_CHANNEL_SOCKET, 0) ==
	    -EISDIR)
		mafl_raw_syscall(SYS_unlinkat, host_tools, (long)MAFP_FILE_CHANNEL_SOCKET,
				 AT_REMOVEDIR);
	fd = mafl_raw_syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		memcpy(sa.sun_path, MAFP_FILE_CHANNEL_SOCKET, sizeof(MAFP_FILE_CHANNEL_SOCKET));
		mask = mafl_raw_syscall(SYS_umask, 0117, 0, 0);
		r = mafl_raw_syscall(SYS_fchdir, host_tools, 0, 0);
		if (r == 0)
			r = mafl_raw_syscall(SYS_bind, fd, (long)&sa, sizeof(sa));
		mafl_raw_syscall(SYS_umask, mask, 0, 0);
		if (r == 0)
			r = mafl_raw_syscall(SYS_listen, fd, MAFL_CHANNEL_MAX_CONNS, 0);
		if (r < 0) {
			mafl_raw_close((int)fd);
			fd = r;
		}
	}
	send_opened(sock, fd);
	return 1;
}

/* The part of the program's Landlock ruleset no run changes (mafl_landlock_ruleset), built
 * here while the supervisor gets the run ready rather than in the program's process, where
 * it was a good part of the launch (an open, a look and a rule for each entry of /), and
 * sent on sock as the files are: the descriptor, or why there is none (-ENOSYS: Landlock
 * off, or not in this kernel). Returns 1. */
static int hand_over_ruleset(const struct run_opts *o, int own_identity, int sock)
{
	struct mafl_policy p = o->policy;

	p.own_identity = own_identity;
	send_opened(sock, o->policy.landlock ? mafl_landlock_ruleset(&p) : -ENOSYS);
	return 1;
}

/* What the launcher makes while the supervisor gets ready, rather than wait: on some file
 * systems a new inode costs more than the rest of the launch (ext4 without a journal steps
 * over every recently freed one, and a new directory costs more still). Each goes to the
 * supervisor over the report socket as it is made: R/work (hand_over_work),
 * program_output.txt (hand_over), R/host_tools/host_tool_calls and R/tmp (hand_over_dir),
 * which the supervisor needs before it starts the program (a failure of any is the
 * launch's), the channel's listening socket (hand_over_listener: the run goes on without
 * it), the Landlock ruleset (hand_over_ruleset: the program's process makes it without),
 * then the session marker's staging file, which it needs once the program has started
 * (without it, it publishes the marker the usual way). The first failure ends the list.
 * Returns 1 if the staging file was made here. */
static int make_launch_files(const struct run_opts *o, const struct run_dirs *d,
			     int own_identity, int report_r)
{
	return hand_over_work(d->run, report_r) &&
	       hand_over(d->host_tools, MAFP_FILE_OUTPUT, report_r) &&
	       hand_over_dir(d->host_tools, MAFP_DIR_CALLS, 0777, report_r) &&
	       hand_over_dir(d->run, MAFL_DIR_TMP, 0700, report_r) &&
	       hand_over_listener(d->host_tools, report_r) &&
	       hand_over_ruleset(o, own_identity, report_r) &&
	       hand_over(d->host_tools, session_part, report_r);
}

/* The launcher after the supervisor has started: it may share the supervisor's memory
 * (spawn.h), so it uses nothing but raw system calls and the bytes of the report. A failed
 * launch leaves no staging file of ours behind. */
static __attribute__((noreturn)) void finish(pid_t sup, int report_r, const struct run_dirs *d,
					     int staged)
{
	static const char died[] = ": the supervisor ended before the program started\n";
	static const char unwritable[] = ": cannot write to stdout\n";
	struct launch_report rep;
	size_t got = 0, len;
	int fd;

	while (got < sizeof(rep)) {
		long n = mafl_raw_read(report_r, (char *)&rep + got, sizeof(rep) - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	MAFL_MARK("launcher: report read");
	if (staged && (got != sizeof(rep) || rep.exit_code != 0))
		mafl_raw_unlinkat(d->host_tools, session_part);
	if (got != sizeof(rep) || rep.len >= sizeof(rep.text)) {
		/* The supervisor died before it could say; reap it so no zombie is left. */
		mafl_raw_wait(sup);
		raw_die(MAFP_EXIT_LAUNCHER, died, sizeof(died) - 1);
	}
	fd = rep.exit_code == 0 ? 1 : 2;
	for (len = 0; len < rep.len;) {
		long n = mafl_raw_write(fd, rep.text + len, rep.len - len);

		if (n <= 0) {
			if (fd == 1)
				raw_die(MAFP_EXIT_LAUNCHER, unwritable, sizeof(unwritable) - 1);
			break;
		}
		len += (size_t)n;
	}
	MAFL_MARK("launcher: report written, exits");
	MAFL_PROFILE_PRINT();
	mafl_raw_exit(rep.exit_code);
}

int mafl_cmd_run(int argc, char **argv)
{
	/* Static: the supervisor goes on reading them after this process has exited. */
	static struct run_opts o;
	static struct run_dirs d;
	static struct supervisor_args a;
	struct mafl_identity id;
	char why[8];
	cpu_set_t away;
	int sv[2], other, own;
	pid_t sup;

	mafl_run_parse_args(argc, argv, &o);
	MAFL_MARK("launcher: options parsed");
	/* Descriptors the caller leaked to us (beyond stdio) must reach neither the supervisor
	 * nor the program: one of them may be the write end of a pipe the caller reads to EOF. */
	if (syscall(SYS_close_range, 3u, ~0u, 0u) < 0) {
		int fd;

		for (fd = 3; fd < 1024; fd++)
			close(fd);
	}
	open_dirs(&o, &d);
	MAFL_MARK("launcher: R and R/host_tools opened");
	if (o.files_stdin)
		mafl_stage_files(d.host_tools, o.run_dir);
	o.envp = mafl_run_build_env(environ, o.run_dir);
	if (!o.envp)
		mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
	MAFL_MARK("launcher: environment built");
	/* A socket, not a pipe: the report comes back on it, and the files the launcher makes
	 * go the other way (make_launch_files). */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot create a socket pair");
	fflush(NULL);
	a.o = &o;
	a.d = &d;
	a.report_r = sv[0];
	a.report_w = sv[1];
	/* Whether the program will run under an identity of its own, as the supervisor will
	 * choose it (its uid does not matter here; a choice that fails fails the launch there). */
	own = mafl_identity_choose(&o, 0, &id, why, sizeof(why)) == 0 && id.own;
	other = other_cpu(&a.away.saved, &away);
	sup = mafl_spawn_shared(supervisor_main, &a);
	if (sup < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot start the supervisor");
	/* The supervisor on another CPU than this one, while this one makes the launch's files
	 * (make_launch_files): a new process is otherwise placed here most of the time, behind
	 * this one, so that its set-up waits for the files (on ext4, a few hundred
	 * microseconds) rather than go on beside them. It gives the caller's affinity back
	 * once the program has started (supervise). Best effort: held says whether it took. Not
	 * where the supervisor is a fork (spawn.h), which would not see held. */
	if (other >= 0 && !MAFL_SPAWN_FORK)
		a.away.held = mafl_raw_syscall(SYS_sched_setaffinity, sup, sizeof(away),
					       (long)&away) == 0;
	/* From here on the supervisor owns the heap, stdio and errno. */
	MAFL_MARK("launcher: supervisor started");
	mafl_raw_close(sv[1]);
	{
		int staged = make_launch_files(&o, &d, own, sv[0]);

		MAFL_MARK("launcher: launch files made and sent");
		finish(sup, sv[0], &d, staged);
	}
}
