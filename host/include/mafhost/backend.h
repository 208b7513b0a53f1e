/* libmafhost's backends: a backend as a table of functions with the capabilities it
 * declares, the checked calls into one, and the library's own (local, the latency wrapper,
 * Docker). A part of <mafhost.h>, which includes it: a program includes <mafhost.h>, never
 * this file. */
#ifndef MAFHOST_BACKEND_H
#define MAFHOST_BACKEND_H

#ifndef MAFHOST_H
#error "include <mafhost.h>, not <mafhost/backend.h>"
#endif

/* ---- backends ---------------------------------------------------------------------------- */

/* Capabilities a backend declares (mafh_backend_ops.caps). */
#define MAFH_CAP_EXEC (1u << 0)          /* exec(argv) returning stdout, stderr, exit code */
#define MAFH_CAP_FILES_IN (1u << 1)      /* write_file */
#define MAFH_CAP_FILES_OUT (1u << 2)     /* read_file and stat (the pull surface) */
#define MAFH_CAP_DETACHED_EXEC (1u << 3) /* a process exec'd may outlive the exec call */
#define MAFH_CAP_BLOCKING_EXEC (1u << 4) /* exec may block long: enables `maf-launch wait` */
#define MAFH_CAP_WAIT_CHANGE (1u << 5)   /* wait_change: wake on a file's appearance */
#define MAFH_CAP_STREAM (1u << 6)        /* stream_*: an exec whose stdin and stdout stay open */
#define MAFH_CAP_EXEC_STDIN (1u << 7)    /* exec_input: an exec given bytes on its stdin */
/* An exec's stdout comes back byte for byte up to the op's out_cap (a surface that decodes
 * or re-encodes it declares no such thing): the run's `maf-launch stop` then brings the
 * output back with the exit record, and deletes R, in one exec. */
#define MAFH_CAP_EXEC_EXACT (1u << 8)
/* With MAFH_CAP_EXEC_STDIN: the launch may carry the run's files on its stdin (`maf-launch run
 * --files-stdin`) rather than a write each, an exec with an input costing no more than one
 * without here. The local backends declare it; the Docker backend does not: under load, an
 * engine's exec with stdin attached slowed the execs after it (docs/ARCHITECTURE.md, the
 * launch). */
#define MAFH_CAP_LAUNCH_STDIN (1u << 9)
/* What every run needs. */
#define MAFH_CAPS_REQUIRED (MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT | \
			    MAFH_CAP_DETACHED_EXEC)

/* The ending's default budget, in milliseconds: see mafh_run_options.ending_ms. */
#define MAFH_ENDING_MS 15000

/* The result of an exec. out and err are malloc'd by the backend and freed by whoever asked
 * for the exec (mafh_exec_result_clear). exit_code is 0..255 (128+N for signal N), or -1
 * when the command could not be started or was killed at its timeout (timed_out set). */
struct mafh_exec_result {
	int exit_code;
	int timed_out;
	char *out;
	size_t out_len;
	char *err;
	size_t err_len;
};
/* Frees out and err and zeroes the struct. */
MAFH_API void mafh_exec_result_clear(struct mafh_exec_result *res);

/* What a read-if-present found. */
enum mafh_read_status {
	MAFH_READ_OK,          /* data holds the whole file */
	MAFH_READ_ABSENT,      /* no such file: a result, not an error */
	MAFH_READ_TOO_BIG,     /* larger than the cap: nothing returned (size set) */
	MAFH_READ_NOT_REGULAR, /* a symlink, directory, FIFO, device, ...: never read */
};

/* The result of a read_file. data is malloc'd by the backend (may be NULL when len is 0)
 * and freed by whoever asked for the read (mafh_read_result_clear). */
struct mafh_read_result {
	enum mafh_read_status status;
	char *data;
	size_t len;
	int64_t size; /* TOO_BIG: the size seen, or -1 if unknown */
};
/* Frees data and zeroes the struct. */
MAFH_API void mafh_read_result_clear(struct mafh_read_result *res);

enum mafh_file_type {
	MAFH_FILE_NONE,    /* absent */
	MAFH_FILE_REGULAR,
	MAFH_FILE_DIR,
	MAFH_FILE_SYMLINK, /* stat does not follow symlinks */
	MAFH_FILE_OTHER,
};

struct mafh_stat {
	int exists;
	int64_t size;
	enum mafh_file_type type;
};

/* A backend, as a table of functions; ctx is handed back to each. Every function returns 0
 * or a negative errno value for a failure of the operation itself (an absent file is a read
 * status and a non-zero exit an exit code, not failures), filling err when not NULL. argv,
 * path and the other pointers are borrowed for the duration of the call. */
struct mafh_backend_ops {
	size_t size;           /* sizeof(struct mafh_backend_ops) */
	unsigned caps;         /* MAFH_CAP_* */
	void *ctx;
	/* maf-launch as this backend's exec finds it (borrowed for the backend's life); NULL
	 * means "maf-launch", looked up through PATH. */
	const char *launcher_path;
	/* MAFH_CAP_EXEC. Runs argv (argv[0] looked up through PATH), never through a shell.
	 * Keeps up to out_cap bytes of stdout (the rest is read and dropped); timeout_ms <= 0
	 * means no timeout. */
	int (*exec)(void *ctx, const char *const *argv, int64_t timeout_ms, size_t out_cap,
		    struct mafh_exec_result *res, struct mafh_error *err);
	/* MAFH_CAP_FILES_IN. Creates or replaces path with exactly data[0..len), creating
	 * missing parent directories; never follows a symlink planted at path. replaces is
	 * NULL, or a file in path's directory that the run is done with (a request it has
	 * answered): the backend may turn that file into path, writing data over it, rather
	 * than make a new one (the local backend does, where the file is still the regular file
	 * with one link that was read), and must otherwise leave it alone. A backend that does
	 * not reuse files ignores it. */
	int (*write_file)(void *ctx, const char *path, const void *data, size_t len,
			  const char *replaces, struct mafh_error *err);
	/* MAFH_CAP_FILES_OUT. Read-if-present: reads path if it is a regular file of at most
	 * cap bytes. Never follows a symlink, never blocks on a FIFO. */
	int (*read_file)(void *ctx, const char *path, size_t cap, struct mafh_read_result *res,
			 struct mafh_error *err);
	/* MAFH_CAP_FILES_OUT. Stats path without following a symlink; absence is exists = 0. */
	int (*stat)(void *ctx, const char *path, struct mafh_stat *st, struct mafh_error *err);
	/* Releases ctx; called once, by mafh_backend_free. May be NULL. */
	void (*destroy)(void *ctx);
	/* MAFH_CAP_WAIT_CHANGE (optional). Blocks until one of names may have appeared or
	 * changed in dir, or timeout_ms passed. names is NULL-terminated, each a file name in
	 * dir or SUB/NAME in a subdirectory of dir (which may not exist yet). Returns 1 when
	 * one may be there now (at once if one already is; a false alarm is allowed, the caller
	 * looks and waits again), 0 when timeout_ms passed, or a negative errno value (the
	 * caller then sleeps instead). A hint only: the caller still reads through read_file. */
	int (*wait_change)(void *ctx, const char *dir, const char *const *names,
			   int64_t timeout_ms, struct mafh_error *err);
	/* MAFH_CAP_STREAM (optional, all four). stream_open starts argv as exec does, its
	 * stdin and stdout attached to the caller until stream_close (its stderr kept, up to
	 * 4 KiB, for the sentence of a failure): *stream is the backend's handle. */
	int (*stream_open)(void *ctx, const char *const *argv, void **stream,
			   struct mafh_error *err);
	/* Writes all of data[0..len) to the command's stdin within timeout_ms (MAFH_ETIMEDOUT
	 * past it; MAFH_EPIPE once the command is gone). */
	int (*stream_write)(void *ctx, void *stream, const void *data, size_t len,
			    int64_t timeout_ms, struct mafh_error *err);
	/* Waits at most timeout_ms for the command's stdout: the count of bytes put in buf
	 * (1..cap, cap at most 1 MiB), 0 when timeout_ms passed with none, MAFH_EPIPE once
	 * stdout has ended (the command exited, or the stream broke), or another negative
	 * code. */
	int (*stream_read)(void *ctx, void *stream, void *buf, size_t cap, int64_t timeout_ms,
			   struct mafh_error *err);
	/* Ends the stream: stdin closed, the command given a moment to end, then killed;
	 * the handle freed. */
	void (*stream_close)(void *ctx, void *stream);
	/* MAFH_CAP_EXEC_STDIN (optional). exec, with in[0..in_len) written to the command's
	 * stdin, which is then closed (exec gives it none: /dev/null, or the backend's
	 * nothing). How the run hands `maf-launch relay` its answer, out of every other
	 * process's sight (an argv is anyone's to read in /proc). A command that exits before
	 * it has read all of in is not an error: its exit code says how it ended. */
	int (*exec_input)(void *ctx, const char *const *argv, const void *in, size_t in_len,
			  int64_t timeout_ms, size_t out_cap, struct mafh_exec_result *res,
			  struct mafh_error *err);
};

struct mafh_backend;

/* Wraps a table into a backend handle. ops is copied (ops->size says how much); ops->ctx
 * belongs to the backend from now on, even when this fails (destroy is then called). The
 * caller frees *out with mafh_backend_free. MAFH_EINVAL: a table missing a function its caps
 * promise (MAFH_CAP_EXEC_STDIN without exec_input included), or without its size. */
MAFH_API int mafh_backend_new(const struct mafh_backend_ops *ops, struct mafh_backend **out,
			      struct mafh_error *err);
/* Calls ops.destroy(ctx) and frees the handle. */
MAFH_API void mafh_backend_free(struct mafh_backend *b);
/* The backend's MAFH_CAP_* flags. */
MAFH_API unsigned mafh_backend_caps(const struct mafh_backend *b);
/* The launcher's path (borrowed from the backend), never NULL. */
MAFH_API const char *mafh_backend_launcher_path(const struct mafh_backend *b);

/* Calls into a backend's table, checked: a missing capability gives MAFH_ENOTSUP with a
 * sentence. Results belong to the caller (clear them with the matching *_clear). */
MAFH_API int mafh_backend_exec(struct mafh_backend *b, const char *const *argv,
			       int64_t timeout_ms, size_t out_cap, struct mafh_exec_result *res,
			       struct mafh_error *err);
/* MAFH_ENOTSUP without MAFH_CAP_EXEC_STDIN. */
MAFH_API int mafh_backend_exec_input(struct mafh_backend *b, const char *const *argv,
				     const void *in, size_t in_len, int64_t timeout_ms,
				     size_t out_cap, struct mafh_exec_result *res,
				     struct mafh_error *err);
/* The files of the table (MAFH_ENOTSUP without MAFH_CAP_FILES_IN or FILES_OUT). */
MAFH_API int mafh_backend_write_file(struct mafh_backend *b, const char *path, const void *data,
				     size_t len, const char *replaces, struct mafh_error *err);
MAFH_API int mafh_backend_read_file(struct mafh_backend *b, const char *path, size_t cap,
				    struct mafh_read_result *res, struct mafh_error *err);
MAFH_API int mafh_backend_stat(struct mafh_backend *b, const char *path, struct mafh_stat *st,
			       struct mafh_error *err);
/* 1 maybe changed, 0 timed out, or a negative code (MAFH_ENOTSUP without
 * MAFH_CAP_WAIT_CHANGE or the function). */
MAFH_API int mafh_backend_wait_change(struct mafh_backend *b, const char *dir,
				      const char *const *names, int64_t timeout_ms,
				      struct mafh_error *err);
/* The stream functions of the table (MAFH_ENOTSUP without MAFH_CAP_STREAM). */
MAFH_API int mafh_backend_stream_open(struct mafh_backend *b, const char *const *argv,
				      void **stream, struct mafh_error *err);
MAFH_API int mafh_backend_stream_write(struct mafh_backend *b, void *stream, const void *data,
				       size_t len, int64_t timeout_ms, struct mafh_error *err);
MAFH_API int mafh_backend_stream_read(struct mafh_backend *b, void *stream, void *buf,
				      size_t cap, int64_t timeout_ms, struct mafh_error *err);
MAFH_API void mafh_backend_stream_close(struct mafh_backend *b, void *stream);

/* The local backend: the run directory is on this machine. No op blocks (see "driving from an
 * event loop"): the files and a stream's opening are done when the op starts; an exec, a wait
 * and a stream's writes, reads and closing are tasks, each waiting on the descriptors named
 * below and a time. Each slot of mafh_task_new holds its own stream and watches, so that any
 * number of runs wait on one event loop with no thread each.
 *   exec: argv started with posix_spawnp (no copy of the host's memory; a forked child says
 *     why where it cannot be spawned), with pipes and a timeout (the child gets its own
 *     process group, killed whole at the timeout). It waits on the stdout and stderr pipes and a pidfd
 *     of the child (where the kernel gives none, a look with waitpid every 50 ms) until the
 *     timeout; once the child has exited, what the pipes hold already is taken and the exec
 *     is over, even while a process it left behind holds them open. A task freed under way
 *     kills the process group and reaps the child.
 *   write_file: a temporary name and a rename (a symlink planted at path is replaced, never
 *     followed); with replaces, that file is reused when it is still a regular file with
 *     one link in path's directory (looked at without following a symlink, before and after
 *     it is opened): written over, cut to length and renamed to path.
 *   read_file: O_NOFOLLOW and O_NONBLOCK, regular files only, capped.
 *   wait_change (a WAIT_UNTIL with a wait_dir): inotify on dir, its parent (for dir's
 *     removal) and the subdirectories named, kept in the slot for its next wait on the same
 *     dir (for mafh_backend_wait_change, in the backend); it waits on the inotify descriptor.
 *     Where inotify is unavailable (the user out of instances, 128 by default) or dir cannot
 *     be watched, one look, then a timer: woken by nothing, the run looks at its end.
 *   stream_*: argv started as exec's is, with stdin, stdout and stderr on pipes; a write waits
 *     for stdin to take the bytes, a read for stdout (stderr drained meanwhile); closing ends
 *     its stdin, waits a second for it to end (on its pidfd), then kills its process group.
 *   exec_input: exec, its stdin a memfd holding the bytes (read from its start; nothing to
 *     feed while stdout is read, no SIGPIPE when the command does not read it).
 * Caps: all of MAFH_CAP_* (so the auto transport is the stream). Errors carry the errno of
 * the system call that failed (a symlink on the way: ELOOP, or ENOTDIR where the kernel lacks
 * openat2); MAFH_EINVAL a bad argument (a relative path, a "..", a name too long).
 * launcher_path is copied (NULL: "maf-launch" through PATH). The caller frees *out with
 * mafh_backend_free. */
MAFH_API int mafh_backend_local_new(const char *launcher_path, struct mafh_backend **out);

/* The local backend inside the sandbox process pid is in, as an engine's exec enters a
 * container: for a sandbox without an engine (bubblewrap's, whose own exec serves one
 * command at a time and kills what it leaves behind, so no run outlives it). Every command
 * (exec, exec_input, a stream) joins pid's cgroup v2 group (where it is not this
 * process's), then every namespace of pid's that is not this process's (user, mount, PID,
 * network, IPC, UTS, cgroup, time), and runs there with no capability in any set (the
 * bounding and ambient sets emptied) and no_new_privs, in pid's root, its working
 * directory taken there; its stand-in on this side (a new PID namespace takes only
 * children) shares its process group, waits for it and exits as it did, and the command
 * dies with it. Paths are reached below pid's root (/proc/PID/root, opened now), with
 * openat2's RESOLVE_IN_ROOT: never leaving it, by "..", a symlink or a magic link. Caps:
 * those of mafh_backend_local_new but MAFH_CAP_WAIT_CHANGE (a run waits on the stream,
 * else polls). Needs the privilege to enter pid (CAP_SYS_ADMIN over its user namespace,
 * CAP_SYS_PTRACE to open its root: root on the host). The backend holds pid's pidfd,
 * root and cgroup from now; a command started after pid has ended fails to enter (exit
 * 125, the reason on stderr), and a file op that ends after it has fails with -ESRCH
 * (what its root holds then is no longer its sandbox). Returns MAFH_EINVAL (no such
 * process, its cgroup v2 group not reachable here) or the negative errno of what failed,
 * with a sentence in err.
 * launcher_path as for mafh_backend_local_new (a path in pid's root). The caller frees
 * *out with mafh_backend_free. */
MAFH_API int mafh_backend_local_enter_new(const char *launcher_path, int pid,
					  struct mafh_backend **out, struct mafh_error *err);

/* A wrapper that waits latency_ms before every operation of inner, to simulate a remote
 * backend. Over the library's own backends, the wait is a timer of the op's task (see
 * "driving from an event loop"), then the op is inner's: nothing blocks, and the ops of
 * several runs overlap; over a table of mafh_backend_new, it is slept, one operation at a
 * time. Takes inner (freed with the wrapper, or at once when this fails). Same caps and
 * launcher as inner, less MAFH_CAP_WAIT_CHANGE (a remote backend offers no notification, so a
 * run over the wrapper polls). A stream's opening and each write on it (a frame, whose event
 * comes back: a round trip) cost the latency; its reads and its closing add none. */
MAFH_API int mafh_backend_latency_new(struct mafh_backend *inner, int64_t latency_ms,
				      struct mafh_backend **out);

/* Where the Docker backend finds the engine, and maf-launch in a container, by default.
 * Images built by this project put the launcher there. */
#define MAFH_DOCKER_SOCKET "/var/run/docker.sock"
#define MAFH_DOCKER_LAUNCHER "/usr/local/bin/maf-launch"

/* Options of the Docker backend. */
struct mafh_docker_options {
	size_t size;               /* sizeof(struct mafh_docker_options) */
	/* The engine's unix socket (copied). NULL: as host says. */
	const char *socket_path;
	/* The most one request to the engine may take, an exec's stream and a stream's
	 * traffic excepted (those are bounded by their op's time): 0 is 120000. */
	int64_t request_timeout_ms;
	/* Where the engine is, as DOCKER_HOST says it (copied): unix:///PATH, tcp://HOST:PORT
	 * (TLS when DOCKER_TLS_VERIFY or DOCKER_TLS is set, with ca.pem, cert.pem and key.pem
	 * from DOCKER_CERT_PATH, else ~/.docker, as the docker CLI takes them) or
	 * ssh://[USER@]HOST[:PORT][/SOCKET] (each connection an `ssh ... HOST docker system
	 * dial-stdio`, ssh from PATH, as the CLI runs it). NULL: context, else DOCKER_HOST,
	 * else DOCKER_CONTEXT or the CLI's current context (DOCKER_CONFIG, else ~/.docker:
	 * config.json, contexts/), else unix://MAFH_DOCKER_SOCKET. */
	const char *host;
	/* A docker context's name (copied): its host and its TLS files, as `docker --context`
	 * takes them. NULL: as host says. */
	const char *context;
};
/* Fills *opts with the defaults and sets opts->size. */
MAFH_API void mafh_docker_options_init(struct mafh_docker_options *opts);

/* The Docker backend: the run directory is in a running container, reached through the
 * Docker Engine API where opts and the environment say (mafh_docker_options' host: a unix
 * socket, TCP with TLS or without, ssh) (HTTP through libcurl's multi interface,
 * connections kept between requests; tar through libarchive). container is a name or id; launcher_path
 * is maf-launch in the container (NULL: MAFH_DOCKER_LAUNCHER); opts may be NULL. Making it
 * asks the engine about the container once, blocking: an engine that cannot be reached
 * ("cannot reach the Docker engine at WHERE: ...", the connect's errno; a TLS or ssh
 * failure has a sentence of its own), a host or context that cannot be used (MAFH_EINVAL,
 * MAFH_ENOENT), no such container
 * (MAFH_ENOENT) or one that is not running (MAFH_EIO) fail here.
 *   exec: the engine's exec of argv (Cmd as an array, never a shell; argv[0] looked up
 *     through the container's PATH), stdout and stderr attached without a tty, the exit
 *     code from the exec's inspection once it has ended. stderr keeps 64 KiB. A command the
 *     engine cannot start (not found, not executable) is an error (MAFH_EIO) with the
 *     engine's reason. At timeout_ms the exec is reported timed_out with what came so far,
 *     but the engine cannot end an exec: the command may still be running in the container.
 *     An op's cwd is the exec's WorkingDir (the engine refuses one that is not there).
 *   exec_input: the same exec with its stdin attached, started on a connection of its own
 *     (as a stream is): the bytes are written while its output is read, then its stdin is
 *     ended; a command that exits before it has read them all is no error.
 *   write_file: a tar of the one file (mode 0644, owner 0:0) extracted at / by the engine,
 *     which makes missing parent directories (0755, owner 0:0), replaces a file or symlink
 *     at path without following it, and refuses to replace a directory. Not atomic: a
 *     reader may see the file while it is written. replaces is ignored (each write makes
 *     the file afresh). A file the container renames or removes as soon as it is closed is
 *     written all the same (the engine fails to set its owner then, once the data is in).
 *   read_file: the engine's archive of path: its first entry, a regular file only; the
 *     X-Docker-Container-Path-Stat header stops the transfer of anything else, or of a file
 *     past cap, before its data comes. At most cap bytes and 65 KiB of tar are kept.
 *   stat: the engine's lstat of path (the path-stat header): the last component is never
 *     followed. A 404 is told apart from an absent container by inspecting it.
 *   The engine resolves symlinks in the components above the last within the container's
 *   root: a run directory must be one the program cannot swap (maf-launch lends R to the
 *   program's identity, never R/host_tools).
 *   stream_*: an exec created with its stdin attached and started on a connection of its
 *     own, which the engine hands over to the exec's stdio (an HTTP upgrade): written bytes
 *     reach its stdin, its stdout comes back framed as an exec's output (its stderr kept,
 *     4 KiB, for the sentence of its end). The stdout read from the connection and not
 *     taken yet is held up to 4 MiB: a command that prints more while a write to it waits
 *     (the write reads its output meanwhile, so that neither side waits on the other)
 *     breaks the stream (MAFH_E2BIG, then every op fails). Its opening (the connection
 *     handed over) takes at most the STREAM_OPEN op's timeout_ms (10 s where it has none;
 *     a run gives its exec_timeout_ms). A write without a timeout gets 30 s. Closing ends
 *     its stdin and waits up to 1 s for its output's end, then closes the connection
 *     (mafh_backend_state_free closes it at once); the engine cannot end an
 *     exec, so a command that ignores its stdin's end may go on in the container.
 * Caps: EXEC, FILES_IN, FILES_OUT, DETACHED_EXEC, BLOCKING_EXEC, STREAM (the auto
 * transport) and EXEC_STDIN (relay's answer on the exec's stdin: one exec a call); no
 * WAIT_CHANGE, so the relay and wait transports find requests with an exec, and files
 * polls.
 * No op blocks (see "driving from an event loop"): each is a few engine requests, and waits
 * on their sockets and libcurl's timers. An exec also waits on the pauses between its
 * inspections (1 ms, doubling up to 50 ms) and on its timeout; a file op on one request
 * (a stat of an absent path two), each within the request timeout (opts->request_timeout_ms,
 * 120 s by default); a stream's ops on its connection
 * (a read until its op's until_ms, a write to be taken, a close for the output's end). The
 * table's functions (mafh_backend_exec, ...) perform the same ops to their end in poll(2).
 * Engine errors come back as one sentence with the engine's own message and a code from
 * its HTTP status (404 MAFH_ENOENT, 400 MAFH_EINVAL, 401 and 403 -EACCES, others MAFH_EIO);
 * a request that gets no answer within its timeout is MAFH_ETIMEDOUT. Ops from any number of runs
 * and threads go on at once over one backend, each request on a connection of its own while
 * it is under way (up to 16 idle ones are kept for the next requests; a stream holds one
 * for its life). A state slot (a stream) serves one op at a time. The caller frees *out
 * with mafh_backend_free. */
MAFH_API int mafh_backend_docker_new(const char *container, const char *launcher_path,
				     const struct mafh_docker_options *opts,
				     struct mafh_backend **out, struct mafh_error *err);
/* Requests the Docker backend b has made to the engine, failed ones included: an exec is
 * three or more (create, start, one inspection or more), a file operation one (a stat of an
 * absent path two), a stream's opening two. -1 when b is not a Docker backend. */
MAFH_API int64_t mafh_backend_docker_requests(const struct mafh_backend *b);
/* Makes a fresh directory in b's container, as mkdtemp(3) does: tmpl is an absolute path
 * ending in XXXXXX, which are replaced in place by a name no file has (looked at first);
 * the directory gets mode 0700 and owner 0:0, and its missing parents 0755. MAFH_EINVAL
 * for a bad template or a backend that is not a Docker backend; MAFH_EEXIST when 16 names
 * were all taken; or an engine error. Blocks until it is done (a stat or more, and a
 * write). A run needs its run directory to exist when `maf-launch run` starts: a run with
 * no program to write makes it this way. */
MAFH_API int mafh_backend_docker_mkdtemp(struct mafh_backend *b, char *tmpl,
					 struct mafh_error *err);

#endif
