/* The local backend: the run directory is on this machine. EXEC is fork/execvp of argv with
 * pipes and a timeout, its input a memfd (local_exec.c); files are the filesystem, reached
 * without following symlinks, since every name under the run directory may have been
 * planted by the program (local_files.c); a WAIT_UNTIL with a directory is inotify
 * (local_wait.c); a stream is a child with its stdio on pipes (local_stream.c). Every op is
 * in the nb form (internal.h): done at its start, or a task that waits on descriptors and a
 * time, so that any number of runs share one event loop. This file holds what ties them into
 * a backend: the table, the slot's state, creation and destruction. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "local.h"

struct local {
	char *launcher;
	long pid;                       /* in temporary names; read once (O_EXCL keeps them apart) */
};

/* The slot's state, made when an op first needs one. NULL when out of memory. */
static struct mafh__local_state *state_of(void **state)
{
	if (!*state)
		*state = calloc(1, sizeof(struct mafh__local_state));
	return *state;
}

static int local_start(void *ctx, void **state, const struct mafh_op *op, int64_t now_ms,
		       void **task, struct mafh_op_result *res)
{
	const struct local *l = ctx;
	struct mafh__local_task **t = (struct mafh__local_task **)task;
	struct mafh__local_state *st;

	*task = NULL;
	switch (op->kind) {
	case MAFH_OP_EXEC:
		return mafh__local_exec_start(op, now_ms, t, res);
	case MAFH_OP_WRITE:
		res->error = mafh__local_write_file(l->pid, op->path, op->data, op->len,
						    op->replaces, &res->detail);
		return 0;
	case MAFH_OP_READ:
		res->error = mafh__local_read_file(op->path, op->cap, &res->read, &res->detail);
		return 0;
	case MAFH_OP_STAT:
		res->error = mafh__local_stat(op->path, &res->stat, &res->detail);
		return 0;
	case MAFH_OP_WAIT_UNTIL:
		/* Only a wait on a directory keeps watches in the slot. */
		st = op->wait_dir ? state_of(state) : NULL;
		if (op->wait_dir && !st)
			break;
		return mafh__local_wait_start(st, op, now_ms, t, res);
	case MAFH_OP_STREAM_OPEN:
	case MAFH_OP_STREAM_WRITE:
	case MAFH_OP_STREAM_READ:
	case MAFH_OP_STREAM_CLOSE:
		if (op->kind == MAFH_OP_STREAM_CLOSE && !*state)
			return 0;       /* nothing open: closed already */
		st = state_of(state);
		if (!st)
			break;
		return mafh__local_stream_start(st, op, now_ms, t, res);
	default:
		res->error = mafh__error_set(&res->detail, MAFH_EINVAL, "the local backend performs "
					     "no %s op", mafh_op_kind_name(op->kind));
		return 0;
	}
	res->error = mafh__error_set(&res->detail, MAFH_ENOMEM, "out of memory");
	return 0;
}

static int local_want(void *ctx, void *task, struct mafh_pollfd *fds, int64_t *until)
{
	struct mafh__local_task *t = task;

	(void)ctx;
	switch (t->kind) {
	case MAFH_OP_EXEC:
		return mafh__local_exec_want(t, fds, until);
	case MAFH_OP_WAIT_UNTIL:
		return mafh__local_wait_want(t, fds, until);
	default:
		return mafh__local_stream_want(t, fds, until);
	}
}

static int local_step(void *ctx, void *task, int64_t now_ms, struct mafh_op_result *res)
{
	struct mafh__local_task *t = task;

	(void)ctx;
	switch (t->kind) {
	case MAFH_OP_EXEC:
		return mafh__local_exec_step(t, now_ms, res);
	case MAFH_OP_WAIT_UNTIL:
		return mafh__local_wait_step(t, now_ms, res);
	default:
		return mafh__local_stream_step(t, now_ms, res);
	}
}

static void local_free(void *ctx, void *task)
{
	struct mafh__local_task *t = task;

	(void)ctx;
	if (!t)
		return;
	switch (t->kind) {
	case MAFH_OP_EXEC:
		mafh__local_exec_free(t);
		break;
	case MAFH_OP_WAIT_UNTIL:
		mafh__local_wait_free(t);
		break;
	default:
		mafh__local_stream_task_free(t);
		break;
	}
}

static void local_state_free(void *ctx, void *state)
{
	struct mafh__local_state *st = state;

	(void)ctx;
	if (!st)
		return;
	mafh__local_stream_free(st->stream);
	mafh__local_watches_free(st->wait);
	free(st);
}

static const struct mafh__nb_ops local_nb = {
	.start = local_start,
	.want = local_want,
	.step = local_step,
	.free = local_free,
	.state_free = local_state_free,
};

static void local_destroy(void *ctx)
{
	struct local *l = ctx;

	if (!l)
		return;
	free(l->launcher);
	free(l);
}

int mafh_backend_local_new(const char *launcher_path, struct mafh_backend **out)
{
	struct local *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return MAFH_ENOMEM;
	l->launcher = strdup(launcher_path ? launcher_path : "maf-launch");
	l->pid = (long)getpid();
	if (!l->launcher) {
		local_destroy(l);
		return MAFH_ENOMEM;
	}
	return mafh__backend_new_nb(MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT |
				    MAFH_CAP_DETACHED_EXEC | MAFH_CAP_BLOCKING_EXEC |
				    MAFH_CAP_WAIT_CHANGE | MAFH_CAP_STREAM | MAFH_CAP_EXEC_STDIN,
				    l->launcher, l, local_destroy, &local_nb, out);
}
