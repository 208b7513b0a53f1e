/* A wrapper that adds a fixed latency before every operation of another backend, one
 * operation at a time, to simulate a remote backend (each op a network round trip). */
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
	memset(&ops, 0, sizeof(ops));
	ops.size = sizeof(ops);
	/* No wait_change: the backends this simulates have no notification (the host can
	 * only poll), and a run over the wrapper should pace its looks as it would there. */
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
