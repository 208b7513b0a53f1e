/* The supervisor: the process maf-launch run leaves behind with the program. It leads its
 * own session, is the child subreaper of the whole run, relays the program's output into the
 * capped output file, enforces the timeout, ends every process of the run when the program
 * ends, and publishes the exit record and the legacy markers.
 *
 * It is a state machine (enum sup_state): each state has one function that does its work
 * and returns the event that ends it (enum sup_event; the loop's turn also feeds those it
 * sees meanwhile). sup_next, one table, says which state an event leads to, sup_feed alone
 * changes the state, and sup_enter says what entering a state does. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "contain.h"
#include "identity.h"
#include "launch.h"
#include "profile.h"
#include "program.h"
#include "protocol.h"
#include "spawn.h"
#include "tree.h"
#include "util.h"
#include "witness.h"

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

/* The supervisor's states, in the order a run goes through them. */
enum sup_state {
	SUP_STAY,           /* in sup_next: the event changes nothing in this state */
	SUP_SETUP,          /* let go of the caller; signal and timer descriptors, pipes */
	SUP_PREPARE,        /* the identity, the launcher's files, the channel, R lent */
	SUP_START,          /* the program's process: started, its exec awaited */
	SUP_RUNNING,        /* the program runs; the timeout is armed, if any */
	SUP_ENDING,         /* SIGTERM sent to the run; SIGKILL when the grace is over */
	SUP_KILLING,        /* SIGKILL sent to the run; the program's end awaited */
	SUP_CUT_OFF,        /* the host killed the run's session: all of it SIGKILLed, and
			     * nothing more is made in R/host_tools */
	SUP_TEARDOWN,       /* the program has ended: the rest of the run, the output, the
			     * record and the markers */
	SUP_LAUNCH_FAILED,  /* the program's process failed before exec: record, report */
	SUP_FAILED,         /* the launch failed before that: report */
	SUP_EXIT,
	SUP_NSTATES
};

enum sup_event {
	SUP_EV_DONE,            /* the state's work is done */
	SUP_EV_FAILED,          /* the launch failed; s->why says why */
	SUP_EV_EXEC_FAILED,     /* the program's process did not reach exec; s->fail says why */
	SUP_EV_STOP,            /* SIGTERM, SIGINT or SIGQUIT */
	SUP_EV_TIMER,           /* the timer: the timeout, or the end of the grace */
	SUP_EV_SESSION_KILLED,  /* the witness died before the end (witness.h) */
	SUP_EV_ENDED,           /* the program has ended (or the loop cannot go on) */
	SUP_EV_NONE,            /* a turn of the loop saw nothing that changes the state */
	SUP_NEVENTS
};

/* Every transition: the state an event leads to, SUP_STAY where it changes nothing. */
static const unsigned char sup_next[SUP_NSTATES][SUP_NEVENTS] = {
	[SUP_SETUP] = {[SUP_EV_DONE] = SUP_PREPARE, [SUP_EV_FAILED] = SUP_FAILED},
	[SUP_PREPARE] = {[SUP_EV_DONE] = SUP_START, [SUP_EV_FAILED] = SUP_FAILED},
	[SUP_START] = {[SUP_EV_DONE] = SUP_RUNNING, [SUP_EV_FAILED] = SUP_FAILED,
		       [SUP_EV_EXEC_FAILED] = SUP_LAUNCH_FAILED},
	[SUP_RUNNING] = {[SUP_EV_STOP] = SUP_ENDING, [SUP_EV_TIMER] = SUP_ENDING,
			 [SUP_EV_SESSION_KILLED] = SUP_CUT_OFF, [SUP_EV_ENDED] = SUP_TEARDOWN},
	[SUP_ENDING] = {[SUP_EV_TIMER] = SUP_KILLING, [SUP_EV_SESSION_KILLED] = SUP_CUT_OFF,
			[SUP_EV_ENDED] = SUP_TEARDOWN},
	[SUP_KILLING] = {[SUP_EV_SESSION_KILLED] = SUP_CUT_OFF, [SUP_EV_ENDED] = SUP_TEARDOWN},
	[SUP_CUT_OFF] = {[SUP_EV_ENDED] = SUP_TEARDOWN},
	[SUP_TEARDOWN] = {[SUP_EV_DONE] = SUP_EXIT},
	[SUP_LAUNCH_FAILED] = {[SUP_EV_DONE] = SUP_EXIT},
	[SUP_FAILED] = {[SUP_EV_DONE] = SUP_EXIT},
};


struct sup {
	enum sup_state state;
	int exit_code;           /* the supervisor's, at SUP_EXIT */
	const struct run_opts *o;
	const struct run_dirs *d;
	int report_fd;           /* to the launcher: its files come in, the report goes out */
	const struct mafl_cpu_hold *away;
	struct mafl_identity id;
	struct mafl_lent_dirs lent;
	pid_t pid;               /* the program */
	pid_t witness;           /* the run's witness (witness.h); 0: none made */
	int witness_alive;
	int witness_killed;      /* it died of a signal (a witness that exited could not work) */
	int marker_r;            /* the witness's end of the hand-over pipe, until the start */
	int marker_w;            /* the supervisor's end of the hand-over pipe; -1: closed */
	int session_killed;      /* the witness died before the end: the host ended the run */
	int sfd;                 /* the signalfd */
	int tfd;                 /* the timerfd: the timeout, then the grace */
	int msg_r, msg_w;        /* the program's process's messages (program.h) */
	struct mafl_program_msg fail;   /* SUP_LAUNCH_FAILED: what it said */
	int out_fd;              /* program_output.txt */
	int out_r, out_w;        /* the pipe of the program's stdout and stderr */
	int out_open;            /* out_r has not reached EOF */
	unsigned long long out_bytes, out_kept;
	int out_truncated, out_broken;
	int main_alive, main_wstatus;
	int work, calls, tmp;    /* R/work, the calls directory, R/tmp, until the start */
	int listener;            /* the socket at R/host_tools/channel.sock, or -1 */
	struct channel *ch;
	int chan_fd;             /* the channel's end the program inherits, until the start */
	char **envp;             /* the program's environment, the channel's variables in it */
	uint64_t ignored;        /* the signals the program's process resets */
	long long start_ms;
	enum mafp_status status;
	char landlock[32];
	char why[448];           /* SUP_FAILED: the report's sentence */
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
static void launch_failed(struct sup *s, const struct mafl_program_msg *m)
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
	else if (m->err == 0)
		n = snprintf(line, sizeof(line), "%s", m->what);
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
	send_report(s->report_fd, m->code, "%s", line);
}

/* Reads the program process's messages until exec or failure. Returns the failure
 * message's kind (MAFL_PROGRAM_FAIL) with *fail filled, or 0 when exec succeeded.
 *
 * After a fork, exec is known by EOF: the write end is close-on-exec. After
 * mafl_spawn_vfork, the child has already exec'd or exited by the time we run, and every
 * message it wrote is in the pipe: the pipe is non-blocking, and a pipe with nothing left
 * in it means exec (the close-on-exec itself may still be on its way). */
static int await_exec(struct sup *s, int msg_r, struct mafl_program_msg *fail)
{
	struct mafl_program_msg m;

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
			fail->kind = MAFL_PROGRAM_FAIL;
			fail->code = MAFP_EXIT_LAUNCHER;
			fail->err = n < 0 ? errno : EIO;
			snprintf(fail->what, sizeof(fail->what), "start the program");
			return MAFL_PROGRAM_FAIL;
		}
		if (m.kind == MAFL_PROGRAM_LANDLOCK) {
			mafl_landlock_name(m.code, s->landlock, sizeof(s->landlock));
		} else if (m.kind == MAFL_PROGRAM_WITNESS) {
			s->witness = (pid_t)m.code;
			s->witness_alive = 1;
		} else if (m.kind == MAFL_PROGRAM_FAIL) {
			*fail = m;
			return MAFL_PROGRAM_FAIL;
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

/* R/name, a directory the launcher made (MAFL_WORK_MKDIR, launch.h): its descriptor, or -1
 * with why in s->why, in the words used for R/host_tools (mafl_run_subdir_error). */
static int take_subdir(struct sup *s, const char *name)
{
	int err, fd = take_launcher_file(s->report_fd, &err);

	if (fd >= 0)
		return fd;
	if (err > MAFL_WORK_MKDIR)
		mafl_run_subdir_error(s->why, sizeof(s->why), s->o->run_dir, name,
				      err - MAFL_WORK_MKDIR, 0);
	else
		mafl_run_subdir_error(s->why, sizeof(s->why), s->o->run_dir, name, 0, err);
	return -1;
}

static void publish_pid_markers(struct sup *s)
{
	int ht = s->d->host_tools, err, staged = take_launcher_file(s->report_fd, &err), rc;
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
static void sup_feed(struct sup *s, enum sup_event ev);

/* The launch failed: the report's sentence into s->why. Returns SUP_EV_FAILED. */
static enum sup_event sup_fail(struct sup *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static enum sup_event sup_fail(struct sup *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	return SUP_EV_FAILED;
}

/* SUP_SETUP: let go of the caller (its session, its terminal and its pipes: docker exec
 * reads them to EOF, and must get EOF as soon as the launcher returns); the signal and timer
 * descriptors; the run's child subreaper; the pipes to the program's process. */
static enum sup_event sup_setup(struct sup *s)
{
	sigset_t mask;
	int devnull, out[2], msg[2], marker[2];

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
	s->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->sfd < 0 || s->tfd < 0)
		return sup_fail(s, "cannot create the supervisor's signal and timer descriptors: "
				"%s", strerror(errno));
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return sup_fail(s, "cannot become the run's child subreaper: %s",
				strerror(errno));
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(marker, O_CLOEXEC) < 0 ||
	    pipe2(msg, O_CLOEXEC | (MAFL_SPAWN_FORK ? 0 : O_NONBLOCK)) < 0)
		return sup_fail(s, "cannot create a pipe: %s", strerror(errno));
	s->out_r = out[0];
	s->out_w = out[1];
	s->msg_r = msg[0];
	s->msg_w = msg[1];
	s->marker_r = marker[0];
	s->marker_w = marker[1];
	MAFL_MARK("supervisor: descriptors, subreaper, pipes");
	return SUP_EV_DONE;
}

/* SUP_PREPARE: while the launcher makes the launch's files, the program's identity and what
 * of its process's set-up needs none of them (the bounding set, the signals to reset); then
 * what the launcher made (run.c: R/work, program_output.txt, the calls directory, R/tmp and
 * the channel's listening socket), the channel and its variables, and R lent to the
 * identity. */
static enum sup_event sup_prepare(struct sup *s)
{
	struct channel_opts copts = {.tools = s->o->tools, .max_calls = s->o->max_calls};
	int id_ok, rc;

	id_ok = mafl_identity_choose(s->o, getpid(), &s->id, s->why, sizeof(s->why)) == 0;
	if (id_ok)
		mafl_identity_drop_bounding(&s->id);
	s->ignored = mafl_program_ignored_signals();
	s->work = take_subdir(s, MAFP_DIR_WORK);
	if (s->work < 0)
		return SUP_EV_FAILED;
	s->out_fd = take_launcher_file(s->report_fd, &rc);
	if (s->out_fd < 0)
		return sup_fail(s, "cannot create %s/%s/%s: %s", s->o->run_dir,
				MAFP_DIR_HOST_TOOLS, MAFP_FILE_OUTPUT, strerror(rc));
	s->calls = take_subdir(s, MAFP_DIR_HOST_TOOLS "/" MAFP_DIR_CALLS);
	if (s->calls < 0)
		return SUP_EV_FAILED;
	s->tmp = take_subdir(s, MAFL_DIR_TMP);
	if (s->tmp < 0)
		return SUP_EV_FAILED;
	s->listener = take_launcher_file(s->report_fd, &rc);
	MAFL_MARK("supervisor: the launcher's files taken");
	rc = mafl_channel_open(&s->ch, s->d->host_tools, s->listener, &copts, &s->chan_fd);
	s->envp = rc == 0 ? channel_env(s->o->envp, s->chan_fd, s->o->tools, s->o->run_dir) : NULL;
	if (!s->envp)
		return sup_fail(s, "cannot open the call channel: %s",
				strerror(rc < 0 ? -rc : ENOMEM));
	MAFL_MARK("supervisor: channel open, environment");
	if (!id_ok || mafl_identity_lend_dirs(&s->id, s->d, s->work, s->calls, s->tmp,
					      s->o->run_dir, &s->lent, s->why,
					      sizeof(s->why)) < 0)
		return SUP_EV_FAILED;
	MAFL_MARK("supervisor: identity chosen, run directory lent");
	return SUP_EV_DONE;
}

/* Starts the program's process, which has exec'd or failed when this returns (spawn.h).
 * Every descriptor it should not keep is close-on-exec. */
static pid_t start_program(struct sup *s)
{
	struct mafl_cpu_hold cpus;
	int err, ruleset = take_launcher_file(s->report_fd, &err);
	struct mafl_program_args a = {s->o, &s->id, s->work, s->d->run, s->lent.cover,
				      s->d->host_tools, ruleset, s->ignored, s->marker_r,
				      s->out_w, s->msg_w, s->chan_fd, s->envp, &cpus};
	pid_t pid;

	/* Held to one CPU already (run.c), or held here to this one. */
	if (s->away->held)
		cpus = *s->away;
	else
		mafl_cpu_hold(&cpus);
	/* A clone child (witness.h), as the witness it makes will be. */
	pid = mafl_spawn_vfork_signal(mafl_program_main, &a, MAFL_CHILD_EXIT_SIGNAL);
	err = errno;
	MAFL_MARK("supervisor: the program's process has exec'd (vfork returned)");
	if (pid >= 0)
		mafl_cpu_release(&cpus);
	if (ruleset >= 0)
		close(ruleset);
	errno = err;
	return pid;
}

/* SUP_START: the program's process, then its messages, which say whether it reached exec;
 * once it has, the pid markers, the launch line, and the timeout. */
static enum sup_event sup_start(struct sup *s)
{
	/* The launch path: nothing before it has used the vDSO (util.h). */
	s->start_ms = mafl_now_ms_syscall();
	s->pid = start_program(s);
	if (s->pid < 0)
		return sup_fail(s, "cannot start the program's process: %s", strerror(errno));
	close(s->chan_fd);
	close(s->work);
	s->main_alive = 1;
	close(s->out_w);
	close(s->msg_w);
	close(s->marker_r);
	if (await_exec(s, s->msg_r, &s->fail) == MAFL_PROGRAM_FAIL)
		return SUP_EV_EXEC_FAILED;
	close(s->msg_r);
	MAFL_MARK("supervisor: exec confirmed (its messages read)");
	mafl_channel_set_witness(s->ch, s->witness);
	publish_pid_markers(s);
	MAFL_MARK("supervisor: pid and session markers published");
	send_started(s->report_fd, s->pid, &s->id, s->landlock);
	if (s->o->timeout_ms > 0)
		arm(s->tfd, s->o->timeout_ms);
	fcntl(s->out_r, F_SETFL, O_NONBLOCK);
	return SUP_EV_DONE;
}

/* The signals that came: a child ended (reaped), or a stop. The witness gone before the end
 * means the run's session was killed from outside (witness.h). */
static void take_signals(struct sup *s)
{
	struct signalfd_siginfo si;

	while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD || si.ssi_signo == MAFL_CHILD_EXIT_SIGNAL)
			reap(s);
		else
			sup_feed(s, SUP_EV_STOP);
	}
	if (!s->witness_alive && s->witness_killed)
		sup_feed(s, SUP_EV_SESSION_KILLED);
}

/* SUP_RUNNING, SUP_ENDING, SUP_KILLING and SUP_CUT_OFF: one turn of the loop while the
 * program runs, which feeds the events it sees and returns SUP_EV_ENDED once the program
 * has ended. Each turn does bounded work (the output relay, the channel), so the signals
 * and the timer are seen at the next turn whatever the program floods us with. The channel
 * is not served once the session is cut off: the host may be removing R/host_tools. */
static enum sup_event sup_turn(struct sup *s)
{
	struct pollfd pf[3 + MAFL_CHANNEL_POLLFDS] = {
		{.fd = s->sfd, .events = POLLIN},
		{.fd = s->tfd, .events = POLLIN},
		{.fd = s->out_open ? s->out_r : -1, .events = POLLIN},
	};
	int wait = -1, nch = 0;

	if (s->state != SUP_CUT_OFF)
		nch = mafl_channel_pollfds(s->ch, pf + 3, &wait);
	if (poll(pf, (nfds_t)(3 + nch), wait) < 0)
		return errno == EINTR ? SUP_EV_NONE : SUP_EV_ENDED;
	if (pf[0].revents & POLLIN)
		take_signals(s);
	if (pf[1].revents & POLLIN) {
		unsigned long long ticks;

		if (read(s->tfd, &ticks, sizeof(ticks)) == (ssize_t)sizeof(ticks))
			sup_feed(s, SUP_EV_TIMER);
	}
	if (pf[2].revents & (POLLIN | POLLHUP | POLLERR)) {
		int more, i;

		/* Until the pipe is empty, but bounded so signals and the timer are not starved
		 * by a flood. */
		for (i = 0, more = 1; more == 1 && i < 64; i++)
			more = relay_output(s);
		if (!more)
			s->out_open = 0;
	}
	if (s->state != SUP_CUT_OFF)
		mafl_channel_handle(s->ch, pf + 3, nch);
	return s->main_alive ? SUP_EV_NONE : SUP_EV_ENDED;
}

/* SUP_TEARDOWN: the program has ended. The rest of the run ends, the last of its output is
 * taken, and the record and the markers are published. */
static enum sup_event sup_teardown(struct sup *s)
{
	struct mafp_exit_record rec;

	kill_run(s);
	if (s->out_open) {
		struct pollfd pf = {.fd = s->out_r, .events = POLLIN};

		/* Every writer in the run is gone; only a descriptor passed outside the run could
		 * keep the pipe open, so stop at EOF or after a quiet 200 ms. */
		while (poll(&pf, 1, 200) > 0 && relay_output(s))
			;
	}
	fsync(s->out_fd);
	close(s->out_fd);

	memset(&rec, 0, sizeof(rec));
	rec.exit_code = mafp_exit_code_from_wait_status(s->main_wstatus);
	if (s->status == MAFP_STATUS_EXITED && WIFSIGNALED(s->main_wstatus))
		s->status = MAFP_STATUS_SIGNALED;
	rec.status = s->status;
	rec.signal = WIFSIGNALED(s->main_wstatus) ? WTERMSIG(s->main_wstatus) : 0;
	rec.output_bytes = (int64_t)s->out_bytes;
	rec.output_truncated = s->out_truncated;
	rec.calls = mafl_channel_calls(s->ch);
	rec.n_undelivered = mafl_channel_undelivered(s->ch, rec.undelivered,
						     MAFP_UNDELIVERED_MAX);
	mafl_channel_free(s->ch);
	mafl_str_copy(rec.seccomp, sizeof(rec.seccomp), mafl_seccomp_name(&s->o->policy));
	mafl_str_copy(rec.landlock, sizeof(rec.landlock), s->landlock);
	fill_usage(&rec, s->start_ms);
	write_markers(s, &rec, 0);
	s->exit_code = 0;
	return SUP_EV_DONE;
}

/* SUP_LAUNCH_FAILED: the program's process failed before exec. What it wrote meanwhile is
 * drained into the output file, and the failure recorded and reported. */
static enum sup_event sup_launch_failed(struct sup *s)
{
	close(s->msg_r);
	kill_run(s);
	while (relay_output(s))
		;
	launch_failed(s, &s->fail);
	s->exit_code = 0;
	return SUP_EV_DONE;
}

/* SUP_FAILED: R goes back to its owner if it was lent, and the launcher is told why. */
static enum sup_event sup_failed(struct sup *s)
{
	mafl_identity_take_back(&s->id, s->d, &s->lent);
	send_report(s->report_fd, MAFP_EXIT_LAUNCHER, "%s", s->why);
	s->exit_code = 1;
	return SUP_EV_DONE;
}

/* What entering a state does, beyond its function's work. */
static void sup_enter(struct sup *s, enum sup_event ev)
{
	switch (s->state) {
	case SUP_ENDING:
		/* SIGTERM to the whole run now, SIGKILL when the grace is over (the timer). */
		s->status = ev == SUP_EV_TIMER ? MAFP_STATUS_TIMEOUT : MAFP_STATUS_STOPPED;
		mafl_tree_signal(getpid(), SIGTERM, s->witness);
		arm(s->tfd, s->o->grace_ms);
		break;
	case SUP_KILLING:
		mafl_tree_signal(getpid(), SIGKILL, s->witness);
		break;
	case SUP_CUT_OFF:
		/* The host has ended the run and may be removing R/host_tools: the rest of the
		 * run ends now, and nothing more is made there. */
		s->session_killed = 1;
		s->status = MAFP_STATUS_STOPPED;
		mafl_tree_signal(getpid(), SIGKILL, 0);
		break;
	default:
		break;
	}
}

/* The one place the state changes. */
static void sup_feed(struct sup *s, enum sup_event ev)
{
	enum sup_state next = (enum sup_state)sup_next[s->state][ev];

	if (next == SUP_STAY || next == s->state)
		return;
	s->state = next;
	sup_enter(s, ev);
}

void mafl_supervise(const struct run_opts *o, const struct run_dirs *d, int report_fd,
		    const struct mafl_cpu_hold *away)
{
	/* Each state's work, which returns the event that ends it, or SUP_EV_NONE. */
	static enum sup_event (*const work[SUP_NSTATES])(struct sup *) = {
		[SUP_SETUP] = sup_setup,
		[SUP_PREPARE] = sup_prepare,
		[SUP_START] = sup_start,
		[SUP_RUNNING] = sup_turn,
		[SUP_ENDING] = sup_turn,
		[SUP_KILLING] = sup_turn,
		[SUP_CUT_OFF] = sup_turn,
		[SUP_TEARDOWN] = sup_teardown,
		[SUP_LAUNCH_FAILED] = sup_launch_failed,
		[SUP_FAILED] = sup_failed,
	};
	struct sup s;

	MAFL_MARK("supervisor: started");
	memset(&s, 0, sizeof(s));
	s.o = o;
	s.d = d;
	s.report_fd = report_fd;
	s.away = away;
	s.status = MAFP_STATUS_EXITED;
	s.out_open = 1;
	s.sfd = s.tfd = s.listener = s.chan_fd = -1;
	s.work = s.calls = s.tmp = -1;
	snprintf(s.landlock, sizeof(s.landlock), "off");
	for (s.state = SUP_SETUP; s.state != SUP_EXIT;)
		sup_feed(&s, work[s.state](&s));
	_exit(s.exit_code);
}
