/* The sans-I/O core's private pieces: the run itself (run.c makes and frees it), its state
 * machine and the pure functions the machine calls. The machine is split by job:
 *   core.c             the table (every state, its op, every transition), the choices of
 *                      the states that hand out no op, and the machine that applies them
 *   core_launch.c      the program and the shim written, `maf-launch run`
 *   core_serve.c       requests found and taken (looks, the exit marker, `wait` and
 *                      `relay` events, pauses), calls handed out, answers written
 *   core_stream.c      `maf-launch serve` on a stream
 *   core_end.c         the one way a run ends, and the ending's ops
 * The pure functions, each in a file of its own and unit-tested alone
 * (tests/unit/test_core_parts.c):
 *   pacing.c           when to look for the next request (files transport)
 *   launcher_argv.c    the argv of `maf-launch run`, `wait`, `relay`, `serve`, `stop`,
 *                      `reclaim`
 *   launcher_output.c  what the launcher prints: the launch line, `wait` events, and
 *                      their framing on a stream
 *   answer.c           a request's bytes judged, a tool's answer encoded
 * None of them performs I/O, allocates beyond what it returns, or keeps state of its own. */
#ifndef MAFHOST_CORE_H
#define MAFHOST_CORE_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "internal.h"

/* ---- pacing.c ----------------------------------------------------------------------------- */

/* The upstream shim polls for its response every 0.05 s: a request rarely follows an answer
 * sooner, so the first look after an answer is paced on that gap (then learnt). */
#define MAFH__SHIM_POLL_MS 50

/* What the files transport has learnt about the program and the backend. */
struct mafh__pacing {
	int64_t poll_min_ms, poll_max_ms;
	double lat_ms;           /* a file operation's latency, smoothed */
	double gap_ms;           /* answer to next request, learnt */
	int misses;              /* looks that found nothing since the last activity */
	int64_t last_answer_ms;  /* 0: no answer yet */
	int64_t last_activity_ms;
};

void mafh__pacing_init(struct mafh__pacing *p, int64_t poll_min_ms, int64_t poll_max_ms);
/* A file operation took took_ms. */
void mafh__pacing_observe(struct mafh__pacing *p, int64_t took_ms);
/* The program started at now: when to look first. */
int64_t mafh__pacing_launched(struct mafh__pacing *p, int64_t now);
/* A call was answered at now: when to look for the next request. A look that finds nothing
 * costs a whole backend op, so on a slow backend the first look waits for the gap the
 * program usually takes, less the time the op takes to reach the guest. */
int64_t mafh__pacing_answered(struct mafh__pacing *p, int64_t now);
/* A request was found by a look. */
void mafh__pacing_found(struct mafh__pacing *p);
/* A request was stepped over (abandoned): look again at once. */
void mafh__pacing_stepped(struct mafh__pacing *p);
/* A look found nothing: 1 if the exit marker is to be looked at now (only on every second
 * empty look, every third before the first answer: each probe is an op). */
int mafh__pacing_missed(struct mafh__pacing *p);
/* When to look again after a look (and maybe a probe) found nothing: an exponential back-off
 * in proportion to the quiet, paced on the op latency so that idle polling takes a small
 * share of the backend's time. */
int64_t mafh__pacing_next_after_miss(struct mafh__pacing *p, int64_t now);

/* ---- launcher_argv.c ---------------------------------------------------------------------- */

#define MAFH__ARGV_MAX 128
#define MAFH__PROG_ARGV_MAX 64     /* the program's own argv, of those */
#define MAFH__WRITABLE_MAX 16      /* --writable paths, as the launcher takes at most */
#define MAFH__ENDING_MIN_MS 6000   /* mafh_run_options.ending_ms's range */
#define MAFH__ENDING_MAX_MS 3600000

/* An argv and the numbers it borrows. */
struct mafh__argv {
	const char *v[MAFH__ARGV_MAX + 1];
	size_t n;
	char num[8][32];
	size_t n_num;
};

/* What `maf-launch run` is given. Strings borrowed; NULL options are left to the launcher. */
struct mafh__launch_args {
	const char *launcher, *run_dir;
	int64_t timeout_ms;            /* the time left to the run */
	uint64_t max_output_bytes;
	const char *egress, *seccomp, *landlock;
	const char *user;              /* "UID[:GID]" or NULL */
	const char *max_procs, *max_memory; /* decimal, or NULL: the launcher's default */
	char *const *writable;         /* NULL-terminated, may be NULL */
	char *const *prog_argv;        /* NULL-terminated */
	int files_stdin;               /* --files-stdin: the files come on the exec's stdin */
};

/* Each fills a with `LAUNCHER SUB --run-dir R ...`; the strings stay borrowed. Returns 0, or
 * -1 when the argv would not fit (the argv is then cut and must not be used). */
int mafh__argv_launch(struct mafh__argv *a, const struct mafh__launch_args *la);
/* supervisor_pid 0: none given (no "lost" event). */
int mafh__argv_wait(struct mafh__argv *a, const char *launcher, const char *run_dir,
		    long next_id, int64_t slice_ms, uint64_t max_bytes, int64_t supervisor_pid);
/* `maf-launch serve --ack`: requests up to max_bytes, answers up to max_answer_bytes, each
 * answer's acceptance said at once. */
int mafh__argv_serve(struct mafh__argv *a, const char *launcher, const char *run_dir,
		     uint64_t max_bytes, uint64_t max_answer_bytes, int64_t supervisor_pid);
/* `maf-launch relay`: the wait above; with answer_id > 0, after writing its stdin as the
 * response to answer_id (`--answer ID --value-stdin`: the answer's bytes are the exec's
 * input, never an argument). answer_id 0 carries none. */
int mafh__argv_relay(struct mafh__argv *a, const char *launcher, const char *run_dir,
		     long next_id, int64_t slice_ms, uint64_t max_bytes, int64_t supervisor_pid,
		     long answer_id);
/* wait_ms: how long stop waits for the supervisor before it kills (--timeout); output_max
 * < 0: no --output; reclaim: --reclaim, with --keep keep (NULL: none). */
int mafh__argv_stop(struct mafh__argv *a, const char *launcher, const char *run_dir,
		    int64_t supervisor_pid, int64_t wait_ms, long long output_max, int reclaim,
		    const char *keep);
/* keep: NULL, or an entry of R the reclaim leaves (--keep). */
int mafh__argv_reclaim(struct mafh__argv *a, const char *launcher, const char *run_dir,
		       const char *keep);

/* ---- launcher_output.c -------------------------------------------------------------------- */

/* The first line of guest- or launcher-written text, printable ASCII only, for a sentence. */
void mafh__first_line(char *dst, size_t size, const char *src, size_t len);

/* The stdout of `maf-launch run`: the launch line (the first line starting with '{') and
 * whether the launcher itself printed the session line. Returns 0 with *info and *session,
 * or -1 with a static sentence in *why. */
int mafh__launch_output_parse(const char *out, size_t len, struct mafp_launch_info *info,
			      int *session, const char **why);

enum mafh__wait_kind {
	MAFH__WAIT_BAD,          /* no event line: a protocol error */
	MAFH__WAIT_TIMEOUT,      /* nothing came within the slice */
	MAFH__WAIT_EXIT,         /* the exit marker: body is its bytes */
	MAFH__WAIT_REQUEST,      /* request id: body is its bytes */
	MAFH__WAIT_LOST,         /* the supervisor is gone without the exit marker */
	MAFH__WAIT_ACCEPTED,     /* serve --ack: the answer to id is in place; no body */
	MAFH__WAIT_OTHER,        /* an event of another name */
};

/* A `maf-launch wait` event: a JSON header line, then the file's bytes. */
struct mafh__wait_event {
	enum mafh__wait_kind kind;
	long id;                 /* REQUEST, ACCEPTED: the id, -1 if not a call number */
	int unreadable;          /* "error": not a regular file that could be read */
	int oversized;           /* "oversized": larger than --max-bytes */
	double size;             /* the size the header gives, -1 if none */
	const char *body;        /* borrowed from the output */
	size_t body_len;
};

/* Parses out[0..len): *ev borrows from out. Returns 0, or -1 for MAFH__WAIT_BAD. */
int mafh__wait_event_parse(const char *out, size_t len, struct mafh__wait_event *ev);
/* 1 when the event carries the whole file it names: readable, not oversized, and the size it
 * gives is the body's length. */
int mafh__wait_event_whole(const struct mafh__wait_event *ev);
/* The first event of `maf-launch serve` in buf[0..len), a stream of them: its length (the
 * head line and the bytes it says follow; an accepted line has none) with *ev, as
 * mafh__wait_event_parse gives it for those bytes, 0 while it is not all there, or -1 when
 * the bytes cannot be an event (no head line within 256 bytes, a head that does not parse,
 * a size that is not a whole number from 0 to max_body). *ev is meaningful only with a
 * length. Which events may follow which is the caller's to judge. */
long mafh__stream_event_len(const char *buf, size_t len, uint64_t max_body,
			    struct mafh__wait_event *ev);

/* ---- answer.c ----------------------------------------------------------------------------- */

#define MAFH__SENTENCE_MAX 2048

enum mafh__verdict {
	MAFH__REQ_UNREAD,        /* did not decode: maybe torn (sentence says why) */
	MAFH__REQ_STEP_OVER,     /* {"abandoned": true}: upstream steps over it unanswered */
	MAFH__REQ_REFUSE,        /* refused before any tool runs: sentence */
	MAFH__REQ_CALL,          /* a call for tool, args (owned) */
};

/* A request judged. */
struct mafh__judged {
	enum mafh__verdict verdict;
	char tool[MAFP_TOOL_NAME_MAX + 1];  /* "" when the request named none that decoded */
	cJSON *args;                        /* CALL: owned by the caller (cJSON_Delete) */
	const struct mafh__tool *t;         /* CALL: the registered tool */
	char sentence[256];
};

/* Judges a request's bytes for id expect_id: decodes, checks the budget (answered so far
 * against max_calls), the tool and its arguments. */
void mafh__request_judge(const struct mafh_registry *reg, const struct mafh_limits *lim,
			 int64_t answered, const char *buf, size_t len, long expect_id,
			 struct mafh__judged *j);

/* Makes s (NUL-terminated) fit for a refusal in place: bytes that do not form valid UTF-8,
 * and control characters, become '?'. */
void mafh__sentence_clean(char *s);

/* The response text for a tool's result (a CALL op's result): {"value": V} when the tool
 * gave one JSON value within the caps (max_response_bytes, and the run's total so far
 * against max_total_response_bytes), else {"refusal": S} with S saying why. Returns the
 * malloc'd text (NULL: out of memory) and sets *refused; sentence receives the refusal
 * (empty for a value). */
char *mafh__answer_encode(const struct mafh_op_result *res, const char *tool,
			  const struct mafh_limits *lim, uint64_t total_so_far, int *refused,
			  char *sentence, size_t sentence_size);

/* ---- the run (run.c, core.c) -------------------------------------------------------------- */

/* What the run is doing: each state but BEGIN, SERVE, ENDING and DONE is one outstanding op
 * of one kind (core.c's table says which, what makes and takes it, and where each outcome
 * leads). */
enum mafh__state {
	/* Made, nothing done yet: chooses the first op. No transition leads back here, so a 0
	 * in the table is "no transition". */
	ST_BEGIN,
	ST_WRITE_PROGRAM,   /* WRITE R/host_tools/program.py */
	ST_WRITE_SHIM,      /* WRITE R/host_tools/maf_host_tools.py */
	ST_LAUNCH,          /* EXEC maf-launch run */
	ST_SERVE,           /* choosing the next serving op (no op outstanding) */
	ST_LOOK,            /* READ the next request file */
	ST_PROBE_EXIT,      /* READ program_exit_code */
	ST_WAIT_EXEC,       /* EXEC maf-launch wait */
	ST_PAUSE,           /* WAIT_UNTIL the next look */
	ST_CALL,            /* CALL the tool */
	ST_ANSWER,          /* WRITE the response file */
	ST_ENDING,          /* choosing the next ending op (no op outstanding) */
	ST_OUTPUT,          /* READ program_output.txt */
	ST_STOP,            /* EXEC maf-launch stop */
	ST_RECORD,          /* READ program_exit.json */
	ST_RECLAIM,         /* EXEC maf-launch reclaim */
	ST_STREAM_OPEN,     /* STREAM_OPEN maf-launch serve */
	ST_STREAM_SEND,     /* STREAM_WRITE a frame: {"next":N}, or an answer */
	ST_STREAM_RECV,     /* STREAM_READ until the frame's event is in */
	ST_STREAM_CLOSE,    /* STREAM_CLOSE */
	ST_DONE,
	ST_COUNT
};

/* What a step came to: the table turns the state and this into the next state. A step whose
 * outcome takes a serving state to ST_ENDING has called mafh__end_run first (the status and
 * the cause are chosen there, not by the table). */
enum mafh__outcome {
	OC_PENDING,         /* an op is handed out: the state holds until its result */
	/* What an op came to. */
	OC_OK,              /* done as asked */
	OC_FAILED,          /* failed: serving, the run ends in error; ending, it is noted */
	OC_ABSENT,          /* nothing there (yet): no request, marker, event or record */
	OC_REQUEST,         /* a request came in: refused, stepped over or due as a call */
	OC_EXIT,            /* the exit marker: the program ended */
	OC_LOST,            /* the supervisor is gone without its marker: the run is lost */
	OC_FALLBACK,        /* the launcher lacks what the transport needs: a lesser way on */
	OC_BROKEN,          /* the stream broke (or, closing, had broken): relay or files on */
	OC_CUT,             /* the deadline passed or the host stopped the run */
	/* What a choosing state found due. */
	OC_PROGRAM_DUE,     /* BEGIN: the program to write */
	OC_LAUNCH_DUE,      /* BEGIN: no program: the launch */
	OC_SHIM_DUE,        /* the program written: the shim to write */
	OC_NOT_YET,         /* SERVE: nothing until the next look */
	OC_LOOK_DUE,        /* the request file to read */
	OC_PROBE_DUE,       /* the exit marker to read */
	OC_WAIT_DUE,        /* `maf-launch wait` or `relay` to run */
	OC_LIVENESS_DUE,    /* quiet over files: `wait` to check the supervisor */
	OC_CALL_DUE,        /* a call to hand out */
	OC_ANSWER_DUE,      /* an answer to write */
	OC_RELAY_DUE,       /* an answer to carry on the stdin of `relay` */
	OC_OPEN_DUE,        /* the stream to open */
	OC_SEND_DUE,        /* a frame to send on the stream: the next request, or an answer */
	OC_EVENT_DUE,       /* a frame sent: its event to read */
	OC_CLOSE_DUE,       /* ENDING: the stream to close */
	OC_OUTPUT_DUE,      /* the output to read */
	OC_STOP_DUE,        /* `maf-launch stop` to run */
	OC_RECORD_DUE,      /* the exit record to read */
	OC_RECLAIM_DUE,     /* `maf-launch reclaim` to run */
	OC_OVER,            /* nothing left: the run is done */
	OC_COUNT
};

/* A recent answer, kept so that the exit record's undelivered ids can be matched. */
struct mafh__answered {
	long id;
	int refused;
};
#define MAFH__RECENT 128

#define MAFH__ERRORS_MAX 4096

struct mafh_run {
	struct mafh_registry *reg;
	struct mafh_backend *backend;   /* borrowed; NULL for a sans-I/O run */
	struct mafh_limits limits;
	unsigned caps;

	/* Options, copied. */
	char *run_dir;
	char *launcher;
	char *program;
	size_t program_len;
	char **prog_argv;               /* NULL-terminated */
	char *egress, *seccomp, *landlock, *user;
	char max_procs[24], max_memory[24];  /* decimal, "" for the launcher's default */
	char **writable;                /* NULL-terminated, or NULL */
	int64_t liveness_ms;
	int64_t timeout_ms;
	enum mafh_transport transport;  /* resolved: FILES, WAIT or RELAY */
	int keep_run_dir;
	char *reclaim_keep;             /* NULL: R goes whole */
	char *shim;                     /* the caller's shim (shim_len bytes), or NULL */
	size_t shim_len;
	int write_shim;
	int64_t wait_slice_ms, exec_timeout_ms;
	int64_t ending_ms;              /* the ending's budget (mafh_run_options.ending_ms) */
	mafh_event_fn on_event;
	void *event_ud;

	/* The state, and the op outstanding with what it borrows. */
	enum mafh__state state;
	int pending;
	struct mafh_op op;
	struct mafh__argv argv;
	char path[MAFP_RUN_DIR_MAX + 128];
	char *wbuf;                     /* WRITE data, owned */
	size_t wlen;
	int relay_carried;              /* the WAIT_EXEC out carries wbuf on its stdin */
	int relay_no_stdin;             /* the launcher's relay refused --value-stdin */
	/* stream: the driver holds the stream; the core the bytes on their way. */
	int stream_open;                /* a stream is open */
	int stream_sent;                /* a frame is out and its event not in yet */
	int stream_carried;             /* the frame out carries the answer in wbuf, and serve
					 * has not accepted it yet */
	int stream_accepted;            /* serve accepted the frame's answer; its event is
					 * still to come */
	char *sframe;                   /* the frame to send, owned */
	size_t sframe_len;
	char *sbuf;                     /* bytes read and not taken yet, owned */
	size_t slen, scap;
	/* The driver (driver.c): the op under way as a task over drv_backend, the backend's
	 * state between ops (the stream, watches), a CALL handed out without its result yet,
	 * and whether a stop was seen while an op was under way. */
	struct mafh_backend *drv_backend;
	struct mafh_task *drv_task;
	void *drv_state;
	enum mafh_op_kind drv_kind;
	int drv_call_out;
	int drv_stop_seen;
	/* The one descriptor mafh_run_advance hands out: an epoll set holding what the op
	 * under way waits on (drv_watched), or -1 before the first wait (or where none can be
	 * made: the op's own descriptors are handed out then). */
	int drv_epfd;
	struct mafh_pollfd drv_watched[MAFH_WANT_FDS];
	int drv_nwatched;
	int64_t op_started_ms;

	/* Time. */
	int started;
	int64_t t_start, deadline, now;
	int64_t end_by;                 /* the ending's ops are over by then (ending_ms) */
	struct mafh__pacing pacing;
	int64_t next_look_ms;           /* files: no look before this */
	int64_t next_liveness_ms;       /* files: check the supervisor then, if still quiet */
	int liveness_probe;             /* the WAIT_EXEC out is a liveness check */
	int wait_files;                 /* the next pause waits for files, not just time */
	char wait_dir[MAFP_RUN_DIR_MAX + 32];
	char wait_request[48];          /* host_tool_calls/NNNN.request.json */
	const char *wait_names[3];

	/* Serving request next_id. */
	long next_id;
	long torn_retried_id;
	int probe_exit_next;
	int wait_used;                  /* a `maf-launch wait` has answered at least once */
	char replaces[MAFP_RUN_DIR_MAX + 128];  /* the request file read whole, for ANSWER */
	long replaces_id;               /* 0: none */
	int64_t request_ms;             /* when the request's bytes arrived */
	char call_tool[MAFP_TOOL_NAME_MAX + 1];
	cJSON *call_args;               /* owned while a CALL is due */
	/* Pass-through: a raw CALL is due with the request's bytes (owned, NUL-terminated;
	 * NULL with OVERSIZED or UNREADABLE) and its flags. */
	int raw_due;
	char *raw_request;
	size_t raw_request_len;
	unsigned raw_flags;
	uint64_t raw_size;
	/* MAFH_RAW_HOLD: no request is read any more; hold_polling once even the last id
	 * (where a holding run waits) held a request: the exit marker is then polled. */
	int holding, hold_polling;
	char *call_text;                /* the CALL's arguments as text, owned */
	struct mafh_call call;
	const struct mafh__tool *call_t;
	struct mafh_reply reply;        /* mafh_run_call_tool's answer, until the CALL's result */
	int answer_refused;             /* the response in wbuf is a refusal */
	char answer_sentence[MAFH__SENTENCE_MAX];
	char *answer_note;              /* the tool's note, owned, for the event */
	size_t answer_note_len;
	int64_t answered;               /* responses written: the budget counts these */
	uint64_t total_response_bytes;
	struct mafh__answered recent[MAFH__RECENT];

	/* Ending. */
	int launched;
	int ending;                     /* the end has begun (status chosen or to be settled) */
	int stop_silent;                /* stop exited 0 and printed nothing */
	/* What the stop was asked to carry: the output (--output), the reclaim (--reclaim);
	 * stop_plain once a launcher refused them (usage): asked again without. */
	int stop_output, stop_reclaim, stop_plain;
	/* The program (and the shim) on the launch's stdin (`run --files-stdin`), its bytes in
	 * launch_in; files_plain once a launcher refused it (usage): written, then launched. */
	int files_on_stdin, files_plain;
	char *launch_in;
	size_t launch_in_len;
	int cut;                        /* cut short: the output is read before the stop */
	int output_read, stop_done, record_looked, reclaimed;
	atomic_int stop_requested;

	struct mafh_run_result result;
	char *output;
	char errors[MAFH__ERRORS_MAX];
	size_t errors_len;
	int errors_dropped;
};

/* The largest program the launch carries on its stdin (the launcher takes 64 MiB in all);
 * a larger one is written first. */
#define MAFH__FILES_STDIN_MAX (60u << 20)

/* What the run looks at of the stdout of `maf-launch run` and `reclaim`. */
#define MAFH__LAUNCH_OUT_CAP 4096

/* ---- the machine (core.c) ----------------------------------------------------------------- */

/* Sets up a new run (calloc'd) in ST_BEGIN. */
void mafh__core_begin(struct mafh_run *run);
/* The table: where outcome o leads from state s; ST_BEGIN when it leads nowhere. */
enum mafh__state mafh__core_next(enum mafh__state s, enum mafh__outcome o);
/* Prints the table to f as a Graphviz graph (docs/core-states.dot is this output): the
 * states, and an edge for each transition labelled with its outcome and the op the next
 * state hands out. 0, or -1 when writing to f failed. */
int mafh__core_dot(FILE *f);

/* Reports ev to the run's on_event (size and time filled in). */
void mafh__event(struct mafh_run *run, struct mafh_event *ev);
/* Adds msg to the run's list of errors and reports it as an event. */
void mafh__log_error(struct mafh_run *run, int code, const char *msg);
/* A failure that does not end the run by itself (or comes after its end began): kept in the
 * list, and as the run's error if it has none yet. */
void mafh__note(struct mafh_run *run, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Ops made for the steps below: the path is run->path, the argv run->argv. Each counts the
 * op in the result. */
void mafh__op_exec(struct mafh_run *run, struct mafh_op *op, int64_t timeout_ms,
		   size_t out_cap);
void mafh__op_read(struct mafh_run *run, struct mafh_op *op, size_t cap);
void mafh__op_write(struct mafh_run *run, struct mafh_op *op, const void *data, size_t len);
/* run->path = R/host_tools/name. 0, or -1 when it does not fit. */
int mafh__host_tools_path(struct mafh_run *run, const char *name);
/* A READ of R/host_tools/name, of at most cap bytes. */
void mafh__read_host_tools_file(struct mafh_run *run, struct mafh_op *op, const char *name,
				size_t cap);
int64_t mafh__clamp64(int64_t v, int64_t lo, int64_t hi);
/* A malloc'd copy of src[0..len) (one byte at least, so that 0 is not NULL), or NULL. */
void *mafh__memdup(const void *src, size_t len);
/* Files transport over a backend (or driver) that can wait for a change. Not fixed at
 * creation: WAIT falls back to FILES when the launcher has no `wait`. */
int mafh__notifying(const struct mafh_run *run);

/* ---- the steps (core_*.c), as the table calls them ----------------------------------------- */

/* An emit fills op and returns OC_PENDING, or returns the outcome that moves the run on
 * without an op. A take takes the op's result and returns its outcome. Neither sets the
 * state: the table does. */
typedef enum mafh__outcome mafh__emit_fn(struct mafh_run *run, struct mafh_op *op);
typedef enum mafh__outcome mafh__take_fn(struct mafh_run *run, const struct mafh_op_result *res);

/* core_launch.c */
mafh__emit_fn mafh__emit_write_program, mafh__emit_write_shim, mafh__emit_launch;
mafh__take_fn mafh__take_write_program, mafh__take_write_shim, mafh__take_launch;
/* core_serve.c */
mafh__emit_fn mafh__emit_look, mafh__emit_probe_exit, mafh__emit_wait_exec, mafh__emit_pause,
	mafh__emit_call, mafh__emit_answer;
mafh__take_fn mafh__take_look, mafh__take_probe_exit, mafh__take_wait_exec, mafh__take_pause,
	mafh__take_call, mafh__take_answer;
/* core_stream.c */
mafh__emit_fn mafh__emit_stream_open, mafh__emit_stream_send, mafh__emit_stream_recv,
	mafh__emit_stream_close;
mafh__take_fn mafh__take_stream_open, mafh__take_stream_send, mafh__take_stream_recv,
	mafh__take_stream_close;
/* core_end.c */
mafh__emit_fn mafh__emit_output, mafh__emit_stop, mafh__emit_record, mafh__emit_reclaim;
mafh__take_fn mafh__take_output, mafh__take_stop, mafh__take_record, mafh__take_reclaim;

/* ---- what the steps share ------------------------------------------------------------------- */

/* core_serve.c: the next pause waits for the next request or the exit marker. */
void mafh__wait_for_files(struct mafh_run *run);
/* core_serve.c: an event of `maf-launch wait`, `relay` or `serve`, taken. */
enum mafh__outcome mafh__take_event(struct mafh_run *run, const struct mafh__wait_event *ev);
/* core_serve.c: whether the answer due goes on the stdin of `maf-launch relay`. */
int mafh__relay_carries(const struct mafh_run *run);
/* core_serve.c: what an exec waiting `slice` ms may take past it (exec_timeout_ms, past the
 * deadline by 5 s at most). */
int64_t mafh__exec_overhead(const struct mafh_run *run, int64_t slice);
/* core_serve.c: the answer to next_id is in place (at written_ms): counted, reported, and the
 * next id is due. */
void mafh__answer_written(struct mafh_run *run, int64_t written_ms);
/* core_serve.c: frees the arguments, their text and the note of the call last taken. */
void mafh__drop_call_texts(struct mafh_run *run);

/* core_end.c: the one way a run ends. status MAFH_RUN_RUNNING means the program ended by
 * itself (its exit marker appeared): the status is settled from the record at the end. Any
 * other status cuts the run short, with code and the sentence as its cause. Once the end
 * has begun, a later failure is only noted. The step that calls it returns the outcome that
 * takes the run to ST_ENDING. */
void mafh__end_run(struct mafh_run *run, enum mafh_run_status status, int code,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* core_end.c: entering ST_DONE: the status settled, the result complete, RUN_ENDED. */
void mafh__finish(struct mafh_run *run);

#endif
