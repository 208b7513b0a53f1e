/* The Docker backend's EXEC, with or without an input, and STREAM_OPEN, as a state machine
 * over engine requests (docker_op.h): POST /containers/{id}/exec (argv as Cmd, stdout and
 * stderr attached, no tty), POST /exec/{eid}/start (the multiplexed stream, split by
 * docker_parse.c), then GET /exec/{eid}/json until it has ended (ExitCode). With an input:
 * stdin attached too, the start on a connection the engine hands over (docker_hijack.c),
 * the input written and ended on it while the output is read, then the same inspections.
 * A stream's opening is the exec with stdin attached, started on a connection handed over
 * and kept in the op's state slot. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cJSON.h"
#include "docker_op.h"

/* Looks at an exec's state once its stream has ended, until its exit code is in: the first
 * after 1 ms, then twice as long each time, up to 50 ms. */
#define INSPECT_FIRST_MS 1
#define INSPECT_MAX_MS 50
/* What an exec with an input reads of its output in one step. */
#define STEP_READ (256u << 10)


/* A request's timeout within an exec's deadline (0: none, the backend's request timeout). */
static int64_t left_ms(const struct docker *d, int64_t deadline, int64_t now)
{
	if (!deadline)
		return d->request_timeout_ms;
	return deadline - now > 0 ? deadline - now : 1;
}

/* text[0..len) as one printable line: up to the first line end, control bytes as '?'. */
static void printable(char *buf, size_t size, const char *text, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < len && o + 1 < size && text[i] != '\r' && text[i] != '\n'; i++)
		buf[o++] = (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? '?' : text[i];
	buf[o] = '\0';
}

/* ---- what the engine sends as the exec goes ------------------------------------------ */

static int exec_sink(void *ud, enum docker_stream stream, const char *p, size_t n)
{
	struct docker_exec_sinks *s = ud;
	size_t k;

	switch (stream) {
	case DOCKER_STDERR:
		if (mafh__append(&s->err, &s->err_len, &s->err_size, DOCKER_ERR_CAP, p, n) < 0)
			goto nomem;
		return 0;
	case DOCKER_SYSTEMERR:
		k = n < sizeof(s->syserr) - 1 - s->syserr_len ? n
							    : sizeof(s->syserr) - 1 - s->syserr_len;
		memcpy(s->syserr + s->syserr_len, p, k);
		s->syserr_len += k;
		return 0;
	default:
		k = n < sizeof(s->head) - s->head_len ? n : sizeof(s->head) - s->head_len;
		memcpy(s->head + s->head_len, p, k);
		s->head_len += k;
		if (mafh__append(&s->out, &s->out_len, &s->out_size, s->out_cap, p, n) < 0)
			goto nomem;
		return 0;
	}
nomem:
	s->nomem = 1;
	return -1;
}

static int stream_sink(void *ud, const char *p, size_t n)
{
	struct docker_exec_sinks *s = ud;
	int rc = mafh__docker_demux_feed(&s->demux, p, n, exec_sink, s);

	if (rc == -1)
		s->unframed = 1;
	return rc < 0 ? -1 : 0;
}

/* ---- the requests and the connection ---------------------------------------------- */

/* The body of an exec's creation (in cwd when not NULL), malloc'd, or NULL. */
static char *exec_body(const char *const *argv, int with_stdin, const char *cwd)
{
	cJSON *body = cJSON_CreateObject();
	char *text = NULL;
	int n = 0;

	while (argv[n])
		n++;
	if (body && cJSON_AddItemToObject(body, "Cmd", cJSON_CreateStringArray(argv, n)) &&
	    cJSON_AddBoolToObject(body, "AttachStdin", with_stdin) &&
	    cJSON_AddTrueToObject(body, "AttachStdout") &&
	    cJSON_AddTrueToObject(body, "AttachStderr") && cJSON_AddFalseToObject(body, "Tty") &&
	    (!cwd || cJSON_AddStringToObject(body, "WorkingDir", cwd)))
		text = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	return text;
}

static const char start_body[] = "{\"Detach\":false,\"Tty\":false}";

/* POST /containers/{id}/exec of the op's argv, as step. */
static int exec_create(struct docker_task *t, int64_t now, int with_stdin, int64_t timeout,
		       enum docker_step step, struct mafh_error *err)
{
	free(t->body);
	t->body = exec_body(t->op->argv, with_stdin, t->op->cwd);
	if (!t->body)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory making an exec");
	memset(&t->req, 0, sizeof(t->req));
	t->req.content_type = "application/json";
	t->req.body = t->body;
	t->req.body_len = strlen(t->body);
	t->req.reply_cap = DOCKER_REPLY_MAX;
	t->req.timeout_ms = timeout;
	return mafh__docker_request(t, now, "POST",
				    mafh__docker_text_of("/containers/%s/exec", t->d->id), step,
				    err);
}

/* GET /exec/{eid}/json. */
static int exec_inspect(struct docker_task *t, int64_t now, struct mafh_error *err)
{
	memset(&t->req, 0, sizeof(t->req));
	t->req.reply_cap = DOCKER_REPLY_MAX;
	t->req.timeout_ms = left_ms(t->d, t->deadline, now);
	return mafh__docker_request(t, now, "GET", mafh__docker_text_of("/exec/%s/json", t->eid),
				    EX_INSPECT, err);
}

/* The start of the exec eid on a connection handed over, its frames to sink, as step. */
static int attach(struct docker_task *t, int64_t now, docker_sink_fn sink, void *ud,
		  enum docker_step step, struct mafh_error *err)
{
	char target[200];
	int rc;

	snprintf(target, sizeof(target), "/exec/%s/start", t->eid);
	mafh__docker_http_count(t->d->http);
	/* A stream's opening within its op's timeout, an exec's within its deadline. */
	rc = mafh__docker_hijack_start(t->d->http, target, start_body, t->op->argv[0], now,
				       step == OPEN_ATTACH ? t->op->timeout_ms
				       : t->deadline ? left_ms(t->d, t->deadline, now) : 0,
				       sink, ud, &t->conn, err);
	if (rc < 0)
		return rc;
	t->step = step;
	return 1;
}

/* The exec's end, its inspection in: the engine's own error in the stream, a command the
 * engine could not start, or the exit code. 0, or an error. */
static int exec_end(struct docker_task *t, struct mafh_op_result *res)
{
	struct docker_exec_sinks *s = &t->sinks;
	char msg[200];

	if (s->syserr_len) {
		printable(msg, sizeof(msg), s->syserr, s->syserr_len);
		return mafh__error_set(&res->detail, MAFH_EIO, "%s failed: %s", t->what, msg);
	}
	if (mafh__docker_http_libpod(t->d->http)) {
		/* Podman gives every ended exec Pid 0, and says it could not start the command in
		 * the exec's stderr alone; it may end that stderr with a line of its own. */
		const char *why;

		s->err_len = mafh__docker_libpod_stderr_len(s->err, s->err_len);
		why = mafh__docker_libpod_start_error(s->err, s->err_len);
		if ((t->es.exit_code == 126 || t->es.exit_code == 127) && why) {
			printable(msg, sizeof(msg), why, s->err_len - (size_t)(why - s->err));
			return mafh__error_set(&res->detail, MAFH_EIO, "the Docker engine could not "
					       "start %s in the container '%s': %s", t->op->argv[0],
					       t->d->name, msg);
		}
		res->exec.exit_code = t->es.exit_code;
		return 0;
	}
	/* A command the engine could not start never had a process; the engine's reason is
	 * the one line it wrote into the stream. */
	if (t->es.pid == 0 && (t->es.exit_code == 126 || t->es.exit_code == 127)) {
		printable(msg, sizeof(msg), s->head, s->head_len);
		return mafh__error_set(&res->detail, MAFH_EIO, "the Docker engine could not start "
				       "%s in the container '%s': %s", t->op->argv[0], t->d->name,
				       msg[0] ? msg : "it gave no reason");
	}
	res->exec.exit_code = t->es.exit_code;
	return 0;
}

/* The exec's input, written as the connection takes it, its output read meanwhile (a
 * command may print before it reads on). 0 once all is written, or the command took no
 * more; 1 while it goes on; or an error. */
static int feed(struct docker_task *t, struct mafh_error *err)
{
	const struct mafh_op *op = t->op;
	long n = 0;

	if (t->fed < op->len)
		n = mafh__docker_hijack_push(t->conn, (const char *)op->data + t->fed,
					     op->len - t->fed);
	if (n == MAFH_EPIPE) {
		/* It ended, or closed its stdin, before it read it all: its exit says how. */
		t->fed = op->len;
		return 0;
	}
	if (n < 0)
		return mafh__error_set(err, (int)n, "%s failed: its input cannot be written: %s",
				       t->what, strerror((int)-n));
	t->fed += (size_t)n;
	if (t->fed == op->len)
		return 0;
	n = mafh__docker_hijack_pull(t->conn, STEP_READ, err);
	if (n == MAFH_EPIPE) {
		t->fed = op->len;
		return 0;
	}
	return n < 0 ? (int)n : 1;
}

/* The output read to its end: 0 then, 1 while it goes on, or an error. */
static int drain(struct docker_task *t, struct mafh_error *err)
{
	int rc = mafh__docker_hijack_pull(t->conn, STEP_READ, err);

	if (rc == MAFH_EPIPE)
		return 0;
	return rc < 0 ? rc : 1;
}

/* An exec's output, or a connection handed over, that broke: its sentence. */
static int stream_error(struct docker_task *t, int rc, struct mafh_error *err)
{
	if (rc == MAFH_ECANCELED || t->sinks.nomem)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading the output of %s",
				       t->op->argv[0]);
	if (rc == MAFH_EPROTO)
		return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's stream "
				       "is not framed as an exec's output", t->what);
	return rc;
}

/* ---- the exec's steps ----------------------------------------------------------------- */

int mafh__docker_exec_io(struct docker_task *t, int64_t now, struct mafh_error *err)
{
	int rc;

	switch (t->step) {
	case EX_ATTACH:
	case OPEN_ATTACH:
		return mafh__docker_hijack_opening(t->conn, now, err);
	case EX_FEED:
		rc = feed(t, err);
		break;
	case EX_DRAIN:
		rc = drain(t, err);
		break;
	default:  /* EX_PAUSE */
		return now < t->wake_at;
	}
	return rc < 0 ? stream_error(t, rc, err) : rc;
}

int mafh__docker_exec_want(const struct docker_task *t, struct mafh_pollfd *fds,
			   int64_t *until)
{
	switch (t->step) {
	case EX_ATTACH:
	case OPEN_ATTACH:
		return mafh__docker_hijack_opening_want(t->conn, &fds[0], until);
	case EX_FEED:
	case EX_DRAIN:
		return mafh__docker_hijack_want(t->conn, t->step == EX_FEED ? POLLIN | POLLOUT
						: POLLIN, &fds[0], until);
	default:  /* EX_PAUSE */
		*until = t->wake_at;
		return 0;
	}
}

/* The exec is created (EX_CREATE, OPEN_CREATE): its start begun, on a connection handed
 * over for a stream or an input, else as a request whose answer is the output. */
static int created(struct docker_task *t, int64_t now, struct mafh_op_result *res)
{
	struct mafh_error *err = &res->detail;

	if (t->r.timed_out && t->step == OPEN_CREATE)
		return mafh__error_set(err, MAFH_ETIMEDOUT, "%s: the Docker engine did not answer",
				       t->what);
	if (t->r.timed_out)
		return t->deadline ? DOCKER_TIMED_OUT
				   : mafh__docker_timed_out(t->d, t->what, t->req.timeout_ms, err);
	if (t->r.status != 201)
		return mafh__docker_engine_error(t->d, &t->r, t->what, err);
	if (mafh__docker_exec_id_parse(t->r.body, t->r.body_len, t->eid, sizeof(t->eid)) < 0)
		return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's answer "
				       "holds no exec id", t->what);
	if (t->step == OPEN_CREATE) {
		if (mafh__docker_stdio_new(t->op->argv[0], &t->stdio) < 0)
			return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
		return attach(t, now, mafh__docker_stdio_sink, t->stdio, OPEN_ATTACH, err);
	}
	if (t->op->data)
		return attach(t, now, exec_sink, &t->sinks, EX_ATTACH, err);
	memset(&t->req, 0, sizeof(t->req));
	t->req.content_type = "application/json";
	t->req.body = start_body;
	t->req.body_len = sizeof(start_body) - 1;
	t->req.sink = stream_sink;
	t->req.ud = &t->sinks;
	/* The stream lasts as long as the command's output: only the caller's timeout bounds
	 * it. */
	t->req.timeout_ms = t->deadline ? left_ms(t->d, t->deadline, now) : 0;
	return mafh__docker_request(t, now, "POST", mafh__docker_text_of("/exec/%s/start", t->eid),
				    EX_START, err);
}

/* The exec's inspection is in: its end, or another inspection after a pause. */
static int inspected(struct docker_task *t, int64_t now, struct mafh_op_result *res)
{
	struct mafh_error *err = &res->detail;

	if (t->r.timed_out)
		return t->deadline ? DOCKER_TIMED_OUT
				   : mafh__docker_timed_out(t->d, t->what, t->req.timeout_ms, err);
	if (t->r.status != 200)
		return mafh__docker_engine_error(t->d, &t->r, t->what, err);
	if (mafh__docker_exec_state_parse(t->r.body, t->r.body_len, &t->es) < 0)
		return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's account "
				       "of the exec cannot be read", t->what);
	/* The stream ends with the process's output; its exit comes to the engine apart, and
	 * may come a moment later. */
	if (!t->es.running && t->es.has_exit_code)
		return exec_end(t, res);
	if (t->deadline && now + t->pause >= t->deadline)
		return DOCKER_TIMED_OUT;
	t->wake_at = now + t->pause;
	t->pause = t->pause * 2 > INSPECT_MAX_MS ? INSPECT_MAX_MS : t->pause * 2;
	t->step = EX_PAUSE;
	return 1;
}

int mafh__docker_exec_next(struct docker_task *t, int64_t now, struct mafh_op_result *res)
{
	struct mafh_error *err = &res->detail;
	int rc;

	switch (t->step) {
	case EX_CREATE:
	case OPEN_CREATE:
		return created(t, now, res);
	case EX_START:
		if (t->sinks.nomem)
			return stream_error(t, MAFH_ECANCELED, err);
		if (t->r.timed_out)
			return DOCKER_TIMED_OUT;
		if (t->r.status != 200)
			return mafh__docker_engine_error(t->d, &t->r, t->what, err);
		if (t->sinks.unframed || !mafh__docker_demux_whole(&t->sinks.demux))
			return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's "
					       "stream %s", t->what, t->sinks.unframed
					       ? "is not framed as an exec's output"
					       : "ended inside a frame");
		return exec_inspect(t, now, err);
	case EX_ATTACH:
		t->step = EX_FEED;
		return 1;
	case EX_FEED:
		/* The end of its stdin; its output goes on to its end. */
		mafh__docker_hijack_shut_write(t->conn);
		t->step = EX_DRAIN;
		return 1;
	case EX_DRAIN:
		rc = mafh__docker_hijack_whole(t->conn);
		mafh__docker_hijack_free(t->conn);
		t->conn = NULL;
		if (!rc)
			return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's "
					       "stream ended inside a frame", t->what);
		return exec_inspect(t, now, err);
	case EX_INSPECT:
		return inspected(t, now, res);
	case EX_PAUSE:
		return exec_inspect(t, now, err);
	case OPEN_ATTACH:
		mafh__docker_stdio_attach(t->stdio, t->conn);
		t->conn = NULL;
		*t->state = t->stdio;
		t->stdio = NULL;
		return 0;
	default:
		return 0;
	}
}

int mafh__docker_exec_begin(struct docker_task *t, int64_t now, struct mafh_error *err)
{
	const struct mafh_op *op = t->op;

	if (op->kind == MAFH_OP_STREAM_OPEN) {
		mafh__docker_stdio_free(*t->state);
		*t->state = NULL;
		snprintf(t->what, sizeof(t->what), "starting %s in the container '%s'", op->argv[0],
			 t->d->name);
		return exec_create(t, now, 1, t->d->request_timeout_ms, OPEN_CREATE, err);
	}
	t->deadline = op->timeout_ms > 0 ? now + op->timeout_ms : 0;
	t->pause = INSPECT_FIRST_MS;
	mafh__docker_demux_init(&t->sinks.demux);
	t->sinks.out_cap = op->out_cap;
	snprintf(t->what, sizeof(t->what), "running %s in the container '%s'", op->argv[0],
		 t->d->name);
	return exec_create(t, now, op->data != NULL, left_ms(t->d, t->deadline, now), EX_CREATE,
			   err);
}
