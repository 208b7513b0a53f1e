/* Backend handles: a copied table of functions, and the checked calls into it. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
	*out = b;
	return 0;
}

void mafh_backend_free(struct mafh_backend *b)
{
	if (!b)
		return;
	if (b->ops.destroy)
		b->ops.destroy(b->ops.ctx);
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

int mafh_backend_exec(struct mafh_backend *b, const char *const *argv, int64_t timeout_ms,
		      size_t out_cap, struct mafh_exec_result *res, struct mafh_error *err)
{
	memset(res, 0, sizeof(*res));
	if (!(b->ops.caps & MAFH_CAP_EXEC))
		return mafh__error_set(err, MAFH_ENOTSUP, "the backend has no exec (EXEC)");
	if (!argv || !argv[0])
		return mafh__error_set(err, MAFH_EINVAL, "exec needs a non-empty argv");
	return b->ops.exec(b->ops.ctx, argv, timeout_ms, out_cap, res, err);
}

int mafh_backend_exec_input(struct mafh_backend *b, const char *const *argv, const void *in,
			    size_t in_len, int64_t timeout_ms, size_t out_cap,
			    struct mafh_exec_result *res, struct mafh_error *err)
{
	memset(res, 0, sizeof(*res));
	if (!(b->ops.caps & MAFH_CAP_EXEC_STDIN) || !b->ops.exec_input)
		return mafh__error_set(err, MAFH_ENOTSUP, "the backend cannot give an exec input "
				       "(EXEC_STDIN)");
	if (!argv || !argv[0])
		return mafh__error_set(err, MAFH_EINVAL, "exec needs a non-empty argv");
	if (!in && in_len)
		return mafh__error_set(err, MAFH_EINVAL, "an exec input of %zu bytes at NULL",
				       in_len);
	return b->ops.exec_input(b->ops.ctx, argv, in, in_len, timeout_ms, out_cap, res, err);
}

int mafh_backend_write_file(struct mafh_backend *b, const char *path, const void *data,
			    size_t len, const char *replaces, struct mafh_error *err)
{
	if (!(b->ops.caps & MAFH_CAP_FILES_IN))
		return mafh__error_set(err, MAFH_ENOTSUP,
				       "the backend cannot write files (FILES_IN)");
	return b->ops.write_file(b->ops.ctx, path, data, len, replaces, err);
}

int mafh_backend_read_file(struct mafh_backend *b, const char *path, size_t cap,
			   struct mafh_read_result *res, struct mafh_error *err)
{
	memset(res, 0, sizeof(*res));
	if (!(b->ops.caps & MAFH_CAP_FILES_OUT))
		return mafh__error_set(err, MAFH_ENOTSUP,
				       "the backend cannot read files (FILES_OUT)");
	return b->ops.read_file(b->ops.ctx, path, cap, res, err);
}

int mafh_backend_stat(struct mafh_backend *b, const char *path, struct mafh_stat *st,
		      struct mafh_error *err)
{
	memset(st, 0, sizeof(*st));
	if (!(b->ops.caps & MAFH_CAP_FILES_OUT))
		return mafh__error_set(err, MAFH_ENOTSUP,
				       "the backend cannot stat files (FILES_OUT)");
	return b->ops.stat(b->ops.ctx, path, st, err);
}

int mafh_backend_wait_change(struct mafh_backend *b, const char *dir, const char *const *names,
			     int64_t timeout_ms, struct mafh_error *err)
{
	if (!b || !(b->ops.caps & MAFH_CAP_WAIT_CHANGE) || !b->ops.wait_change)
		return mafh__error_set(err, MAFH_ENOTSUP,
				       "the backend cannot wait for a change (WAIT_CHANGE)");
	if (!dir || !names)
		return mafh__error_set(err, MAFH_EINVAL, "waiting for a change needs a directory "
				       "and names");
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
	return b->ops.stream_open(b->ops.ctx, argv, stream, err);
}

int mafh_backend_stream_write(struct mafh_backend *b, void *stream, const void *data,
			      size_t len, int64_t timeout_ms, struct mafh_error *err)
{
	if (!(b->ops.caps & MAFH_CAP_STREAM) || !stream)
		return mafh__error_set(err, MAFH_ENOTSUP, "no stream to write to");
	return b->ops.stream_write(b->ops.ctx, stream, data, len, timeout_ms, err);
}

int mafh_backend_stream_read(struct mafh_backend *b, void *stream, void *buf, size_t cap,
			     int64_t timeout_ms, struct mafh_error *err)
{
	if (!(b->ops.caps & MAFH_CAP_STREAM) || !stream)
		return mafh__error_set(err, MAFH_ENOTSUP, "no stream to read from");
	if (cap > (1u << 20))
		cap = 1u << 20;
	return b->ops.stream_read(b->ops.ctx, stream, buf, cap, timeout_ms, err);
}

void mafh_backend_stream_close(struct mafh_backend *b, void *stream)
{
	if (b && stream && (b->ops.caps & MAFH_CAP_STREAM))
		b->ops.stream_close(b->ops.ctx, stream);
}
