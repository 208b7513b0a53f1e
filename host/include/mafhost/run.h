/* libmafhost's runs: the transports, a run's options, events and result, and making,
 * stopping and freeing one. A part of <mafhost.h>, which includes it: a program includes
 * <mafhost.h>, never this file. */
#ifndef MAFHOST_RUN_H
#define MAFHOST_RUN_H

#ifndef MAFHOST_H
#error "include <mafhost.h>, not <mafhost/run.h>"
#endif

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
	/* `maf-launch serve --ack` on a stream that stays open (needs MAFH_CAP_STREAM): each
	 * answer and each request is a message on it, no backend operation a call, and serve
	 * accepts each answer the moment it is in place. A stream that breaks (its command
	 * killed, the connection dropped, what it printed not serve's, or a launcher without
	 * --ack) is closed and the run goes on with RELAY (or FILES), no call lost or made
	 * twice: an answer sent and not accepted is carried again. */
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
	/* a call answered with a value: call_id, tool, duration. SERVED and REFUSED are
	 * reported the moment the transport has accepted the whole answer, which is in place
	 * in the guest from then on: files and wait, when the WRITE op of the response file
	 * returned; relay, when the relay exec that carried the answer on its stdin returned 0
	 * (an answer written first: when that WRITE op returned); stream, when serve printed
	 * the answer's accepted line, before any later event (the answer to the last call id,
	 * which has no request after it to wait for, goes by a WRITE op). Not that the program
	 * took it: one that ended first is reported UNDELIVERED once the run is over */
	MAFH_EVENT_CALL_SERVED,
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
	 * is over within ending_ms (MAFH_ENDING_MS by default) of its end, or of this deadline
	 * if that comes first: the ending (stop, the record, the output, the reclaim) shares
	 * that budget. */
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
	 * 30000; bounded by the deadline for run, and for stop and reclaim by their share of
	 * the ending's budget, ending_ms); also what a stream's opening may take, and a wait's or
	 * relay's exec past its slice (past the deadline by 5 s at most). */
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
	/* With write_shim: the shim's bytes (shim_len of them), written as maf_host_tools.py in
	 * place of the one the registry makes (a pass-through registry's caller has its own
	 * guest API). NULL: the registry's. Copied. */
	const char *shim;
	size_t shim_len;
	/* The ending's budget (default MAFH_ENDING_MS, 6000 to 3600000): the run is over this
	 * long after its end, or after its deadline if that comes first. Stop, the record, the
	 * output and the reclaim share it in proportion (stop all but 4/15 of it). Raise it with
	 * exec_timeout_ms where an engine's execs are slow under load: a stop cut at its share
	 * loses the output. */
	int64_t ending_ms;
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

#endif
