/* maf-launch wait: the host's long-poll, for backends whose exec may block. One exec finds and
 * fetches the next event: it blocks on inotify (no polling) until request N or the run's exit
 * marker exists, prints it and exits 0.
 *
 * Output on stdout, one event per invocation (the host library parses it): a first line that
 * is one JSON object, then, when "size" is not zero and there is no "error" nor "oversized",
 * exactly "size" raw bytes and nothing after them:
 *
 *   {"event":"request","id":N,"size":L}\n   then the L bytes of
 *        R/host_tools/host_tool_calls/NNNN.request.json (NNNN: N zero-padded to 4 digits)
 *   {"event":"request","id":N,"size":0,"error":"not a regular file"}\n
 *        the request name is a symlink, a directory, a FIFO...: nothing opened or read
 *   {"event":"request","id":N,"size":0,"error":"cannot be read"}\n
 *        a regular file that could not be opened or read (e.g. permissions)
 *   {"event":"request","id":N,"size":L,"oversized":true}\n
 *        L is more than --max-bytes: nothing read
 *   {"event":"exit","size":L}\n   then the L (at most 32) bytes of R/host_tools/program_exit_code
 *   {"event":"exit","size":0,"error":"not a regular file"}\n   (or "cannot be read")
 *   {"event":"exit","size":L,"oversized":true}\n   (L more than 32: nothing read)
 *   {"event":"timeout"}\n
 *   {"event":"lost"}\n   with --supervisor-pid P: P is gone (or is no longer the run's
 *        supervisor) and left no exit marker
 *
 * maf-launch relay is the same wait after an answer: with --answer ID --value-stdin it first
 * reads its stdin to the end (at most --max-answer-bytes) and writes it whole as
 * R/host_tools/host_tool_calls/IIII.response.json (a temporary name in that directory, then
 * a rename), so a host whose exec takes an input answers one call and fetches the next in
 * one operation. The answer is never an argument: any process of the machine, under any uid,
 * may read an argv in /proc/PID/cmdline while the relay waits. A host whose exec takes no
 * input writes the answer itself first, and the relay then carries none.
 *
 * A waiting request takes priority over the exit marker. The bytes are what the file held
 * when read, unchecked: the shim publishes through NNNN.request.json.part and a rename, so a
 * request is whole when its final name appears; anything else the program wrote is for the
 * host to judge, as upstream's host does. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "commands.h"
#include "prove.h"
#include "protocol.h"
#include "util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define WAIT_DEFAULT_MAX_BYTES (1ull << 20)
/* The largest answer serve and relay take from the host, unless told otherwise. */
#define SERVE_DEFAULT_MAX_ANSWER (64ull << 20)
#define WAIT_MAX_BYTES_CAP (1ull << 30)
#define WAIT_TIMEOUT_MS_MAX 86400000ull
#define WAIT_FALLBACK_MS 20
#define WAIT_EVENTS (IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR)
#define INO_NONE (-2) /* no watches asked for yet */
/* wait and relay look every millisecond this long before they make inotify watches. */
#define WAIT_LOOK_FIRST_MS 100

static void emit(const char *head, const void *bytes, size_t len)
{
	if (mafl_write_all(1, head, strlen(head)) < 0 || (len && mafl_write_all(1, bytes, len) < 0))
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot write to stdout");
}

/* Prints the event for dirfd/name, a file that existed a moment ago. prefix is the head line
 * up to the size ("{\"event\":\"exit\""). Returns 0 once printed, or -1 if the file has
 * vanished since (nothing printed). */
static int emit_file(int dirfd, const char *name, const char *prefix, unsigned long long max)
{
	char head[160];
	struct stat st;
	ssize_t n;
	char *buf;
	int fd;

	fd = mafl_open_regular_at(dirfd, name, &st);
	if (fd < 0) {
		if (errno == ENOENT)
			return -1;
		snprintf(head, sizeof(head), "%s,\"size\":0,\"error\":\"%s\"}\n", prefix,
			 errno == EINVAL ? "not a regular file" : "cannot be read");
		emit(head, NULL, 0);
		return 0;
	}
	if ((unsigned long long)st.st_size > max) {
		close(fd);
		snprintf(head, sizeof(head), "%s,\"size\":%lld,\"oversized\":true}\n", prefix,
			 (long long)st.st_size);
		emit(head, NULL, 0);
		return 0;
	}
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!buf)
		mafl_die(MAFP_EXIT_LAUNCHER, "out of memory for a %lld-byte file",
			 (long long)st.st_size);
	/* At most the size seen: a file still growing is cut there, and the head line gives
	 * the count actually read, so the framing holds whatever the program does. */
	n = mafl_read_full(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n < 0)
		snprintf(head, sizeof(head), "%s,\"size\":0,\"error\":\"cannot be read\"}\n",
			 prefix);
	else
		snprintf(head, sizeof(head), "%s,\"size\":%zd}\n", prefix, n);
	emit(head, buf, n > 0 ? (size_t)n : 0);
	free(buf);
	return 0;
}

static int exists_at(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Watches the directory open as fd: through its /proc/self/fd link, which names the very
 * directory opened without following symlinks; by path where /proc is not mounted. Returns
 * 0, or -1 with errno set. */
static int watch(int ino, int fd, const char *path)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (inotify_add_watch(ino, proc, WAIT_EVENTS) >= 0)
		return 0;
	return inotify_add_watch(ino, path, WAIT_EVENTS | IN_DONT_FOLLOW) >= 0 ? 0 : -1;
}

/* The inotify instance watching both directories, or -1 (warned) where there is none to
 * have. */
static int start_watching(int calls_fd, const char *calls_path, int ht_fd, const char *ht_path)
{
	int ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (ino >= 0 && watch(ino, calls_fd, calls_path) == 0 && watch(ino, ht_fd, ht_path) == 0)
		return ino;
	/* Out of inotify instances or watches (a per-user limit, 128 instances by default): a
	 * slow look beats failing the run. */
	mafl_warnx("cannot use inotify (%s); looking every %d ms instead", strerror(errno),
		   WAIT_FALLBACK_MS);
	if (ino >= 0)
		close(ino);
	return -1;
}

static int open_dir_at(int dirfd, const char *name, const char *shown)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (errno == ENOENT)
		mafl_die(MAFP_EXIT_LAUNCHER, "%s does not exist", shown);
	if (errno == ELOOP || errno == ENOTDIR)
		mafl_die(MAFP_EXIT_LAUNCHER, "%s is not a directory (a symlink or a file)", shown);
	mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot open %s", shown);
}

/* Writes data whole as dirfd/name: a fresh file under a temporary name (created, never
 * opened if it exists: the directory is the program's too), then a rename over name, which
 * replaces a symlink planted there rather than following it. Dies on failure. */
static void write_whole(int dirfd, const char *dir_shown, const char *name, const void *data,
			size_t len)
{
	char tmp[128];
	int fd = -1, i;

	for (i = 0; i < 100 && fd < 0; i++) {
		snprintf(tmp, sizeof(tmp), ".%s.%ld.%llx.tmp", name, (long)getpid(),
			 (unsigned long long)mafl_now_ms() ^ ((unsigned long long)i << 24));
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot create a file in %s for the answer",
			       dir_shown);
	if (mafl_write_all(fd, data, len) < 0 || close(fd) < 0) {
		int e = errno;

		unlinkat(dirfd, tmp, 0);
		errno = e;
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot write the answer %s/%s", dir_shown,
			       name);
	}
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		int e = errno;

		unlinkat(dirfd, tmp, 0);
		errno = e;
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot put the answer in place as %s/%s",
			       dir_shown, name);
	}
}

/* The directories of a run, the inotify watches once made, and the supervisor named: what
 * a wait looks at, kept across the waits of `serve`. */
struct waiter {
	const char *run_dir;
	char ht_path[MAFP_RUN_DIR_MAX + 32], calls_path[MAFP_RUN_DIR_MAX + 64];
	int run_fd, ht_fd, calls_fd, ino, sup_fd, sup_gone;
	unsigned long long max_bytes;
	/* wait and relay: how long to look every millisecond before making the watches. */
	int look_first_ms;
};

static void waiter_open(struct waiter *w, const char *run_dir, unsigned long long sup,
			unsigned long long max_bytes)
{
	memset(w, 0, sizeof(*w));
	w->run_dir = run_dir;
	w->max_bytes = max_bytes;
	w->sup_fd = -1;
	w->run_fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w->run_fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			mafl_die(MAFP_EXIT_USAGE, "the run directory %s is not a directory (a "
				 "symlink or a file)", run_dir);
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot open the run directory %s", run_dir);
	}
	snprintf(w->ht_path, sizeof(w->ht_path), "%s/%s", run_dir, MAFP_DIR_HOST_TOOLS);
	w->ht_fd = open_dir_at(w->run_fd, MAFP_DIR_HOST_TOOLS, w->ht_path);
	if (mkdirat(w->ht_fd, MAFP_DIR_CALLS, 0777) < 0 && errno != EEXIST)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot create %s/%s", w->ht_path,
			       MAFP_DIR_CALLS);
	snprintf(w->calls_path, sizeof(w->calls_path), "%s/%s/%s", run_dir, MAFP_DIR_HOST_TOOLS,
		 MAFP_DIR_CALLS);
	w->calls_fd = open_dir_at(w->ht_fd, MAFP_DIR_CALLS, w->calls_path);
	/* The first looks go without watches: the host usually asks once the file is there or
	 * about to be, and a process that made an inotify watch takes several milliseconds
	 * longer to end, as the kernel releases it (README, Performance). */
	w->ino = INO_NONE;

	/* The supervisor, when named: its end wakes us (a pidfd polls readable once its process
	 * exits), and a supervisor that ended without the exit marker means the run is lost. It
	 * is proven to be R's while its pidfd is live: a recycled pid is no supervisor. */
	if (sup) {
		char why[512], rd[MAFP_RUN_DIR_MAX + 1];
		struct stat self;
		size_t len = strlen(run_dir);

		memcpy(rd, run_dir, len + 1);
		while (len > 1 && rd[len - 1] == '/')
			rd[--len] = '\0';
		w->sup_fd = (int)syscall(SYS_pidfd_open, (pid_t)sup, 0);
		if (w->sup_fd < 0 && errno != ENOSYS)
			w->sup_gone = 1;
		else if (stat("/proc/self/exe", &self) == 0 &&
			 mafl_prove_supervisor((pid_t)sup, rd, &self, why, sizeof(why)) < 0)
			w->sup_gone = 1;
	}
}

/* After a poll of {inotify, the supervisor's pidfd, in_fd}: notes the supervisor's end, and
 * returns 1 when in_fd is readable or hung up. */
static int woken(struct waiter *w, const struct pollfd *pf, int in_fd)
{
	if (pf[1].revents) {
		w->sup_gone = 1;
		close(w->sup_fd);
		w->sup_fd = -1;
	}
	return in_fd >= 0 && pf[2].revents;
}

/* Looks, and waits when there is nothing yet, until request next or the exit marker exists,
 * the supervisor is lost, or timeout_ms passed (-1: no timeout), and prints the event.
 * Returns 0 once an event is printed; with in_fd >= 0, 1 as soon as in_fd is readable or
 * hung up, nothing printed. Once nothing is found, the watches go in place and everything
 * is looked at again, so a file that appears after that look wakes us and one before it is
 * seen by it. */
static int waiter_event(struct waiter *w, unsigned long long next, long long timeout_ms,
			int in_fd)
{
	char request[64], prefix[64];
	long long deadline = timeout_ms < 0 ? -1 : mafl_now_ms() + timeout_ms;
	long long looks_end = mafl_now_ms() + w->look_first_ms;

	if (mafp_call_file_name(request, sizeof(request), (long)next, MAFP_SUFFIX_REQUEST) < 0)
		mafl_die(MAFP_EXIT_USAGE, "call id %llu is out of range", next);
	snprintf(prefix, sizeof(prefix), "{\"event\":\"request\",\"id\":%llu", next);
	for (;;) {
		struct pollfd pf[3] = {{.fd = w->ino, .events = POLLIN},
				       {.fd = w->sup_fd, .events = POLLIN},
				       {.fd = in_fd, .events = POLLIN}};
		char evbuf[4096];
		long long left;
		int exited;

		/* The marker first, the request after: the supervisor writes the marker only once
		 * every process of the run is gone, so a request not there after it never will be,
		 * and one that is there is served first. */
		exited = exists_at(w->ht_fd, MAFP_MARKER_EXIT_CODE);
		if (exists_at(w->calls_fd, request) &&
		    emit_file(w->calls_fd, request, prefix, w->max_bytes) == 0)
			return 0;
		if (exited && emit_file(w->ht_fd, MAFP_MARKER_EXIT_CODE, "{\"event\":\"exit\"",
					MAFP_MARKER_MAX) == 0)
			return 0;
		/* The supervisor writes the marker before it exits: gone without it, it is lost. */
		if (!exited && w->sup_gone) {
			emit("{\"event\":\"lost\"}\n", NULL, 0);
			return 0;
		}
		left = deadline < 0 ? 3600000 : deadline - mafl_now_ms();
		if (left <= 0) {
			emit("{\"event\":\"timeout\"}\n", NULL, 0);
			return 0;
		}
		if (w->ino == INO_NONE && mafl_now_ms() < looks_end) {
			/* A look a millisecond (two fstatat calls) while the next request is most
			 * likely to come, the supervisor's end still waking us. */
			pf[0].fd = -1;
			if (poll(pf, 3, 1) < 0 && errno != EINTR)
				mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot wait");
			if (woken(w, pf, in_fd))
				return 1;
			continue;
		}
		if (w->ino == INO_NONE) {
			w->ino = start_watching(w->calls_fd, w->calls_path, w->ht_fd, w->ht_path);
			continue;
		}
		if (w->ino < 0 && left > WAIT_FALLBACK_MS)
			left = WAIT_FALLBACK_MS;
		if (w->ino < 0)
			pf[0].fd = -1;
		if (poll(pf, 3, left > 3600000 ? 3600000 : (int)left) < 0 && errno != EINTR)
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot wait for inotify events");
		if (woken(w, pf, in_fd))
			return 1;
		/* Which file woke us does not matter: both are looked at again. */
		while (w->ino >= 0 && read(w->ino, evbuf, sizeof(evbuf)) > 0)
			;
	}
}

static int wait_or_relay(int argc, char **argv, int relay);

int mafl_cmd_wait(int argc, char **argv)
{
	return wait_or_relay(argc, argv, 0);
}

int mafl_cmd_relay(int argc, char **argv)
{
	return wait_or_relay(argc, argv, 1);
}

static unsigned long long take_call_id(const char *name, const char *v)
{
	unsigned long long id;

	if (mafl_parse_u64(v, MAFP_CALL_ID_MAX, &id) < 0 || id < 1)
		mafl_die(MAFP_EXIT_USAGE, "%s takes a call id from 1 to %d, not '%s'", name,
			 MAFP_CALL_ID_MAX, v);
	return id;
}

static unsigned long long take_max_answer(const char *v)
{
	unsigned long long max;

	if (mafl_parse_u64(v, WAIT_MAX_BYTES_CAP, &max) < 0)
		mafl_die(MAFP_EXIT_USAGE, "--max-answer-bytes takes a byte count up to %llu, "
			 "not '%s'", WAIT_MAX_BYTES_CAP, v);
	return max;
}

/* What wait, relay and serve are told. */
struct wait_opts {
	const char *run_dir;
	unsigned long long next, timeout_ms, max_bytes, sup, answer, max_answer;
	int have_timeout, from_stdin, ack;
};

/* Applies one option of wait's, relay's or serve's to w. */
static void wait_option(struct wait_opts *w, int key, const char *v)
{
	switch (key) {
	case MAFL_O_RUN_DIR:
		w->run_dir = v;
		break;
	case MAFL_O_SUPERVISOR_PID:
		if (mafl_parse_u64(v, 0x7fffffff, &w->sup) < 0 || w->sup < 2)
			mafl_die(MAFP_EXIT_USAGE, "--supervisor-pid takes a process id greater "
				 "than 1, not '%s'", v);
		break;
	case MAFL_O_MAX_BYTES:
		if (mafl_parse_u64(v, WAIT_MAX_BYTES_CAP, &w->max_bytes) < 0)
			mafl_die(MAFP_EXIT_USAGE, "--max-bytes takes a byte count up to %llu, not "
				 "'%s'", WAIT_MAX_BYTES_CAP, v);
		break;
	case MAFL_O_MAX_ANSWER_BYTES:
		w->max_answer = take_max_answer(v);
		break;
	case MAFL_O_ANSWER:
		w->answer = take_call_id("--answer", v);
		break;
	case MAFL_O_VALUE_STDIN:
		w->from_stdin = 1;
		break;
	case MAFL_O_ACK:
		w->ack = 1;
		break;
	case MAFL_O_NEXT:
		w->next = take_call_id("--next", v);
		break;
	case MAFL_O_TIMEOUT_MS:
		if (mafl_parse_u64(v, WAIT_TIMEOUT_MS_MAX, &w->timeout_ms) < 0)
			mafl_die(MAFP_EXIT_USAGE, "--timeout-ms takes milliseconds from 0 to %llu, "
				 "not '%s'", WAIT_TIMEOUT_MS_MAX, v);
		w->have_timeout = 1;
		break;
	}
}

/* Reads the options of command index (wait, relay or serve) into w. */
static void wait_parse(int index, int argc, char **argv, struct wait_opts *w)
{
	struct mafl_args a;
	const char *v;
	int key;

	memset(w, 0, sizeof(*w));
	w->max_bytes = WAIT_DEFAULT_MAX_BYTES;
	w->max_answer = SERVE_DEFAULT_MAX_ANSWER;
	mafl_opt_init(&a, &mafl_commands[index], argc, argv);
	while ((key = mafl_opt_next(&a, &v)) != MAFL_OPT_END)
		wait_option(w, key, v);
}

static void check_run_dir(const char *run_dir, const char *cmd, const char *required)
{
	const char *why;

	if (!run_dir)
		mafl_die(MAFP_EXIT_USAGE, "%s required (try 'maf-launch %s --help')", required,
			 cmd);
	if (mafp_run_dir_check(run_dir, &why) < 0)
		mafl_die(MAFP_EXIT_USAGE, "bad --run-dir '%s': %s", run_dir, why);
}

/* All of stdin, at most max bytes (malloc'd; *len its length). Past max is a usage error with
 * nothing written: the host sent an answer larger than it said it would. */
static unsigned char *read_answer(unsigned long long max, size_t *len)
{
	size_t size = 0, got = 0;
	unsigned char *buf = NULL;

	for (;;) {
		ssize_t n;

		if (got == size) {
			/* One byte past max, to tell an answer of max bytes from a longer one. */
			size_t want = size ? size * 2 : 65536;
			unsigned char *nb;

			if (want > max + 1)
				want = (size_t)max + 1;
			nb = realloc(buf, want);
			if (!nb)
				mafl_die(MAFP_EXIT_LAUNCHER, "out of memory for a %zu-byte "
					 "answer", want);
			buf = nb;
			size = want;
		}
		n = mafl_read_full(0, buf + got, size - got);
		if (n < 0)
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot read the answer on stdin");
		got += (size_t)n;
		if (got > max)
			mafl_die(MAFP_EXIT_USAGE, "the answer on stdin is longer than %llu bytes "
				 "(--max-answer-bytes)", max);
		if (got < size)
			break;	/* stdin ended before the buffer filled */
	}
	*len = got;
	return buf;
}

static int wait_or_relay(int argc, char **argv, int relay)
{
	const char *cmd = relay ? "relay" : "wait";
	unsigned char *answer_bytes = NULL;
	size_t answer_len = 0;
	char answer_name[64];
	struct wait_opts o;
	struct waiter w;

	wait_parse(relay ? MAFL_COMMAND_RELAY : MAFL_COMMAND_WAIT, argc, argv, &o);
	if (!o.next || !o.have_timeout)
		o.run_dir = NULL;
	check_run_dir(o.run_dir, cmd, "--run-dir, --next and --timeout-ms are");
	if (!o.answer != !o.from_stdin)
		mafl_die(MAFP_EXIT_USAGE, "--answer and --value-stdin go together");
	if (o.from_stdin) {
		if (mafp_call_file_name(answer_name, sizeof(answer_name), (long)o.answer,
					MAFP_SUFFIX_RESPONSE) < 0)
			mafl_die(MAFP_EXIT_USAGE, "--answer %llu is out of range", o.answer);
		answer_bytes = read_answer(o.max_answer, &answer_len);
	}
	waiter_open(&w, o.run_dir, o.sup, o.max_bytes);
	w.look_first_ms = WAIT_LOOK_FIRST_MS;
	if (answer_bytes) {
		write_whole(w.calls_fd, w.calls_path, answer_name, answer_bytes, answer_len);
		free(answer_bytes);
	}
	return waiter_event(&w, o.next, (long long)o.timeout_ms, -1);
}

/* ---- serve ------------------------------------------------------------------------------- */

/* The relay over a stream: frames on stdin ({"next":N}, or {"answer":I,"size":L} and L bytes),
 * each answered by one event of wait's on stdout. An event after an answer means the answer
 * is in place; with --ack, serve says so the moment it is, in a line of its own
 * ({"event":"accepted","id":I}) before it waits for I + 1, so that a host learns it while the
 * program computes rather than at its next call or its end. */

#define SERVE_HEAD_MAX 256

/* Reads the host's frames from fd 0. */
struct frames {
	char buf[SERVE_HEAD_MAX + 1];
	size_t len;                    /* bytes in buf not taken yet */
};

/* Fills f->buf until it holds a newline and returns the head line's length (newline
 * excluded). Exits 0 when stdin ends before any byte of a frame. */
static size_t frame_head(struct frames *f)
{
	for (;;) {
		char *nl = memchr(f->buf, '\n', f->len);
		ssize_t n;

		if (nl)
			return (size_t)(nl - f->buf);
		if (f->len == SERVE_HEAD_MAX)
			mafl_die(MAFP_EXIT_USAGE, "a frame's head line is longer than %d bytes",
				 SERVE_HEAD_MAX);
		n = read(0, f->buf + f->len, SERVE_HEAD_MAX - f->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot read stdin");
		if (n == 0) {
			if (f->len == 0)
				exit(0);
			mafl_die(MAFP_EXIT_USAGE, "stdin ended inside a frame");
		}
		f->len += (size_t)n;
	}
}

/* Drops the first n bytes of f->buf. */
static void frame_take(struct frames *f, size_t n)
{
	memmove(f->buf, f->buf + n, f->len - n);
	f->len -= n;
}

/* The frame's body: size bytes, the ones already in f->buf first. Dies on a short stdin. */
static void frame_body(struct frames *f, unsigned char *body, size_t size)
{
	size_t have = f->len < size ? f->len : size;

	memcpy(body, f->buf, have);
	frame_take(f, have);
	if (have < size && mafl_read_full(0, body + have, size - have) != (ssize_t)(size - have))
		mafl_die(MAFP_EXIT_USAGE, "stdin ended inside a %zu-byte answer", size);
}

/* A member of the head line: a whole number in [lo, hi], or -1 when it is absent. */
static long long head_number(const cJSON *head, const char *name, long long lo, long long hi)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(head, name);

	if (!v)
		return -1;
	if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi ||
	    v->valuedouble != (double)(long long)v->valuedouble)
		mafl_die(MAFP_EXIT_USAGE, "a frame's \"%s\" is not a whole number from %lld to "
			 "%lld", name, lo, hi);
	return (long long)v->valuedouble;
}

int mafl_cmd_serve(int argc, char **argv)
{
	static struct frames f;
	struct wait_opts o;
	struct waiter w;

	wait_parse(MAFL_COMMAND_SERVE, argc, argv, &o);
	check_run_dir(o.run_dir, "serve", "--run-dir is");
	/* A host that went away ends us at the next event, not with a signal. */
	signal(SIGPIPE, SIG_IGN);
	waiter_open(&w, o.run_dir, o.sup, o.max_bytes);
	for (;;) {
		size_t hl = frame_head(&f);
		long long next, answer, size;
		cJSON *head = cJSON_ParseWithLength(f.buf, hl);

		if (!head || !cJSON_IsObject(head))
			mafl_die(MAFP_EXIT_USAGE, "a frame's head line is not a JSON object");
		next = head_number(head, "next", 1, MAFP_CALL_ID_MAX);
		answer = head_number(head, "answer", 1, MAFP_CALL_ID_MAX - 1);
		size = head_number(head, "size", 0, (long long)o.max_answer);
		cJSON_Delete(head);
		frame_take(&f, hl + 1);
		if ((next < 0) == (answer < 0) || (answer < 0) != (size < 0))
			mafl_die(MAFP_EXIT_USAGE, "a frame is {\"next\":N} or "
				 "{\"answer\":I,\"size\":L}");
		if (answer > 0) {
			char name[64];
			unsigned char *body = malloc(size ? (size_t)size : 1);

			if (!body)
				mafl_die(MAFP_EXIT_LAUNCHER, "out of memory for a %lld-byte "
					 "answer", size);
			frame_body(&f, body, (size_t)size);
			mafp_call_file_name(name, sizeof(name), (long)answer, MAFP_SUFFIX_RESPONSE);
			write_whole(w.calls_fd, w.calls_path, name, body, (size_t)size);
			free(body);
			if (o.ack) {
				char line[64];

				/* Whole and renamed into place: the supervisor takes it from here. */
				snprintf(line, sizeof(line), "{\"event\":\"accepted\",\"id\":%lld}\n",
					 answer);
				emit(line, NULL, 0);
			}
			next = answer + 1;
		}
		if (f.len)
			mafl_die(MAFP_EXIT_USAGE, "a frame came before the event of the one "
				 "before it");
		/* The host writes nothing until it has the event: stdin readable now means it
		 * has ended (or broken the rule). */
		if (waiter_event(&w, (unsigned long long)next, -1, 0) == 1) {
			frame_head(&f);    /* exits at the end of stdin */
			mafl_die(MAFP_EXIT_USAGE, "a frame came before the event of the one "
				 "before it");
		}
	}
}
