/* libmafhost: supervise a program run through maf-launch and serve its host-tool calls over
 * nothing but a sandbox backend's exec and file operations.
 *
 * The pieces, in the order a host uses them:
 *   - a backend (struct mafh_backend_ops, mafh_backend_new): a table of functions (exec,
 *     write_file, read_file, stat, optionally wait_change, the four of a stream and
 *     exec_input) plus a context pointer, with the capabilities it declares. Built in:
 *     local (this machine), docker (a container, through the Docker engine's API) and a
 *     latency-injecting wrapper that simulates a remote backend.
 *   - a registry of tools (mafh_registry_*): names, declared parameters, callbacks, limits.
 *   - a run (mafh_run_*): a sans-I/O state machine that hands out the operations it needs
 *     (mafh_run_next_op) and takes their results (mafh_run_op_result), and a blocking driver
 *     over a backend (mafh_run_drive, mafh_run_wait) for C callers.
 *
 * Conventions
 *   - Functions return 0 (MAFH_OK) or a negative errno value (MAFH_E* names the ones the
 *     library itself produces; a backend's own failures pass through with their errno).
 *     mafh_strerror names any of them. Where a struct mafh_error * is taken it may be NULL;
 *     otherwise it receives the code and one sentence.
 *   - Nothing prints, exits, or keeps global state. Freeing NULL is a no-op.
 *   - Strings passed in are copied unless the comment says "borrowed".
 *   - Structs the caller fills (options, limits, tools, backend tables, op results) begin
 *     with a size field: set it to sizeof the struct (the *_init functions do). A library
 *     newer than the caller gives the fields past that size their defaults.
 *   - Structs the library fills and lends out (struct mafh_op, struct mafh_event,
 *     struct mafh_call) also begin with a size: the library's sizeof, so a caller built
 *     against a newer header can tell whether a field is there (offsetof(...) < size).
 *   - JSON crosses the API as text (UTF-8, one JSON value), never as a parser's tree: tool
 *     arguments arrive as the text of a JSON object, a tool's value is handed back as text.
 *     Parse them with any JSON library.
 *
 * The header needs only the C library's headers. Link with -lmafhost (pkg-config mafhost).
 */
#ifndef MAFHOST_H
#define MAFHOST_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(MAFH_NO_VISIBILITY)
#define MAFH_API __attribute__((visibility("default")))
#else
#define MAFH_API
#endif

/* ---- version ----------------------------------------------------------------------------- */

#define MAFH_VERSION_MAJOR 0
#define MAFH_VERSION_MINOR 3
#define MAFH_VERSION_PATCH 0
#define MAFH_VERSION "0.3.0"

/* The version of the library actually loaded ("0.3.0"): static, never NULL. Compare it with
 * MAFH_VERSION, the version of the header the caller was built against. */
MAFH_API const char *mafh_version(void);

/* ---- errors ------------------------------------------------------------------------------ */

#define MAFH_OK 0
#define MAFH_EINVAL (-EINVAL)       /* a bad argument or option */
#define MAFH_ENOMEM (-ENOMEM)       /* out of memory */
#define MAFH_ENOTSUP (-ENOTSUP)     /* the backend lacks a capability the run needs */
#define MAFH_EPERM (-EPERM)         /* refused: registering into a sealed registry, ... */
#define MAFH_EEXIST (-EEXIST)       /* a tool of that name is already registered */
#define MAFH_ENOENT (-ENOENT)       /* no such file, container or tool */
#define MAFH_E2BIG (-E2BIG)         /* past a size or count cap */
#define MAFH_EIO (-EIO)             /* a backend operation failed, with no errno of its own */
#define MAFH_EPROTO (-EPROTO)       /* the guest or the launcher broke the protocol */
#define MAFH_ETIMEDOUT (-ETIMEDOUT) /* a deadline passed */
#define MAFH_EBUSY (-EBUSY)         /* an op is outstanding */
#define MAFH_ECANCELED (-ECANCELED) /* the run was stopped by the caller */
#define MAFH_ELAUNCH (-ENOEXEC)     /* the launcher failed to start the program */
#define MAFH_EPIPE (-EPIPE)         /* a stream has ended */

/* A short name for code ("invalid argument", "no such file or directory", ...): for the
 * MAFH_E* codes the library's own words, for any other negative errno the C library's.
 * Static, never NULL, thread-safe. */
MAFH_API const char *mafh_strerror(int code);

/* A detailed error: code is 0 or a negative errno value, message one sentence (may be
 * empty). */
struct mafh_error {
	int code;
	char message[256];
};

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
/* What every run needs. */
#define MAFH_CAPS_REQUIRED (MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT | \
			    MAFH_CAP_DETACHED_EXEC)

/* The ending's budget, in milliseconds: see mafh_run_options.timeout_ms. */
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
 *     breaks the stream (MAFH_E2BIG, then every op fails). A write without a timeout gets
 *     30 s. Closing ends its stdin and waits up to 1 s for its output's end, then closes
 *     the connection (mafh_backend_state_free closes it at once); the engine cannot end an
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

/* ---- tools ------------------------------------------------------------------------------- */

/* Declared JSON types of a tool parameter. INTEGER is a number with no fractional part that a
 * double holds exactly. */
enum mafh_json_type {
	MAFH_JSON_ANY,
	MAFH_JSON_STRING,
	MAFH_JSON_NUMBER,
	MAFH_JSON_INTEGER,
	MAFH_JSON_BOOLEAN,
	MAFH_JSON_OBJECT,
	MAFH_JSON_ARRAY,
	MAFH_JSON_NULL,
};
/* "any", "string", "number", ...: static. */
MAFH_API const char *mafh_json_type_name(enum mafh_json_type type);
/* Parses a type name: 0 and *out, or MAFH_EINVAL. */
MAFH_API int mafh_json_type_from_name(const char *name, enum mafh_json_type *out);

struct mafh_param {
	const char *name;          /* a JSON object key, 1..128 bytes */
	enum mafh_json_type type;
	int required;
};

/* A call handed to a tool: lent by the library for the duration of the callback (or, for a
 * sans-I/O driver, until the CALL op's result). */
struct mafh_call {
	size_t size;               /* the library's sizeof(struct mafh_call) */
	int64_t id;                /* the request's number, 1.. */
	const char *tool;          /* the tool's name */
	/* The arguments: the text of a JSON object, NUL-terminated, already checked against
	 * the tool's declared parameters. */
	const char *arguments;
	size_t arguments_len;
	/* MAFH_CALL_* flags. On a pass-through registry (mafh_registry_set_pass_through) every
	 * call has MAFH_CALL_RAW: tool is "", and arguments[0..arguments_len) are the request
	 * file's bytes as the program wrote them (NUL-terminated; not decoded, not checked),
	 * or none with MAFH_CALL_OVERSIZED or MAFH_CALL_UNREADABLE. */
	unsigned flags;
	uint64_t request_size;     /* RAW: the request file's size in bytes */
};
#define MAFH_CALL_RAW 1u          /* a pass-through call: the request's bytes, unjudged */
#define MAFH_CALL_OVERSIZED 2u    /* larger than max_request_bytes: not read */
#define MAFH_CALL_UNREADABLE 4u   /* not a regular file that could be read */

/* What a pass-through callback does with a request (mafh_reply_raw). */
enum mafh_raw_answer {
	/* Writes the bytes given as the response file, whole and unchanged (within
	 * max_response_bytes; past it the program gets the run's refusal instead). */
	MAFH_RAW_RESPOND,
	/* Writes nothing and goes on to the next request: a number the program took and
	 * gave up (upstream's abandoned marker). */
	MAFH_RAW_STEP_OVER,
	/* Writes nothing and reads the same request again after poll_max_ms: it is not
	 * there yet (an empty file, say, or one that is not a regular file). */
	MAFH_RAW_LOOK_AGAIN,
	/* Writes nothing, and reads no request any more: the run only waits for the program
	 * to end (upstream's supervisor past its serving bound). */
	MAFH_RAW_HOLD,
};

/* Where a tool callback puts its answer (opaque; lent for the duration of the callback). */
struct mafh_reply;
/* Answers with a JSON value: json[0..len) is copied. Any text is taken here; the run
 * refuses the call if it is not one JSON value or is past the response caps, and says so
 * in its event. 0 or MAFH_ENOMEM. A later value or refusal replaces an earlier one. */
MAFH_API int mafh_reply_value(struct mafh_reply *reply, const char *json, size_t len);
/* Refuses the call: sentence (copied) is what the program's HostToolError says. 0 or
 * MAFH_ENOMEM. */
MAFH_API int mafh_reply_refuse(struct mafh_reply *reply, const char *sentence);
/* Attaches text for the operator, never sent to the program (what a failing tool printed,
 * the output that was not JSON, ...): it appears as the detail of the call's event. Copied,
 * at most 64 KiB kept. 0 or MAFH_ENOMEM. */
MAFH_API int mafh_reply_note(struct mafh_reply *reply, const char *text, size_t len);
/* The answer to a pass-through call (MAFH_CALL_RAW): how, and for MAFH_RAW_RESPOND the
 * response file's bytes, bytes[0..len) (copied). 0, MAFH_EINVAL (how unknown, or bytes NULL
 * with len) or MAFH_ENOMEM. */
MAFH_API int mafh_reply_raw(struct mafh_reply *reply, enum mafh_raw_answer how,
			    const char *bytes, size_t len);

/* A tool. call and reply are lent for the duration of the callback. Returns 0 once it has
 * set a value or a refusal on reply (neither is a refusal "the host tool gave no answer"), or
 * a negative errno value for a failure of the tool itself, which the program receives as a
 * refusal naming the tool and the error. A callback must not call back into the run that
 * dispatched it. */
typedef int (*mafh_tool_fn)(const struct mafh_call *call, struct mafh_reply *reply, void *ud);

struct mafh_tool {
	size_t size;               /* sizeof(struct mafh_tool) */
	const char *name;          /* printable ASCII, 1..128 bytes, no space, '/', '\\', '"' */
	const char *description;   /* may be NULL */
	const struct mafh_param *params;
	size_t n_params;           /* none: the tool takes any JSON object */
	/* May be NULL: the tool is then served only by a sans-I/O driver that runs CALL ops
	 * itself; the blocking driver refuses such calls with a sentence. */
	mafh_tool_fn fn;
	void *ud;                  /* borrowed; must outlive every run over the registry */
};

/* Limits a registry imposes on every run over it. */
struct mafh_limits {
	size_t size;                       /* sizeof(struct mafh_limits) */
	int64_t max_calls;                 /* answers per run, refusals included (default 16) */
	uint64_t max_response_bytes;       /* one response file (default 8 MiB) */
	uint64_t max_total_response_bytes; /* every response of a run (default 64 MiB) */
	uint64_t max_request_bytes;        /* one request file read (default 1 MiB) */
	uint64_t max_output_bytes;         /* program output kept and read back (default 1 MiB) */
};
/* Fills *lim with the defaults above and sets lim->size. */
MAFH_API void mafh_limits_init(struct mafh_limits *lim);

struct mafh_registry;

/* A new empty registry with the default limits. The caller frees *out with
 * mafh_registry_free, after every run over it. A sealed registry is only read: runs in
 * several threads may share it (their callbacks must then be thread-safe). MAFH_ENOMEM. */
MAFH_API int mafh_registry_new(struct mafh_registry **out);
MAFH_API void mafh_registry_free(struct mafh_registry *reg);
/* Registers a tool; the struct, its strings and params are copied. MAFH_EPERM once sealed,
 * MAFH_EEXIST for a name already there, MAFH_EINVAL for a bad name, parameter name or type,
 * or a parameter declared twice. */
MAFH_API int mafh_registry_add(struct mafh_registry *reg, const struct mafh_tool *tool,
			       struct mafh_error *err);
/* Replaces the limits (copied). MAFH_EPERM once sealed; MAFH_EINVAL for a zero cap or
 * max_calls outside 0..999999. */
MAFH_API int mafh_registry_set_limits(struct mafh_registry *reg, const struct mafh_limits *lim,
				      struct mafh_error *err);
/* Copies the limits into *lim (honouring lim->size). */
MAFH_API void mafh_registry_get_limits(const struct mafh_registry *reg, struct mafh_limits *lim);
/* Seals the registry: later add and set_limits fail with MAFH_EPERM. A run seals the
 * registry it is made over. Idempotent. */
MAFH_API void mafh_registry_seal(struct mafh_registry *reg);
MAFH_API int mafh_registry_sealed(const struct mafh_registry *reg);
/* The number of tools, and the i-th tool's name and description in registration order
 * (borrowed from the registry; NULL for i out of range). */
MAFH_API size_t mafh_registry_count(const struct mafh_registry *reg);
MAFH_API const char *mafh_registry_tool_name(const struct mafh_registry *reg, size_t i);
MAFH_API const char *mafh_registry_tool_description(const struct mafh_registry *reg, size_t i);
/* The bytes a backend must accept from one run: max_calls x max_response_bytes +
 * max_output_bytes, saturating at UINT64_MAX. */
MAFH_API uint64_t mafh_registry_transfer_bytes(const struct mafh_registry *reg);
/* Checks args_json[0..len) (one JSON object) against the declared parameters of the tool
 * named. 0, or MAFH_ENOENT (no such tool) or MAFH_EINVAL with the refusal's sentence in
 * err. */
MAFH_API int mafh_registry_check_args(const struct mafh_registry *reg, const char *name,
				      const char *args_json, size_t len, struct mafh_error *err);
/* Makes reg a pass-through: every request a run reads goes to fn as a MAFH_CALL_RAW call,
 * whatever it holds (unknown names, bytes that are not JSON, an abandoned marker, a request
 * past max_request_bytes unread), and fn decides what the program gets (mafh_reply_raw).
 * The run then applies no judgement of its own: max_calls is not counted (fn keeps its own
 * count) and no tool is looked up; max_request_bytes, max_response_bytes and
 * max_output_bytes still bound what the host holds. This is how a host serves a registry of
 * its own, with its own sentences, byte for byte. fn may be NULL for a sans-I/O driver that
 * runs CALL ops itself. MAFH_EPERM once sealed; MAFH_EINVAL when tools are registered
 * (and mafh_registry_add then fails with MAFH_EINVAL). */
MAFH_API int mafh_registry_set_pass_through(struct mafh_registry *reg, mafh_tool_fn fn,
					    void *ud, struct mafh_error *err);

/* The guest shim maf_host_tools.py for reg: call(name, **arguments), HostToolError, and one
 * wrapper per tool whose name is a valid, non-keyword Python identifier that does not clash
 * with the shim's own names after NFKC normalisation. *text is NUL-terminated and malloc'd
 * (the caller frees it); len may be NULL. */
MAFH_API int mafh_shim_source(const struct mafh_registry *reg, char **text, size_t *len,
			      struct mafh_error *err);

/* ---- runs -------------------------------------------------------------------------------- */

/* How requests are found. */
enum mafh_transport {
	/* STREAM where the backend has MAFH_CAP_STREAM, else FILES where it has
	 * MAFH_CAP_WAIT_CHANGE, else RELAY where it has MAFH_CAP_BLOCKING_EXEC, else FILES. */
	MAFH_TRANSPORT_AUTO,
	/* read-if-present of the request files: adaptive polling, or with
	 * MAFH_CAP_WAIT_CHANGE a look whenever the backend says a file may have appeared */
	MAFH_TRANSPORT_FILES,
	/* a long-poll through `maf-launch wait` (needs MAFH_CAP_BLOCKING_EXEC); falls back to
	 * FILES when the launcher has no `wait` */
	MAFH_TRANSPORT_WAIT,
	/* `maf-launch relay` writes the last answer and waits for the next request as `wait`
	 * does (needs MAFH_CAP_BLOCKING_EXEC). With MAFH_CAP_EXEC_STDIN the answer is the
	 * exec's stdin: one exec a call. Without it, or for an answer over 48 KiB, the answer
	 * is written first (a WRITE op) and the relay only waits: two operations. Never in an
	 * argv, which any process of the machine may read. Falls back to WAIT when the
	 * launcher has no `relay` */
	MAFH_TRANSPORT_RELAY,
	/* `maf-launch serve` on a stream that stays open (needs MAFH_CAP_STREAM): each
	 * answer and each request is a message on it, no backend operation a call. A stream
	 * that breaks (its command killed, the connection dropped) is closed and the run goes
	 * on with RELAY (or FILES), no call lost or made twice: an answer sent without its
	 * event is carried again. */
	MAFH_TRANSPORT_STREAM,
};
/* "auto", "files", "wait", "relay", "stream": static. */
MAFH_API const char *mafh_transport_name(enum mafh_transport t);
/* 0 and *out, or MAFH_EINVAL. */
MAFH_API int mafh_transport_from_name(const char *name, enum mafh_transport *out);

/* How a run ended. */
enum mafh_run_status {
	MAFH_RUN_RUNNING,       /* not over yet */
	MAFH_RUN_EXITED,        /* the program exited (exit_code) */
	MAFH_RUN_SIGNALED,      /* killed by a signal (exit_code 128+N) */
	MAFH_RUN_TIMEOUT,       /* the deadline passed (the host's or the supervisor's) */
	MAFH_RUN_STOPPED,       /* mafh_run_stop */
	MAFH_RUN_LAUNCH_FAILED, /* maf-launch run failed (exit_code: its 2, 125, 126 or 127) */
	MAFH_RUN_ERROR,         /* a backend or protocol failure ended the run (error) */
	/* The supervisor ended without an exit marker and record of its own (killed from
	 * outside the run, or the marker was not its): what is left of the run is killed, and
	 * how the program ended is not known. */
	MAFH_RUN_LOST,
};
/* "running", "exited", "signaled", "timeout", "stopped", "launch_failed", "error", "lost":
 * static. */
MAFH_API const char *mafh_run_status_name(enum mafh_run_status s);

/* What happened in a run, as it happens (mafh_run_options.on_event). */
enum mafh_event_kind {
	MAFH_EVENT_RUN_STARTED,      /* the program runs: pid, supervisor_pid */
	MAFH_EVENT_CALL_SERVED,      /* a call answered with a value: call_id, tool, duration */
	/* a call answered with a refusal: call_id, tool (the name the request gave, registered
	 * or not; NULL when the request could not be read), duration, message (the sentence
	 * the program gets), detail (the tool's note: what it printed, the output that was not
	 * JSON, ...) */
	MAFH_EVENT_CALL_REFUSED,
	/* an answer written that the program never received (it ended first): call_id;
	 * reported once the exit record says so, after the call's SERVED or REFUSED */
	MAFH_EVENT_CALL_UNDELIVERED,
	/* a failure met along the way: code, message. Each error of the run is one event,
	 * whether or not it ended the run (a failed stop or reclaim after the end included) */
	MAFH_EVENT_ERROR,
	MAFH_EVENT_RUN_ENDED,        /* status, exit_code; the last event of a run */
};
/* "run_started", "call_served", ...: static. */
MAFH_API const char *mafh_event_kind_name(enum mafh_event_kind kind);

/* An event, lent for the duration of the callback. Fields a kind does not use are 0/NULL. */
struct mafh_event {
	size_t size;               /* the library's sizeof(struct mafh_event) */
	enum mafh_event_kind kind;
	int64_t time_ms;           /* since the run's first op, on the driver's clock */
	int64_t call_id;
	const char *tool;
	int64_t duration_ms;       /* CALL_*: from the request read to the answer written */
	int code;                  /* ERROR: a negative errno value */
	const char *message;       /* CALL_REFUSED: the refusal; ERROR: the sentence */
	const char *detail;        /* CALL_REFUSED: the tool's note, or NULL */
	size_t detail_len;
	int64_t pid;               /* RUN_STARTED */
	int64_t supervisor_pid;    /* RUN_STARTED */
	enum mafh_run_status status; /* RUN_ENDED */
	int exit_code;             /* RUN_ENDED */
};
/* Called synchronously from inside mafh_run_next_op or mafh_run_op_result (so from the
 * driver's thread); must not call back into the run. */
typedef void (*mafh_event_fn)(const struct mafh_event *ev, void *ud);

struct mafh_run_options {
	size_t size;               /* sizeof(struct mafh_run_options) */
	const char *run_dir;       /* R: required, absolute, no ':' or '\\', no . or .. */
	/* The Python program written to R/host_tools/program.py, with the shim beside it.
	 * NULL writes neither (argv is then required, and the program brings its own way of
	 * calling). Copied. */
	const char *program;
	size_t program_len;
	/* The command after "--", NULL-terminated, copied; NULL means
	 * {"python3", "R/host_tools/program.py"}. */
	const char *const *argv;
	/* maf-launch as the backend's exec finds it; NULL: the backend's (or "maf-launch" for
	 * a sans-I/O run). Copied. */
	const char *launcher;
	/* One deadline for the whole run (default 60000). Whatever the launcher does, the run
	 * is over within MAFH_ENDING_MS of its end, or of this deadline if that comes first:
	 * the ending (stop, the record, the output, the reclaim) shares that budget. */
	int64_t timeout_ms;
	const char *egress;        /* "closed" or "open"; NULL: the launcher's default */
	const char *seccomp;       /* "default" or "off"; NULL: the launcher's default */
	const char *landlock;      /* "auto" or "off"; NULL: the launcher's default */
	enum mafh_transport transport;
	int keep_run_dir;          /* non-zero: no `maf-launch reclaim` at the end */
	int write_shim;            /* with program: also write maf_host_tools.py (default 1) */
	int64_t poll_min_ms;       /* files: the fastest poll after activity (default 2) */
	int64_t poll_max_ms;       /* files: the slowest idle poll (default 200) */
	int64_t wait_slice_ms;     /* wait: --timeout-ms of one `maf-launch wait` (default 2000) */
	/* The exec timeout of the launcher's short commands: run, stop, reclaim (default
	 * 30000; bounded by the deadline for run, and for stop and reclaim by the ending's
	 * budget, MAFH_ENDING_MS). */
	int64_t exec_timeout_ms;
	mafh_event_fn on_event;    /* may be NULL */
	void *event_ud;            /* borrowed, handed to on_event */
	/* What the launcher is given to contain the program (maf-launch run --help); NULL or
	 * -1 leave the launcher's default. Copied. */
	const char *user;          /* "UID[:GID]", or "0" to keep a root launcher's root */
	int64_t max_procs;         /* processes and threads of the run's identity; 0: none */
	int64_t max_memory;        /* bytes of address space per process; 0: none */
	const char *const *writable; /* paths the program may also write; NULL-terminated */
	/* Files transport: after this long without a request, check that the supervisor is
	 * still there (one exec of `maf-launch wait`), so that a run whose supervisor was
	 * killed ends as MAFH_RUN_LOST rather than at its deadline (default 2000; 0: never). */
	int64_t liveness_ms;
	/* With keep_run_dir 0: one entry of R the reclaim leaves in place with all it holds
	 * (`maf-launch reclaim --keep NAME`): R itself then stays too. NULL: R goes whole.
	 * One path component. Copied. */
	const char *reclaim_keep;
};
/* Fills *opts with the defaults and sets opts->size; run_dir stays NULL. */
MAFH_API void mafh_run_options_init(struct mafh_run_options *opts);

/* Backend operations a run asked for, by kind. */
struct mafh_op_counts {
	int64_t exec;
	int64_t read;
	int64_t write;
	int64_t stat;
	int64_t wait;    /* WAIT_UNTIL ops: sleeps or waits for a change, no backend operation */
};

/* program_exit.json as the guest wrote it (have_record says whether it was read and
 * decoded): the supervisor's account, not the host's. */
struct mafh_exit_record {
	int have_record;
	char status[32];        /* "exited", "signaled", "timeout", "stopped", "launch_failed" */
	int exit_code;
	int signal;
	int64_t wall_ms;
	int64_t cpu_ms;
	int64_t peak_rss_kb;
	int64_t output_bytes;
	int output_truncated;
	int64_t calls;          /* answers the launcher's channel delivered */
	int64_t undelivered;    /* channel calls whose answer reached no caller */
	char seccomp[32];
	char landlock[32];
	char error[256];
};

/* A run's outcome, borrowed from the run (valid until mafh_run_free) and updated as it
 * goes. */
struct mafh_run_result {
	enum mafh_run_status status;
	int exit_code;              /* the program's exit code; -1 while unknown */
	struct mafh_exit_record record;
	const char *output;         /* program_output.txt, NUL-terminated; "" if none */
	size_t output_len;
	int output_truncated;       /* cut at max_output_bytes (here or by the supervisor) */
	/* Answers the program received, values and refusals: an answer written after the
	 * program ended (the exit record names the calls still waiting then) is not counted. */
	int64_t calls;
	int64_t refusals;           /* of calls, the refusals */
	int64_t undelivered;        /* answers written that the program never received */
	struct mafh_op_counts ops;
	int64_t wall_ms;            /* first op to DONE, on the driver's clock */
	int64_t pid;                /* from the launch line; 0 before */
	int64_t supervisor_pid;
	int session;                /* the launcher printed the session line */
	/* What contained the program, from the launch line (the launcher's own words, not a
	 * file the program could write): identity "own" (an identity of the run's own) or
	 * "launcher" ("" from a launcher that does not say), its uid and gid, and Landlock
	 * ("abi-N", "unsupported", "failed", "off"). */
	char identity[16];
	int64_t uid, gid;
	char landlock[32];
	/* 1 when the program could not have written the exit marker and record the host read:
	 * it ran under an identity of its own, or under Landlock, and the supervisor's record
	 * was read and agrees with the marker. 0: the result is the program's word as much as
	 * the supervisor's (no record, or one that disagrees: the record's verdict is taken
	 * then, and the disagreement is among the errors). */
	int verified;
	/* The first error: why the run ended in ERROR, LAUNCH_FAILED, TIMEOUT or STOPPED, or a
	 * failure met after its end (output, stop, reclaim). */
	struct mafh_error error;
	/* Every error met, the first included: one sentence a line, NUL-terminated, "" if
	 * none (at most 4 KiB; the rest is counted in a last line). */
	const char *errors;
	/* The transport serving the run now (never AUTO): the one auto chose, or the one a
	 * run fell back to (a broken stream, a launcher without relay or wait). */
	enum mafh_transport transport;
	/* Of ops.exec, those that gave the command bytes on its stdin (exec_input), and those
	 * that opened a stream. */
	int64_t exec_inputs;
	int64_t streams_opened;
};

struct mafh_run;

/* A run over a backend (borrowed: it must outlive the run). Refuses, with a sentence naming
 * it, a backend lacking a capability the run needs (MAFH_ENOTSUP), and bad options or a
 * backend declaring MAFH_CAP_EXEC_STDIN without exec_input (MAFH_EINVAL), before any I/O.
 * Seals reg (borrowed: it must outlive the run). The caller frees *out with mafh_run_free. */
MAFH_API int mafh_run_new(struct mafh_registry *reg, struct mafh_backend *backend,
			  const struct mafh_run_options *opts, struct mafh_run **out,
			  struct mafh_error *err);
/* The same with no backend, for a caller that performs the ops itself: caps are those of
 * the backend it will use (checked as above). */
MAFH_API int mafh_run_new_sansio(struct mafh_registry *reg, unsigned caps,
				 const struct mafh_run_options *opts, struct mafh_run **out,
				 struct mafh_error *err);
/* Asks a run in progress to stop: at its next op the run reads the output, ends the
 * program's tree through `maf-launch stop` and finishes with MAFH_RUN_STOPPED. The one
 * function that is safe to call from another thread while a driver runs. */
MAFH_API void mafh_run_stop(struct mafh_run *run);
MAFH_API void mafh_run_free(struct mafh_run *run);
/* The run's result so far (status MAFH_RUN_RUNNING until DONE), borrowed from the run. */
MAFH_API const struct mafh_run_result *mafh_run_result(const struct mafh_run *run);

/* ---- the sans-I/O core ------------------------------------------------------------------- */

/* A driver's loop (what mafh_run_drive does):
 *
 *     mafh_run_new_sansio(reg, caps, &opts, &run, &err);
 *     for (;;) {
 *             const struct mafh_op *op;
 *             struct mafh_op_result res;
 *
 *             mafh_run_next_op(run, now_ms(), &op);
 *             if (op->kind == MAFH_OP_DONE)
 *                     break;
 *             mafh_op_result_init(&res, op->kind);
 *             ... perform op, fill res ...
 *             mafh_run_op_result(run, now_ms(), &res);
 *             ... free what res holds (exec and read data) ...
 *     }
 *     result = mafh_run_result(run);
 *
 * One op is outstanding at a time: each op handed out gets its result before the next
 * mafh_run_next_op. */

enum mafh_op_kind {
	MAFH_OP_EXEC,       /* run argv: a backend exec */
	MAFH_OP_READ,       /* read-if-present of path, up to cap bytes */
	MAFH_OP_WRITE,      /* write data[0..len) to path (replaces: see the backend table) */
	MAFH_OP_STAT,       /* stat path */
	/* Wait until until_ms on the driver's clock; no backend op. With wait_dir set, the
	 * driver may end it early as soon as one of wait_names may have appeared
	 * (mafh_backend_ops.wait_change takes exactly these), and the run then looks at once. */
	MAFH_OP_WAIT_UNTIL,
	MAFH_OP_CALL,       /* run a tool: fn(call, reply, ud), or the driver's own way */
	MAFH_OP_DONE,       /* the run is over: see mafh_run_result */
	/* The stream transport: one stream a run, the driver's to keep (a backend's
	 * stream_open, or anything that carries bytes both ways to the command). */
	MAFH_OP_STREAM_OPEN,  /* start argv with stdin and stdout attached */
	MAFH_OP_STREAM_WRITE, /* write data[0..len) to its stdin */
	/* wait until until_ms at most for bytes of its stdout, up to cap: result.stream_data
	 * (none when the time passed), stream_ended once stdout has ended */
	MAFH_OP_STREAM_READ,
	MAFH_OP_STREAM_CLOSE, /* end it (never fails) */
};
/* "exec", "read", "write", "stat", "wait_until", "call", "done", "stream_open",
 * "stream_write", "stream_read", "stream_close": static. */
MAFH_API const char *mafh_op_kind_name(enum mafh_op_kind kind);

/* An operation the run needs. The op and everything it points to are lent by the run until
 * the op's result is given (mafh_run_op_result), or the run is freed. */
struct mafh_op {
	size_t size;               /* the library's sizeof(struct mafh_op) */
	enum mafh_op_kind kind;
	/* EXEC, STREAM_OPEN */
	const char *const *argv;   /* NULL-terminated */
	int64_t timeout_ms;        /* the exec's own timeout */
	size_t out_cap;            /* stdout bytes the run looks at */
	/* READ, WRITE, STAT */
	const char *path;
	size_t cap;                /* READ: the largest file returned whole; STREAM_READ */
	/* WRITE, STREAM_WRITE: the bytes. EXEC: the command's stdin, data[0..len) then its
	 * end (mafh_backend_ops.exec_input); NULL (len 0) means none, a plain exec. The run
	 * gives an EXEC stdin only where its caps have MAFH_CAP_EXEC_STDIN. */
	const void *data;
	size_t len;
	const char *replaces;      /* WRITE: NULL, or a file the run is done with */
	/* WAIT_UNTIL, STREAM_READ */
	int64_t until_ms;
	const char *wait_dir;      /* NULL: a plain sleep that must last until until_ms */
	const char *const *wait_names;
	/* CALL */
	const struct mafh_call *call;
	mafh_tool_fn fn;           /* the registered callback (NULL if none was given) */
	void *ud;                  /* its user data */
	/* EXEC, STREAM_OPEN: the command's working directory; NULL: the backend's own (the
	 * host's for the local backend, the container's for Docker). A run never sets it; a
	 * caller of mafh_task_new may, over the library's backends (MAFH_ENOTSUP over a table
	 * of blocking functions). */
	const char *cwd;
};

/* The result of an op: fill with mafh_op_result_init(&res, op->kind) first. Everything it
 * points to stays the caller's: the run copies what it keeps during mafh_run_op_result. */
struct mafh_op_result {
	size_t size;               /* sizeof(struct mafh_op_result) */
	enum mafh_op_kind kind;    /* must match the op */
	int error;                 /* 0, or a negative errno value: the op itself failed */
	struct mafh_error detail;  /* with error: a sentence (may be empty) */
	struct mafh_exec_result exec;   /* EXEC */
	struct mafh_read_result read;   /* READ */
	struct mafh_stat stat;          /* STAT */
	/* CALL: a value (JSON text, value_len bytes), or a refusal (a NUL-terminated
	 * sentence), or error for a failure of the tool; note is for the operator (the
	 * event's detail), never for the program. */
	const char *value;
	size_t value_len;
	const char *refusal;
	const char *note;
	size_t note_len;
	/* STREAM_READ: the bytes read (borrowed until mafh_run_op_result returns), and 1 once
	 * the command's stdout has ended (the stream is then broken: error may say why). */
	const char *stream_data;
	size_t stream_len;
	int stream_ended;
	/* CALL with MAFH_CALL_RAW: what to do (RESPOND: value[0..value_len) is the response
	 * file's bytes, or a refusal sentence to send as {"refusal": S}, or error). */
	enum mafh_raw_answer raw_answer;
	/* WAIT_UNTIL with a wait_dir, performed by a backend (mafh_task_*): 1 when it ended
	 * early because one of the names may have appeared, 0 when until_ms came. */
	int woke;
};
/* Zeroes *res, sets its size and kind. */
MAFH_API void mafh_op_result_init(struct mafh_op_result *res, enum mafh_op_kind kind);

/* Hands out the next op in *op. now_ms is the driver's monotonic clock in milliseconds (the
 * same clock for every call). MAFH_EBUSY while an op is outstanding. After DONE, DONE
 * again. */
MAFH_API int mafh_run_next_op(struct mafh_run *run, int64_t now_ms, const struct mafh_op **op);
/* Takes the result of the outstanding op. MAFH_EINVAL when none is outstanding or the kind
 * differs. A failed op is not a failure of this call: the run decides (retry, refuse, or
 * end in MAFH_RUN_ERROR). */
MAFH_API int mafh_run_op_result(struct mafh_run *run, int64_t now_ms,
				const struct mafh_op_result *res);

/* Runs an outstanding CALL op through its registered callback, as mafh_run_drive does, and
 * fills res (initialised for MAFH_OP_CALL) with the answer: a value, a refusal, a note, or
 * error for a failure of the tool. What res then points to is held by the run until the op's
 * result is given. A tool registered without a callback is refused with a sentence.
 * MAFH_EINVAL when op is not the run's outstanding CALL. */
MAFH_API int mafh_run_call_tool(struct mafh_run *run, const struct mafh_op *op,
				struct mafh_op_result *res);

/* ---- driving from an event loop --------------------------------------------------------- */

/* The library's own backends (local, Docker, and the latency wrapper over them) perform
 * every op without blocking: an op is started, then taken further each time a descriptor it
 * waits on is ready, or its time comes. A caller with an event loop (asyncio, libuv, epoll)
 * watches what the library names, as with libcurl's multi interface or nghttp2's
 * want_read/want_write, and so supervises any number of runs from one thread. A backend made
 * with mafh_backend_new from a table of blocking functions performs each op when it is
 * started, blocking the caller as long as the function does (a WAIT_UNTIL it is handed
 * excepted: its time is the caller's to wait, or its wait_change slices of 50 ms). */

/* A descriptor to watch, as poll(2) takes it: events is POLLIN, POLLOUT or both. */
struct mafh_pollfd {
	int fd;
	short events;
};

/* The most descriptors one run or task waits on at once. */
#define MAFH_WANT_FDS 8

/* What a run or task that goes on waits for: to be called again as soon as one of fds is
 * ready as asked (readable, writable, or at its end or in error), and at until_ms at the
 * latest (INT64_MAX: no time of its own). The descriptors are the library's, lent until the
 * next call: watch them, never read, write or close them. The set may change from one call
 * to the next; being called early is harmless. */
struct mafh_want {
	int nfds;
	struct mafh_pollfd fds[MAFH_WANT_FDS];
	int64_t until_ms;
	/* 1 when fds[0] is the run's own descriptor (an epoll set of what its op waits on),
	 * the same at every wait until mafh_run_free closes it: a caller may watch it once,
	 * for the run's whole life. 0: the descriptors are lent for this wait alone (a task's,
	 * or a run's where no epoll set could be made). */
	int stable;
};

/* What mafh_run_advance has come to. */
enum mafh_progress {
	MAFH_PROGRESS_DONE,  /* the run is over: see mafh_run_result */
	MAFH_PROGRESS_WAIT,  /* an op is under way: *want says what it waits on */
	/* a tool is to be run: *call is the outstanding CALL op. Run it (mafh_run_call_tool,
	 * or the caller's own way), give its result (mafh_run_op_result), then advance again;
	 * the call may take as long as it needs, on any thread, while other runs advance. */
	MAFH_PROGRESS_CALL,
};

/* Takes a run made by mafh_run_new as far as it can go now without blocking over its
 * backend (borrowed by the run): every op that can be performed is, and the one under way
 * is looked at. What a run waits on is one descriptor of its own (want->stable) and a
 * time. Returns an enum mafh_progress (>= 0), or a negative code when driving
 * itself failed (MAFH_EINVAL for a sans-I/O run, MAFH_EBUSY while a CALL it handed out has
 * no result yet). A run asked to stop (mafh_run_stop) leaves a wait or a stream read under
 * way at once. The blocking driver below is this function and poll(2). */
MAFH_API int mafh_run_advance(struct mafh_run *run, int64_t now_ms, struct mafh_want *want,
			      const struct mafh_op **call, struct mafh_error *err);

/* One op over a backend, outside any run: how a binding offers a backend's operations
 * (exec, the files, a stream) to its own event loop. */
struct mafh_task;

/* Starts op (any kind but CALL and DONE) over b without blocking. op and what it points to
 * are borrowed until the task is freed. state is the caller's slot for what the backend
 * keeps from one op to the next (a stream from its STREAM_OPEN to its STREAM_CLOSE, the
 * watches of a wait): NULL at first, one slot per stream or per waiting run, freed with
 * mafh_backend_state_free; a slot serves one task at a time. The caller frees *out with
 * mafh_task_free. MAFH_EINVAL for a bad op, MAFH_ENOTSUP when b lacks the capability. */
MAFH_API int mafh_task_new(struct mafh_backend *b, void **state, const struct mafh_op *op,
			   int64_t now_ms, struct mafh_task **out, struct mafh_error *err);
/* Takes the task further without blocking. 1 while it goes on (*want filled), 0 once it is
 * over: *res is its result (a failure of the op is res->error), borrowed from the task until
 * mafh_task_free. now_ms is on the clock of mafh_task_new. */
MAFH_API int mafh_task_advance(struct mafh_task *t, int64_t now_ms, struct mafh_want *want,
			       const struct mafh_op_result **res);
/* Frees t; an op still under way is abandoned (a command killed, a transfer dropped, a
 * wait left). Freeing NULL is a no-op. */
MAFH_API void mafh_task_free(struct mafh_task *t);
/* Frees what a slot of mafh_task_new holds (a stream still open is closed: its command
 * given a moment to end, then killed). NULL is a no-op. */
MAFH_API void mafh_backend_state_free(struct mafh_backend *b, void *state);

/* ---- the blocking driver ----------------------------------------------------------------- */

/* A clock for the driver: now_ms is monotonic milliseconds, sleep_until_ms sleeps until that
 * time (it may return early). NULL functions mean CLOCK_MONOTONIC and nanosleep. Over a
 * backend with MAFH_CAP_WAIT_CHANGE, a WAIT_UNTIL with a wait_dir is spent in the backend's
 * wait_change instead, in slices of at most 50 ms (so mafh_run_stop is seen); after a slice
 * that saw nothing, sleep_until_ms (when given) is called with the slice's end, so that a
 * clock of the caller's own sees the time pass. */
struct mafh_clock {
	int64_t (*now_ms)(void *ud);
	void (*sleep_until_ms)(int64_t until_ms, void *ud);
	void *ud;
};

/* Drives run to DONE over backend (borrowed), running CALL ops through the registered
 * callbacks. clock may be NULL. Returns 0 once the run is over, whatever its status (see
 * mafh_run_result), or a negative code when driving itself failed. */
MAFH_API int mafh_run_drive(struct mafh_run *run, struct mafh_backend *backend,
			    const struct mafh_clock *clock, struct mafh_error *err);
/* Performs at most one op of a run made by mafh_run_new, over its backend: 1 while the run
 * goes on, 0 once it is over, or a negative code. */
MAFH_API int mafh_run_step(struct mafh_run *run, struct mafh_error *err);
/* mafh_run_drive over the run's own backend with the default clock (MAFH_EINVAL for a
 * sans-I/O run). */
MAFH_API int mafh_run_wait(struct mafh_run *run, struct mafh_error *err);

#ifdef __cplusplus
}
#endif

#endif
