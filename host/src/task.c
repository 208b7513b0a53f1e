/* One op over a backend, without blocking: started, then taken further whenever what it waits
 * on is ready. The library's own backends do this in their nb table (internal.h); a table of
 * blocking functions from mafh_backend_new performs each op when it starts, but for a
 * WAIT_UNTIL (the caller's time, or slices of wait_change) and a STREAM_READ (slices of
 * stream_read), so that a caller still sees mafh_run_stop every 50 ms. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The longest slice a table's blocking wait_change or stream_read is given. */
#define SLICE_MS 50
/* A stream write whose op says no timeout. */
#define STREAM_WRITE_TIMEOUT_MS 30000

struct mafh_task {
	struct mafh_backend *b;
	void **state;
	const struct mafh_op *op;
	void *nb_task;             /* the backend's, while the op goes on */
	int over;
	int no_wait_change;        /* a table's wait_change failed: the rest is slept */
	char *buf;                 /* a table's STREAM_READ */
	struct mafh_op_result res;
};

static int op_check(const struct mafh_backend *b, void **state, const struct mafh_op *op,
		    struct mafh_error *err)
{
	unsigned caps = b->ops.caps, need = 0;

	if (!op || !state)
		return mafh__error_set(err, MAFH_EINVAL, "a task needs an op and a state slot");
	if (op->cwd && !b->nb && (op->kind == MAFH_OP_EXEC || op->kind == MAFH_OP_STREAM_OPEN))
		return mafh__error_set(err, MAFH_ENOTSUP, "the backend cannot run a command in a "
				       "working directory of the caller's");
	switch (op->kind) {
	case MAFH_OP_EXEC:
		need = op->data || op->len ? MAFH_CAP_EXEC_STDIN : MAFH_CAP_EXEC;
		if (!op->argv || !op->argv[0])
			return mafh__error_set(err, MAFH_EINVAL, "exec needs a non-empty argv");
		if (!op->data && op->len)
			return mafh__error_set(err, MAFH_EINVAL, "an exec input of %zu bytes at NULL",
					       op->len);
		break;
	case MAFH_OP_READ:
	case MAFH_OP_STAT:
		need = MAFH_CAP_FILES_OUT;
		break;
	case MAFH_OP_WRITE:
		need = MAFH_CAP_FILES_IN;
		if (!op->data && op->len)
			return mafh__error_set(err, MAFH_EINVAL, "a write of %zu bytes at NULL",
					       op->len);
		break;
	case MAFH_OP_WAIT_UNTIL:
		break;
	case MAFH_OP_STREAM_OPEN:
		need = MAFH_CAP_STREAM;
		if (!op->argv || !op->argv[0])
			return mafh__error_set(err, MAFH_EINVAL, "a stream needs a non-empty argv");
		break;
	case MAFH_OP_STREAM_WRITE:
	case MAFH_OP_STREAM_READ:
		need = MAFH_CAP_STREAM;
		if (!*state)
			return mafh__error_set(err, MAFH_EINVAL, "no stream is open in this slot");
		if (op->kind == MAFH_OP_STREAM_WRITE && !op->data && op->len)
			return mafh__error_set(err, MAFH_EINVAL, "a write of %zu bytes at NULL",
					       op->len);
		if (op->kind == MAFH_OP_STREAM_READ && (op->cap == 0 || op->cap > (1u << 20)))
			return mafh__error_set(err, MAFH_EINVAL, "a stream read takes 1 byte to "
					       "1 MiB, not %zu", op->cap);
		break;
	case MAFH_OP_STREAM_CLOSE:
		break;
	default:
		return mafh__error_set(err, MAFH_EINVAL, "a backend performs no %s op",
				       mafh_op_kind_name(op->kind));
	}
	if ((caps & need) != need)
		return mafh__error_set(err, MAFH_ENOTSUP, "the backend cannot perform a %s op "
				       "(it lacks MAFH_CAP_%s)", mafh_op_kind_name(op->kind),
				       need == MAFH_CAP_EXEC_STDIN ? "EXEC_STDIN"
				       : need == MAFH_CAP_EXEC ? "EXEC"
				       : need == MAFH_CAP_FILES_OUT ? "FILES_OUT"
				       : need == MAFH_CAP_FILES_IN ? "FILES_IN" : "STREAM");
	return 0;
}

/* A table's op, at its start: done there but for a wait and a stream read. Returns 1 when
 * it goes on. */
static int table_start(struct mafh_task *t)
{
	struct mafh_backend *b = t->b;
	const struct mafh_op *op = t->op;
	struct mafh_op_result *res = &t->res;
	int64_t timeout;

	switch (op->kind) {
	case MAFH_OP_EXEC:
		if (op->data || op->len)
			res->error = mafh_backend_exec_input(b, op->argv, op->data, op->len,
							     op->timeout_ms, op->out_cap, &res->exec,
							     &res->detail);
		else
			res->error = mafh_backend_exec(b, op->argv, op->timeout_ms, op->out_cap,
						       &res->exec, &res->detail);
		return 0;
	case MAFH_OP_READ:
		res->error = mafh_backend_read_file(b, op->path, op->cap, &res->read,
						    &res->detail);
		return 0;
	case MAFH_OP_WRITE:
		res->error = mafh_backend_write_file(b, op->path, op->data, op->len, op->replaces,
						     &res->detail);
		return 0;
	case MAFH_OP_STAT:
		res->error = mafh_backend_stat(b, op->path, &res->stat, &res->detail);
		return 0;
	case MAFH_OP_STREAM_OPEN:
		if (*t->state)
			mafh_backend_stream_close(b, *t->state);
		*t->state = NULL;
		res->error = mafh_backend_stream_open(b, op->argv, t->state, &res->detail);
		return 0;
	case MAFH_OP_STREAM_WRITE:
		timeout = op->timeout_ms > 0 ? op->timeout_ms : STREAM_WRITE_TIMEOUT_MS;
		res->error = mafh_backend_stream_write(b, *t->state, op->data, op->len, timeout,
						       &res->detail);
		return 0;
	case MAFH_OP_STREAM_CLOSE:
		if (*t->state)
			mafh_backend_stream_close(b, *t->state);
		*t->state = NULL;
		return 0;
	case MAFH_OP_STREAM_READ:
		t->buf = malloc(op->cap);
		if (!t->buf) {
			res->error = mafh__error_set(&res->detail, MAFH_ENOMEM, "out of memory");
			return 0;
		}
		return 1;
	default:  /* WAIT_UNTIL */
		return 1;
	}
}

/* A table's wait or stream read, one slice further. Returns 1 while it goes on, with the time
 * to look again in *until. */
static int table_step(struct mafh_task *t, int64_t now, int64_t *until)
{
	struct mafh_backend *b = t->b;
	const struct mafh_op *op = t->op;
	struct mafh_op_result *res = &t->res;
	int64_t slice = op->until_ms - now;
	int rc;

	if (slice > SLICE_MS)
		slice = SLICE_MS;
	if (op->kind == MAFH_OP_WAIT_UNTIL) {
		if (slice <= 0)
			return 0;
		if (!t->no_wait_change && op->wait_dir && b->ops.wait_change &&
		    (b->ops.caps & MAFH_CAP_WAIT_CHANGE)) {
			rc = mafh_backend_wait_change(b, op->wait_dir, op->wait_names, slice, NULL);
			if (rc > 0) {
				res->woke = 1;
				return 0;
			}
			if (rc == 0) {
				/* The slice passed: a clock of the caller's own sees it pass. */
				*until = now + slice;
				return 1;
			}
			t->no_wait_change = 1;
		}
		*until = op->until_ms;
		return 1;
	}
	/* STREAM_READ */
	if (slice < 0)
		slice = 0;
	rc = mafh_backend_stream_read(b, *t->state, t->buf, op->cap, slice, &res->detail);
	if (rc > 0) {
		res->stream_data = t->buf;
		res->stream_len = (size_t)rc;
		return 0;
	}
	if (rc == MAFH_EPIPE) {
		res->stream_ended = 1;
		return 0;
	}
	if (rc < 0) {
		res->error = rc;
		return 0;
	}
	if (slice == 0)
		return 0;
	*until = now + slice;
	return 1;
}

int mafh_task_new(struct mafh_backend *b, void **state, const struct mafh_op *op,
		  int64_t now_ms, struct mafh_task **out, struct mafh_error *err)
{
	struct mafh_task *t;
	int rc;

	*out = NULL;
	if (!b)
		return mafh__error_set(err, MAFH_EINVAL, "a task needs a backend");
	if ((rc = op_check(b, state, op, err)) < 0)
		return rc;
	t = calloc(1, sizeof(*t));
	if (!t)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	t->b = b;
	t->state = state;
	t->op = op;
	mafh_op_result_init(&t->res, op->kind);
	if (b->nb)
		rc = b->nb->start(b->ops.ctx, state, op, now_ms, &t->nb_task, &t->res);
	else
		rc = table_start(t);
	t->over = rc == 0;
	*out = t;
	return 0;
}

int mafh_task_advance(struct mafh_task *t, int64_t now_ms, struct mafh_want *want,
		      const struct mafh_op_result **res)
{
	const struct mafh__nb_ops *nb = t->b->nb;

	want->nfds = 0;
	want->until_ms = INT64_MAX;
	want->stable = 0;
	*res = NULL;
	if (!t->over) {
		if (nb) {
			if (nb->step(t->b->ops.ctx, t->nb_task, now_ms, &t->res) == 1) {
				want->nfds = nb->want(t->b->ops.ctx, t->nb_task, want->fds,
						      &want->until_ms);
				return 1;
			}
			nb->free(t->b->ops.ctx, t->nb_task);
			t->nb_task = NULL;
		} else if (table_step(t, now_ms, &want->until_ms) == 1) {
			return 1;
		}
		t->over = 1;
	}
	*res = &t->res;
	return 0;
}

void mafh_task_free(struct mafh_task *t)
{
	if (!t)
		return;
	if (t->nb_task)
		t->b->nb->free(t->b->ops.ctx, t->nb_task);
	mafh_exec_result_clear(&t->res.exec);
	mafh_read_result_clear(&t->res.read);
	free(t->buf);
	free(t);
}

void mafh_backend_state_free(struct mafh_backend *b, void *state)
{
	if (!b || !state)
		return;
	if (b->nb)
		b->nb->state_free(b->ops.ctx, state);
	else
		mafh_backend_stream_close(b, state);
}

void mafh__backend_perform(struct mafh_backend *b, void **state, const struct mafh_op *op,
			   struct mafh_op_result *res)
{
	struct mafh_task *t = NULL;
	const struct mafh_op_result *r;
	struct mafh_want w;
	int rc;

	mafh_op_result_init(res, op->kind);
	rc = mafh_task_new(b, state, op, mafh__now_ms(), &t, &res->detail);
	if (rc < 0) {
		res->error = rc;
		return;
	}
	while (mafh_task_advance(t, mafh__now_ms(), &w, &r) == 1) {
		struct pollfd pf[MAFH_WANT_FDS];
		int64_t left = w.until_ms == INT64_MAX ? 60000 : w.until_ms - mafh__now_ms();

		if (left <= 0)
			continue;
		for (int i = 0; i < w.nfds; i++)
			pf[i] = (struct pollfd){.fd = w.fds[i].fd, .events = w.fds[i].events};
		if (w.nfds)
			poll(pf, (nfds_t)w.nfds, left > 60000 ? 60000 : (int)left);
		else
			mafh__sleep_until_ms(mafh__now_ms() + left);
	}
	/* The result moves to the caller: the task keeps nothing it would free. */
	*res = *r;
	memset(&t->res.exec, 0, sizeof(t->res.exec));
	memset(&t->res.read, 0, sizeof(t->res.read));
	mafh_task_free(t);
}
