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
	struct mafh__local_enter enter; /* the sandbox entered; its pid 0: this machine */
};

/* What the ops enter: NULL for this machine. */
static const struct mafh__local_enter *entered(const struct local *l)
{
	return l->enter.pid ? &l->enter : NULL;
}

/* The slot's state, made when an op first needs one. NULL when out of memory. */
static struct mafh__local_state *state_of(void **state)
{
	if (!*state)
		*state = calloc(1, sizeof(struct mafh__local_state));
	return *state;
}

/* A file op in an entered sandbox, done: once the process has ended, its root is no longer
 * its sandbox's (a file "absent" there, or a write that lands nowhere), so whatever the op
 * found is replaced by the failure. Looked at after the op: it covers an end during it.
 * Returns 0 (the op is over). */
static int after_files(const struct local *l, const struct mafh_op *op,
		       struct mafh_op_result *res)
{
	struct mafh_error gone = {0};
	int rc = mafh__local_enter_check(entered(l), &gone);

	if (rc < 0) {
		if (op->kind == MAFH_OP_READ)
			mafh_read_result_clear(&res->read);
		res->error = rc;
		res->detail = gone;
	}
	return 0;
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
		return mafh__local_exec_start(entered(l), op, now_ms, t, res);
	case MAFH_OP_WRITE:
		res->error = mafh__local_write_file(l->enter.root, l->pid, op->path, op->data,
						    op->len, op->replaces, &res->detail);
		return after_files(l, op, res);
	case MAFH_OP_READ:
		res->error = mafh__local_read_file(l->enter.root, op->path, op->cap, &res->read,
						   &res->detail);
		return after_files(l, op, res);
	case MAFH_OP_STAT:
		res->error = mafh__local_stat(l->enter.root, op->path, &res->stat, &res->detail);
		return after_files(l, op, res);
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
		return mafh__local_stream_start(entered(l), st, op, now_ms, t, res);
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
	mafh__local_enter_close(&l->enter);
	free(l->launcher);
	free(l);
}

/* A local backend; entering process pid's sandbox where pid > 0. */
static int local_new(const char *launcher_path, int pid, struct mafh_backend **out,
		     struct mafh_error *err)
{
	struct local *l = calloc(1, sizeof(*l));
	unsigned caps = MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT |
			MAFH_CAP_DETACHED_EXEC | MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_STREAM |
			MAFH_CAP_EXEC_STDIN | MAFH_CAP_EXEC_EXACT | MAFH_CAP_LAUNCH_STDIN;
	int rc;

	*out = NULL;
	if (!l)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	l->enter.root = l->enter.pidfd = l->enter.cgroup = -1;
	l->launcher = strdup(launcher_path ? launcher_path : "maf-launch");
	l->pid = (long)getpid();
	if (!l->launcher) {
		local_destroy(l);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	if (pid > 0) {
		rc = mafh__local_enter_open(pid, &l->enter, err);
		if (rc < 0) {
			local_destroy(l);
			return rc;
		}
	} else {
		/* The watches are this machine's paths (local_wait.c). */
		caps |= MAFH_CAP_WAIT_CHANGE;
	}
	rc = mafh__backend_new_nb(caps, l->launcher, l, local_destroy, &local_nb, out);
	return rc < 0 ? mafh__error_set(err, rc, "out of memory") : rc;
}

int mafh_backend_local_new(const char *launcher_path, struct mafh_backend **out)
{
	return local_new(launcher_path, 0, out, NULL);
}

int mafh_backend_local_enter_new(const char *launcher_path, int pid, struct mafh_backend **out,
				 struct mafh_error *err)
{
	if (pid <= 0) {
		*out = NULL;
		return mafh__error_set(err, MAFH_EINVAL, "no process %d to enter", pid);
	}
	return local_new(launcher_path, pid, out, err);
}
