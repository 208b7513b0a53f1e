/* The Docker backend: a container reached through the Docker Engine API on its unix socket.
 * Every op is a small state machine over engine requests, none of which blocks (struct
 * mafh__nb_ops): started, then stepped whenever what it waits on (a request's socket, its
 * timer, a pause, the exec's deadline) is ready.
 *   exec:       POST /containers/{id}/exec (argv as Cmd, stdout and stderr attached, no
 *               tty), POST /exec/{eid}/start (the multiplexed stream, split by
 *               docker_parse.c), then GET /exec/{eid}/json until it has ended (ExitCode).
 *               With an input: stdin attached too, the start on a connection the engine
 *               hands over (docker_hijack.c), the input written and ended on it while the
 *               output is read, then the same inspections.
 *   write_file: PUT /containers/{id}/archive?path=/ with a tar of the one file at its path
 *               below / (the engine makes missing parents, and replaces a file or symlink
 *               at the path without following it; noOverwriteDirNonDir keeps a directory).
 *   read_file:  GET /containers/{id}/archive?path=FILE, its first entry (docker_tar.c),
 *               stopped at the path-stat header when that says it is no regular file or
 *               past the cap.
 *   stat:       HEAD of the same: the X-Docker-Container-Path-Stat header.
 *   stream_*:   an exec with stdin attached, started on a connection handed over, kept in
 *               the op's state slot (docker_hijack.c).
 * What the backend holds (the container's name and id, the engine's socket, the pool of
 * connections in docker_http.c) is read-only or locked: ops go on at once, from any
 * threads. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cJSON.h"
#include "docker.h"
#include "internal.h"

/* A request other than an exec's stream that takes longer has met a stuck engine (the
 * default of mafh_docker_options.request_timeout_ms). */
#define REQUEST_TIMEOUT_MS 120000
/* What an exec keeps of stderr (stdout's cap is the caller's), of the engine's own errors
 * in the stream, and of stdout's first bytes for the engine's word when the command did not
 * start. The rest is read and dropped. */
#define ERR_CAP (64u << 10)
#define SYSERR_CAP 1024
#define OUT_HEAD 512
/* A read keeps at most the cap and this much of the tar around it: headers (pax records
 * of a long name or link target included), padding and the end blocks. */
#define TAR_SLACK (64u << 10)
/* Looks at an exec's state once its stream has ended, until its exit code is in: the first
 * after 1 ms, then twice as long each time, up to 50 ms. */
#define INSPECT_FIRST_MS 1
#define INSPECT_MAX_MS 50
#define MKDTEMP_TRIES 16
/* What an exec with an input reads of its output in one step. */
#define STEP_READ (256u << 10)

struct docker {
	struct docker_http *http;
	int64_t request_timeout_ms; /* each request but an exec's stream */
	char *name;                /* the container as given, for sentences */
	char id[129];              /* its full id, as the engine says */
	char *launcher;
};

static void docker_destroy(void *ctx);

/* ---- shared pieces -------------------------------------------------------------------- */

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

/* The error of an answer that is not the one asked for: the engine's message, or its HTTP
 * status, after what (which says what was being done). "No such container" is said as
 * such, whatever was being done. */
static int engine_error(struct docker *d, const struct docker_reply *r, const char *what,
			struct mafh_error *err)
{
	char msg[200];
	int code;

	mafh__docker_message(r->body, r->body_len, msg, sizeof(msg));
	if (r->status == 404 && strncmp(msg, "No such container", 17) == 0)
		return mafh__error_set(err, MAFH_ENOENT, "there is no container '%s' on the "
				       "Docker engine at %s", d->name,
				       mafh__docker_http_socket(d->http));
	code = r->status == 400 ? MAFH_EINVAL
	       : r->status == 401 || r->status == 403 ? -EACCES
	       : r->status == 404 ? MAFH_ENOENT : MAFH_EIO;
	if (msg[0])
		return mafh__error_set(err, code, "%s failed: %s", what, msg);
	return mafh__error_set(err, code, "%s failed: the Docker engine answered HTTP %ld",
			       what, r->status);
}

static int timed_out(struct docker *d, const char *what, int64_t ms, struct mafh_error *err)
{
	return mafh__error_set(err, MAFH_ETIMEDOUT, "%s failed: the Docker engine at %s did not "
			       "answer within %lld ms", what, mafh__docker_http_socket(d->http),
			       (long long)ms);
}

/* A container path the engine is asked about: absolute, no "..", no empty name at its end,
 * and short enough. */
static int path_ok(const char *path, struct mafh_error *err)
{
	const char *p;

	if (!path || path[0] != '/' || strlen(path) >= DOCKER_PATH_MAX || !path[1] ||
	    path[strlen(path) - 1] == '/')
		return mafh__error_set(err, MAFH_EINVAL, "the container path '%s' is not an "
				       "absolute path to a file", path ? path : "(none)");
	for (p = path; (p = strstr(p, "/..")); p += 3)
		if (p[3] == '/' || p[3] == '\0')
			return mafh__error_set(err, MAFH_EINVAL, "the container path '%s' holds a "
					       "'..'", path);
	return 0;
}

/* "/containers/ID/archive?path=ESCAPED[extra]", malloc'd, or NULL. */
static char *archive_target(struct docker *d, const char *path, const char *extra)
{
	char *esc = mafh__docker_escape(path), *t = NULL;

	if (esc && asprintf(&t, "/containers/%s/archive?path=%s%s", d->id, esc, extra) < 0)
		t = NULL;
	free(esc);
	return t;
}

/* ---- what the engine sends as requests go ---------------------------------------------- */

/* Where an exec's stream goes: stdout up to the caller's cap, its first bytes apart,
 * stderr and the engine's own errors up to theirs. */
struct exec_sinks {
	struct docker_demux demux;
	char *out, *err;
	size_t out_len, out_size, out_cap;
	size_t err_len, err_size;
	char head[OUT_HEAD];
	size_t head_len;
	char syserr[SYSERR_CAP];
	size_t syserr_len;
	int nomem, unframed;
};

static int exec_sink(void *ud, enum docker_stream stream, const char *p, size_t n)
{
	struct exec_sinks *s = ud;
	size_t k;

	switch (stream) {
	case DOCKER_STDERR:
		if (mafh__append(&s->err, &s->err_len, &s->err_size, ERR_CAP, p, n) < 0)
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
	struct exec_sinks *s = ud;
	int rc = mafh__docker_demux_feed(&s->demux, p, n, exec_sink, s);

	if (rc == -1)
		s->unframed = 1;
	return rc < 0 ? -1 : 0;
}

/* What a read learns before the tar, and the tar as it comes. */
struct read_state {
	size_t cap, limit;
	struct docker_path_stat ps;
	int decided;               /* the header settled it: NOT_REGULAR or TOO_BIG */
	int bad_header;
	char *tar;
	size_t len, size;
	int truncated, nomem;
};

static int read_headers(void *ud, long status, const char *ps, size_t ps_len)
{
	struct read_state *s = ud;

	if (status != 200 || !ps)
		return 0;
	if (mafh__docker_path_stat_decode(ps, ps_len, &s->ps) < 0) {
		s->bad_header = 1;
		return -1;
	}
	/* The tar is the file as the engine read it a moment later, and has the last word;
	 * what is surely no regular file, or too big, is not fetched. */
	if (s->ps.type != MAFH_FILE_REGULAR || (uint64_t)s->ps.size > s->cap) {
		s->decided = 1;
		return -1;
	}
	return 0;
}

static int read_sink(void *ud, const char *p, size_t n)
{
	struct read_state *s = ud;

	if (s->len + n > s->limit) {
		s->truncated = 1;
		n = s->limit - s->len;
	}
	if (mafh__append(&s->tar, &s->len, &s->size, s->limit, p, n) < 0) {
		s->nomem = 1;
		return -1;
	}
	return s->truncated ? -1 : 0;
}

/* A 2xx answer to a GET made only for the message of an error: stopped at its headers. */
static int stop_at_success(void *ud, long status, const char *ps, size_t ps_len)
{
	(void)ud;
	(void)ps;
	(void)ps_len;
	return status >= 200 && status <= 299 ? -1 : 0;
}

/* ---- an op ---------------------------------------------------------------------------- */

/* Where an op stands: each step waits on one thing (a request, the connection handed
 * over, a pause), and next() takes it from one step to the next. */
enum step {
	EX_CREATE,     /* EXEC: POST /containers/{id}/exec */
	EX_START,      /* POST /exec/{eid}/start, its answer the output's stream */
	EX_ATTACH,     /* with an input: the start on a connection handed over */
	EX_FEED,       /* the input written on it, the output read meanwhile */
	EX_DRAIN,      /* the output read to its end */
	EX_INSPECT,    /* GET /exec/{eid}/json */
	EX_PAUSE,      /* between two inspections */
	PUT_FILE,      /* WRITE: PUT /containers/{id}/archive?path=/ */
	GET_FILE,      /* READ: GET /containers/{id}/archive?path=FILE */
	HEAD_FILE,     /* STAT: HEAD of the same */
	STAT_PROBE,    /* after a 404: GET /containers/{id}/json */
	STAT_MESSAGE,  /* after another status: a GET of the path, for its message */
	OPEN_CREATE,   /* STREAM_OPEN: POST /containers/{id}/exec, stdin attached */
	OPEN_ATTACH,   /* its start on a connection handed over */
	STDIO,         /* STREAM_READ, STREAM_WRITE, STREAM_CLOSE (docker_hijack.c) */
	SLEEP,         /* WAIT_UNTIL: the engine tells of no change, so a sleep */
};

/* next()'s word for an exec whose deadline passed: timed_out, with what came. */
#define TIMED_OUT 2

struct task {
	struct docker *d;
	const struct mafh_op *op;
	void **state;
	enum step step;
	int64_t deadline;          /* the exec's; 0: none */
	char what[DOCKER_PATH_MAX + 200];
	/* The request under way, and what it borrows. */
	struct docker_xfer *x;
	struct docker_request req;
	struct docker_reply r;
	char *target;
	char *body;
	size_t body_len;
	/* EXEC */
	struct exec_sinks sinks;
	char eid[129];
	struct docker_exec_state es;
	int64_t pause, wake_at;
	struct docker_hijack *conn;
	size_t fed;
	/* READ */
	struct read_state rs;
	/* STAT */
	int was_404;
	/* STREAM_OPEN: the state made for the connection; the other stream ops. */
	struct docker_stdio *stdio;
	struct docker_stdio_op sop;
};

/* Starts a request of t (req filled but for what is set here). 1, or a negative code. */
static int request(struct task *t, int64_t now, const char *method, char *target,
		   enum step step, struct mafh_error *err)
{
	int rc;

	free(t->target);
	t->target = target;
	if (!target)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory: %s", t->what);
	mafh__docker_reply_clear(&t->r);
	t->req.method = method;
	t->req.target = target;
	rc = mafh__docker_xfer_start(t->d->http, &t->req, &t->r, now, &t->x, err);
	if (rc < 0)
		return rc;
	t->step = step;
	return 1;
}

static char *text_of(const char *fmt, const char *s)
{
	char *t = NULL;

	return asprintf(&t, fmt, s) < 0 ? NULL : t;
}

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
static int exec_create(struct task *t, int64_t now, int with_stdin, int64_t timeout,
		       enum step step, struct mafh_error *err)
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
	return request(t, now, "POST", text_of("/containers/%s/exec", t->d->id), step, err);
}

/* GET /exec/{eid}/json. */
static int exec_inspect(struct task *t, int64_t now, struct mafh_error *err)
{
	memset(&t->req, 0, sizeof(t->req));
	t->req.reply_cap = DOCKER_REPLY_MAX;
	t->req.timeout_ms = left_ms(t->d, t->deadline, now);
	return request(t, now, "GET", text_of("/exec/%s/json", t->eid), EX_INSPECT, err);
}

/* The start of the exec eid on a connection handed over, its frames to sink, as step. */
static int attach(struct task *t, int64_t now, docker_sink_fn sink, void *ud, enum step step,
		  struct mafh_error *err)
{
	char target[200];
	int rc;

	snprintf(target, sizeof(target), "/exec/%s/start", t->eid);
	mafh__docker_http_count(t->d->http);
	rc = mafh__docker_hijack_start(mafh__docker_http_socket(t->d->http), target, start_body,
				       t->op->argv[0], now, sink, ud, &t->conn, err);
	if (rc < 0)
		return rc;
	t->step = step;
	return 1;
}

/* The exec's end, its inspection in: the engine's own error in the stream, a command the
 * engine could not start, or the exit code. 0, or an error. */
static int exec_end(struct task *t, struct mafh_op_result *res)
{
	struct exec_sinks *s = &t->sinks;
	char msg[200];

	if (s->syserr_len) {
		printable(msg, sizeof(msg), s->syserr, s->syserr_len);
		return mafh__error_set(&res->detail, MAFH_EIO, "%s failed: %s", t->what, msg);
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

/* An answer a file op waits for, with its error when the engine said no. */
static int put_done(struct task *t, struct mafh_error *err)
{
	char *msg;
	int rc;

	if (t->r.timed_out)
		return timed_out(t->d, t->what, t->req.timeout_ms, err);
	if (t->r.status == 200)
		return 0;
	/* The whole message: the path it names may be long. */
	msg = malloc(DOCKER_ERROR_BODY_MAX + 1);
	if (msg)
		mafh__docker_message(t->r.body, t->r.body_len, msg, DOCKER_ERROR_BODY_MAX + 1);
	rc = msg && mafh__docker_written_then_gone(msg, t->op->path)
		     ? 0 : engine_error(t->d, &t->r, t->what, err);
	free(msg);
	return rc;
}

static int get_done(struct task *t, struct mafh_op_result *res)
{
	struct read_state *s = &t->rs;
	struct mafh_error *err = &res->detail;
	char msg[200];

	if (s->nomem)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading %s", t->op->path);
	if (t->r.timed_out)
		return timed_out(t->d, t->what, t->req.timeout_ms, err);
	if (t->r.status == 404) {
		mafh__docker_message(t->r.body, t->r.body_len, msg, sizeof(msg));
		if (strncmp(msg, "No such container", 17) == 0)
			return engine_error(t->d, &t->r, t->what, err);
		res->read.status = MAFH_READ_ABSENT;
		return 0;
	}
	if (t->r.status != 200)
		return engine_error(t->d, &t->r, t->what, err);
	if (s->bad_header)
		return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's path-stat "
				       "header cannot be read", t->what);
	if (s->decided) {
		res->read.status = s->ps.type != MAFH_FILE_REGULAR ? MAFH_READ_NOT_REGULAR
								   : MAFH_READ_TOO_BIG;
		res->read.size = res->read.status == MAFH_READ_TOO_BIG ? s->ps.size : 0;
		return 0;
	}
	return mafh__docker_tar_first(s->tar ? s->tar : "", s->len, s->truncated, s->cap,
				      &res->read, err);
}

/* A STAT's HEAD is in: the result, or the request that tells what a failure was. */
static int head_done(struct task *t, int64_t now, struct mafh_op_result *res)
{
	struct mafh_error *err = &res->detail;
	struct docker_path_stat ps;

	if (t->r.timed_out)
		return timed_out(t->d, t->what, t->req.timeout_ms, err);
	if (t->r.status == 200) {
		if (!t->r.has_path_stat ||
		    mafh__docker_path_stat_decode(t->r.path_stat, t->r.path_stat_len, &ps) < 0)
			return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's "
					       "path-stat header is missing or cannot be read",
					       t->what);
		res->stat.exists = 1;
		res->stat.size = ps.size;
		res->stat.type = ps.type;
		return 0;
	}
	/* A HEAD answer has no body, so no message: an absent path and an absent container
	 * are both 404. The container's inspection tells them apart, and a GET of the path
	 * gives the message of any other error. */
	t->was_404 = t->r.status == 404;
	if (t->was_404) {
		t->req.reply_cap = DOCKER_REPLY_MAX;
		return request(t, now, "GET", text_of("/containers/%s/json", t->d->id), STAT_PROBE,
			       err);
	}
	t->req.headers_done = stop_at_success;
	return request(t, now, "GET", archive_target(t->d, t->op->path, ""), STAT_MESSAGE, err);
}

static int probe_done(struct task *t, struct mafh_error *err)
{
	if (t->r.timed_out)
		return timed_out(t->d, t->what, t->req.timeout_ms, err);
	if (t->was_404 && t->r.status == 200)
		return 0;
	if (t->r.status < 200 || t->r.status > 299)
		return engine_error(t->d, &t->r, t->what, err);
	return mafh__error_set(err, MAFH_EIO, "%s failed: the Docker engine answered HTTP %ld",
			       t->what, t->r.status);
}

/* The exec's input, written as the connection takes it, its output read meanwhile (a
 * command may print before it reads on). 0 once all is written, or the command took no
 * more; 1 while it goes on; or an error. */
static int feed(struct task *t, struct mafh_error *err)
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
static int drain(struct task *t, struct mafh_error *err)
{
	int rc = mafh__docker_hijack_pull(t->conn, STEP_READ, err);

	if (rc == MAFH_EPIPE)
		return 0;
	return rc < 0 ? rc : 1;
}

/* What the step waits on, taken further: 1 while it waits, 0 once it is through (next()
 * goes on), or an error (in err). */
static int io(struct task *t, int64_t now, struct mafh_error *err)
{
	int rc;

	switch (t->step) {
	case EX_ATTACH:
	case OPEN_ATTACH:
		return mafh__docker_hijack_opening(t->conn, now, err);
	case EX_FEED:
		return feed(t, err);
	case EX_DRAIN:
		return drain(t, err);
	case EX_PAUSE:
		return now < t->wake_at;
	case SLEEP:
		return now < t->op->until_ms;
	case STDIO:
		return 0;
	default:
		rc = mafh__docker_xfer_step(t->x, now, err);
		if (rc != 1) {
			/* Its connection goes back to the pool at once. */
			mafh__docker_xfer_free(t->x);
			t->x = NULL;
		}
		return rc;
	}
}

/* An exec's output, or a connection handed over, that broke: its sentence. */
static int stream_error(struct task *t, int rc, struct mafh_error *err)
{
	if (rc == MAFH_ECANCELED || t->sinks.nomem)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading the output of %s",
				       t->op->argv[0]);
	if (rc == MAFH_EPROTO)
		return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's stream "
				       "is not framed as an exec's output", t->what);
	return rc;
}

/* Every transition of an op: the step t is at is through; the next is begun (1), or the op
 * is over (0, res filled), or failed (a negative code, its sentence in res->detail), or an
 * exec timed out (TIMED_OUT). */
static int next(struct task *t, int64_t now, struct mafh_op_result *res)
{
	struct mafh_error *err = &res->detail;
	struct docker *d = t->d;
	int rc;

	switch (t->step) {
	case EX_CREATE:
	case OPEN_CREATE:
		if (t->r.timed_out && t->step == OPEN_CREATE)
			return mafh__error_set(err, MAFH_ETIMEDOUT, "%s: the Docker engine did not "
					       "answer", t->what);
		if (t->r.timed_out)
			return t->deadline ? TIMED_OUT : timed_out(d, t->what, t->req.timeout_ms,
								   err);
		if (t->r.status != 201)
			return engine_error(d, &t->r, t->what, err);
		if (mafh__docker_exec_id_parse(t->r.body, t->r.body_len, t->eid,
					       sizeof(t->eid)) < 0)
			return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's "
					       "answer holds no exec id", t->what);
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
		/* The stream lasts as long as the command's output: only the caller's timeout
		 * bounds it. */
		t->req.timeout_ms = t->deadline ? left_ms(t->d, t->deadline, now) : 0;
		return request(t, now, "POST", text_of("/exec/%s/start", t->eid), EX_START, err);
	case EX_START:
		if (t->sinks.nomem)
			return stream_error(t, MAFH_ECANCELED, err);
		if (t->r.timed_out)
			return TIMED_OUT;
		if (t->r.status != 200)
			return engine_error(d, &t->r, t->what, err);
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
		if (t->r.timed_out)
			return t->deadline ? TIMED_OUT : timed_out(d, t->what, t->req.timeout_ms,
								   err);
		if (t->r.status != 200)
			return engine_error(d, &t->r, t->what, err);
		if (mafh__docker_exec_state_parse(t->r.body, t->r.body_len, &t->es) < 0)
			return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's "
					       "account of the exec cannot be read", t->what);
		/* The stream ends with the process's output; its exit comes to the engine
		 * apart, and may come a moment later. */
		if (!t->es.running && t->es.has_exit_code)
			return exec_end(t, res);
		if (t->deadline && now + t->pause >= t->deadline)
			return TIMED_OUT;
		t->wake_at = now + t->pause;
		t->pause = t->pause * 2 > INSPECT_MAX_MS ? INSPECT_MAX_MS : t->pause * 2;
		t->step = EX_PAUSE;
		return 1;
	case EX_PAUSE:
		return exec_inspect(t, now, err);
	case PUT_FILE:
		return put_done(t, err);
	case GET_FILE:
		return get_done(t, res);
	case HEAD_FILE:
		return head_done(t, now, res);
	case STAT_PROBE:
	case STAT_MESSAGE:
		return probe_done(t, err);
	case OPEN_ATTACH:
		mafh__docker_stdio_attach(t->stdio, t->conn);
		t->conn = NULL;
		*t->state = t->stdio;
		t->stdio = NULL;
		return 0;
	case SLEEP:
	case STDIO:
		return 0;
	}
	return 0;
}

/* The op is over: rc is next()'s, or io()'s error. */
static int over(struct task *t, struct mafh_op_result *res, int rc)
{
	struct exec_sinks *s = &t->sinks;

	if (t->op->kind != MAFH_OP_EXEC) {
		if (rc < 0)
			res->error = rc;
		return 0;
	}
	if (rc < 0) {
		res->error = rc;
		res->exec.exit_code = -1;
		return 0;
	}
	if (rc == TIMED_OUT) {
		/* The deadline passed: what came so far is kept. The engine cannot end an exec,
		 * so the command may still be running in the container. */
		res->exec.timed_out = 1;
		res->exec.exit_code = -1;
	}
	res->exec.out = s->out;
	res->exec.out_len = s->out_len;
	res->exec.err = s->err;
	res->exec.err_len = s->err_len;
	s->out = s->err = NULL;
	return 0;
}

static int exec_step(struct task *t)
{
	switch (t->step) {
	case EX_CREATE:
	case EX_START:
	case EX_ATTACH:
	case EX_FEED:
	case EX_DRAIN:
	case EX_INSPECT:
	case EX_PAUSE:
		return 1;
	default:
		return 0;
	}
}

static int nb_step(void *ctx, void *task, int64_t now_ms, struct mafh_op_result *res)
{
	struct task *t = task;
	int rc;

	(void)ctx;
	if (t->step == STDIO) {
		rc = mafh__docker_stdio_op_step(&t->sop, now_ms, res);
		if (rc == 0 && t->op->kind == MAFH_OP_STREAM_CLOSE) {
			mafh__docker_stdio_free(*t->state);
			*t->state = NULL;
		}
		return rc;
	}
	for (;;) {
		if (t->deadline && now_ms >= t->deadline && exec_step(t))
			return over(t, res, TIMED_OUT);
		rc = io(t, now_ms, &res->detail);
		if (rc == 1)
			return 1;
		if (rc < 0)
			return over(t, res, t->step == EX_FEED || t->step == EX_DRAIN
						? stream_error(t, rc, &res->detail) : rc);
		rc = next(t, now_ms, res);
		if (rc != 1)
			return over(t, res, rc);
	}
}

static int nb_want(void *ctx, void *task, struct mafh_pollfd *fds, int64_t *until_ms)
{
	struct task *t = task;
	int64_t until = INT64_MAX;
	int n = 0;

	(void)ctx;
	switch (t->step) {
	case EX_ATTACH:
	case OPEN_ATTACH:
		n = mafh__docker_hijack_opening_want(t->conn, &fds[0], &until);
		break;
	case EX_FEED:
	case EX_DRAIN:
		fds[0].fd = mafh__docker_hijack_fd(t->conn);
		fds[0].events = t->step == EX_FEED ? POLLIN | POLLOUT : POLLIN;
		n = 1;
		break;
	case EX_PAUSE:
		until = t->wake_at;
		break;
	case SLEEP:
		until = t->op->until_ms;
		break;
	case STDIO:
		n = mafh__docker_stdio_op_want(&t->sop, &fds[0], &until);
		break;
	default:
		n = mafh__docker_xfer_want(t->x, fds, &until);
		break;
	}
	if (t->deadline && t->deadline < until)
		until = t->deadline;
	*until_ms = until;
	return n;
}

static void nb_free(void *ctx, void *task)
{
	struct task *t = task;

	(void)ctx;
	if (!t)
		return;
	mafh__docker_xfer_free(t->x);
	mafh__docker_hijack_free(t->conn);
	mafh__docker_stdio_free(t->stdio);
	mafh__docker_reply_clear(&t->r);
	free(t->target);
	free(t->body);
	free(t->sinks.out);
	free(t->sinks.err);
	free(t->rs.tar);
	free(t);
}

static void nb_state_free(void *ctx, void *state)
{
	(void)ctx;
	mafh__docker_stdio_free(state);
}

/* The op's first step begun: 1, or a negative code (its sentence in err). */
static int begin(struct task *t, int64_t now, struct mafh_error *err)
{
	const struct mafh_op *op = t->op;
	struct docker *d = t->d;
	int rc;

	switch (op->kind) {
	case MAFH_OP_EXEC:
		t->deadline = op->timeout_ms > 0 ? now + op->timeout_ms : 0;
		t->pause = INSPECT_FIRST_MS;
		mafh__docker_demux_init(&t->sinks.demux);
		t->sinks.out_cap = op->out_cap;
		snprintf(t->what, sizeof(t->what), "running %s in the container '%s'", op->argv[0],
			 d->name);
		return exec_create(t, now, op->data != NULL, left_ms(t->d, t->deadline, now), EX_CREATE,
				   err);
	case MAFH_OP_WRITE:
		/* Each write makes the file afresh (replaces is ignored): there is nothing to
		 * gain from a file the run is done with. */
		if ((rc = path_ok(op->path, err)) < 0)
			return rc;
		snprintf(t->what, sizeof(t->what), "writing %s into the container '%s'", op->path,
			 d->name);
		rc = mafh__docker_tar_one(op->path + 1, 0, 0644, op->data, op->len, &t->body,
					  &t->body_len, err);
		if (rc < 0)
			return rc;
		t->req.content_type = "application/x-tar";
		t->req.body = t->body;
		t->req.body_len = t->body_len;
		t->req.timeout_ms = t->d->request_timeout_ms;
		return request(t, now, "PUT", archive_target(d, "/", "&noOverwriteDirNonDir=true"),
			       PUT_FILE, err);
	case MAFH_OP_READ:
		if ((rc = path_ok(op->path, err)) < 0)
			return rc;
		snprintf(t->what, sizeof(t->what), "reading %s in the container '%s'", op->path,
			 d->name);
		t->rs.cap = op->cap;
		t->rs.limit = op->cap > SIZE_MAX - TAR_SLACK - 1024 ? SIZE_MAX - 1
								   : op->cap + TAR_SLACK + 1024;
		t->req.timeout_ms = t->d->request_timeout_ms;
		t->req.sink = read_sink;
		t->req.headers_done = read_headers;
		t->req.ud = &t->rs;
		return request(t, now, "GET", archive_target(d, op->path, ""), GET_FILE, err);
	case MAFH_OP_STAT:
		if ((rc = path_ok(op->path, err)) < 0)
			return rc;
		snprintf(t->what, sizeof(t->what), "looking at %s in the container '%s'", op->path,
			 d->name);
		t->req.timeout_ms = t->d->request_timeout_ms;
		return request(t, now, "HEAD", archive_target(d, op->path, ""), HEAD_FILE, err);
	case MAFH_OP_STREAM_OPEN:
		mafh__docker_stdio_free(*t->state);
		*t->state = NULL;
		snprintf(t->what, sizeof(t->what), "starting %s in the container '%s'", op->argv[0],
			 d->name);
		return exec_create(t, now, 1, t->d->request_timeout_ms, OPEN_CREATE, err);
	case MAFH_OP_STREAM_READ:
	case MAFH_OP_STREAM_WRITE:
	case MAFH_OP_STREAM_CLOSE:
		if (!*t->state)
			return 0;
		mafh__docker_stdio_op_start(*t->state, op, now, &t->sop);
		t->step = STDIO;
		return 1;
	default:  /* WAIT_UNTIL (task.c lets no other kind through) */
		t->step = SLEEP;
		return 1;
	}
}

static int nb_start(void *ctx, void **state, const struct mafh_op *op, int64_t now_ms,
		    void **task, struct mafh_op_result *res)
{
	struct task *t = calloc(1, sizeof(*t));
	int rc;

	*task = NULL;
	if (op->kind == MAFH_OP_EXEC)
		res->exec.exit_code = -1;
	if (!t) {
		res->error = mafh__error_set(&res->detail, MAFH_ENOMEM, "out of memory");
		return 0;
	}
	t->d = ctx;
	t->op = op;
	t->state = state;
	rc = begin(t, now_ms, &res->detail);
	if (rc <= 0) {
		res->error = rc;
		nb_free(ctx, t);
		return 0;
	}
	*task = t;
	return 1;
}

static const struct mafh__nb_ops docker_nb = {
	.start = nb_start,
	.want = nb_want,
	.step = nb_step,
	.free = nb_free,
	.state_free = nb_state_free,
};

/* ---- the backend ---------------------------------------------------------------------- */

static void docker_destroy(void *ctx)
{
	struct docker *d = ctx;

	if (!d)
		return;
	mafh__docker_http_free(d->http);
	free(d->name);
	free(d->launcher);
	free(d);
}

void mafh_docker_options_init(struct mafh_docker_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

/* The engine's socket: the option, else DOCKER_HOST's unix:// path, else the default. */
static int socket_of(const struct mafh_docker_options *o, const char **out,
		     struct mafh_error *err)
{
	const char *env = getenv("DOCKER_HOST");

	if (o->socket_path) {
		*out = o->socket_path;
	} else if (env && *env) {
		if (strncmp(env, "unix://", 7) != 0 || env[7] != '/')
			return mafh__error_set(err, MAFH_EINVAL, "DOCKER_HOST is '%s': the Docker "
					       "backend reaches the engine through a unix socket "
					       "only (unix:///PATH)", env);
		*out = env + 7;
	} else {
		*out = MAFH_DOCKER_SOCKET;
	}
	if ((*out)[0] != '/')
		return mafh__error_set(err, MAFH_EINVAL, "the Docker engine's socket '%s' is not "
				       "an absolute path", *out);
	return 0;
}

/* Asks the engine about the container: its full id, and whether it runs. */
static int inspect_container(struct docker *d, struct mafh_error *err)
{
	struct docker_request req = {.method = "GET", .timeout_ms = d->request_timeout_ms,
				     .reply_cap = DOCKER_REPLY_MAX};
	struct docker_reply r = {0};
	char *esc = mafh__docker_escape(d->name), *target = NULL, what[300];
	char status[32];
	int rc, running;

	if (!esc || asprintf(&target, "/containers/%s/json", esc) < 0) {
		free(esc);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	free(esc);
	snprintf(what, sizeof(what), "looking up the container '%s'", d->name);
	req.target = target;
	rc = mafh__docker_http_do(d->http, &req, &r, err);
	if (rc < 0)
		goto out;
	if (r.timed_out)
		rc = timed_out(d, what, req.timeout_ms, err);
	else if (r.status == 404)
		rc = mafh__error_set(err, MAFH_ENOENT, "there is no container '%s' on the Docker "
				     "engine at %s", d->name, mafh__docker_http_socket(d->http));
	else if (r.status != 200)
		rc = engine_error(d, &r, what, err);
	else if (mafh__docker_container_parse(r.body, r.body_len, d->id, sizeof(d->id),
					      &running, status, sizeof(status)) < 0)
		rc = mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's account "
				     "of it cannot be read", what);
	else if (!running)
		rc = mafh__error_set(err, MAFH_EIO, "the container '%s' is not running (%s)",
				     d->name, status[0] ? status : "its state is not said");
out:
	mafh__docker_reply_clear(&r);
	free(target);
	return rc;
}

int mafh_backend_docker_new(const char *container, const char *launcher_path,
			    const struct mafh_docker_options *opts_in, struct mafh_backend **out,
			    struct mafh_error *err)
{
	struct mafh_docker_options o;
	const char *socket = NULL;
	struct docker *d;
	int rc;

	*out = NULL;
	mafh_docker_options_init(&o);
	if (opts_in) {
		if (opts_in->size < sizeof(size_t))
			return mafh__error_set(err, MAFH_EINVAL, "the Docker options' size field is "
					       "not set");
		mafh__copy_versioned(&o, sizeof(o), opts_in, opts_in->size);
		o.size = sizeof(o);
	}
	if (!container || !*container || strlen(container) > 256)
		return mafh__error_set(err, MAFH_EINVAL, "the Docker backend needs a container's "
				       "name or id (at most 256 bytes)");
	if ((rc = socket_of(&o, &socket, err)) < 0)
		return rc;
	d = calloc(1, sizeof(*d));
	if (!d)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	d->request_timeout_ms = o.request_timeout_ms > 0 ? o.request_timeout_ms
						       : REQUEST_TIMEOUT_MS;
	d->name = strdup(container);
	d->launcher = strdup(launcher_path ? launcher_path : MAFH_DOCKER_LAUNCHER);
	if (!d->name || !d->launcher) {
		docker_destroy(d);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	rc = mafh__docker_http_new(socket, &d->http, err);
	if (rc == 0)
		rc = inspect_container(d, err);
	if (rc < 0) {
		docker_destroy(d);
		return rc;
	}
	/* An exec may block as long as its command runs: `maf-launch wait` serves calls in
	 * one exec each. The engine offers no notification of a file. */
	rc = mafh__backend_new_nb(MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT |
				  MAFH_CAP_DETACHED_EXEC | MAFH_CAP_BLOCKING_EXEC |
				  MAFH_CAP_STREAM | MAFH_CAP_EXEC_STDIN, d->launcher, d,
				  docker_destroy, &docker_nb, out);
	if (rc < 0)
		return mafh__error_set(err, rc, "out of memory");
	return 0;
}

/* The backend's context when b is a Docker backend, else NULL. */
static struct docker *docker_of(const struct mafh_backend *b)
{
	return b && b->ops.destroy == docker_destroy ? b->ops.ctx : NULL;
}

int64_t mafh_backend_docker_requests(const struct mafh_backend *b)
{
	struct docker *d = docker_of(b);

	return d ? mafh__docker_http_requests(d->http) : -1;
}

int mafh_backend_docker_mkdtemp(struct mafh_backend *b, char *tmpl, struct mafh_error *err)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	struct docker *d = docker_of(b);
	size_t len = tmpl ? strlen(tmpl) : 0, i;
	int rc = 0, tries;

	if (!d)
		return mafh__error_set(err, MAFH_EINVAL, "mafh_backend_docker_mkdtemp takes a "
				       "Docker backend");
	if (len < 7 || strcmp(tmpl + len - 6, "XXXXXX") != 0 || path_ok(tmpl, NULL) < 0)
		return mafh__error_set(err, MAFH_EINVAL, "the directory template '%s' is not an "
				       "absolute path ending in XXXXXX", tmpl ? tmpl : "(none)");
	for (tries = 0; tries < MKDTEMP_TRIES; tries++) {
		struct docker_request req = {.method = "PUT", .content_type = "application/x-tar",
					     .timeout_ms = d->request_timeout_ms};
		struct docker_reply r = {0};
		unsigned char rnd[6];
		struct mafh_op op = {.size = sizeof(op), .kind = MAFH_OP_STAT, .path = tmpl};
		struct mafh_op_result st;
		void *state = NULL;
		char *tar = NULL, *target = NULL, what[DOCKER_PATH_MAX + 200];
		size_t tar_len;

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			rc = mafh__error_set(err, -errno, "no random bytes for a directory name: %s",
					     strerror(errno));
			break;
		}
		for (i = 0; i < 6; i++)
			tmpl[len - 6 + i] = letters[rnd[i] % (sizeof(letters) - 1)];
		/* A directory entry over an existing directory would take it over (its mode
		 * and owner set anew): only a name nobody has is used. */
		mafh__backend_perform(b, &state, &op, &st);
		if (st.error) {
			if (err) {
				*err = st.detail;
				err->code = st.error;
			}
			rc = st.error;
			break;
		}
		if (st.stat.exists)
			continue;
		snprintf(what, sizeof(what), "making the directory %s in the container '%s'",
			 tmpl, d->name);
		rc = mafh__docker_tar_one(tmpl + 1, 1, 0700, NULL, 0, &tar, &tar_len, err);
		if (rc == 0 && !(target = archive_target(d, "/", "&noOverwriteDirNonDir=true")))
			rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory making %s", tmpl);
		if (rc == 0) {
			req.target = target;
			req.body = tar;
			req.body_len = tar_len;
			rc = mafh__docker_http_do(d->http, &req, &r, err);
			if (rc == 0 && r.timed_out)
				rc = timed_out(d, what, req.timeout_ms, err);
			else if (rc == 0 && r.status != 200)
				rc = engine_error(d, &r, what, err);
		}
		mafh__docker_reply_clear(&r);
		free(target);
		free(tar);
		break;
	}
	if (tries == MKDTEMP_TRIES)
		rc = mafh__error_set(err, MAFH_EEXIST, "no free name for %s after %d tries", tmpl,
				     MKDTEMP_TRIES);
	return rc;
}
