/* The local backend: the run directory is on this machine. exec is fork/execvp of argv with
 * pipes and a timeout, exec_input the same with bytes on its stdin (local_exec.c); files
 * are the filesystem, reached without following symlinks, since every name under the run
 * directory may have been planted by the program (local_files.c); wait_change is inotify
 * (local_wait.c). This file holds what ties them into a backend table. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "local.h"

struct local {
	char *launcher;
	long pid;                       /* in temporary names; read once (O_EXCL keeps them apart) */
	struct mafh__local_wait *wait;
};

static int local_exec(void *ctx, const char *const *argv, int64_t timeout_ms, size_t out_cap,
		      struct mafh_exec_result *res, struct mafh_error *err)
{
	(void)ctx;
	return mafh__local_exec(argv, NULL, 0, timeout_ms, out_cap, res, err);
}

static int local_exec_input(void *ctx, const char *const *argv, const void *in, size_t in_len,
			    int64_t timeout_ms, size_t out_cap, struct mafh_exec_result *res,
			    struct mafh_error *err)
{
	(void)ctx;
	/* in may be NULL with in_len 0: an empty stdin all the same. */
	return mafh__local_exec(argv, in ? in : "", in_len, timeout_ms, out_cap, res, err);
}

static int local_stream_open(void *ctx, const char *const *argv, void **stream,
			     struct mafh_error *err)
{
	(void)ctx;
	return mafh__local_stream_open(argv, stream, err);
}

static int local_stream_write(void *ctx, void *stream, const void *data, size_t len,
			      int64_t timeout_ms, struct mafh_error *err)
{
	(void)ctx;
	return mafh__local_stream_write(stream, data, len, timeout_ms, err);
}

static int local_stream_read(void *ctx, void *stream, void *buf, size_t cap,
			     int64_t timeout_ms, struct mafh_error *err)
{
	(void)ctx;
	return mafh__local_stream_read(stream, buf, cap, timeout_ms, err);
}

static void local_stream_close(void *ctx, void *stream)
{
	(void)ctx;
	mafh__local_stream_close(stream);
}

static int local_write_file(void *ctx, const char *path, const void *data, size_t len,
			    const char *replaces, struct mafh_error *err)
{
	const struct local *l = ctx;

	return mafh__local_write_file(l->pid, path, data, len, replaces, err);
}

static int local_read_file(void *ctx, const char *path, size_t cap,
			   struct mafh_read_result *res, struct mafh_error *err)
{
	(void)ctx;
	return mafh__local_read_file(path, cap, res, err);
}

static int local_stat(void *ctx, const char *path, struct mafh_stat *out,
		      struct mafh_error *err)
{
	(void)ctx;
	return mafh__local_stat(path, out, err);
}

static int local_wait_change(void *ctx, const char *dir, const char *const *names,
			     int64_t timeout_ms, struct mafh_error *err)
{
	const struct local *l = ctx;

	return mafh__local_wait_change(l->wait, dir, names, timeout_ms, err);
}

static void local_destroy(void *ctx)
{
	struct local *l = ctx;

	if (!l)
		return;
	mafh__local_wait_free(l->wait);
	free(l->launcher);
	free(l);
}

int mafh_backend_local_new(const char *launcher_path, struct mafh_backend **out)
{
	struct mafh_backend_ops ops;
	struct local *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return MAFH_ENOMEM;
	l->launcher = strdup(launcher_path ? launcher_path : "maf-launch");
	l->pid = (long)getpid();
	if (!l->launcher || mafh__local_wait_new(&l->wait) < 0) {
		local_destroy(l);
		return MAFH_ENOMEM;
	}
	memset(&ops, 0, sizeof(ops));
	ops.size = sizeof(ops);
	ops.caps = MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT |
		   MAFH_CAP_DETACHED_EXEC | MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_WAIT_CHANGE |
		   MAFH_CAP_STREAM | MAFH_CAP_EXEC_STDIN;
	ops.ctx = l;
	ops.launcher_path = l->launcher;
	ops.exec = local_exec;
	ops.write_file = local_write_file;
	ops.read_file = local_read_file;
	ops.stat = local_stat;
	ops.destroy = local_destroy;
	ops.wait_change = local_wait_change;
	ops.stream_open = local_stream_open;
	ops.stream_write = local_stream_write;
	ops.stream_read = local_stream_read;
	ops.stream_close = local_stream_close;
	ops.exec_input = local_exec_input;
	return mafh_backend_new(&ops, out, NULL);
}
