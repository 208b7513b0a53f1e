/* What the local backend's files share (mafh__local_ names). Not installed.
 *   local.c        the context, the nb table (internal.h) that hands each op to its file,
 *                  the state of a slot, creation and destruction
 *   local_files.c  write_file, read_file, stat, and the path walk they and the waits use
 *   local_wait.c   WAIT_UNTIL: the inotify watches, kept in the slot between waits
 *   local_exec.c   EXEC (with or without an input)
 *   local_stream.c STREAM_OPEN, _WRITE, _READ, _CLOSE
 *   local_spawn.c  starting every command, in a large host from a thread whose descriptor
 *                  table is its own
 *   local_enter.c  the same backend inside another process's sandbox: its namespaces, its
 *                  cgroup, its root (mafh_backend_local_enter_new)
 * No op blocks: each is done when it starts (the files, a stream's opening) or is a task
 * that says which descriptors and time it waits on. The functions that take err return 0,
 * or the negative errno of the system call that failed (MAFH_EINVAL for a bad argument). */
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
 * writes. path is below root, a directory descriptor standing for / (another process's
 * root: never left, not by a magic link either), or this process's / when root is -1.
 * With create, missing directories are made (0755). copy (copy_size bytes, caller's)
 * holds path, and *base points at its last component in it. Returns the directory fd (the
 * caller closes it), or -1 with errno set (EINVAL: not absolute, too long, or a ".."). */
int mafh__local_open_parent(int root, const char *path, int create, char *copy,
			    size_t copy_size, const char **base);

/* WRITE, below root (as mafh__local_open_parent). pid names this process in temporary
 * names; donor is the op's replaces: written over and renamed to path when it is still the
 * regular file with one link in path's directory, left alone otherwise. */
int mafh__local_write_file(int root, long pid, const char *path, const void *data, size_t len,
			   const char *donor, struct mafh_error *err);
/* READ, below root; res->data is malloc'd, the caller's. */
int mafh__local_read_file(int root, const char *path, size_t cap,
			  struct mafh_read_result *res, struct mafh_error *err);
/* STAT, below root. */
int mafh__local_stat(int root, const char *path, struct mafh_stat *out, struct mafh_error *err);

/* The sandbox of another process, which the commands of a backend made by
 * mafh_backend_local_enter_new are started in (see there). */
struct mafh__local_enter {
	int pid;
	int pidfd;      /* that process: every command checks it is still there */
	int root;       /* its root, /proc/PID/root, opened: where paths are reached */
	int cgroup;     /* its cgroup v2 group, or -1 where it is ours */
	int ns;         /* CLONE_NEW* of each namespace of its that is not ours */
};
/* Opens what e holds of process pid (> 0); 0, or a negative errno with a sentence in err. */
int mafh__local_enter_open(int pid, struct mafh__local_enter *e, struct mafh_error *err);
/* 0 while e's process runs (or e is NULL); once it has ended, -ESRCH with a sentence in
 * err: a file op reached its root too late to have reached its sandbox. */
int mafh__local_enter_check(const struct mafh__local_enter *e, struct mafh_error *err);
/* Closes e's descriptors; a zeroed e, or one closed, is a no-op. */
void mafh__local_enter_close(struct mafh__local_enter *e);
/* In a child just forked: joins e's cgroup and namespaces, forks the command's process
 * there (a new PID namespace takes only children), stripped of every capability and with
 * no_new_privs, in this child's process group, and stays as its stand-in on this side:
 * waits for it and exits as it did (128+N for signal N). The command is started as
 * mafh__local_child starts one. Never returns (125 when e cannot be entered). */
void mafh__local_enter_child(const struct mafh__local_enter *e, const char *const *argv,
			     const char *cwd, int in_fd, int out_fd, int err_fd)
	__attribute__((noreturn));

/* A task of the local backend. Each kind's struct begins with this, so that local.c hands
 * want, step and free to the file that made it: the op's kind says which. */
struct mafh__local_task {
	enum mafh_op_kind kind;
};

/* What a slot (mafh_task_new's state) holds: the stream open in it, and the watches of the
 * last directory waited on from it. Made at the first op that needs it, freed by
 * mafh__local_state_free. */
struct mafh__local_stream;
struct mafh__local_wait;
struct mafh__local_state {
	struct mafh__local_stream *stream;  /* NULL: none open */
	struct mafh__local_wait *wait;      /* NULL: no wait yet */
};

/* The ops of each file, as in struct mafh__nb_ops: start returns 0 when the op is over
 * (res filled), 1 when it goes on in *task; want returns the count of descriptors in fds
 * (at most MAFH_WANT_FDS) and sets *until; step returns 1 while the task goes on, 0 once
 * it is over (res filled); free may be called on a task under way (the op is abandoned). */

/* EXEC: op->data non-NULL is the command's stdin (data[0..len), then its end), NULL is
 * /dev/null. res->exec.out and .err are malloc'd, the caller's. */
int mafh__local_exec_start(const struct mafh__local_enter *enter, const struct mafh_op *op,
			   int64_t now, struct mafh__local_task **task,
			   struct mafh_op_result *res);
int mafh__local_exec_want(struct mafh__local_task *task, struct mafh_pollfd *fds,
			  int64_t *until);
int mafh__local_exec_step(struct mafh__local_task *task, int64_t now,
			  struct mafh_op_result *res);
void mafh__local_exec_free(struct mafh__local_task *task);

/* WAIT_UNTIL: with op->wait_dir, over the watches in st (made there when missing); without,
 * a timer. res->woke as in struct mafh_op_result. */
int mafh__local_wait_start(struct mafh__local_state *st, const struct mafh_op *op, int64_t now,
			   struct mafh__local_task **task, struct mafh_op_result *res);
int mafh__local_wait_want(struct mafh__local_task *task, struct mafh_pollfd *fds,
			  int64_t *until);
int mafh__local_wait_step(struct mafh__local_task *task, int64_t now,
			  struct mafh_op_result *res);
void mafh__local_wait_free(struct mafh__local_task *task);
/* Frees the watches of a slot; NULL is a no-op. */
void mafh__local_watches_free(struct mafh__local_wait *w);

/* STREAM_*: the stream is st->stream. OPEN replaces one still open there (killed at once);
 * WRITE and READ need one; CLOSE takes it out of st and never fails. res->stream_data
 * points into the stream, valid until the next op on st. */
int mafh__local_stream_start(const struct mafh__local_enter *enter,
			     struct mafh__local_state *st, const struct mafh_op *op,
			     int64_t now, struct mafh__local_task **task,
			     struct mafh_op_result *res);
int mafh__local_stream_want(struct mafh__local_task *task, struct mafh_pollfd *fds,
			    int64_t *until);
int mafh__local_stream_step(struct mafh__local_task *task, int64_t now,
			    struct mafh_op_result *res);
void mafh__local_stream_task_free(struct mafh__local_task *task);
/* Closes a stream as CLOSE does, blocking up to a second for its command to end, and frees
 * it; NULL is a no-op. For teardown only (mafh__local_state_free). */
void mafh__local_stream_free(struct mafh__local_stream *s);

/* In a child just forked: argv exec'd in cwd (NULL: where we are) with in_fd (or /dev/null
 * when < 0), out_fd and err_fd as its stdio, nothing else of ours open, the signal mask
 * empty, in a process group of its own. Never returns (exit 125, 126 or 127 when the exec
 * fails, or the working directory cannot be entered: 127 when it does not exist). */
void mafh__local_child(const char *const *argv, const char *cwd, int in_fd, int out_fd,
		       int err_fd) __attribute__((noreturn));
/* mafh__local_child, in the caller's process group with own_group 0. */
void mafh__local_child_in(const char *const *argv, const char *cwd, int in_fd, int out_fd,
			  int err_fd, int own_group) __attribute__((noreturn));
/* Starts argv as mafh__local_child would in a child (the same stdio, working directory, process
 * group and signals), with posix_spawn: no copy of this process's memory map, which for a
 * large host (an interpreter with a thousand runs) costs more than the rest of a call, and,
 * where its descriptors are many (from the spawner thread, local_spawn.c), no copy of its
 * descriptor table either. Where it cannot be spawned (not found, not executable, no such
 * working directory), a forked child says why as mafh__local_child does. Returns the
 * child's pid, or -1 with errno. */
pid_t mafh__local_spawn(const char *const *argv, const char *cwd, int in_fd, int out_fd,
			int err_fd);
/* mafh__local_spawn, or with enter non-NULL, a forked child that enters it
 * (mafh__local_enter_child). */
pid_t mafh__local_spawn_in(const struct mafh__local_enter *enter, const char *const *argv,
			   const char *cwd, int in_fd, int out_fd, int err_fd);
/* A pidfd of child pid (O_CLOEXEC), or -1 where the kernel has none (before 5.3, or a
 * seccomp policy that denies it): the caller then looks with waitpid(WNOHANG) on a timer. */
int mafh__local_pidfd(int pid);
/* Ends child pid and everything in its process group with SIGKILL and reaps it (after
 * SIGKILL, waitpid returns at once). */
void mafh__local_kill(int pid);

#endif
