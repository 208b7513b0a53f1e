/* Backend handles: a copied table of functions, or the nb form of the library's own
 * backends, and the checked calls into either (over nb, each op performed to its end). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* op over an nb backend, blocking until it is over; its error, also in err. */
static int nb_do(struct mafh_backend *b, void **state, const struct mafh_op *op,
		 struct mafh_op_result *res, struct mafh_error *err)
{
	mafh__backend_perform(b, state, op, res);
	if (res->error && err) {
		*err = res->detail;
		err->code = res->error;
	}
	return res->error;
}

/* An op of kind for the table's calls. */
static struct mafh_op nb_op(enum mafh_op_kind kind)
{
	struct mafh_op op;

	memset(&op, 0, sizeof(op));
	op.size = sizeof(op);
	op.kind = kind;
	return op;
}

/* A one-op call over nb: the state it may make is freed after. */
static int nb_once(struct mafh_backend *b, const struct mafh_op *op,
		   struct mafh_op_result *res, struct mafh_error *err)
{
	void *state = NULL;
	int rc = nb_do(b, &state, op, res, err);

	if (state)
		b->nb->state_free(b->ops.ctx, state);
	return rc;
}

void mafh_exec_result_clear(struct mafh_exec_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->err);
	memset(res, 0, sizeof(*res));
}

void mafh_read_result_clear(struct mafh_read_result *res)
{
	if (!res)
		return;
	free(res->data);
	memset(res, 0, sizeof(*res));
}

int mafh_backend_new(const struct mafh_backend_ops *ops, struct mafh_backend **out,
		     struct mafh_error *err)
{
	struct mafh_backend *b;
	struct mafh_backend_ops o;

	*out = NULL;
	if (!ops || ops->size < offsetof(struct mafh_backend_ops, destroy))
		return mafh__error_set(err, MAFH_EINVAL,
				       "the backend table is missing or its size field is not set");
	mafh__copy_versioned(&o, sizeof(o), ops, ops->size);
	o.size = sizeof(o);
	if ((o.caps & MAFH_CAP_EXEC_STDIN) && !o.exec_input) {
		if (o.destroy)
			o.destroy(o.ctx);
		return mafh__error_set(err, MAFH_EINVAL, "the backend declares MAFH_CAP_EXEC_STDIN "
				       "without an exec_input function");
	}
	if (((o.caps & MAFH_CAP_EXEC) && !o.exec) ||
	    ((o.caps & MAFH_CAP_FILES_IN) && !o.write_file) ||
	    ((o.caps & MAFH_CAP_FILES_OUT) && (!o.read_file || !o.stat)) ||
	    ((o.caps & MAFH_CAP_STREAM) && (!o.stream_open || !o.stream_write ||
					     !o.stream_read || !o.stream_close))) {
		if (o.destroy)
			o.destroy(o.ctx);
		return mafh__error_set(err, MAFH_EINVAL,
				       "the backend declares a capability without its function");
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		if (o.destroy)
			o.destroy(o.ctx);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	b->ops = o;
	pthread_mutex_init(&b->shared_lock, NULL);
	*out = b;
	return 0;
}

int mafh__backend_new_nb(unsigned caps, const char *launcher_path, void *ctx,
			 void (*destroy)(void *ctx), const struct mafh__nb_ops *nb,
			 struct mafh_backend **out)
{
	struct mafh_backend *b = calloc(1, sizeof(*b));

	*out = NULL;
	if (!b) {
		if (destroy)
			destroy(ctx);
		return MAFH_ENOMEM;
	}
	b->ops.size = sizeof(b->ops);
	b->ops.caps = caps;
	b->ops.ctx = ctx;
	b->ops.launcher_path = launcher_path;
	b->ops.destroy = destroy;
	b->nb = nb;
	pthread_mutex_init(&b->shared_lock, NULL);
	*out = b;
	return 0;
}

void mafh_backend_free(struct mafh_backend *b)
{
	if (!b)
		return;
	if (b->shared_state)
		b->nb->state_free(b->ops.ctx, b->shared_state);
	if (b->ops.destroy)
		b->ops.destroy(b->ops.ctx);
	pthread_mutex_destroy(&b->shared_lock);
	free(b);
}

unsigned mafh_backend_caps(const struct mafh_backend *b)
{
	return b ? b->ops.caps : 0;
}

const char *mafh_backend_launcher_path(const struct mafh_backend *b)
{
	return b && b->ops.launcher_path ? b->ops.launcher_path : "maf-launch";
}

/* An EXEC op over nb: data NULL is no input at all (stdin is nothing). */
static int nb_exec(struct mafh_backend *b, const char *const *argv, const void *data,
		   size_t len, int64_t timeout_ms, size_t out_cap, struct mafh_exec_result *res,
		   struct mafh_error *err)
{
	struct mafh_op op = nb_op(MAFH_OP_EXEC);
	struct mafh_op_result r;
	int rc;

	op.argv = argv;
	op.timeout_ms = timeout_ms;
	op.out_cap = out_cap;
	op.data = data;
	op.len = len;
	rc = nb_once(b, &op, &r, err);
	*res = r.exec;
	return rc;
}

int mafh_backend_exec(struct mafh_backend *b, const char *const *argv, int64_t timeout_ms,
		      size_t out_cap, struct mafh_exec_result *res, struct mafh_error *err)
{
	memset(res, 0, sizeof(*res));
	if (!(b->ops.caps & MAFH_CAP_EXEC))
		return mafh__error_set(err, MAFH_ENOTSUP, "the backend has no exec (EXEC)");
	if (!argv || !argv[0])
		return mafh__error_set(err, MAFH_EINVAL, "exec needs a non-empty argv");
	if (b->nb)
		return nb_exec(b, argv, NULL, 0, timeout_ms, out_cap, res, err);
	return b->ops.exec(b->ops.ctx, argv, timeout_ms, out_cap, res, err);
}

int mafh_backend_exec_input(struct mafh_backend *b, const char *const *argv, const void *in,
			    size_t in_len, int64_t timeout_ms, size_t out_cap,
			    struct mafh_exec_result *res, struct mafh_error *err)
{
	memset(res, 0, sizeof(*res));
	if (!(b->ops.caps & MAFH_CAP_EXEC_STDIN) || (!b->nb && !b->ops.exec_input))
		return mafh__error_set(err, MAFH_ENOTSUP, "the backend cannot give an exec input "
				       "(EXEC_STDIN)");
	if (!argv || !argv[0])
		return mafh__error_set(err, MAFH_EINVAL, "exec needs a non-empty argv");
	if (!in && in_len)
		return mafh__error_set(err, MAFH_EINVAL, "an exec input of %zu bytes at NULL",
				       in_len);
	/* in may be NULL with in_len 0: an empty stdin all the same. */
	if (b->nb)
		return nb_exec(b, argv, in ? in : "", in_len, timeout_ms, out_cap, res, err);
	return b->ops.exec_input(b->ops.ctx, argv, in, in_len, timeout_ms, out_cap, res, err);
}

int mafh_backend_write_file(struct mafh_backend *b, const char *path, const void *data,
			    size_t len, const char *replaces, struct mafh_error *err)
{
	if (!(b->ops.caps & MAFH_CAP_FILES_IN))
		return mafh__error_set(err, MAFH_ENOTSUP,
				       "the backend cannot write files (FILES_IN)");
	if (b->nb) {
		struct mafh_op op = nb_op(MAFH_OP_WRITE);
		struct mafh_op_result r;

		op.path = path;
		op.data = data;
		op.len = len;
		op.replaces = replaces;
		return nb_once(b, &op, &r, err);
	}
	return b->ops.write_file(b->ops.ctx, path, data, len, replaces, err);
}

int mafh_backend_read_file(struct mafh_backend *b, const char *path, size_t cap,
			   struct mafh_read_result *res, struct mafh_error *err)
{
	memset(res, 0, sizeof(*res));
	if (!(b->ops.caps & MAFH_CAP_FILES_OUT))
		return mafh__error_set(err, MAFH_ENOTSUP,
				       "the backend cannot read files (FILES_OUT)");
	if (b->nb) {
		struct mafh_op op = nb_op(MAFH_OP_READ);
		struct mafh_op_result r;
		int rc;

		op.path = path;
		op.cap = cap;
		rc = nb_once(b, &op, &r, err);
		*res = r.read;
		return rc;
	}
	return b->ops.read_file(b->ops.ctx, path, cap, res, err);
}

int mafh_backend_stat(struct mafh_backend *b, const char *path, struct mafh_stat *st,
		      struct mafh_error *err)
{
	memset(st, 0, sizeof(*st));
	if (!(b->ops.caps & MAFH_CAP_FILES_OUT))
		return mafh__error_set(err, MAFH_ENOTSUP,
				       "the backend cannot stat files (FILES_OUT)");
	if (b->nb) {
		struct mafh_op op = nb_op(MAFH_OP_STAT);
		struct mafh_op_result r;
		int rc;

		op.path = path;
		rc = nb_once(b, &op, &r, err);
		*st = r.stat;
		return rc;
	}
	return b->ops.stat(b->ops.ctx, path, st, err);
}

int mafh_backend_wait_change(struct mafh_backend *b, const char *dir, const char *const *names,
			     int64_t timeout_ms, struct mafh_error *err)
{
	if (!b || !(b->ops.caps & MAFH_CAP_WAIT_CHANGE) || (!b->nb && !b->ops.wait_change))
		return mafh__error_set(err, MAFH_ENOTSUP,
				       "the backend cannot wait for a change (WAIT_CHANGE)");
	if (!dir || !names)
		return mafh__error_set(err, MAFH_EINVAL, "waiting for a change needs a directory "
				       "and names");
	if (b->nb) {
		/* The watches are kept from one call to the next: a caller that waits on the
		 * same directory again pays for none. A caller that finds them lent to another
		 * thread's wait makes its own rather than wait behind it for as long as that
		 * wait lasts. */
		struct mafh_op op = nb_op(MAFH_OP_WAIT_UNTIL);
		struct mafh_op_result r;
		int rc;

		op.until_ms = mafh__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
		op.wait_dir = dir;
		op.wait_names = names;
		if (pthread_mutex_trylock(&b->shared_lock) == 0) {
			rc = nb_do(b, &b->shared_state, &op, &r, err);
			pthread_mutex_unlock(&b->shared_lock);
		} else {
			rc = nb_once(b, &op, &r, err);
		}
		return rc < 0 ? rc : r.woke;
	}
	return b->ops.wait_change(b->ops.ctx, dir, names, timeout_ms, err);
}

int mafh_backend_stream_open(struct mafh_backend *b, const char *const *argv, void **stream,
			     struct mafh_error *err)
{
	*stream = NULL;
	if (!(b->ops.caps & MAFH_CAP_STREAM))
		return mafh__error_set(err, MAFH_ENOTSUP, "the backend has no stream (STREAM)");
	if (!argv || !argv[0])
		return mafh__error_set(err, MAFH_EINVAL, "a stream needs a non-empty argv");
	if (b->nb) {
		/* The stream handle of the table is the nb state that holds it. */
		struct mafh_op op = nb_op(MAFH_OP_STREAM_OPEN);
		struct mafh_op_result r;
		int rc;

		op.argv = argv;
		rc = nb_do(b, stream, &op, &r, err);
		if (rc < 0 && *stream) {
			b->nb->state_free(b->ops.ctx, *stream);
			*stream = NULL;
		}
		return rc;
	}
	return b->ops.stream_open(b->ops.ctx, argv, stream, err);
}

int mafh_backend_stream_write(struct mafh_backend *b, void *stream, const void *data,
			      size_t len, int64_t timeout_ms, struct mafh_error *err)
{
	if (!(b->ops.caps & MAFH_CAP_STREAM) || !stream)
		return mafh__error_set(err, MAFH_ENOTSUP, "no stream to write to");
	if (b->nb) {
		struct mafh_op op = nb_op(MAFH_OP_STREAM_WRITE);
		struct mafh_op_result r;

		op.data = data;
		op.len = len;
		op.timeout_ms = timeout_ms;
		return nb_do(b, &stream, &op, &r, err);
	}
	return b->ops.stream_write(b->ops.ctx, stream, data, len, timeout_ms, err);
}

int mafh_backend_stream_read(struct mafh_backend *b, void *stream, void *buf, size_t cap,
			     int64_t timeout_ms, struct mafh_error *err)
{
	if (!(b->ops.caps & MAFH_CAP_STREAM) || !stream)
		return mafh__error_set(err, MAFH_ENOTSUP, "no stream to read from");
	if (cap > (1u << 20))
		cap = 1u << 20;
	if (b->nb) {
		struct mafh_op op = nb_op(MAFH_OP_STREAM_READ);
		struct mafh_op_result r;
		int rc;

		if (!cap)
			return 0;
		op.cap = cap;
		op.until_ms = mafh__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
		rc = nb_do(b, &stream, &op, &r, err);
		if (rc < 0)
			return rc;
		if (r.stream_len) {
			memcpy(buf, r.stream_data, r.stream_len);
			return (int)r.stream_len;
		}
		if (r.stream_ended)
			return mafh__error_set(err, MAFH_EPIPE, "%s", r.detail.message[0]
					       ? r.detail.message : "the stream has ended");
		return 0;
	}
	return b->ops.stream_read(b->ops.ctx, stream, buf, cap, timeout_ms, err);
}

void mafh_backend_stream_close(struct mafh_backend *b, void *stream)
{
	if (!b || !stream || !(b->ops.caps & MAFH_CAP_STREAM))
		return;
	if (b->nb) {
		struct mafh_op op = nb_op(MAFH_OP_STREAM_CLOSE);
		struct mafh_op_result r;

		nb_do(b, &stream, &op, &r, NULL);
		if (stream)
			b->nb->state_free(b->ops.ctx, stream);
		return;
	}
	b->ops.stream_close(b->ops.ctx, stream);
}
