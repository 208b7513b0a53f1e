/* The Docker backend: a container reached through the Docker Engine API on its unix socket.
 * Every op is a small state machine over engine requests, none of which blocks (struct
 * mafh__nb_ops): started, then stepped whenever what it waits on (a request's socket, its
 * timer, a pause, the exec's deadline) is ready. This file holds the context, the nb table
 * that begins, steps, watches and frees an op, handing each step's end to its op's file
 * (docker_op.h), and the backend's creation:
 *   exec:       docker_exec.c (with or without an input)
 *   write_file, read_file, stat: docker_files.c, over the archive endpoint
 *   stream_*:   an exec with stdin attached, started on a connection handed over
 *               (docker_exec.c), kept in the op's state slot (docker_hijack.c)
 *   wait_until: a sleep (the engine tells of no change to a file)
 * What the backend holds (the container's name and id, the engine's socket, the pool of
 * connections in docker_http.c) is read-only or locked: ops go on at once, from any
 * threads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker_op.h"

/* A request other than an exec's stream that takes longer has met a stuck engine (the
 * default of mafh_docker_options.request_timeout_ms). */
#define REQUEST_TIMEOUT_MS 120000

/* ---- shared pieces -------------------------------------------------------------------- */

int mafh__docker_engine_error(struct docker *d, const struct docker_reply *r, const char *what,
			      struct mafh_error *err)
{
	char msg[200];
	int code;

	mafh__docker_message(r->body, r->body_len, msg, sizeof(msg));
	/* Go's answer to plain HTTP on a TLS port, in plain text. */
	if (r->status == 400 && r->body && !msg[0] &&
	    strncmp(r->body, "Client sent an HTTP request to an HTTPS server", 46) == 0)
		return mafh__error_set(err, MAFH_EPROTO, "the Docker engine at %s speaks TLS, and "
				       "this client does not: set DOCKER_TLS_VERIFY=1 (with ca.pem, "
				       "cert.pem and key.pem in DOCKER_CERT_PATH), or DOCKER_TLS=1",
				       mafh__docker_http_socket(d->http));
	if (mafh__docker_not_running(msg))
		return mafh__error_set(err, MAFH_EIO, "%s failed: the container is not running",
				       what);
	if (r->status == 404 && mafh__docker_no_such_container(msg))
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

int mafh__docker_timed_out(struct docker *d, const char *what, int64_t ms,
			   struct mafh_error *err)
{
	return mafh__error_set(err, MAFH_ETIMEDOUT, "%s failed: the Docker engine at %s did not "
			       "answer within %lld ms", what, mafh__docker_http_socket(d->http),
			       (long long)ms);
}

int mafh__docker_request(struct docker_task *t, int64_t now, const char *method, char *target,
			 enum docker_step step, struct mafh_error *err)
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

char *mafh__docker_text_of(const char *fmt, const char *s)
{
	char *t = NULL;

	return asprintf(&t, fmt, s) < 0 ? NULL : t;
}

/* ---- an op ---------------------------------------------------------------------------- */

/* What the step waits on, taken further: 1 while it waits, 0 once it is through (next()
 * goes on), or an error (in err). */
static int io(struct docker_task *t, int64_t now, struct mafh_error *err)
{
	int rc;

	switch (t->step) {
	case EX_ATTACH:
	case OPEN_ATTACH:
	case EX_FEED:
	case EX_DRAIN:
	case EX_PAUSE:
		return mafh__docker_exec_io(t, now, err);
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

/* The step t is at is through: its op's file takes it on. The next is begun (1), or the op
 * is over (0, res filled), or failed (a negative code, its sentence in res->detail), or an
 * exec timed out (DOCKER_TIMED_OUT). */
static int next(struct docker_task *t, int64_t now, struct mafh_op_result *res)
{
	switch (t->step) {
	case PUT_FILE:
	case GET_FILE:
	case HEAD_FILE:
	case STAT_PROBE:
	case STAT_MESSAGE:
		return mafh__docker_file_next(t, now, res);
	case SLEEP:
	case STDIO:
		return 0;
	default:
		return mafh__docker_exec_next(t, now, res);
	}
}

/* The op is over: rc is next()'s, or io()'s error. */
static int over(struct docker_task *t, struct mafh_op_result *res, int rc)
{
	struct docker_exec_sinks *s = &t->sinks;

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
	if (rc == DOCKER_TIMED_OUT) {
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

static int exec_step(struct docker_task *t)
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
	struct docker_task *t = task;
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
			return over(t, res, DOCKER_TIMED_OUT);
		rc = io(t, now_ms, &res->detail);
		if (rc == 1)
			return 1;
		if (rc < 0)
			return over(t, res, rc);
		rc = next(t, now_ms, res);
		if (rc != 1)
			return over(t, res, rc);
	}
}

static int nb_want(void *ctx, void *task, struct mafh_pollfd *fds, int64_t *until_ms)
{
	struct docker_task *t = task;
	int64_t until = INT64_MAX;
	int n = 0;

	(void)ctx;
	switch (t->step) {
	case EX_ATTACH:
	case OPEN_ATTACH:
	case EX_FEED:
	case EX_DRAIN:
	case EX_PAUSE:
		n = mafh__docker_exec_want(t, fds, &until);
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
	struct docker_task *t = task;

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
static int begin(struct docker_task *t, int64_t now, struct mafh_error *err)
{
	switch (t->op->kind) {
	case MAFH_OP_EXEC:
	case MAFH_OP_STREAM_OPEN:
		return mafh__docker_exec_begin(t, now, err);
	case MAFH_OP_WRITE:
	case MAFH_OP_READ:
	case MAFH_OP_STAT:
		return mafh__docker_file_begin(t, now, err);
	case MAFH_OP_STREAM_READ:
	case MAFH_OP_STREAM_WRITE:
	case MAFH_OP_STREAM_CLOSE:
		if (!*t->state)
			return 0;
		mafh__docker_stdio_op_start(*t->state, t->op, now, &t->sop);
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
	struct docker_task *t = calloc(1, sizeof(*t));
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
		rc = mafh__docker_timed_out(d, what, req.timeout_ms, err);
	else if (r.status == 404)
		rc = mafh__error_set(err, MAFH_ENOENT, "there is no container '%s' on the Docker "
				     "engine at %s", d->name, mafh__docker_http_socket(d->http));
	else if (r.status != 200)
		rc = mafh__docker_engine_error(d, &r, what, err);
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
	struct docker_endpoint ep;
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
	if ((rc = mafh__docker_endpoint_resolve(&o, &ep, err)) < 0)
		return rc;
	d = calloc(1, sizeof(*d));
	if (!d) {
		mafh__docker_endpoint_clear(&ep);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	d->request_timeout_ms = o.request_timeout_ms > 0 ? o.request_timeout_ms
						       : REQUEST_TIMEOUT_MS;
	d->name = strdup(container);
	d->launcher = strdup(launcher_path ? launcher_path : MAFH_DOCKER_LAUNCHER);
	if (!d->name || !d->launcher) {
		mafh__docker_endpoint_clear(&ep);
		docker_destroy(d);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	rc = mafh__docker_http_new(&ep, &d->http, err);
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
				  MAFH_CAP_STREAM | MAFH_CAP_EXEC_STDIN | MAFH_CAP_EXEC_EXACT,
				  d->launcher, d,
				  docker_destroy, &docker_nb, out);
	if (rc < 0)
		return mafh__error_set(err, rc, "out of memory");
	return 0;
}

struct docker *mafh__docker_of(const struct mafh_backend *b)
{
	return b && b->ops.destroy == docker_destroy ? b->ops.ctx : NULL;
}

int64_t mafh_backend_docker_requests(const struct mafh_backend *b)
{
	struct docker *d = mafh__docker_of(b);

	return d ? mafh__docker_http_requests(d->http) : -1;
}
