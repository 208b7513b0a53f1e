/* What the local backend's files share (mafh__local_ names). Not installed.
 *   local.c        the context, the backend table, creation and destruction
 *   local_files.c  write_file, read_file, stat, and the path walk they and the waits use
 *   local_wait.c   wait_change: the inotify watches, kept between waits
 *   local_exec.c   exec and exec_input
 *   local_stream.c stream_open, stream_write, stream_read, stream_close
 * The ops.* functions below take err and return what their entries in struct
 * mafh_backend_ops do (mafhost.h): 0, or the negative errno of the system call that failed
 * (MAFH_EINVAL for a bad argument). */
#ifndef MAFHOST_LOCAL_H
#define MAFHOST_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include "mafhost.h"

/* The longest path taken, its NUL included; a longer one is MAFH_EINVAL. */
#define LOCAL_PATH_MAX 4096

/* Opens the directory holding path's last component, walking every component with
 * O_NOFOLLOW: a symlink anywhere on the way is refused (ELOOP/ENOTDIR), so a program that
 * swaps host_tools or host_tool_calls for a symlink cannot redirect the host's reads and
 * writes. With create, missing directories are made (0755). copy (copy_size bytes, caller's)
 * holds path, and *base points at its last component in it. Returns the directory fd (the
 * caller closes it), or -1 with errno set (EINVAL: not absolute, too long, or a ".."). */
int mafh__local_open_parent(const char *path, int create, char *copy, size_t copy_size,
			    const char **base);

/* ops.write_file. pid names this process in temporary names; donor is the table's
 * replaces: written over and renamed to path when it is still the regular file with one
 * link in path's directory, left alone otherwise. */
int mafh__local_write_file(long pid, const char *path, const void *data, size_t len,
			   const char *donor, struct mafh_error *err);
/* ops.read_file; res->data is malloc'd, the caller's. */
int mafh__local_read_file(const char *path, size_t cap, struct mafh_read_result *res,
			  struct mafh_error *err);
/* ops.stat. */
int mafh__local_stat(const char *path, struct mafh_stat *out, struct mafh_error *err);

/* ops.exec (in NULL: stdin is /dev/null) and ops.exec_input (in[0..in_len) on stdin);
 * res->out and res->err are malloc'd, the caller's. */
int mafh__local_exec(const char *const *argv, const void *in, size_t in_len,
		     int64_t timeout_ms, size_t out_cap, struct mafh_exec_result *res,
		     struct mafh_error *err);

/* The watches one backend keeps between waits, and the lock that lends them to one waiter
 * at a time. 0 and *out (freed with mafh__local_wait_free), or MAFH_ENOMEM. */
struct mafh__local_wait;
int mafh__local_wait_new(struct mafh__local_wait **out);
/* Freeing NULL is a no-op. */
void mafh__local_wait_free(struct mafh__local_wait *w);
/* ops.wait_change over w (borrowed); safe from several threads at once. */
int mafh__local_wait_change(struct mafh__local_wait *w, const char *dir,
			    const char *const *names, int64_t timeout_ms, struct mafh_error *err);

/* In a child just forked: argv exec'd with in_fd (or /dev/null when < 0), out_fd and err_fd
 * as its stdio, nothing else of ours open, the signal mask empty, in a process group of its
 * own. Never returns (exit 125, 126 or 127 when the exec fails). */
void mafh__local_child(const char *const *argv, int in_fd, int out_fd, int err_fd)
	__attribute__((noreturn));
/* ops.stream_*: the stream is a struct of local_stream.c's. */
int mafh__local_stream_open(const char *const *argv, void **stream, struct mafh_error *err);
int mafh__local_stream_write(void *stream, const void *data, size_t len, int64_t timeout_ms,
			     struct mafh_error *err);
int mafh__local_stream_read(void *stream, void *buf, size_t cap, int64_t timeout_ms,
			    struct mafh_error *err);
void mafh__local_stream_close(void *stream);

#endif
