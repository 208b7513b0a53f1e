/* A wrapper that adds a fixed latency before every operation of another backend, to simulate
 * a remote backend (each op a network round trip). Over a backend in the nb form (the
 * library's own), the wrapper is one too: an op first waits its latency as a timer, then is
 * the inner backend's task, so that the latency blocks no caller and the ops of several runs
 * overlap. Over a table of blocking functions, the latency is slept, one operation at a time. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct latency {
	struct mafh_backend *inner;
	int64_t ms;
	pthread_mutex_t lock;
};

/* Takes the lock and sleeps: the sleep is inside the lock so concurrent callers queue the
 * way they would behind a single remote control plane. */
static void enter(struct latency *l)
{
	struct timespec left = {.tv_sec = l->ms / 1000, .tv_nsec = (l->ms % 1000) * 1000000};

	pthread_mutex_lock(&l->lock);
	/* Relative and to the nanosecond: a whole-millisecond deadline could come short. */
	while (l->ms > 0 && nanosleep(&left, &left) < 0 && errno == EINTR)
		;
}

static void leave(struct latency *l)
{
	pthread_mutex_unlock(&l->lock);
}

static int lat_exec(void *ctx, const char *const *argv, int64_t timeout_ms, size_t out_cap,
		    struct mafh_exec_result *res, struct mafh_error *err)
{
	struct latency *l = ctx;
	int rc;

	enter(l);
	rc = mafh_backend_exec(l->inner, argv, timeout_ms, out_cap, res, err);
	leave(l);
	return rc;
}

static int lat_exec_input(void *ctx, const char *const *argv, const void *in, size_t in_len,
			  int64_t timeout_ms, size_t out_cap, struct mafh_exec_result *res,
			  struct mafh_error *err)
{
	struct latency *l = ctx;
	int rc;

	enter(l);
	rc = mafh_backend_exec_input(l->inner, argv, in, in_len, timeout_ms, out_cap, res, err);
	leave(l);
	return rc;
}

static int lat_write(void *ctx, const char *path, const void *data, size_t len,
		     const char *replaces, struct mafh_error *err)
{
	struct latency *l = ctx;
	int rc;

	/* replaces is dropped: the remote backends this simulates write each file anew. */
	(void)replaces;
	enter(l);
	rc = mafh_backend_write_file(l->inner, path, data, len, NULL, err);
	leave(l);
	return rc;
}

static int lat_read(void *ctx, const char *path, size_t cap, struct mafh_read_result *res,
		    struct mafh_error *err)
{
	struct latency *l = ctx;
	int rc;

	enter(l);
	rc = mafh_backend_read_file(l->inner, path, cap, res, err);
	leave(l);
	return rc;
}

static int lat_stat(void *ctx, const char *path, struct mafh_stat *st, struct mafh_error *err)
{
	struct latency *l = ctx;
	int rc;

	enter(l);
	rc = mafh_backend_stat(l->inner, path, st, err);
	leave(l);
	return rc;
}

/* A stream: its opening is an exec, and each frame written is a round trip (its event comes
 * back on it), so each costs the latency; reads, which wait for that event, add none. */
static int lat_stream_open(void *ctx, const char *const *argv, void **stream,
			   struct mafh_error *err)
{
	struct latency *l = ctx;
	int rc;

	enter(l);
	rc = mafh_backend_stream_open(l->inner, argv, stream, err);
	leave(l);
	return rc;
}

static int lat_stream_write(void *ctx, void *stream, const void *data, size_t len,
			    int64_t timeout_ms, struct mafh_error *err)
{
	struct latency *l = ctx;
	int rc;

	enter(l);
	rc = mafh_backend_stream_write(l->inner, stream, data, len, timeout_ms, err);
	leave(l);
	return rc;
}

static int lat_stream_read(void *ctx, void *stream, void *buf, size_t cap, int64_t timeout_ms,
			   struct mafh_error *err)
{
	struct latency *l = ctx;

	return mafh_backend_stream_read(l->inner, stream, buf, cap, timeout_ms, err);
}

static void lat_stream_close(void *ctx, void *stream)
{
	struct latency *l = ctx;

	mafh_backend_stream_close(l->inner, stream);
}

static void lat_destroy(void *ctx)
{
	struct latency *l = ctx;

	if (!l)
		return;
	mafh_backend_free(l->inner);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* ---- the nb form ---------------------------------------------------------------------- */

/* An op over the wrapper: its latency, then the inner op (a WAIT_UNTIL: only a timer). */
struct lat_task {
	struct mafh_op op;             /* as given, but a WRITE's replaces dropped */
	void **state;
	int64_t start_at;              /* the inner op starts then (WAIT_UNTIL: ends then) */
	int started;
	void *inner;                   /* the inner backend's task, while it goes on */
};

/* What an op costs: a stream's reads wait for an event that a write's round trip brings
 * back, and its closing is not waited on; a WAIT_UNTIL is no op of the backend. */
static int64_t op_latency(const struct latency *l, enum mafh_op_kind kind)
{
	return kind == MAFH_OP_STREAM_READ || kind == MAFH_OP_STREAM_CLOSE ||
	       kind == MAFH_OP_WAIT_UNTIL ? 0 : l->ms;
}

/* Starts the inner op: 1 while it goes on, 0 once it is over (res filled). */
static int lat_begin(struct latency *l, struct lat_task *t, int64_t now,
		     struct mafh_op_result *res)
{
	struct mafh_backend *in = l->inner;

	t->started = 1;
	if (t->op.kind == MAFH_OP_WAIT_UNTIL)
		return 0;       /* its time has come; the backends simulated do not notify */
	return in->nb->start(in->ops.ctx, t->state, &t->op, now, &t->inner, res);
}

static int lat_nb_start(void *ctx, void **state, const struct mafh_op *op, int64_t now_ms,
			void **task, struct mafh_op_result *res)
{
	struct latency *l = ctx;
	struct lat_task *t = calloc(1, sizeof(*t));
	int64_t ms = op_latency(l, op->kind);

	*task = NULL;
	if (!t) {
		res->error = mafh__error_set(&res->detail, MAFH_ENOMEM, "out of memory");
		return 0;
	}
	t->op = *op;
	/* replaces is dropped: the remote backends this simulates write each file anew. */
	t->op.replaces = NULL;
	t->state = state;
	if (op->kind == MAFH_OP_WAIT_UNTIL)
		t->start_at = op->until_ms;
	else if (ms > 0)
		/* One more: on a clock of whole milliseconds, now_ms + ms can come short. */
		t->start_at = ms >= INT64_MAX - now_ms ? INT64_MAX : now_ms + ms + 1;
	else
		t->start_at = now_ms;
	if (now_ms >= t->start_at && lat_begin(l, t, now_ms, res) == 0) {
		free(t);
		return 0;
	}
	*task = t;
	return 1;
}

static int lat_nb_want(void *ctx, void *task, struct mafh_pollfd *fds, int64_t *until)
{
	struct latency *l = ctx;
	struct lat_task *t = task;

	if (t->started)
		return l->inner->nb->want(l->inner->ops.ctx, t->inner, fds, until);
	*until = t->start_at;
	return 0;
}

static int lat_nb_step(void *ctx, void *task, int64_t now_ms, struct mafh_op_result *res)
{
	struct latency *l = ctx;
	struct lat_task *t = task;

	if (t->started)
		return l->inner->nb->step(l->inner->ops.ctx, t->inner, now_ms, res);
	if (now_ms < t->start_at)
		return 1;
	return lat_begin(l, t, now_ms, res);
}

static void lat_nb_free(void *ctx, void *task)
{
	struct latency *l = ctx;
	struct lat_task *t = task;

	if (t->inner)
		l->inner->nb->free(l->inner->ops.ctx, t->inner);
	free(t);
}

static void lat_nb_state_free(void *ctx, void *state)
{
	struct latency *l = ctx;

	l->inner->nb->state_free(l->inner->ops.ctx, state);
}

static const struct mafh__nb_ops lat_nb = {
	.start = lat_nb_start,
	.want = lat_nb_want,
	.step = lat_nb_step,
	.free = lat_nb_free,
	.state_free = lat_nb_state_free,
};

int mafh_backend_latency_new(struct mafh_backend *inner, int64_t latency_ms,
			     struct mafh_backend **out)
{
	struct mafh_backend_ops ops;
	struct latency *l;

	*out = NULL;
	if (!inner || latency_ms < 0) {
		mafh_backend_free(inner);
		return MAFH_EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		mafh_backend_free(inner);
		return MAFH_ENOMEM;
	}
	l->inner = inner;
	l->ms = latency_ms;
	pthread_mutex_init(&l->lock, NULL);
	/* No wait_change: the backends this simulates have no notification (the host can
	 * only poll), and a run over the wrapper should pace its looks as it would there. */
	if (inner->nb)
		return mafh__backend_new_nb(mafh_backend_caps(inner) & ~MAFH_CAP_WAIT_CHANGE,
					    mafh_backend_launcher_path(inner), l, lat_destroy,
					    &lat_nb, out);
	memset(&ops, 0, sizeof(ops));
	ops.size = sizeof(ops);
	ops.caps = mafh_backend_caps(inner) & ~MAFH_CAP_WAIT_CHANGE;
	ops.ctx = l;
	ops.launcher_path = mafh_backend_launcher_path(inner);
	ops.exec = lat_exec;
	ops.write_file = lat_write;
	ops.read_file = lat_read;
	ops.stat = lat_stat;
	ops.destroy = lat_destroy;
	ops.stream_open = lat_stream_open;
	ops.stream_write = lat_stream_write;
	ops.stream_read = lat_stream_read;
	ops.stream_close = lat_stream_close;
	ops.exec_input = lat_exec_input;
	return mafh_backend_new(&ops, out, NULL);
}
