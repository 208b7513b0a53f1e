/* Driving a run: the sans-I/O core's ops and their results, driving from an event loop
 * (mafh_run_advance, and one op over a backend as a task), and the blocking driver. A part
 * of <mafhost.h>, which includes it: a program includes <mafhost.h>, never this file. */
#ifndef MAFHOST_DRIVE_H
#define MAFHOST_DRIVE_H

#ifndef MAFHOST_H
#error "include <mafhost.h>, not <mafhost/drive.h>"
#endif

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
	int64_t timeout_ms;        /* the exec's own timeout; STREAM_WRITE: the write's */
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

#endif
