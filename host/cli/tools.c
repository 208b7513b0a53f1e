/* maf-host's tools: a command per call, or one tools server over newline-delimited JSON. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "protocol.h"
#include "cli_tools.h"

#define STDERR_KEEP TOOL_NOTE_MAX /* bytes of a tool's stderr kept for its refusal's note */
#define NOTE_TAIL 64            /* a note's room for a part's heading and its count */
#define REFUSAL_MAX 1000        /* bytes of a sentence taken from a tool */
#define SLICE_MS 100            /* how often a waiting call looks at cli_tools_cancel */
#define LINGER_MS 200           /* pipes held open past the shell's exit */

volatile sig_atomic_t cli_tools_cancel;

/* A growable buffer with a cap: past the cap is an error, never a silent truncation. */
struct buf {
	char *data;
	size_t len, cap_bytes;
	int over;               /* more than cap_bytes arrived */
	size_t dropped;         /* bytes past cap_bytes read and dropped (keep_past_cap) */
};

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cli_tool_answer_clear(struct tool_answer *a)
{
	cJSON_Delete(a->value);
	free(a->refusal);
	free(a->note);
	memset(a, 0, sizeof(*a));
}

/* Appends to a's note: label on a line of its own (when not NULL), then at most max bytes of
 * data[0..len), then a line counting what was not kept (the rest of data, and dropped
 * bytes the caller never kept). The note never passes TOOL_NOTE_MAX. A note that cannot be
 * kept (out of memory) is left out: the answer stands without it. */
static void note_add(struct tool_answer *a, const char *label, const char *data, size_t len,
		     size_t dropped, size_t max)
{
	size_t take = len < max ? len : max, room;

	if (!a->note && !(a->note = malloc(TOOL_NOTE_MAX + 1)))
		return;
	room = TOOL_NOTE_MAX + 1 - a->note_len;
	if (label && room > 2) {
		int n = snprintf(a->note + a->note_len, room, "%s%s\n",
				 a->note_len && a->note[a->note_len - 1] != '\n' ? "\n" : "",
				 label);

		a->note_len += (size_t)n < room ? (size_t)n : room - 1;
	}
	room = TOOL_NOTE_MAX + 1 - a->note_len;
	if (take >= room)
		take = room - 1;
	memcpy(a->note + a->note_len, data, take);
	a->note_len += take;
	room = TOOL_NOTE_MAX + 1 - a->note_len;
	if (len - take + dropped > 0 && room > 1) {
		int n = snprintf(a->note + a->note_len, room, "%s(%zu more bytes not kept)\n",
				 take && data[take - 1] != '\n' ? "\n" : "",
				 len - take + dropped);

		a->note_len += (size_t)n < room ? (size_t)n : room - 1;
	}
	a->note[a->note_len] = '\0';
}

/* A refused command's note: what it printed on stdout (out, when not NULL) and stderr, each
 * headed by its name when both are there, and then half the room each. */
static void command_note(struct tool_answer *a, const struct buf *out, const struct buf *err)
{
	int has_out = out && (out->len || out->dropped), has_err = err->len || err->dropped;
	size_t max = (has_out && has_err ? TOOL_NOTE_MAX / 2 : TOOL_NOTE_MAX) - NOTE_TAIL;

	if (has_out)
		note_add(a, has_err ? "stdout:" : NULL, out->data, out->len, out->dropped, max);
	if (has_err)
		note_add(a, has_out ? "stderr:" : NULL, err->data, err->len, err->dropped, max);
}

static int refuse(struct tool_answer *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int refuse(struct tool_answer *a, const char *fmt, ...)
{
	va_list ap;
	char buf[REFUSAL_MAX + 256];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	a->value = NULL;
	a->refusal = strdup(buf);
	return a->refusal ? 0 : -1;
}

/* Copies at most REFUSAL_MAX bytes of the first line of buf, control bytes and bytes that
 * are not UTF-8 as '?', so a tool's words can become a sentence without carrying a terminal
 * escape or a newline, and the JSON the program reads it from stays UTF-8 (its shim cannot
 * decode a response that is not). */
static void first_line(char *dst, size_t size, const char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)buf;
	size_t i = 0, n = 0, seq;

	while (len > 0 && (s[0] == '\n' || s[0] == '\r' || s[0] == ' ')) {
		s++;
		len--;
	}
	while (i < len && s[i] != '\n') {
		seq = cli_utf8_seq(s + i, len - i);
		if (n + (seq ? seq : 1) >= size || n + (seq ? seq : 1) > REFUSAL_MAX)
			break;
		if (seq == 0 || s[i] < 0x20 || s[i] == 0x7f) {
			dst[n++] = '?';
			i++;
			continue;
		}
		memcpy(dst + n, s + i, seq);
		n += seq;
		i += seq;
	}
	while (n > 0 && (dst[n - 1] == '\r' || dst[n - 1] == ' ' || dst[n - 1] == '?'))
		n--;
	dst[n] = '\0';
}

/* A child running `sh -c command` in its own process group. fds: the parent's ends, -1
 * where not piped (the child then keeps ours). */
struct child {
	pid_t pid;
	int in, out, err;
};

static int spawn_sh(const char *command, int pipe_err, struct child *c)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    (pipe_err && pipe2(err, O_CLOEXEC) < 0))
		goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 ||
		    (pipe_err && dup2(err[1], 2) < 0))
			_exit(126);
		execl("/bin/sh", "sh", "-c", command, (char *)NULL);
		_exit(127);
	}
	/* Also from here, so a kill of the group cannot race the child's own setpgid. */
	setpgid(pid, pid);
	close(in[0]);
	close(out[1]);
	if (pipe_err)
		close(err[1]);
	c->pid = pid;
	c->in = in[1];
	c->out = out[0];
	c->err = err[0];
	fcntl(c->in, F_SETFL, O_NONBLOCK);
	fcntl(c->out, F_SETFL, O_NONBLOCK);
	if (c->err >= 0)
		fcntl(c->err, F_SETFL, O_NONBLOCK);
	return 0;
fail:
	{
		int e = errno, i, *fds[] = {in, out, err};

		for (i = 0; i < 3; i++) {
			if (fds[i][0] >= 0)
				close(fds[i][0]);
			if (fds[i][1] >= 0)
				close(fds[i][1]);
		}
		errno = e;
	}
	return -1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* Kills the child's process group and reaps the child. Returns its wait status. */
static int kill_reap(struct child *c)
{
	int st = 0;

	kill(-c->pid, SIGKILL);
	kill(c->pid, SIGKILL);
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	close_fd(&c->in);
	close_fd(&c->out);
	close_fd(&c->err);
	return st;
}


/* Appends what fd has to b. Returns 1 if more may come, 0 at EOF, -1 on error or when the
 * cap is passed (b->over), -2 on out of memory. */
static int buf_drain(struct buf *b, int fd, int keep_past_cap)
{
	char tmp[65536];

	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));
		size_t take;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 1 : -1;
		}
		if (n == 0)
			return 0;
		take = (size_t)n;
		if (b->len + take > b->cap_bytes) {
			take = b->cap_bytes - b->len;
			b->over = 1;
			b->dropped += (size_t)n - take;
		}
		if (take > 0) {
			char *p = realloc(b->data, b->len + take + 1);

			if (!p)
				return -2;
			b->data = p;
			memcpy(b->data + b->len, tmp, take);
			b->len += take;
			b->data[b->len] = '\0';
		}
		if (b->over && !keep_past_cap)
			return -1;
		/* Short of the buffer: the pipe is empty for now, and the caller's poll will say
		 * when it is not (one read a wake, not a second to learn it is empty). */
		if ((size_t)n < sizeof(tmp))
			return 1;
	}
}

static const char *status_words(int st, char *buf, size_t size)
{
	if (WIFSIGNALED(st))
		snprintf(buf, size, "was killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(st));
	return buf;
}

int cli_tool_command_call(const char *name, const char *command, const char *args_json,
		      size_t out_max, long long timeout_ms, struct tool_answer *a)
{
	struct child c;
	struct buf out = {.cap_bytes = out_max}, err = {.cap_bytes = STDERR_KEEP};
	size_t in_len = strlen(args_json), in_off = 0;
	long long deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int st = 0, rc = -1, timed_out = 0, out_over = 0, reaped = 0, cancelled = 0;
	long long reaped_at = 0;
	char words[64], line[REFUSAL_MAX + 1];

	memset(a, 0, sizeof(*a));
	if (spawn_sh(command, 1, &c) < 0)
		return refuse(a, "the tool %s could not be started: %s", name, strerror(errno));
	if (in_len == 0)
		close_fd(&c.in);
	while (c.out >= 0 || c.err >= 0) {
		struct pollfd pf[3] = {
			{.fd = c.in, .events = POLLOUT},
			{.fd = c.out, .events = POLLIN},
			{.fd = c.err, .events = POLLIN},
		};
		long long now = mono_ms(), left = deadline - now;
		int r;

		if (left <= 0) {
			timed_out = 1;
			break;
		}
		if (cli_tools_cancel) {
			cancelled = 1;
			break;
		}
		/* A background process of the tool may hold its stdout open after the shell has
		 * exited: the answer is what was printed by then, and the group is killed. */
		if (!reaped && waitpid(c.pid, &st, WNOHANG) == c.pid) {
			reaped = 1;
			reaped_at = now;
		}
		if (reaped && now - reaped_at > LINGER_MS) {
			kill(-c.pid, SIGKILL);
			break;
		}
		r = poll(pf, 3, left > 50 ? 50 : (int)left);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (pf[0].revents & (POLLOUT | POLLERR | POLLHUP)) {
			ssize_t n = write(c.in, args_json + in_off, in_len - in_off);

			if (n > 0)
				in_off += (size_t)n;
			/* A tool that ignores its stdin and exits is fine: EPIPE ends the writing. */
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len)
				close_fd(&c.in);
		}
		if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = buf_drain(&out, c.out, 0);
			if (r == -2)
				goto out_kill;
			if (out.over) {
				out_over = 1;
				break;
			}
			if (r <= 0)
				close_fd(&c.out);
		}
		if (pf[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = buf_drain(&err, c.err, 1);
			if (r == -2)
				goto out_kill;
			/* Drained past the cap too, so the tool cannot block on a full pipe. */
			if (r <= 0)
				close_fd(&c.err);
		}
	}
	if (timed_out || out_over || cancelled) {
		if (reaped) {
			kill(-c.pid, SIGKILL);
		} else {
			kill_reap(&c);
		}
		if (cancelled)
			rc = refuse(a, "the tool %s was cut short: the run is stopping", name);
		else if (timed_out)
			rc = refuse(a, "the tool %s did not answer within %lld ms", name, timeout_ms);
		else
			rc = refuse(a, "the tool %s printed more than %zu bytes", name, out_max);
		goto out_free;
	}
	/* stdout and stderr are closed; the shell is about to exit (or already has). */
	close_fd(&c.in);
	for (; !reaped;) {
		pid_t p = waitpid(c.pid, &st, WNOHANG);

		if (p == c.pid)
			break;
		if (p < 0 && errno != EINTR) {
			st = 0;
			break;
		}
		if (mono_ms() >= deadline) {
			st = kill_reap(&c);
			rc = refuse(a, "the tool %s did not exit within %lld ms", name, timeout_ms);
			goto out_free;
		}
		{
			struct timespec ts = {0, 2000000};

			nanosleep(&ts, NULL);
		}
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		first_line(line, sizeof(line), err.data ? err.data : "", err.len);
		if (line[0])
			rc = refuse(a, "%s", line);
		else
			rc = refuse(a, "the tool %s failed: it %s", name,
				    status_words(st, words, sizeof(words)));
		goto out_free;
	}
	a->value = mafp_json_parse(out.data ? out.data : "", out.len, out_max);
	if (!a->value)
		rc = refuse(a, "the tool %s printed something that is not one JSON value", name);
	else
		rc = 0;
	goto out_free;
out_kill:
	kill_reap(&c);
out_free:
	/* Refused once the command ran: what it printed is for the operator to see. */
	if (rc == 0 && a->refusal)
		command_note(a, out_over ? NULL : &out, &err);
	close_fd(&c.in);
	close_fd(&c.out);
	close_fd(&c.err);
	free(out.data);
	free(err.data);
	return rc;
}

struct tools_server {
	struct child c;
	int alive;
	size_t line_max;
	long long next_id;
	char *pending;          /* bytes read past the last answer line */
	size_t pending_len;
	char error[512];
};

struct tools_server *cli_tools_server_start(const char *command, size_t line_max, char *err,
					size_t err_size)
{
	struct tools_server *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	if (spawn_sh(command, 0, &s->c) < 0) {
		snprintf(err, err_size, "cannot start the tools server: %s", strerror(errno));
		free(s);
		return NULL;
	}
	s->alive = 1;
	s->line_max = line_max;
	s->next_id = 1;
	return s;
}

const char *cli_tools_server_error(const struct tools_server *s)
{
	return s && s->error[0] ? s->error : NULL;
}

/* Marks the server failed with a sentence, and ends it. */
static void server_fail(struct tools_server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void server_fail(struct tools_server *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->error[0]) {
		va_start(ap, fmt);
		vsnprintf(s->error, sizeof(s->error), fmt, ap);
		va_end(ap);
	}
	if (s->alive) {
		kill_reap(&s->c);
		s->alive = 0;
	}
}

/* The server's exit status in words, when it has already ended (for "it ended" errors). */
static void server_ended(struct tools_server *s, const char *when)
{
	int st = 0;
	char words[64];
	pid_t p;
	int i;

	/* Give a closing server a moment to be reaped, so the sentence can say how it ended. */
	for (i = 0; i < 50; i++) {
		p = waitpid(s->c.pid, &st, WNOHANG);
		if (p == s->c.pid || (p < 0 && errno != EINTR))
			break;
		{
			struct timespec ts = {0, 2000000};

			nanosleep(&ts, NULL);
		}
	}
	if (p == s->c.pid) {
		server_fail(s, "the tools server ended %s (it %s)", when,
			    status_words(st, words, sizeof(words)));
		/* Already reaped: kill_reap's waitpid fails with ECHILD and returns. */
	} else {
		server_fail(s, "the tools server closed its stdout %s", when);
	}
}

static int write_line(struct tools_server *s, const char *line, size_t len, long long deadline)
{
	size_t off = 0;

	/* The pipe has room for a line nearly always: write first, and wait only when full. */
	while (off < len) {
		struct pollfd pf = {.fd = s->c.in, .events = POLLOUT};
		long long left;
		ssize_t n;
		int r;

		if (cli_tools_cancel)
			return -5;
		n = write(s->c.in, line + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		left = deadline - mono_ms();
		if (left <= 0)
			return -2;
		r = poll(&pf, 1, left > SLICE_MS ? SLICE_MS : (int)left);
		if (r < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

/* Reads one line (without its newline) into *line. Returns 0, -1 at EOF or error, -2 on
 * timeout, -3 when the line is longer than line_max, -4 out of memory, -5 cancelled. */
static int read_line(struct tools_server *s, char **line, size_t *len, long long deadline)
{
	struct buf b = {.data = s->pending, .len = s->pending_len, .cap_bytes = s->line_max + 1};
	char *nl;

	s->pending = NULL;
	s->pending_len = 0;
	for (;;) {
		struct pollfd pf = {.fd = s->c.out, .events = POLLIN};
		long long left;
		int r;

		nl = b.data ? memchr(b.data, '\n', b.len) : NULL;
		if (nl)
			break;
		if (b.len > s->line_max) {
			free(b.data);
			return -3;
		}
		left = deadline - mono_ms();
		if (left <= 0 || cli_tools_cancel) {
			free(b.data);
			return left <= 0 ? -2 : -5;
		}
		r = poll(&pf, 1, left > SLICE_MS ? SLICE_MS : (int)left);
		if (r < 0 && errno != EINTR) {
			free(b.data);
			return -1;
		}
		if (r <= 0)
			continue;
		/* Each drain is capped at line_max + 1 bytes in all; the cap means "too long"
		 * unless a newline is within it. */
		r = buf_drain(&b, s->c.out, 0);
		if (r == -2) {
			free(b.data);
			return -4;
		}
		if (r == 0 || (r == -1 && !b.over)) {
			nl = b.data ? memchr(b.data, '\n', b.len) : NULL;
			if (nl)
				break;
			free(b.data);
			return -1;
		}
		if (b.over) {
			nl = memchr(b.data, '\n', b.len);
			if (nl && (size_t)(nl - b.data) <= s->line_max)
				break;
			free(b.data);
			return -3;
		}
	}
	if ((size_t)(nl - b.data) > s->line_max) {
		free(b.data);
		return -3;
	}
	*len = (size_t)(nl - b.data);
	if (b.len > *len + 1) {
		s->pending_len = b.len - *len - 1;
		s->pending = malloc(s->pending_len);
		if (!s->pending) {
			free(b.data);
			return -4;
		}
		memcpy(s->pending, nl + 1, s->pending_len);
	}
	*nl = '\0';
	*line = b.data;
	return 0;
}

int cli_tools_server_call(struct tools_server *s, const char *name, const cJSON *args,
		      long long timeout_ms, struct tool_answer *a)
{
	cJSON *req = NULL, *resp = NULL, *id, *value, *refusal;
	char *text = NULL, *line = NULL, *framed = NULL;
	size_t text_len, line_len = 0;
	long long deadline = mono_ms() + timeout_ms, my_id;
	int r, rc = -1;

	memset(a, 0, sizeof(*a));
	if (!s->alive)
		return refuse(a, "the tool %s is unavailable: %s", name,
			      s->error[0] ? s->error : "the tools server is not running");
	my_id = s->next_id++;
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddNumberToObject(req, "id", (double)my_id) ||
	    !cJSON_AddStringToObject(req, "name", name))
		goto out;
	{
		cJSON *copy = args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();

		if (!copy)
			goto out;
		cJSON_AddItemToObject(req, "arguments", copy);
	}
	/* Unformatted: cJSON escapes newlines inside strings, so this is exactly one line. */
	text = cJSON_PrintUnformatted(req);
	if (!text)
		goto out;
	text_len = strlen(text);
	framed = malloc(text_len + 2);
	if (!framed)
		goto out;
	memcpy(framed, text, text_len);
	framed[text_len] = '\n';
	framed[text_len + 1] = '\0';

	r = write_line(s, framed, text_len + 1, deadline);
	if (r == -5) {
		server_fail(s, "the tools server was stopped: the run is stopping");
		rc = refuse(a, "the tool %s was cut short: the run is stopping", name);
		goto out;
	}
	if (r == -2) {
		server_fail(s, "the tools server did not take call %lld (%s) within %lld ms", my_id,
			    name, timeout_ms);
		rc = refuse(a, "the tool %s did not answer: %s", name, s->error);
		goto out;
	}
	if (r < 0) {
		server_ended(s, "before it was sent a call");
		rc = refuse(a, "the tool %s did not answer: %s", name, s->error);
		goto out;
	}
	r = read_line(s, &line, &line_len, deadline);
	if (r == -4)
		goto out;
	if (r == -5) {
		server_fail(s, "the tools server was stopped: the run is stopping");
		rc = refuse(a, "the tool %s was cut short: the run is stopping", name);
		goto out;
	}
	if (r == -1)
		server_ended(s, "without answering a call");
	else if (r == -2)
		server_fail(s, "the tools server did not answer call %lld (%s) within %lld ms",
			    my_id, name, timeout_ms);
	else if (r == -3)
		server_fail(s, "the tools server answered with a line longer than %zu bytes",
			    s->line_max);
	if (r < 0) {
		rc = refuse(a, "the tool %s did not answer: %s", name, s->error);
		goto out;
	}
	resp = mafp_json_parse(line, line_len, s->line_max);
	id = resp ? cJSON_GetObjectItemCaseSensitive(resp, "id") : NULL;
	value = resp ? cJSON_GetObjectItemCaseSensitive(resp, "value") : NULL;
	refusal = resp ? cJSON_GetObjectItemCaseSensitive(resp, "refusal") : NULL;
	if (!resp || !cJSON_IsObject(resp)) {
		server_fail(s, "the tools server answered something that is not a JSON object");
	} else if (!cJSON_IsNumber(id) || id->valuedouble != (double)my_id) {
		server_fail(s, "the tools server answered call %lld with a wrong or missing id",
			    my_id);
	} else if ((value != NULL) == (refusal != NULL)) {
		server_fail(s, "the tools server's answer to call %lld has neither or both of "
			    "\"value\" and \"refusal\"", my_id);
	} else if (refusal && (!cJSON_IsString(refusal) || !refusal->valuestring[0])) {
		server_fail(s, "the tools server's refusal of call %lld is not a sentence", my_id);
	}
	if (s->error[0]) {
		rc = refuse(a, "the tool %s did not answer: %s", name, s->error);
		if (rc == 0)
			note_add(a, NULL, line, line_len, 0, TOOL_NOTE_MAX - NOTE_TAIL);
		goto out;
	}
	if (refusal) {
		char sentence[REFUSAL_MAX + 1];

		first_line(sentence, sizeof(sentence), refusal->valuestring,
			   strlen(refusal->valuestring));
		rc = refuse(a, "%s", sentence[0] ? sentence : "refused");
		goto out;
	}
	a->value = cJSON_DetachItemViaPointer(resp, value);
	rc = 0;
out:
	cJSON_Delete(req);
	cJSON_Delete(resp);
	free(text);
	free(framed);
	free(line);
	return rc;
}

void cli_tools_server_free(struct tools_server *s)
{
	int i;

	if (!s)
		return;
	if (s->alive) {
		/* EOF on its stdin is the polite way to end it; then the group is killed. */
		close_fd(&s->c.in);
		for (i = 0; i < 100; i++) {
			int st;
			pid_t p = waitpid(s->c.pid, &st, WNOHANG);

			if (p == s->c.pid || (p < 0 && errno != EINTR))
				break;
			{
				struct timespec ts = {0, 5000000};

				nanosleep(&ts, NULL);
			}
		}
		kill(-s->c.pid, SIGKILL);
		if (i == 100) {
			kill(s->c.pid, SIGKILL);
			waitpid(s->c.pid, NULL, 0);
		}
		close_fd(&s->c.out);
		close_fd(&s->c.err);
	}
	free(s->pending);
	free(s);
}
