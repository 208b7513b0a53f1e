/* The local backend's stream: argv started as an exec's is (mafh__local_spawn), its stdin
 * and stdout on pipes
 * that stay open until the stream is closed, stderr on a third pipe whose first 4 KiB are
 * kept for the sentence of a failure. The child runs in its own process group, killed whole
 * when the stream is closed while it still runs. The stream lives in the slot (struct
 * mafh__local_state); a write, a read and a close are tasks on its pipes and its pidfd. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "local.h"

#define STDERR_KEEP 4096
/* How long a closed stream's command has to end once its stdin is closed. */
#define CLOSE_GRACE_MS 1000
/* Without a pidfd, how often a closing stream's command is looked at. */
#define CLOSE_LOOK_MS 5
/* A write whose op gives no timeout. */
#define WRITE_TIMEOUT_MS 30000

struct mafh__local_stream {
	pid_t pid;                     /* -1 once reaped */
	int pidfd;                     /* -1: none, waitpid on a timer */
	int in, out, err;              /* our ends: the command's stdin, stdout, stderr; -1 closed */
	char errbuf[STDERR_KEEP + 1];
	size_t errlen;
	char name[64];                 /* argv[0], for sentences */
	char *rbuf;                    /* a read's bytes (res->stream_data), until the next op */
	size_t rsize;
};

/* A WRITE, READ or CLOSE under way (head.kind says which). */
struct stream_task {
	struct mafh__local_task head;
	struct mafh__local_stream *s;  /* CLOSE: taken out of the slot, the task's */
	const char *p;                 /* WRITE: what is left to write */
	size_t left;
	int64_t timeout_ms;            /* WRITE: for the sentence */
	size_t cap;                    /* READ */
	int64_t until;
	int64_t next_look;             /* CLOSE without a pidfd */
};

/* now + ms, INT64_MAX past it. */
static int64_t later(int64_t now, int64_t ms)
{
	return ms > INT64_MAX - now ? INT64_MAX : now + ms;
}

/* Takes what stderr holds now, keeping the first STDERR_KEEP bytes; at most a pipe's worth
 * a call, so that a command writing stderr without end cannot keep the caller here. */
static void drain_stderr(struct mafh__local_stream *s)
{
	char tmp[4096];
	ssize_t n = -1;
	int reads = 0;

	while (s->err >= 0 && reads++ < 16 && (n = read(s->err, tmp, sizeof(tmp))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				close(s->err);
				s->err = -1;
			}
			return;
		}
		if (s->errlen < STDERR_KEEP) {
			size_t k = (size_t)n < STDERR_KEEP - s->errlen ? (size_t)n
								     : STDERR_KEEP - s->errlen;

			memcpy(s->errbuf + s->errlen, tmp, k);
			s->errlen += k;
			s->errbuf[s->errlen] = '\0';
		}
	}
	if (n == 0 && s->err >= 0) {
		close(s->err);
		s->err = -1;
	}
}

/* The stream's end, in a sentence: what the command said on stderr, or how it ended.
 * Returns MAFH_EPIPE. */
static int ended(struct mafh__local_stream *s, struct mafh_error *err)
{
	char line[256];
	int status;

	drain_stderr(s);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(s->errbuf, "\n"), s->errbuf);
	if (line[0])
		return mafh__error_set(err, MAFH_EPIPE, "%s ended: %s", s->name, line);
	if (s->pid > 0 && waitpid(s->pid, &status, WNOHANG) == s->pid) {
		s->pid = -1;
		return mafh__error_set(err, MAFH_EPIPE, "%s ended with exit code %d", s->name,
				       mafp_exit_code_from_wait_status(status));
	}
	return mafh__error_set(err, MAFH_EPIPE, "%s closed its stdout", s->name);
}

/* Closes our ends of the pipes: the command sees its stdin end. */
static void close_pipes(struct mafh__local_stream *s)
{
	if (s->in >= 0)
		close(s->in);
	if (s->out >= 0)
		close(s->out);
	if (s->err >= 0)
		close(s->err);
	s->in = s->out = s->err = -1;
}

/* 1 once the command has ended (reaped now or before), 0 while it runs. */
static int reaped(struct mafh__local_stream *s)
{
	pid_t r;

	if (s->pid <= 0)
		return 1;
	while ((r = waitpid(s->pid, NULL, WNOHANG)) < 0 && errno == EINTR)
		;
	if (r == 0)
		return 0;
	s->pid = -1;                   /* reaped, or not ours to wait for (ECHILD) */
	return 1;
}

/* Frees s, its command killed with its group if it still runs. */
static void release(struct mafh__local_stream *s)
{
	close_pipes(s);
	mafh__local_kill(s->pid);
	if (s->pidfd >= 0)
		close(s->pidfd);
	free(s->rbuf);
	free(s);
}

void mafh__local_stream_free(struct mafh__local_stream *s)
{
	int64_t deadline = mafh__now_ms() + CLOSE_GRACE_MS;

	if (!s)
		return;
	close_pipes(s);
	/* Its stdin ended, the command ends by itself; else it is killed, its group with it. */
	while (!reaped(s)) {
		int64_t left = deadline - mafh__now_ms();
		struct pollfd pf = {.fd = s->pidfd, .events = POLLIN};

		if (left <= 0)
			break;
		if (s->pidfd >= 0)
			poll(&pf, 1, (int)left);
		else
			mafh__sleep_until_ms(mafh__now_ms() + CLOSE_LOOK_MS);
	}
	release(s);
}

static int stream_open(const struct mafh__local_enter *enter, struct mafh__local_state *st,
		       const char *const *argv, const char *cwd, struct mafh_error *err)
{
	int in[2] = {-1, -1}, o[2] = {-1, -1}, e[2] = {-1, -1}, saved;
	struct mafh__local_stream *s;

	/* One stream a slot: one still open is ended at once. */
	if (st->stream) {
		release(st->stream);
		st->stream = NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	snprintf(s->name, sizeof(s->name), "%s", argv[0]);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0)
		goto fail;
	s->pid = mafh__local_spawn_in(enter, argv, cwd, in[0], o[1], e[1]);
	if (s->pid < 0)
		goto fail;
	setpgid(s->pid, s->pid);
	close(in[0]);
	close(o[1]);
	close(e[1]);
	s->in = in[1];
	s->out = o[0];
	s->err = e[0];
	fcntl(s->in, F_SETFL, O_NONBLOCK);
	fcntl(s->out, F_SETFL, O_NONBLOCK);
	fcntl(s->err, F_SETFL, O_NONBLOCK);
	s->pidfd = mafh__local_pidfd(s->pid);
	st->stream = s;
	return 0;
fail:
	saved = errno;
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (o[i] >= 0)
			close(o[i]);
		if (e[i] >= 0)
			close(e[i]);
	}
	free(s);
	return mafh__error_set(err, -saved, "cannot start %s: %s", argv[0], strerror(saved));
}

/* A write, as far as the pipe takes it now. */
static int write_step(struct stream_task *t, int64_t now, struct mafh_op_result *res)
{
	struct mafh__local_stream *s = t->s;

	/* A command that fills its stderr before it reads stdin is not left blocked. */
	drain_stderr(s);
	while (t->left) {
		ssize_t n = write(s->in, t->p, t->left);

		if (n > 0) {
			t->p += n;
			t->left -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || errno == EAGAIN)
			break;
		if (errno == EPIPE)
			res->error = ended(s, &res->detail);
		else
			res->error = mafh__error_set(&res->detail, -errno, "cannot write to %s: %s",
						     s->name, strerror(errno));
		return 0;
	}
	if (!t->left)
		return 0;
	if (now >= t->until) {
		res->error = mafh__error_set(&res->detail, MAFH_ETIMEDOUT, "%s took no input for "
					     "%lld ms", s->name, (long long)t->timeout_ms);
		return 0;
	}
	return 1;
}

/* A read: what stdout holds now, its end, or nothing yet. */
static int read_step(struct stream_task *t, int64_t now, struct mafh_op_result *res)
{
	struct mafh__local_stream *s = t->s;

	drain_stderr(s);
	for (;;) {
		ssize_t n = read(s->out, s->rbuf, t->cap);

		if (n > 0) {
			res->stream_data = s->rbuf;
			res->stream_len = (size_t)n;
			return 0;
		}
		if (n == 0) {
			/* Not an error of the op: the stream is over, the detail says why. */
			res->stream_ended = 1;
			ended(s, &res->detail);
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			res->error = mafh__error_set(&res->detail, -errno, "cannot read from %s: %s",
						     s->name, strerror(errno));
			return 0;
		}
		return now < t->until;
	}
}

/* A close: over once the command has ended, or killed at the end of its grace. */
static int close_step(struct stream_task *t, int64_t now)
{
	if (reaped(t->s) || now >= t->until) {
		release(t->s);
		t->s = NULL;
		return 0;
	}
	t->next_look = later(now, CLOSE_LOOK_MS);
	return 1;
}

int mafh__local_stream_start(const struct mafh__local_enter *enter,
			     struct mafh__local_state *st, const struct mafh_op *op,
			     int64_t now, struct mafh__local_task **task,
			     struct mafh_op_result *res)
{
	struct stream_task *t;
	int rc;

	*task = NULL;
	if (op->kind == MAFH_OP_STREAM_OPEN) {
		res->error = stream_open(enter, st, op->argv, op->cwd, &res->detail);
		return 0;
	}
	if (op->kind == MAFH_OP_STREAM_CLOSE && !st->stream)
		return 0;
	if (!st->stream) {
		res->error = mafh__error_set(&res->detail, MAFH_EINVAL, "no stream is open in "
					     "this slot");
		return 0;
	}
	if (op->kind == MAFH_OP_STREAM_READ && st->stream->rsize < op->cap) {
		char *nb = realloc(st->stream->rbuf, op->cap);

		if (!nb) {
			res->error = mafh__error_set(&res->detail, MAFH_ENOMEM, "out of memory");
			return 0;
		}
		st->stream->rbuf = nb;
		st->stream->rsize = op->cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		res->error = mafh__error_set(&res->detail, MAFH_ENOMEM, "out of memory");
		return 0;
	}
	t->head.kind = op->kind;
	t->s = st->stream;
	switch (op->kind) {
	case MAFH_OP_STREAM_WRITE:
		t->p = op->data;
		t->left = op->len;
		t->timeout_ms = op->timeout_ms > 0 ? op->timeout_ms : WRITE_TIMEOUT_MS;
		t->until = later(now, t->timeout_ms);
		rc = write_step(t, now, res);
		break;
	case MAFH_OP_STREAM_READ:
		t->cap = op->cap;
		t->until = op->until_ms;
		rc = read_step(t, now, res);
		break;
	default: /* CLOSE: the stream leaves the slot, the task ends it */
		st->stream = NULL;
		close_pipes(t->s);
		t->until = later(now, CLOSE_GRACE_MS);
		rc = close_step(t, now);
		break;
	}
	if (rc == 0) {
		mafh__local_stream_task_free(&t->head);
		return 0;
	}
	*task = &t->head;
	return 1;
}

int mafh__local_stream_want(struct mafh__local_task *task, struct mafh_pollfd *fds,
			    int64_t *until)
{
	struct stream_task *t = (struct stream_task *)task;
	struct mafh__local_stream *s = t->s;
	int n = 0;

	*until = t->until;
	switch (t->head.kind) {
	case MAFH_OP_STREAM_WRITE:
		fds[n++] = (struct mafh_pollfd){.fd = s->in, .events = POLLOUT};
		break;
	case MAFH_OP_STREAM_READ:
		fds[n++] = (struct mafh_pollfd){.fd = s->out, .events = POLLIN};
		break;
	default: /* CLOSE */
		if (s->pidfd >= 0)
			fds[n++] = (struct mafh_pollfd){.fd = s->pidfd, .events = POLLIN};
		else if (t->next_look < *until)
			*until = t->next_look;
		return n;
	}
	if (s->err >= 0)
		fds[n++] = (struct mafh_pollfd){.fd = s->err, .events = POLLIN};
	return n;
}

int mafh__local_stream_step(struct mafh__local_task *task, int64_t now,
			    struct mafh_op_result *res)
{
	struct stream_task *t = (struct stream_task *)task;

	switch (t->head.kind) {
	case MAFH_OP_STREAM_WRITE:
		return write_step(t, now, res);
	case MAFH_OP_STREAM_READ:
		return read_step(t, now, res);
	default:
		return close_step(t, now);
	}
}

void mafh__local_stream_task_free(struct mafh__local_task *task)
{
	struct stream_task *t = (struct stream_task *)task;

	/* A close abandoned under way: its command is killed now (the grace is not waited
	 * for). A write or read leaves the stream in the slot. */
	if (t->head.kind == MAFH_OP_STREAM_CLOSE && t->s)
		release(t->s);
	free(t);
}
