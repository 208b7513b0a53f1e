/* The blocking driver: runs a run's ops over a backend table, one at a time. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* How long one wait lasts at most before mafh_run_stop is looked at again. */
#define STOP_SLICE_MS 50

static int64_t clock_now(const struct mafh_clock *c)
{
	return c && c->now_ms ? c->now_ms(c->ud) : mafh__now_ms();
}

/* The default sleep wakes every 50 ms to see whether mafh_run_stop was called from another
 * thread, so a stop is not held up by an idle back-off. */
static void clock_sleep(const struct mafh_run *run, const struct mafh_clock *c, int64_t until)
{
	if (c && c->sleep_until_ms) {
		c->sleep_until_ms(until, c->ud);
		return;
	}
	while (!mafh__run_stop_requested(run)) {
		int64_t now = mafh__now_ms();

		if (now >= until)
			break;
		mafh__sleep_until_ms(until - now > STOP_SLICE_MS ? now + STOP_SLICE_MS : until);
	}
}

/* A WAIT_UNTIL: where the op names the files it waits for and the backend can wait for a
 * change, in the backend's wait_change (ended early by a change: no poll delay), else a
 * sleep. A failing wait_change is not an error of the run: the rest is slept. */
static void wait_until(const struct mafh_run *run, struct mafh_backend *b,
		       const struct mafh_clock *c, const struct mafh_op *op)
{
	int64_t until = op->until_ms;

	if ((mafh_backend_caps(b) & MAFH_CAP_WAIT_CHANGE) && b->ops.wait_change && op->wait_dir) {
		while (!mafh__run_stop_requested(run)) {
			int64_t now = clock_now(c), slice = until - now;
			int rc;

			if (slice <= 0)
				return;
			if (slice > STOP_SLICE_MS)
				slice = STOP_SLICE_MS;
			rc = mafh_backend_wait_change(b, op->wait_dir, op->wait_names, slice, NULL);
			if (rc > 0)
				return;
			if (rc < 0)
				break;
			/* The slice passed: a clock of the caller's own is told so. */
			if (c && c->sleep_until_ms)
				c->sleep_until_ms(now + slice, c->ud);
		}
	}
	clock_sleep(run, c, until);
}

#define STREAM_WRITE_TIMEOUT_MS 30000

/* A STREAM_READ: in slices of at most 50 ms (so mafh_run_stop is seen) until bytes come, the
 * stream ends or fails, or until_ms passes. buf holds op->cap bytes. */
static void stream_read(const struct mafh_run *run, struct mafh_backend *b,
			const struct mafh_clock *c, void *stream, const struct mafh_op *op,
			char *buf, struct mafh_op_result *res)
{
	for (;;) {
		int64_t slice = op->until_ms - clock_now(c);
		int rc;

		if (slice > STOP_SLICE_MS)
			slice = STOP_SLICE_MS;
		if (slice < 0)
			slice = 0;
		rc = mafh_backend_stream_read(b, stream, buf, op->cap, slice, &res->detail);
		if (rc > 0) {
			res->stream_data = buf;
			res->stream_len = (size_t)rc;
			return;
		}
		if (rc == MAFH_EPIPE) {
			res->stream_ended = 1;
			return;
		}
		if (rc < 0) {
			res->error = rc;
			return;
		}
		if (slice == 0 || mafh__run_stop_requested(run) || clock_now(c) >= op->until_ms)
			return;
	}
}

/* Performs one op. Returns 1 if it did, 0 on DONE, or a negative code. */
static int step(struct mafh_run *run, struct mafh_backend *b, const struct mafh_clock *c,
		struct mafh_error *err)
{
	const struct mafh_op *op;
	struct mafh_op_result res;
	enum mafh_op_kind kind;
	void **stream = mafh__run_stream_slot(run);
	char *buf = NULL;
	int rc;

	rc = mafh_run_next_op(run, clock_now(c), &op);
	if (rc != 0)
		return mafh__error_set(err, rc, "the run could not hand out its next operation");
	kind = op->kind;
	if (kind == MAFH_OP_DONE)
		return 0;
	mafh_op_result_init(&res, kind);
	switch (kind) {
	case MAFH_OP_EXEC:
		if (op->data)
			res.error = mafh_backend_exec_input(b, op->argv, op->data, op->len,
							    op->timeout_ms, op->out_cap, &res.exec,
							    &res.detail);
		else
			res.error = mafh_backend_exec(b, op->argv, op->timeout_ms, op->out_cap,
						      &res.exec, &res.detail);
		break;
	case MAFH_OP_READ:
		res.error = mafh_backend_read_file(b, op->path, op->cap, &res.read, &res.detail);
		break;
	case MAFH_OP_WRITE:
		res.error = mafh_backend_write_file(b, op->path, op->data, op->len, op->replaces,
						    &res.detail);
		break;
	case MAFH_OP_STAT:
		res.error = mafh_backend_stat(b, op->path, &res.stat, &res.detail);
		break;
	case MAFH_OP_WAIT_UNTIL:
		wait_until(run, b, c, op);
		break;
	case MAFH_OP_CALL:
		mafh_run_call_tool(run, op, &res);
		break;
	case MAFH_OP_STREAM_OPEN:
		mafh_backend_stream_close(b, *stream);
		res.error = mafh_backend_stream_open(b, op->argv, stream, &res.detail);
		break;
	case MAFH_OP_STREAM_WRITE:
		res.error = mafh_backend_stream_write(b, *stream, op->data, op->len,
						      STREAM_WRITE_TIMEOUT_MS, &res.detail);
		break;
	case MAFH_OP_STREAM_READ:
		buf = malloc(op->cap ? op->cap : 1);
		if (!buf)
			res.error = mafh__error_set(&res.detail, MAFH_ENOMEM, "out of memory");
		else
			stream_read(run, b, c, *stream, op, buf, &res);
		break;
	case MAFH_OP_STREAM_CLOSE:
		mafh_backend_stream_close(b, *stream);
		*stream = NULL;
		break;
	case MAFH_OP_DONE:
		break;
	}
	rc = mafh_run_op_result(run, clock_now(c), &res);
	free(buf);
	mafh_exec_result_clear(&res.exec);
	mafh_read_result_clear(&res.read);
	if (rc != 0)
		return mafh__error_set(err, rc, "the run did not take the result of its %s",
				       mafh_op_kind_name(kind));
	return 1;
}

int mafh_run_drive(struct mafh_run *run, struct mafh_backend *backend,
		   const struct mafh_clock *clock, struct mafh_error *err)
{
	int rc;

	if (!run || !backend)
		return mafh__error_set(err, MAFH_EINVAL, "driving a run needs a run and a backend");
	while ((rc = step(run, backend, clock, err)) == 1)
		;
	return rc;
}

int mafh_run_step(struct mafh_run *run, struct mafh_error *err)
{
	struct mafh_backend *b = run ? mafh__run_backend(run) : NULL;

	if (!b)
		return mafh__error_set(err, MAFH_EINVAL, "a sans-I/O run has no backend to step");
	return step(run, b, NULL, err);
}

int mafh_run_wait(struct mafh_run *run, struct mafh_error *err)
{
	struct mafh_backend *b = run ? mafh__run_backend(run) : NULL;

	if (!b)
		return mafh__error_set(err, MAFH_EINVAL, "a sans-I/O run has no backend to wait on");
	return mafh_run_drive(run, b, NULL, err);
}
