/* libmafhost: supervise a program run through maf-launch and serve its host-tool calls over
 * nothing but a backend's exec and file operations (DESIGN.md, MAF-TRANSPORT.md).
 *
 * The pieces:
 *   - a backend: a table of functions (exec, write_file, read_file, stat) plus a context
 *     pointer, with declared capabilities (struct mafh_backend_ops, mafh_backend_new);
 *     built in: local (this machine) and a latency-injecting wrapper;
 *   - a registry of tools (mafh_registry_*), with upstream limits and sealing;
 *   - a run: a sans-I/O state machine (mafh_run_next_op / mafh_run_op_result) that an async
 *     host drives with its own backend, and a blocking driver (mafh_run_drive, mafh_run_wait)
 *     over a backend table for C callers and maf-host.
 *
 * Conventions: functions return 0 or a negative errno-style code (MAFH_E*, mafh_strerror);
 * where a struct mafh_error * is taken it may be NULL, else it receives a sentence. Nothing
 * prints, exits or keeps global state. Freeing NULL is a no-op. Strings passed in are
 * copied unless a comment says "borrowed". Every struct the caller fills carries a size
 * field: set it to sizeof the struct (the *_init functions do), so later versions can add
 * fields at the end.
 *
 * The sans-I/O op loop (what mafh_run_drive does):
 *
 *     mafh_run_new_sansio(reg, caps, &opts, &run, &err);
 *     for (;;) {
 *             struct mafh_op op;
 *             struct mafh_op_result res;
 *             mafh_run_next_op(run, now_ms(), &op);
 *             if (op.kind == MAFH_OP_DONE)
 *                     break;
 *             perform op (exec, read, write, stat, sleep until op.until_ms, or run the tool
 *             for MAFH_OP_CALL), fill res (mafh_op_result_init first);
 *             mafh_run_op_result(run, now_ms(), &res);
 *     }
 *     result = mafh_run_result(run);
 *
 * Exactly one op is outstanding at a time: every op handed out must get its result before
 * the next mafh_run_next_op. Pointers inside an op are borrowed from the run and valid until
 * that op's result is given back; pointers inside a result are borrowed from the caller for
 * the duration of mafh_run_op_result only (the run copies what it keeps), except
 * mafh_op_result.value, whose ownership passes to the run.
 */
#ifndef MAFHOST_H
#define MAFHOST_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "cJSON.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MAFH_VERSION "0.1.0"

/* ---- errors ------------------------------------------------------------------------------ */

#define MAFH_OK 0
#define MAFH_EINVAL (-EINVAL)       /* a bad argument or option */
#define MAFH_ENOMEM (-ENOMEM)       /* out of memory */
#define MAFH_ENOTSUP (-ENOTSUP)     /* the backend lacks a capability the run needs */
#define MAFH_EPERM (-EPERM)         /* refused: e.g. registering into a sealed registry */
#define MAFH_EEXIST (-EEXIST)       /* a tool of that name is already registered */
#define MAFH_ENOENT (-ENOENT)       /* no such file (read/stat), or no such tool */
#define MAFH_E2BIG (-E2BIG)         /* past a cap */
#define MAFH_EIO (-EIO)             /* a backend operation failed */
#define MAFH_EPROTO (-EPROTO)       /* the guest or launcher broke the protocol */
#define MAFH_ETIMEDOUT (-ETIMEDOUT) /* the run's deadline passed */
#define MAFH_EBUSY (-EBUSY)         /* an op is outstanding, or the run is still going */
#define MAFH_ECANCELED (-ECANCELED) /* the run was stopped by the caller */
#define MAFH_ELAUNCH (-ENOEXEC)     /* the launcher failed to start the program */

/* The name of a code ("invalid argument", ...): a static string, never NULL. */
const char *mafh_strerror(int code);

/* A detailed error: code is one of the MAFH_E* values, message one sentence (may be empty). */
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
/* Added after 0.1.0: wait_change (below) can block until a file may have appeared, so the
 * files transport wakes on a change instead of polling. Optional; never required. */
#define MAFH_CAP_WAIT_CHANGE (1u << 5)
/* What every run needs. */
#define MAFH_CAPS_REQUIRED (MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT | \
			    MAFH_CAP_DETACHED_EXEC)

/* The result of an exec. data pointers are malloc'd by the backend, freed by whoever asked
 * for the exec (mafh_exec_result_clear). exit_code is 0..255 (128+N for signal N), -1 if the
 * command could not be started or was killed at its timeout (timed_out set). */
struct mafh_exec_result {
	int exit_code;
	int timed_out;
	char *out;
	size_t out_len;
	char *err;
	size_t err_len;
};
/* Frees out and err and zeroes the struct. */
void mafh_exec_result_clear(struct mafh_exec_result *res);

/* What a read-if-present found. */
enum mafh_read_status {
	MAFH_READ_OK,          /* data holds the whole file */
	MAFH_READ_ABSENT,      /* no such file: a result, not an error */
	MAFH_READ_TOO_BIG,     /* the file is larger than the cap; nothing returned (size set) */
	MAFH_READ_NOT_REGULAR, /* a symlink, directory, FIFO, device, ...: never read */
};

/* The result of a read_file. data is malloc'd by the backend (may be NULL when len is 0),
 * freed by whoever asked for the read (mafh_read_result_clear). */
struct mafh_read_result {
	enum mafh_read_status status;
	char *data;
	size_t len;
	int64_t size; /* TOO_BIG: the size seen, or -1 if unknown */
};
void mafh_read_result_clear(struct mafh_read_result *res);

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

/* A backend, as a table of functions. ctx is handed back to every function. Each function
 * returns 0 or a negative MAFH_E* code (a transport failure, not a guest-side outcome: an
 * absent file is a read status, a non-zero exit is an exit code), filling err if not NULL.
 * argv and path are borrowed for the duration of the call. */
struct mafh_backend_ops {
	size_t size;           /* sizeof(struct mafh_backend_ops) */
	unsigned caps;         /* MAFH_CAP_* */
	void *ctx;
	/* The path of maf-launch as this backend's exec sees it (borrowed for the backend's
	 * life); NULL means "maf-launch" (found through PATH). */
	const char *launcher_path;
	/* Runs argv (argv[0] looked up through PATH), no shell. stdout is kept up to out_cap
	 * bytes (the rest is drained and dropped); timeout_ms <= 0 means none. */
	int (*exec)(void *ctx, const char *const *argv, int64_t timeout_ms, size_t out_cap,
		    struct mafh_exec_result *res, struct mafh_error *err);
	/* Creates or replaces path with exactly data[0..len), creating missing parent
	 * directories. Must not follow a symlink planted at path. */
	int (*write_file)(void *ctx, const char *path, const void *data, size_t len,
			  struct mafh_error *err);
	/* Read-if-present: reads path if it is a regular file of at most cap bytes. Never
	 * follows a symlink, never blocks on a FIFO. */
	int (*read_file)(void *ctx, const char *path, size_t cap, struct mafh_read_result *res,
			 struct mafh_error *err);
	/* Stats path without following a symlink; absence is exists = 0, not an error. */
	int (*stat)(void *ctx, const char *path, struct mafh_stat *st, struct mafh_error *err);
	/* Releases ctx; called once by mafh_backend_free. May be NULL. */
	void (*destroy)(void *ctx);
	/* Added after 0.1.0, optional (a table whose size field ends before it has none; it is
	 * required only with MAFH_CAP_WAIT_CHANGE). Blocks until one of names may have appeared
	 * or changed in dir, or about timeout_ms passed. names is NULL-terminated, each relative
	 * to dir: a file name, or SUB/NAME for a file in a subdirectory of dir (which may not
	 * exist yet: its creation counts as a change). Returns 1 when one of them may be there
	 * now (one that already exists returns 1 at once; a false alarm is allowed, the caller
	 * looks and waits again), 0 once timeout_ms passed with nothing seen, or a negative
	 * code (the caller then sleeps instead). A hint only: the caller still reads through
	 * read_file, so a wait_change that follows a planted symlink can only wake it early.
	 * dir and names are borrowed for the duration of the call. */
	int (*wait_change)(void *ctx, const char *dir, const char *const *names,
			   int64_t timeout_ms, struct mafh_error *err);
	/* Added after 0.1.0, optional (as wait_change; needs MAFH_CAP_FILES_IN). Does what
	 * write_file does, where donor names a file in the same directory as path that the
	 * caller is done with: the backend may write data into donor's file and rename it to
	 * path, so that no new file is made (on some file systems a new inode costs far more
	 * than the write). donor is then gone. Where it cannot or will not reuse donor, it
	 * writes path as write_file does and leaves donor in place (its bytes as they were,
	 * unless writing into it failed part way); it never writes into a file that is not a
	 * regular file with that one name. Paths borrowed for the call. */
	int (*write_file_reusing)(void *ctx, const char *path, const char *donor,
				  const void *data, size_t len, struct mafh_error *err);
};

struct mafh_backend;

/* Wraps a table into a backend handle. ops is copied (ops->size tells how much); ops->ctx is
 * owned by the backend from now on, even on failure (destroy is called). The caller frees
 * *out with mafh_backend_free. MAFH_EINVAL for a table missing a function its caps promise. */
int mafh_backend_new(const struct mafh_backend_ops *ops, struct mafh_backend **out,
		     struct mafh_error *err);
/* Calls ops.destroy(ctx) and frees the handle. */
void mafh_backend_free(struct mafh_backend *b);
/* The backend's MAFH_CAP_* flags. */
unsigned mafh_backend_caps(const struct mafh_backend *b);
/* The launcher path (borrowed), never NULL. */
const char *mafh_backend_launcher_path(const struct mafh_backend *b);

/* Direct calls into a backend's table (used by the driver; handy for tools and tests).
 * Results are owned by the caller: clear them with the matching *_clear. A missing
 * capability gives MAFH_ENOTSUP. */
int mafh_backend_exec(struct mafh_backend *b, const char *const *argv, int64_t timeout_ms,
		      size_t out_cap, struct mafh_exec_result *res, struct mafh_error *err);
int mafh_backend_write_file(struct mafh_backend *b, const char *path, const void *data,
			    size_t len, struct mafh_error *err);
/* write_file reusing donor's file where the backend has write_file_reusing, else plainly
 * write_file (donor left alone). */
int mafh_backend_write_file_reusing(struct mafh_backend *b, const char *path, const char *donor,
				    const void *data, size_t len, struct mafh_error *err);
int mafh_backend_read_file(struct mafh_backend *b, const char *path, size_t cap,
			   struct mafh_read_result *res, struct mafh_error *err);
int mafh_backend_stat(struct mafh_backend *b, const char *path, struct mafh_stat *st,
		      struct mafh_error *err);
/* Added after 0.1.0: ops.wait_change (1 maybe changed, 0 timed out, or a negative code);
 * MAFH_ENOTSUP without MAFH_CAP_WAIT_CHANGE or without the function (mafh_backend_new does
 * not check this one: a table that declares the capability without it simply polls). */
int mafh_backend_wait_change(struct mafh_backend *b, const char *dir, const char *const *names,
			     int64_t timeout_ms, struct mafh_error *err);

/* The local backend: the run directory is on this machine. exec is fork/execvp of argv with
 * pipes and a timeout; files are the filesystem: write_file goes through a temporary name
 * and rename (a symlink planted at path is replaced, never followed); write_file_reusing
 * writes into donor when it is a regular file with one link in path's directory (looked at
 * before it is opened, without following a symlink, and again once open), cuts it to the
 * new length and renames it to path, else does write_file; read_file refuses
 * symlinks (O_NOFOLLOW) and non-regular files (O_NONBLOCK + fstat: a FIFO never blocks) and
 * caps the read. wait_change is inotify (a file renamed in, in dir or the subdirectories
 * named; in dir also one written and closed; directories opened without following
 * symlinks; the inotify descriptor and watches kept for the last dir waited on, so a wait
 * costs no setup) after a look at the names, or a look every few milliseconds where
 * inotify is unavailable. Caps: all of MAFH_CAP_*.
 * launcher_path is copied (NULL: "maf-launch"). The caller frees *out with
 * mafh_backend_free. */
int mafh_backend_local_new(const char *launcher_path, struct mafh_backend **out);

/* A wrapper that sleeps latency_ms before every operation of inner, one operation at a time
 * (a mutex serialises them), to simulate a remote backend. Takes ownership of inner: it is
 * freed with the wrapper, or at once if this fails. Same caps and launcher as inner, less
 * MAFH_CAP_WAIT_CHANGE: a remote backend has no notification (the host can only poll), so
 * the wrapper does not pass wait_change through and a run over it polls as it would over
 * the remote backend it simulates. */
int mafh_backend_latency_new(struct mafh_backend *inner, int64_t latency_ms,
			     struct mafh_backend **out);

/* ---- tool registry ----------------------------------------------------------------------- */

/* Declared JSON types of a tool parameter. INTEGER is a number with no fractional part. */
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
/* "string", "number", ...; "any". Static. */
const char *mafh_json_type_name(enum mafh_json_type type);
/* Parses a type name. Returns 0 and sets *out, or MAFH_EINVAL. */
int mafh_json_type_from_name(const char *name, enum mafh_json_type *out);

struct mafh_param {
	const char *name;          /* a JSON object key, 1..128 bytes */
	enum mafh_json_type type;
	int required;
};

/* What a tool callback returns. */
#define MAFH_TOOL_VALUE 0   /* *value_out holds the value (NULL means JSON null) */
#define MAFH_TOOL_REFUSED 1 /* refusal holds a sentence for the program (HostToolError) */
/* A tool. args is the request's "arguments" object, borrowed, already checked against the
 * declared parameters (an argument not declared is refused, like a Python signature; a tool
 * declaring no parameters at all takes any object). On
 * MAFH_TOOL_VALUE the callback sets *value_out to a tree it allocated with cJSON; ownership
 * passes to the run. On MAFH_TOOL_REFUSED it writes a NUL-terminated sentence into
 * refusal[0..refusal_size). A negative code is a tool failure: the program gets a refusal
 * naming it. A callback must not call back into the run that dispatched it. */
typedef int (*mafh_tool_fn)(const cJSON *args, cJSON **value_out, char *refusal,
			    size_t refusal_size, void *ud);

struct mafh_tool {
	size_t size;               /* sizeof(struct mafh_tool) */
	const char *name;          /* mafp_tool_name_valid: printable ASCII, no '/', '\\', '"' */
	const char *description;   /* may be NULL */
	const struct mafh_param *params;
	size_t n_params;
	/* NULL is allowed: the tool is then served only by a sans-I/O driver that handles
	 * MAFH_OP_CALL itself; the blocking driver refuses such calls with a sentence. */
	mafh_tool_fn fn;
	void *ud;                  /* borrowed; must outlive every run over the registry */
};

/* Limits a registry imposes on every run over it. */
struct mafh_limits {
	size_t size;                   /* sizeof(struct mafh_limits) */
	int64_t max_calls;             /* dispatches per run, refusals included (default 16) */
	uint64_t max_response_bytes;   /* per response file (default 8 MiB) */
	uint64_t max_total_response_bytes; /* all responses of a run (default 64 MiB) */
	uint64_t max_request_bytes;    /* per request file read (default 1 MiB) */
	uint64_t max_output_bytes;     /* program output kept and read back (default 1 MiB) */
};
/* Fills *lim with the defaults above and sets lim->size. */
void mafh_limits_init(struct mafh_limits *lim);

struct mafh_registry;

/* A new empty registry with default limits. The caller frees *out with mafh_registry_free,
 * after every run over it is freed. A sealed registry is only read: runs in different
 * threads may share it (the tools' callbacks must then be thread-safe themselves). */
int mafh_registry_new(struct mafh_registry **out);
void mafh_registry_free(struct mafh_registry *reg);
/* Registers a tool; tool and its strings and params are copied. MAFH_EPERM once sealed,
 * MAFH_EEXIST for a duplicate name, MAFH_EINVAL for a bad name, parameter name, type or a
 * parameter declared twice. */
int mafh_registry_add(struct mafh_registry *reg, const struct mafh_tool *tool,
		      struct mafh_error *err);
/* Replaces the limits (copied). MAFH_EPERM once sealed; MAFH_EINVAL for a zero cap or
 * max_calls outside 0..MAFP_CALL_ID_MAX. */
int mafh_registry_set_limits(struct mafh_registry *reg, const struct mafh_limits *lim,
			     struct mafh_error *err);
/* Copies the current limits into *lim (lim->size is honoured). */
void mafh_registry_get_limits(const struct mafh_registry *reg, struct mafh_limits *lim);
/* Seals the registry: later add and set_limits fail with MAFH_EPERM. A run seals the
 * registry it is created over. Idempotent. */
void mafh_registry_seal(struct mafh_registry *reg);
int mafh_registry_sealed(const struct mafh_registry *reg);
/* Number of tools, and the i-th tool's name and description (borrowed, valid as long as the
 * registry; NULL for i out of range). Registration order. */
size_t mafh_registry_count(const struct mafh_registry *reg);
const char *mafh_registry_tool_name(const struct mafh_registry *reg, size_t i);
const char *mafh_registry_tool_description(const struct mafh_registry *reg, size_t i);
/* The folded transfer figure a backend must accept for one run:
 * max_calls x max_response_bytes + max_output_bytes (saturating at UINT64_MAX). */
uint64_t mafh_registry_transfer_bytes(const struct mafh_registry *reg);
/* Checks args (an object) against the declared parameters of the named tool. Returns 0, or
 * MAFH_ENOENT (unknown tool) / MAFH_EINVAL with the refusal sentence in err. */
int mafh_registry_check_args(const struct mafh_registry *reg, const char *name,
			     const cJSON *args, struct mafh_error *err);

/* The guest shim maf_host_tools.py generated for reg (upstream semantics, MAF-TRANSPORT.md):
 * call(name, **arguments), HostToolError, and one wrapper per tool whose name is a valid,
 * non-keyword Python identifier that does not collide with the shim's globals after NFKC
 * normalisation. *text is NUL-terminated, malloc'd, freed by the caller; *len may be NULL. */
int mafh_shim_source(const struct mafh_registry *reg, char **text, size_t *len,
		     struct mafh_error *err);

/* ---- runs -------------------------------------------------------------------------------- */

/* How requests are discovered. */
enum mafh_transport {
	/* FILES where the backend has MAFH_CAP_WAIT_CHANGE (no exec per call, no poll delay),
	 * else WAIT where it has MAFH_CAP_BLOCKING_EXEC, else FILES. WAIT (chosen or
	 * automatic) falls back to FILES if the launcher has no `wait` (usage error, 2). */
	MAFH_TRANSPORT_AUTO,
	/* read-if-present of the request files: adaptive polling, or, with
	 * MAFH_CAP_WAIT_CHANGE, a look each time wait_change says a file may have appeared */
	MAFH_TRANSPORT_FILES,
	MAFH_TRANSPORT_WAIT,   /* long-poll through `maf-launch wait` (needs BLOCKING_EXEC) */
	MAFH_TRANSPORT_RELAY,  /* reserved: refused with MAFH_ENOTSUP for now */
	MAFH_TRANSPORT_STREAM, /* reserved: refused with MAFH_ENOTSUP for now */
};
/* "auto", "files", "wait", "relay", "stream". Static. */
const char *mafh_transport_name(enum mafh_transport t);
int mafh_transport_from_name(const char *name, enum mafh_transport *out);

struct mafh_run_options {
	size_t size;               /* sizeof(struct mafh_run_options) */
	const char *run_dir;       /* R: required, absolute (mafp_run_dir_check) */
	/* The Python program written to R/host_tools/program.py with the shim; NULL writes
	 * neither program nor shim (then argv must be given, and the program brings its own
	 * way of writing requests). Borrowed until mafh_run_new* returns (it is copied). */
	const char *program;
	size_t program_len;
	/* The command after "--"; NULL means {"python3", "R/host_tools/program.py"}. A
	 * NULL-terminated vector, copied. */
	const char *const *argv;
	/* maf-launch as the backend's exec sees it; NULL: the backend's launcher path (or
	 * "maf-launch" for a sans-I/O run). Copied. */
	const char *launcher;
	int64_t timeout_ms;        /* one deadline for the whole run (default 60000) */
	const char *egress;        /* "closed"/"open", NULL: the launcher's default. Copied. */
	const char *seccomp;       /* "default"/"off", NULL: the launcher's default. Copied. */
	const char *landlock;      /* "auto"/"off", NULL: the launcher's default. Copied. */
	enum mafh_transport transport;
	int keep_run_dir;          /* non-zero: skip `maf-launch reclaim` at the end */
	int write_shim;            /* with program: also write maf_host_tools.py (default 1) */
	int64_t poll_min_ms;       /* files transport: fastest poll after activity (default 2) */
	int64_t poll_max_ms;       /* files transport: slowest idle poll (default 200) */
	int64_t wait_slice_ms;     /* wait transport: --timeout-ms of one wait (default 2000) */
	/* Per-exec timeout for the launcher's short commands (run, stop, reclaim) (default
	 * 30000, bounded by the deadline except for stop and reclaim). */
	int64_t exec_timeout_ms;
};
/* Fills *opts with the defaults and sets opts->size; run_dir stays NULL. */
void mafh_run_options_init(struct mafh_run_options *opts);

/* How a run ended. */
enum mafh_run_status {
	MAFH_RUN_RUNNING,       /* not over yet */
	MAFH_RUN_EXITED,        /* the program exited (exit_code) */
	MAFH_RUN_SIGNALED,      /* killed by a signal (exit_code 128+N) */
	MAFH_RUN_TIMEOUT,       /* the deadline passed (ours or the supervisor's) */
	MAFH_RUN_STOPPED,       /* mafh_run_stop */
	MAFH_RUN_LAUNCH_FAILED, /* maf-launch run failed (exit_code is its 2/125/126/127) */
	MAFH_RUN_ERROR,         /* a backend or protocol failure ended the run (error) */
};
/* "running", "exited", "signaled", "timeout", "stopped", "launch_failed", "error". */
const char *mafh_run_status_name(enum mafh_run_status s);

/* Backend operations a run performed, by kind. */
struct mafh_op_counts {
	int64_t exec;
	int64_t read;
	int64_t write;
	int64_t stat;
	int64_t wait;    /* WAIT_UNTIL ops (sleeps: no backend operation) */
};

/* program_exit.json as the guest claimed it (have_record tells whether it was read and
 * decoded). Mirrors shared/protocol.h's struct mafp_exit_record. */
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
	int64_t calls;
	char seccomp[32];
	char landlock[32];
	char error[256];
};

/* A run's outcome; borrowed from the run (valid until mafh_run_free), updated as it goes. */
struct mafh_run_result {
	enum mafh_run_status status;
	int exit_code;              /* from program_exit_code (the guest's claim); -1 unknown */
	struct mafh_exit_record record;
	const char *output;         /* program_output.txt, NUL-terminated; "" if none */
	size_t output_len;
	int output_truncated;       /* cut at max_output_bytes (here or by the supervisor) */
	int64_t calls;              /* requests answered (values and refusals) */
	int64_t refusals;           /* of which refusals */
	struct mafh_op_counts ops;
	int64_t wall_ms;            /* first op to DONE, on the caller's clock */
	int64_t pid;                /* from the launch line; 0 before */
	int64_t supervisor_pid;
	int session;                /* the launcher printed MAFP_SESSION_LINE */
	struct mafh_error error;    /* why the run ended in ERROR/LAUNCH_FAILED; or a cleanup
				     * failure (stop/reclaim) noted after the fact */
};

struct mafh_run;

/* A run over a backend (borrowed: it must outlive the run). Refuses, with a sentence naming
 * it, a backend lacking a capability the run needs (MAFH_ENOTSUP), before any I/O. Seals reg
 * (borrowed: it must outlive the run). The caller frees *out with mafh_run_free. */
int mafh_run_new(struct mafh_registry *reg, struct mafh_backend *backend,
		 const struct mafh_run_options *opts, struct mafh_run **out,
		 struct mafh_error *err);
/* A run with no backend, for a caller that drives the ops itself: caps are the capabilities
 * of the backend it will use (checked as above). */
int mafh_run_new_sansio(struct mafh_registry *reg, unsigned caps,
			const struct mafh_run_options *opts, struct mafh_run **out,
			struct mafh_error *err);
/* Stops a run in progress: at its next op the run reads the output, ends the program
 * through `maf-launch stop` and finishes with MAFH_RUN_STOPPED. Safe to call from another
 * thread while a driver is running (the only function that is). */
void mafh_run_stop(struct mafh_run *run);
void mafh_run_free(struct mafh_run *run);

/* ---- the sans-I/O core ------------------------------------------------------------------- */

enum mafh_op_kind {
	MAFH_OP_EXEC,       /* run argv (a backend exec) */
	MAFH_OP_READ,       /* read-if-present of path with cap */
	MAFH_OP_WRITE,      /* write data[0..len) to path */
	MAFH_OP_STAT,       /* stat path */
	MAFH_OP_WAIT_UNTIL, /* sleep until until_ms on the caller's clock (no backend op); with
			     * MAFH_CAP_WAIT_CHANGE it may end early: mafh_run_wait_target */
	MAFH_OP_CALL,       /* run a tool: fn(arguments, ...) or the caller's own */
	MAFH_OP_DONE,       /* the run is over: see mafh_run_result */
};
const char *mafh_op_kind_name(enum mafh_op_kind kind);

/* An operation the run needs. Every pointer is borrowed from the run until the matching
 * mafh_run_op_result. */
struct mafh_op {
	enum mafh_op_kind kind;
	const char *const *argv;   /* EXEC: NULL-terminated */
	int64_t timeout_ms;        /* EXEC: the exec's own timeout */
	size_t out_cap;            /* EXEC: stdout bytes the run looks at */
	const char *path;          /* READ, WRITE, STAT */
	size_t cap;                /* READ: the largest file to return whole */
	const void *data;          /* WRITE */
	size_t len;                /* WRITE */
	int64_t until_ms;          /* WAIT_UNTIL */
	const char *tool;          /* CALL: the tool's name */
	const cJSON *arguments;    /* CALL: checked against the declared parameters */
	mafh_tool_fn fn;           /* CALL: the registered callback (may be NULL) */
	void *ud;                  /* CALL: its user data */
};

/* The result of an op; fill with mafh_op_result_init(&res, op.kind) first. */
struct mafh_op_result {
	size_t size;               /* sizeof(struct mafh_op_result) */
	enum mafh_op_kind kind;    /* must match the op */
	int error;                 /* 0, or a negative MAFH_E* code: the op itself failed */
	struct mafh_error detail;  /* with error: a sentence (may be empty) */
	struct mafh_exec_result exec;   /* EXEC (borrowed: the caller clears it afterwards) */
	struct mafh_read_result read;   /* READ (borrowed: the caller clears it afterwards) */
	struct mafh_stat stat;          /* STAT */
	/* CALL: MAFH_TOOL_VALUE with value (ownership passes to the run, even on error), or
	 * MAFH_TOOL_REFUSED with refusal (borrowed), or a negative code (tool failure). */
	int call_rc;
	cJSON *value;
	const char *refusal;
};
void mafh_op_result_init(struct mafh_op_result *res, enum mafh_op_kind kind);

/* Hands out the next op. now_ms is the caller's monotonic clock in milliseconds (the same
 * clock for every call). MAFH_EBUSY if an op is outstanding. After DONE, keeps returning
 * DONE. */
int mafh_run_next_op(struct mafh_run *run, int64_t now_ms, struct mafh_op *op);
/* Takes the result of the outstanding op. MAFH_EINVAL if none is outstanding or the kind
 * differs. A failed op is not an error of this call: the run decides (retry, refuse, end in
 * MAFH_RUN_ERROR). */
int mafh_run_op_result(struct mafh_run *run, int64_t now_ms, const struct mafh_op_result *res);

/* Added after 0.1.0: what the outstanding WAIT_UNTIL waits for. When the run's caps include
 * MAFH_CAP_WAIT_CHANGE (files transport), a WAIT_UNTIL while serving waits for the next
 * request file or the exit marker: sets *dir to R/host_tools and *names to
 * {"host_tool_calls/NNNN.request.json", "program_exit_code", NULL} (borrowed until the op's
 * result, in the form ops.wait_change takes) and returns 1. A driver that can should give
 * the result as soon as one of them may have appeared (the blocking driver calls
 * mafh_backend_wait_change): the run then looks at once, whatever until_ms said. Returns 0
 * and sets both to NULL for a plain sleep (a WAIT_UNTIL that must last until until_ms) or
 * when no WAIT_UNTIL is outstanding. (struct mafh_op does not grow for this: it has no size
 * field and is filled in the caller's memory.) */
int mafh_run_wait_target(const struct mafh_run *run, const char **dir,
			 const char *const **names);

/* Added after 0.1.0: for an outstanding WRITE of a response, the path of the request file
 * it answers, when the run read that file whole (a READ op) and it decoded as a request.
 * Nobody reads a request once it is answered, so a driver may give the path as donor to
 * mafh_backend_write_file_reusing (the blocking driver does), which can then write the
 * response without making a new file; the request file is gone afterwards. NULL for any
 * other op, or when the request came some other way or did not decode (its writer may not
 * be done with the file). Borrowed until the op's result. */
const char *mafh_run_write_donor(const struct mafh_run *run);

/* The run's result so far (status MAFH_RUN_RUNNING until DONE). Borrowed from the run. */
const struct mafh_run_result *mafh_run_result(const struct mafh_run *run);

/* ---- the blocking driver ----------------------------------------------------------------- */

/* A clock for the driver: now_ms monotonic milliseconds, sleep_until_ms sleeps until that
 * time (or returns early if it wants). NULL functions mean CLOCK_MONOTONIC and nanosleep.
 * Over a backend with MAFH_CAP_WAIT_CHANGE, a WAIT_UNTIL with a wait target
 * (mafh_run_wait_target) is spent in the backend's wait_change instead, in slices of at
 * most 50 ms (so mafh_run_stop is noticed); after a slice that saw nothing, sleep_until_ms
 * (when given) is called with the slice's end, so a clock of the caller's own sees the time
 * pass. */
struct mafh_clock {
	int64_t (*now_ms)(void *ud);
	void (*sleep_until_ms)(int64_t until_ms, void *ud);
	void *ud;
};

/* Drives run to DONE over backend (borrowed), running CALL ops through the registered
 * callbacks. clock may be NULL. Returns 0 when the run is over (whatever its status: see
 * mafh_run_result), or a negative code if the driving itself failed. */
int mafh_run_drive(struct mafh_run *run, struct mafh_backend *backend,
		   const struct mafh_clock *clock, struct mafh_error *err);
/* Performs at most one op of a run made by mafh_run_new, over its backend. Returns 1 while
 * the run goes on, 0 once it is over, or a negative code. */
int mafh_run_step(struct mafh_run *run, struct mafh_error *err);
/* mafh_run_drive over the run's own backend with the default clock. MAFH_EINVAL for a
 * sans-I/O run. */
int mafh_run_wait(struct mafh_run *run, struct mafh_error *err);

#ifdef __cplusplus
}
#endif

#endif
