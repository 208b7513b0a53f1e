/* The sans-I/O core: a run as a state machine that hands out the operations it needs and
 * takes their results back, performing no I/O itself (DESIGN.md "A sans-I/O core").
 *
 * Phases, in order: write program.py and the shim, exec `maf-launch run`, serve (files:
 * read-if-present polling, or with MAFH_CAP_WAIT_CHANGE a look whenever the driver's wait
 * says a file may have appeared; wait: `maf-launch wait` long-polls), then at the end read the
 * exit record and the output, and exec `maf-launch reclaim`. At the deadline, on
 * mafh_run_stop or on a run error while the program runs, the output is read first (it is
 * the only witness of a run that is cut short), then `maf-launch stop` ends the tree.
 *
 * Tool calls are handed to the caller as MAFH_OP_CALL ops rather than called here: the
 * callback is the caller's code, and an async host runs its tools its own way. The blocking
 * driver (driver.c) runs the registered callback. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PATH_BUF (MAFP_RUN_DIR_MAX + 128)
#define ARGV_MAX 64
#define LAUNCH_OUT_CAP 4096
#define STOP_OUT_CAP (MAFP_EXIT_RECORD_MAX + 1024)
#define WAIT_HEAD_MAX 256
#define REFUSAL_MAX 2048
/* A request that does not decode is read once more after this grace: a writer that does not
 * publish through a rename (the program may write request files itself) can be seen torn. */
#define TORN_GRACE_MS 20
/* The upstream shim polls for its response every 0.05 s: a request rarely follows an
 * answer sooner, so the first look after an answer is paced on that (then learnt). */
#define SHIM_POLL_MS 50
#define STOP_TIMEOUT_S "10"

enum phase {
	PH_WRITE_PROGRAM,
	PH_WRITE_SHIM,
	PH_LAUNCH,
	PH_SERVE,
	PH_END_OUTPUT,  /* cut short: read the output before stopping */
	PH_STOP,
	PH_EXIT_RECORD,
	PH_OUTPUT,
	PH_RECLAIM,
	PH_DONE,
};

enum pending {
	P_NONE,
	P_WRITE_PROGRAM,
	P_WRITE_SHIM,
	P_LAUNCH,
	P_READ_REQUEST,
	P_PROBE_EXIT,
	P_WAIT_EXEC,
	P_CALL,
	P_WRITE_RESPONSE,
	P_SLEEP,
	P_READ_OUTPUT,
	P_STOP,
	P_READ_RECORD,
	P_RECLAIM,
};

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
	char *egress, *seccomp, *landlock;
	int64_t timeout_ms;
	enum mafh_transport transport;
	int keep_run_dir;
	int write_shim;
	int64_t poll_min_ms, poll_max_ms, wait_slice_ms, exec_timeout_ms;

	/* The outstanding op and what it borrows from the run. */
	struct mafh_op op;
	struct mafh_call call;
	char *call_text;                /* the CALL's arguments as JSON text, owned */
	struct mafh_reply reply;        /* mafh_run_call_tool's answer, until the CALL's result */
	enum phase phase;
	enum pending pending;
	int64_t op_started_ms;
	const char *argv[ARGV_MAX + 1];
	char argv_store[8][64];
	char path[PATH_BUF];
	char *wbuf;                     /* WRITE data, owned */
	size_t wlen;
	/* The request file read whole for donor_id, which its response may replace
	 * (op.replaces); donor_id 0: none. */
	char donor[PATH_BUF];
	long donor_id;

	/* Time. */
	int started;
	int64_t t_start, deadline, now;
	double lat_est_ms;              /* observed file-op latency (EWMA) */
	double gap_est_ms;              /* answer-to-next-request gap, learnt */

	/* Serving. */
	long next_id;
	long torn_retried_id;
	int misses;                     /* request reads that found nothing since activity */
	int64_t next_poll_ms;
	int64_t last_answer_ms;
	int64_t last_activity_ms;       /* launch, or the last answer */
	int probe_exit_next;
	int have_call;
	char call_tool[MAFP_TOOL_NAME_MAX + 1];
	cJSON *call_args;               /* owned while have_call */
	mafh_tool_fn call_fn;
	void *call_ud;
	int response_is_refusal;
	uint64_t total_response_bytes;
	int wait_used;                  /* a wait exec has succeeded at least once */
	/* Files transport over MAFH_CAP_WAIT_CHANGE: a WAIT_UNTIL names the files it waits for
	 * and the driver ends it when one may have appeared, so there is no poll delay. */
	int wait_files;                 /* the next WAIT_UNTIL waits for files, not time */
	char wait_dir[PATH_BUF];
	char wait_request[48];          /* host_tool_calls/NNNN.request.json */
	const char *wait_names[3];

	/* Ending. */
	int launched;
	int ending;                     /* cut short: status already chosen */
	int exit_seen;
	int output_read;
	int stop_done;
	atomic_int stop_requested;

	struct mafh_run_result result;
	char *output;
};

/* ---- small helpers ------------------------------------------------------------------------ */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void set_run_error(struct mafh_run *run, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_run_error(struct mafh_run *run, int code, const char *fmt, ...)
{
	va_list ap;

	run->result.error.code = code;
	va_start(ap, fmt);
	vsnprintf(run->result.error.message, sizeof(run->result.error.message), fmt, ap);
	va_end(ap);
}

/* Notes a cleanup failure without hiding an earlier error. */
static void note_error(struct mafh_run *run, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note_error(struct mafh_run *run, int code, const char *fmt, ...)
{
	va_list ap;

	if (run->result.error.code)
		return;
	run->result.error.code = code;
	va_start(ap, fmt);
	vsnprintf(run->result.error.message, sizeof(run->result.error.message), fmt, ap);
	va_end(ap);
}

/* The first line of guest- or launcher-written text, printable ASCII only, for a sentence. */
static void first_line(char *dst, size_t size, const char *src, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len && src[i] != '\n' && n + 1 < size; i++)
		dst[n++] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[n] = '\0';
}

static int host_tools_path(struct mafh_run *run, const char *name)
{
	return mafp_host_tools_path(run->path, sizeof(run->path), run->run_dir, name);
}

static int call_path(struct mafh_run *run, long id, const char *suffix)
{
	char name[32];
	int n;

	if (mafp_call_file_name(name, sizeof(name), id, suffix) != 0)
		return -1;
	n = snprintf(run->path, sizeof(run->path), "%s/%s/%s/%s", run->run_dir,
		     MAFP_DIR_HOST_TOOLS, MAFP_DIR_CALLS, name);
	return (n < 0 || (size_t)n >= sizeof(run->path)) ? -1 : 0;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Files transport over a backend (or sans-I/O driver) that can wait for a change. Not fixed
 * at creation: a WAIT transport falls back to FILES when the launcher has no `wait`. */
static int notifying(const struct mafh_run *run)
{
	return run->transport == MAFH_TRANSPORT_FILES && (run->caps & MAFH_CAP_WAIT_CHANGE);
}

/* The next look waits for the next request or the exit marker to appear, for at most
 * poll_max_ms: the wait is a hint (a backend's notification can miss a directory the
 * program replaced), so looks keep coming at the idle pace of polling. */
static void wait_for_files(struct mafh_run *run)
{
	run->wait_files = 1;
	run->next_poll_ms = run->now + run->poll_max_ms;
}

/* ---- construction ------------------------------------------------------------------------- */

void mafh_run_options_init(struct mafh_run_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
	opts->timeout_ms = 60000;
	opts->transport = MAFH_TRANSPORT_AUTO;
	opts->write_shim = 1;
	opts->poll_min_ms = 2;
	opts->poll_max_ms = 200;
	opts->wait_slice_ms = 2000;
	opts->exec_timeout_ms = 30000;
}

static const char *const transport_names[] = {
	[MAFH_TRANSPORT_AUTO] = "auto",
	[MAFH_TRANSPORT_FILES] = "files",
	[MAFH_TRANSPORT_WAIT] = "wait",
	[MAFH_TRANSPORT_RELAY] = "relay",
	[MAFH_TRANSPORT_STREAM] = "stream",
};

const char *mafh_transport_name(enum mafh_transport t)
{
	return (unsigned)t < sizeof(transport_names) / sizeof(transport_names[0])
		       ? transport_names[t] : "unknown";
}

int mafh_transport_from_name(const char *name, enum mafh_transport *out)
{
	size_t i;

	for (i = 0; name && i < sizeof(transport_names) / sizeof(transport_names[0]); i++) {
		if (strcmp(name, transport_names[i]) == 0) {
			*out = (enum mafh_transport)i;
			return 0;
		}
	}
	return MAFH_EINVAL;
}

static const char *const status_names[] = {
	[MAFH_RUN_RUNNING] = "running",
	[MAFH_RUN_EXITED] = "exited",
	[MAFH_RUN_SIGNALED] = "signaled",
	[MAFH_RUN_TIMEOUT] = "timeout",
	[MAFH_RUN_STOPPED] = "stopped",
	[MAFH_RUN_LAUNCH_FAILED] = "launch_failed",
	[MAFH_RUN_ERROR] = "error",
};

const char *mafh_run_status_name(enum mafh_run_status s)
{
	return (unsigned)s < sizeof(status_names) / sizeof(status_names[0]) ? status_names[s]
									     : "unknown";
}

static const char *const op_names[] = {
	[MAFH_OP_EXEC] = "exec",
	[MAFH_OP_READ] = "read",
	[MAFH_OP_WRITE] = "write",
	[MAFH_OP_STAT] = "stat",
	[MAFH_OP_WAIT_UNTIL] = "wait_until",
	[MAFH_OP_CALL] = "call",
	[MAFH_OP_DONE] = "done",
};

const char *mafh_op_kind_name(enum mafh_op_kind kind)
{
	return (unsigned)kind < sizeof(op_names) / sizeof(op_names[0]) ? op_names[kind]
									: "unknown";
}

void mafh_op_result_init(struct mafh_op_result *res, enum mafh_op_kind kind)
{
	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	res->kind = kind;
}

static int check_option_word(const char *v, const char *a, const char *b, const char *name,
			     struct mafh_error *err)
{
	if (v && strcmp(v, a) != 0 && strcmp(v, b) != 0)
		return mafh__error_set(err, MAFH_EINVAL, "the %s option must be '%s' or '%s'",
				       name, a, b);
	return 0;
}

static const char *cap_name(unsigned cap)
{
	switch (cap) {
	case MAFH_CAP_EXEC:
		return "EXEC (run a command)";
	case MAFH_CAP_FILES_IN:
		return "FILES_IN (write files into the sandbox)";
	case MAFH_CAP_FILES_OUT:
		return "FILES_OUT (read and stat files in the sandbox)";
	case MAFH_CAP_DETACHED_EXEC:
		return "DETACHED_EXEC (a process that outlives its exec)";
	case MAFH_CAP_BLOCKING_EXEC:
		return "BLOCKING_EXEC (an exec that may block long)";
	}
	return "an unknown capability";
}

static int run_create(struct mafh_registry *reg, struct mafh_backend *backend, unsigned caps,
		      const char *backend_launcher, const struct mafh_run_options *opts_in,
		      struct mafh_run **out, struct mafh_error *err)
{
	struct mafh_run_options o;
	struct mafh_run *run;
	const char *why;
	size_t i, n;
	unsigned need;
	int rc;

	*out = NULL;
	if (!reg || !opts_in || opts_in->size < offsetof(struct mafh_run_options, program))
		return mafh__error_set(err, MAFH_EINVAL, "the registry or options are missing, "
				       "or the options' size field is not set");
	/* Fields an older caller did not know take their defaults. */
	mafh_run_options_init(&o);
	memcpy(&o, opts_in, opts_in->size < sizeof(o) ? opts_in->size : sizeof(o));
	if (!o.run_dir || mafp_run_dir_check(o.run_dir, &why) != 0)
		return mafh__error_set(err, MAFH_EINVAL, "bad run directory: %s",
				       o.run_dir ? why : "none given");
	if (o.timeout_ms <= 0)
		return mafh__error_set(err, MAFH_EINVAL, "the run timeout must be positive");
	if (!o.program && !o.argv)
		return mafh__error_set(err, MAFH_EINVAL, "a run needs a program or an argv");
	if ((rc = check_option_word(o.egress, "closed", "open", "egress", err)) ||
	    (rc = check_option_word(o.seccomp, "default", "off", "seccomp", err)) ||
	    (rc = check_option_word(o.landlock, "auto", "off", "landlock", err)))
		return rc;
	for (n = 0; o.argv && o.argv[n]; n++)
		;
	if (o.argv && (n == 0 || n > ARGV_MAX - 20))
		return mafh__error_set(err, MAFH_EINVAL, "the program argv must have 1 to %d "
				       "entries", ARGV_MAX - 20);

	/* Capabilities first, before anything else can fail later at the first call. */
	need = MAFH_CAPS_REQUIRED;
	if (o.transport == MAFH_TRANSPORT_WAIT)
		need |= MAFH_CAP_BLOCKING_EXEC;
	if (o.transport == MAFH_TRANSPORT_RELAY || o.transport == MAFH_TRANSPORT_STREAM)
		return mafh__error_set(err, MAFH_ENOTSUP, "the %s transport is not implemented "
				       "yet: use files or wait",
				       mafh_transport_name(o.transport));
	if ((unsigned)o.transport > MAFH_TRANSPORT_STREAM)
		return mafh__error_set(err, MAFH_EINVAL, "unknown transport");
	for (i = 0; i < 5; i++) {
		unsigned cap = 1u << i;

		if ((need & cap) && !(caps & cap))
			return mafh__error_set(err, MAFH_ENOTSUP, "the backend lacks the %s "
					       "capability this run needs", cap_name(cap));
	}
	if (o.poll_min_ms <= 0 || o.poll_max_ms < o.poll_min_ms || o.wait_slice_ms <= 0 ||
	    o.exec_timeout_ms <= 0)
		return mafh__error_set(err, MAFH_EINVAL, "poll, wait and exec intervals must be "
				       "positive, and poll_max_ms at least poll_min_ms");

	run = calloc(1, sizeof(*run));
	if (!run)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	run->reg = reg;
	run->backend = backend;
	run->caps = caps;
	run->limits = reg->limits;
	run->timeout_ms = o.timeout_ms;
	run->transport = o.transport;
	/* A wait the backend ends on a change beats an exec per call of `maf-launch wait`. */
	if (run->transport == MAFH_TRANSPORT_AUTO)
		run->transport = (caps & MAFH_CAP_WAIT_CHANGE) ? MAFH_TRANSPORT_FILES
				 : (caps & MAFH_CAP_BLOCKING_EXEC) ? MAFH_TRANSPORT_WAIT
								   : MAFH_TRANSPORT_FILES;
	run->keep_run_dir = o.keep_run_dir;
	run->write_shim = o.program && o.write_shim;
	run->poll_min_ms = o.poll_min_ms;
	run->poll_max_ms = o.poll_max_ms;
	run->wait_slice_ms = o.wait_slice_ms;
	run->exec_timeout_ms = o.exec_timeout_ms;
	run->run_dir = strdup(o.run_dir);
	/* Trailing slashes would make every derived path differ from what stop compares. */
	while (run->run_dir && strlen(run->run_dir) > 1 &&
	       run->run_dir[strlen(run->run_dir) - 1] == '/')
		run->run_dir[strlen(run->run_dir) - 1] = '\0';
	run->launcher = strdup(o.launcher ? o.launcher : backend_launcher);
	run->egress = dup_or_null(o.egress);
	run->seccomp = dup_or_null(o.seccomp);
	run->landlock = dup_or_null(o.landlock);
	if (!run->run_dir || !run->launcher || (o.egress && !run->egress) ||
	    (o.seccomp && !run->seccomp) || (o.landlock && !run->landlock))
		goto nomem;
	if (o.program) {
		run->program = malloc(o.program_len ? o.program_len : 1);
		if (!run->program)
			goto nomem;
		memcpy(run->program, o.program, o.program_len);
		run->program_len = o.program_len;
	}
	if (!o.argv)
		n = 2;
	run->prog_argv = calloc(n + 1, sizeof(char *));
	if (!run->prog_argv)
		goto nomem;
	if (o.argv) {
		for (i = 0; i < n; i++)
			if (!(run->prog_argv[i] = strdup(o.argv[i])))
				goto nomem;
	} else {
		char p[PATH_BUF];

		if (mafp_host_tools_path(p, sizeof(p), run->run_dir, MAFP_FILE_PROGRAM) != 0) {
			mafh_run_free(run);
			return mafh__error_set(err, MAFH_EINVAL, "the run directory is too long");
		}
		if (!(run->prog_argv[0] = strdup("python3")) || !(run->prog_argv[1] = strdup(p)))
			goto nomem;
	}
	run->output = calloc(1, 1);
	if (!run->output)
		goto nomem;
	n = (size_t)snprintf(run->wait_dir, sizeof(run->wait_dir), "%s/%s", run->run_dir,
			     MAFP_DIR_HOST_TOOLS);
	if (n >= sizeof(run->wait_dir)) {
		mafh_run_free(run);
		return mafh__error_set(err, MAFH_EINVAL, "the run directory is too long");
	}

	run->phase = run->program ? PH_WRITE_PROGRAM : PH_LAUNCH;
	run->next_id = 1;
	run->gap_est_ms = SHIM_POLL_MS;
	run->result.status = MAFH_RUN_RUNNING;
	run->result.exit_code = -1;
	run->result.output = run->output;
	atomic_init(&run->stop_requested, 0);
	mafh_registry_seal(reg);
	*out = run;
	return 0;
nomem:
	mafh_run_free(run);
	return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
}

int mafh_run_new(struct mafh_registry *reg, struct mafh_backend *backend,
		 const struct mafh_run_options *opts, struct mafh_run **out,
		 struct mafh_error *err)
{
	if (!backend) {
		*out = NULL;
		return mafh__error_set(err, MAFH_EINVAL, "a run needs a backend");
	}
	return run_create(reg, backend, mafh_backend_caps(backend),
			  mafh_backend_launcher_path(backend), opts, out, err);
}

int mafh_run_new_sansio(struct mafh_registry *reg, unsigned caps,
			const struct mafh_run_options *opts, struct mafh_run **out,
			struct mafh_error *err)
{
	return run_create(reg, NULL, caps, "maf-launch", opts, out, err);
}

void mafh_run_stop(struct mafh_run *run)
{
	if (run)
		atomic_store(&run->stop_requested, 1);
}

void mafh_run_free(struct mafh_run *run)
{
	size_t i;

	if (!run)
		return;
	free(run->run_dir);
	free(run->launcher);
	free(run->program);
	for (i = 0; run->prog_argv && run->prog_argv[i]; i++)
		free(run->prog_argv[i]);
	free(run->prog_argv);
	free(run->egress);
	free(run->seccomp);
	free(run->landlock);
	free(run->wbuf);
	cJSON_Delete(run->call_args);
	free(run->call_text);
	mafh__reply_clear(&run->reply);
	free(run->output);
	free(run);
}

const struct mafh_run_result *mafh_run_result(const struct mafh_run *run)
{
	return &run->result;
}

/* ---- op construction ---------------------------------------------------------------------- */

static void op_exec(struct mafh_run *run, struct mafh_op *op, int64_t timeout_ms,
		    size_t out_cap)
{
	op->kind = MAFH_OP_EXEC;
	op->argv = run->argv;
	op->timeout_ms = timeout_ms;
	op->out_cap = out_cap;
	run->result.ops.exec++;
}

static void op_read(struct mafh_run *run, struct mafh_op *op, size_t cap)
{
	op->kind = MAFH_OP_READ;
	op->path = run->path;
	op->cap = cap;
	run->result.ops.read++;
}

static void op_write(struct mafh_run *run, struct mafh_op *op, const void *data, size_t len)
{
	op->kind = MAFH_OP_WRITE;
	op->path = run->path;
	op->data = data;
	op->len = len;
	run->result.ops.write++;
}

static void argv_reset(struct mafh_run *run, const char *sub)
{
	memset(run->argv, 0, sizeof(run->argv));
	run->argv[0] = run->launcher;
	run->argv[1] = sub;
	run->argv[2] = "--run-dir";
	run->argv[3] = run->run_dir;
}

static void argv_push(struct mafh_run *run, const char *a)
{
	size_t i;

	for (i = 0; i < ARGV_MAX && run->argv[i]; i++)
		;
	if (i < ARGV_MAX)
		run->argv[i] = a;
}

static void build_launch(struct mafh_run *run)
{
	int64_t left = run->deadline - run->now;
	size_t i;

	argv_reset(run, "run");
	snprintf(run->argv_store[0], sizeof(run->argv_store[0]), "%lld.%03lld",
		 (long long)(left / 1000), (long long)(left % 1000));
	argv_push(run, "--timeout");
	argv_push(run, run->argv_store[0]);
	snprintf(run->argv_store[1], sizeof(run->argv_store[1]), "%llu",
		 (unsigned long long)run->limits.max_output_bytes);
	argv_push(run, "--max-output-bytes");
	argv_push(run, run->argv_store[1]);
	if (run->egress) {
		argv_push(run, "--egress");
		argv_push(run, run->egress);
	}
	if (run->seccomp) {
		argv_push(run, "--seccomp");
		argv_push(run, run->seccomp);
	}
	if (run->landlock) {
		argv_push(run, "--landlock");
		argv_push(run, run->landlock);
	}
	argv_push(run, "--");
	for (i = 0; run->prog_argv[i]; i++)
		argv_push(run, run->prog_argv[i]);
}

static void build_wait(struct mafh_run *run, int64_t slice)
{
	argv_reset(run, "wait");
	snprintf(run->argv_store[0], sizeof(run->argv_store[0]), "%ld", run->next_id);
	snprintf(run->argv_store[1], sizeof(run->argv_store[1]), "%lld", (long long)slice);
	snprintf(run->argv_store[2], sizeof(run->argv_store[2]), "%llu",
		 (unsigned long long)run->limits.max_request_bytes);
	argv_push(run, "--next");
	argv_push(run, run->argv_store[0]);
	argv_push(run, "--timeout-ms");
	argv_push(run, run->argv_store[1]);
	argv_push(run, "--max-bytes");
	argv_push(run, run->argv_store[2]);
}

/* ---- ending ------------------------------------------------------------------------------- */

/* Cuts the run short with status (TIMEOUT, STOPPED, ERROR): the output is read, then the
 * tree is stopped if it was launched. */
static void cut_short(struct mafh_run *run, enum mafh_run_status status)
{
	if (run->ending)
		return;
	run->ending = 1;
	run->result.status = status;
	if (status == MAFH_RUN_TIMEOUT)
		note_error(run, MAFH_ETIMEDOUT, "the run's deadline of %lld ms passed",
			   (long long)run->timeout_ms);
	else if (status == MAFH_RUN_STOPPED)
		note_error(run, MAFH_ECANCELED, "the run was stopped by the host");
	free(run->wbuf);
	run->wbuf = NULL;
	cJSON_Delete(run->call_args);
	run->call_args = NULL;
	run->have_call = 0;
	run->phase = run->launched ? PH_END_OUTPUT : PH_RECLAIM;
}

/* The exit marker's bytes: the guest's claim of how the program ended. */
static void take_exit_marker(struct mafh_run *run, const char *buf, size_t len)
{
	long code;

	run->exit_seen = 1;
	if (mafp_marker_parse(buf, len, 0, 255, &code) == 0)
		run->result.exit_code = (int)code;
	/* The marker is a claim the program could forge: `maf-launch stop` makes sure no
	 * process of the run survives, and prints the exit record, so it costs no more than
	 * reading the record would. */
	run->phase = PH_STOP;
}

static void take_record(struct mafh_run *run, const char *buf, size_t len)
{
	struct mafp_exit_record rec;
	struct mafh_exit_record *r = &run->result.record;
	const char *why;

	if (mafp_exit_record_decode(buf, len, &rec, &why) != 0)
		return;
	r->have_record = 1;
	snprintf(r->status, sizeof(r->status), "%s", mafp_status_name(rec.status));
	r->exit_code = rec.exit_code;
	r->signal = rec.signal;
	r->wall_ms = rec.wall_ms;
	r->cpu_ms = rec.cpu_ms;
	r->peak_rss_kb = rec.peak_rss_kb;
	r->output_bytes = rec.output_bytes;
	r->output_truncated = rec.output_truncated;
	r->calls = rec.calls;
	memcpy(r->seccomp, rec.seccomp, sizeof(r->seccomp));
	memcpy(r->landlock, rec.landlock, sizeof(r->landlock));
	memcpy(r->error, rec.error, sizeof(r->error));
	if (rec.output_truncated)
		run->result.output_truncated = 1;
}

/* The status of a run that ended by itself, from the marker and the record. */
static void settle_status(struct mafh_run *run)
{
	const struct mafh_exit_record *r = &run->result.record;

	if (run->ending)
		return;
	if (run->result.exit_code < 0 && r->have_record)
		run->result.exit_code = r->exit_code;
	if (run->result.exit_code < 0) {
		run->result.status = MAFH_RUN_ERROR;
		set_run_error(run, MAFH_EPROTO, "the exit marker is not a decimal exit code and "
			      "there is no exit record");
		return;
	}
	if (r->have_record && strcmp(r->status, "timeout") == 0)
		run->result.status = MAFH_RUN_TIMEOUT;
	else if (r->have_record && strcmp(r->status, "stopped") == 0)
		run->result.status = MAFH_RUN_STOPPED;
	else if (r->have_record && strcmp(r->status, "launch_failed") == 0)
		run->result.status = MAFH_RUN_LAUNCH_FAILED;
	else if ((r->have_record && strcmp(r->status, "signaled") == 0) ||
		 (!r->have_record && run->result.exit_code > 128))
		run->result.status = MAFH_RUN_SIGNALED;
	else
		run->result.status = MAFH_RUN_EXITED;
}

/* ---- serving ------------------------------------------------------------------------------ */

/* Prepares the response for the current id: data is owned by the run until written. */
static void answer(struct mafh_run *run, char *text, int is_refusal)
{
	if (!text) {
		cut_short(run, MAFH_RUN_ERROR);
		set_run_error(run, MAFH_ENOMEM, "out of memory encoding a response");
		return;
	}
	free(run->wbuf);
	run->wbuf = text;
	run->wlen = strlen(text);
	run->response_is_refusal = is_refusal;
}

static void refuse(struct mafh_run *run, const char *sentence)
{
	answer(run, mafp_response_encode_refusal(sentence), 1);
}

/* A request's bytes arrived (a read or a wait event): decode, check, and either step over
 * it, answer it with a refusal, or hand it out as a CALL. */
static void take_request(struct mafh_run *run, const char *buf, size_t len)
{
	struct mafp_request req;
	struct mafh_error e = {0};
	char why[256];
	const struct mafh__tool *t;

	if (mafp_request_decode(buf, len, run->limits.max_request_bytes, run->next_id, &req, why,
				sizeof(why)) != 0) {
		/* Its writer may not be done with the file: the answer gets a file of its own. */
		run->donor_id = 0;
		if (run->torn_retried_id != run->next_id) {
			/* Maybe torn: look once more after a grace before refusing. */
			run->torn_retried_id = run->next_id;
			run->next_poll_ms = run->now + TORN_GRACE_MS;
			run->wait_files = 0;    /* a plain sleep: the file is there already */
			return;
		}
		refuse(run, why);
		return;
	}
	if (req.abandoned) {
		/* Upstream steps over an abandoned id without answering it. */
		mafp_request_clear(&req);
		run->next_id++;
		run->misses = 0;
		run->next_poll_ms = run->now;
		run->wait_files = 0;
		return;
	}
	if (run->result.calls >= run->limits.max_calls) {
		snprintf(why, sizeof(why), "the budget of %lld host-tool calls for this run is "
			 "spent", (long long)run->limits.max_calls);
		mafp_request_clear(&req);
		refuse(run, why);
		return;
	}
	if (mafh__registry_check_tree(run->reg, req.name, req.arguments, &e) != 0) {
		mafp_request_clear(&req);
		refuse(run, e.message);
		return;
	}
	t = mafh__registry_find(run->reg, req.name);
	run->have_call = 1;
	memcpy(run->call_tool, req.name, sizeof(run->call_tool));
	run->call_args = req.arguments;
	req.arguments = NULL;
	run->call_fn = t->fn;
	run->call_ud = t->ud;
}

static void take_call_result(struct mafh_run *run, const struct mafh_op_result *res)
{
	char sentence[REFUSAL_MAX];
	cJSON *value;
	char *text;

	cJSON_Delete(run->call_args);
	run->call_args = NULL;
	free(run->call_text);
	run->call_text = NULL;
	run->have_call = 0;
	if (res->error) {
		snprintf(sentence, sizeof(sentence), "the host tool '%s' failed: %s%s%s",
			 run->call_tool, mafh_strerror(res->error), res->detail.message[0] ? ": " : "",
			 res->detail.message);
		refuse(run, sentence);
		return;
	}
	if (!res->value) {
		if (res->refusal && res->refusal[0])
			snprintf(sentence, sizeof(sentence), "%s", res->refusal);
		else if (res->refusal)
			snprintf(sentence, sizeof(sentence), "the host refused the call");
		else
			snprintf(sentence, sizeof(sentence), "the host tool '%s' gave no answer",
				 run->call_tool);
		refuse(run, sentence);
		return;
	}
	if (res->value_len > run->limits.max_response_bytes) {
		snprintf(sentence, sizeof(sentence), "the response of host tool '%s' is %zu bytes, "
			 "more than the cap of %llu bytes", run->call_tool, res->value_len,
			 (unsigned long long)run->limits.max_response_bytes);
		refuse(run, sentence);
		return;
	}
	value = mafp_json_parse(res->value, res->value_len, res->value_len);
	text = value ? mafp_response_encode_value(value) : NULL;
	cJSON_Delete(value);
	if (!text) {
		snprintf(sentence, sizeof(sentence), "the host tool '%s' answered with something "
			 "that is not one JSON value", run->call_tool);
		refuse(run, sentence);
		return;
	}
	if (strlen(text) > run->limits.max_response_bytes) {
		snprintf(sentence, sizeof(sentence), "the response of host tool '%s' is %zu bytes, "
			 "more than the cap of %llu bytes", run->call_tool, strlen(text),
			 (unsigned long long)run->limits.max_response_bytes);
		free(text);
		refuse(run, sentence);
		return;
	}
	if (run->total_response_bytes + strlen(text) > run->limits.max_total_response_bytes) {
		snprintf(sentence, sizeof(sentence), "the responses of this run would exceed the "
			 "total cap of %llu bytes",
			 (unsigned long long)run->limits.max_total_response_bytes);
		free(text);
		refuse(run, sentence);
		return;
	}
	answer(run, text, 0);
}

/* After an answer: when to look for the next request. A look that finds nothing costs a
 * whole backend op, so on a slow backend the first look waits for the gap the program
 * usually takes (learnt, starting from the shim's own poll), less the time the op itself
 * takes to reach the guest. */
static void schedule_after_answer(struct mafh_run *run)
{
	int64_t lead = (int64_t)(run->gap_est_ms - run->lat_est_ms);

	run->misses = 0;
	run->last_answer_ms = run->now;
	run->last_activity_ms = run->now;
	if (notifying(run))
		wait_for_files(run);    /* returns at once if the request is there already */
	else if (run->transport == MAFH_TRANSPORT_WAIT)
		run->next_poll_ms = run->now;   /* the wait itself blocks until it is there */
	else
		run->next_poll_ms = run->now + clamp64(lead, 0, run->poll_max_ms);
}

/* After a look that found nothing: back off exponentially, and in proportion to how long
 * the program has been quiet, paced against the op latency so that idle polling takes only
 * a small share of the backend's time (a slow backend is polled less often, up to 24 op
 * latencies apart even past poll_max_ms). */
static void schedule_after_miss(struct mafh_run *run)
{
	int64_t base = (int64_t)(run->gap_est_ms / 4), iv, quiet, top;

	if (notifying(run)) {
		wait_for_files(run);
		return;
	}
	if (run->misses == 1 && run->last_answer_ms && run->lat_est_ms >= 2.0) {
		/* Looked too early right after an answer: learn a longer gap. Only where a look
		 * is costly: where it is cheap, the quick retry below already realigns the
		 * first look with the program's cadence (the shim's 50 ms poll), and a longer
		 * gap would push answers past the shim's next poll. */
		run->gap_est_ms = run->gap_est_ms * 1.5;
		if (run->gap_est_ms > run->poll_max_ms)
			run->gap_est_ms = (double)run->poll_max_ms;
	}
	if (base < 2 * (int64_t)run->lat_est_ms)
		base = 2 * (int64_t)run->lat_est_ms;
	iv = base << (run->misses > 6 ? 6 : run->misses - 1);
	quiet = run->now - run->last_activity_ms;
	if (iv < quiet)
		iv = quiet;
	top = run->poll_max_ms;
	if (top < 24 * (int64_t)run->lat_est_ms)
		top = 24 * (int64_t)run->lat_est_ms;
	run->next_poll_ms = run->now + clamp64(iv, run->poll_min_ms, top);
}

static int64_t wait_slice(struct mafh_run *run)
{
	int64_t left = run->deadline - run->now;

	return clamp64(left < run->wait_slice_ms ? left : run->wait_slice_ms, 1,
		       run->wait_slice_ms);
}

/* A `maf-launch wait` event: a header line, then its bytes. */
static void take_wait_event(struct mafh_run *run, const struct mafh_exec_result *x)
{
	const char *nl = x->out ? memchr(x->out, '\n', x->out_len) : NULL;
	const cJSON *ev, *sz, *id, *er, *ov;
	cJSON *head;
	const char *body;
	size_t blen;
	double size;
	char line[160];

	if (x->timed_out || x->exit_code != 0) {
		first_line(line, sizeof(line), x->err ? x->err : "", x->err_len);
		if (x->exit_code == MAFP_EXIT_USAGE && !run->wait_used) {
			/* A launcher without `wait`: fall back to polling the files. */
			run->transport = MAFH_TRANSPORT_FILES;
			run->next_poll_ms = run->now;
			return;
		}
		cut_short(run, MAFH_RUN_ERROR);
		set_run_error(run, MAFH_EIO, "maf-launch wait %s: %s",
			      x->timed_out ? "did not return in time" : "failed", line);
		return;
	}
	head = nl ? mafp_json_parse(x->out, (size_t)(nl - x->out), WAIT_HEAD_MAX) : NULL;
	ev = cJSON_GetObjectItemCaseSensitive(head, "event");
	sz = cJSON_GetObjectItemCaseSensitive(head, "size");
	if (!cJSON_IsObject(head) || !cJSON_IsString(ev)) {
		cJSON_Delete(head);
		cut_short(run, MAFH_RUN_ERROR);
		set_run_error(run, MAFH_EPROTO, "maf-launch wait printed no event line");
		return;
	}
	run->wait_used = 1;
	if (strcmp(ev->valuestring, "timeout") == 0) {
		cJSON_Delete(head);
		return;
	}
	size = cJSON_IsNumber(sz) ? sz->valuedouble : -1;
	body = nl + 1;
	blen = x->out_len - (size_t)(body - x->out);
	er = cJSON_GetObjectItemCaseSensitive(head, "error");
	ov = cJSON_GetObjectItemCaseSensitive(head, "oversized");
	id = cJSON_GetObjectItemCaseSensitive(head, "id");
	if (strcmp(ev->valuestring, "exit") == 0) {
		if (er || cJSON_IsTrue(ov) || size != (double)blen) {
			/* A marker the program planted as something else: the supervisor will
			 * replace it or the deadline will end the run. Look again later. */
			run->next_poll_ms = run->now + run->poll_max_ms;
		} else {
			take_exit_marker(run, body, blen);
		}
	} else if (strcmp(ev->valuestring, "request") == 0 && cJSON_IsNumber(id) &&
		   id->valuedouble == (double)run->next_id) {
		char why[160];

		if (er) {
			snprintf(why, sizeof(why), "the request file %04ld is not a regular file "
				 "that can be read", run->next_id);
			refuse(run, why);
		} else if (cJSON_IsTrue(ov) || size > (double)run->limits.max_request_bytes ||
			   size != (double)blen) {
			snprintf(why, sizeof(why), "the request is larger than %llu bytes",
				 (unsigned long long)run->limits.max_request_bytes);
			refuse(run, why);
		} else {
			take_request(run, body, blen);
		}
	} else {
		cut_short(run, MAFH_RUN_ERROR);
		set_run_error(run, MAFH_EPROTO, "maf-launch wait printed an unexpected event");
	}
	cJSON_Delete(head);
}

/* The next op while serving. Returns 1 if op was filled. */
static int serve_op(struct mafh_run *run, struct mafh_op *op)
{
	if (run->wbuf) {
		if (call_path(run, run->next_id, MAFP_SUFFIX_RESPONSE) != 0)
			goto id_range;
		op_write(run, op, run->wbuf, run->wlen);
		if (run->donor_id == run->next_id)
			op->replaces = run->donor;
		run->pending = P_WRITE_RESPONSE;
		return 1;
	}
	if (run->have_call) {
		free(run->call_text);
		run->call_text = cJSON_PrintUnformatted(run->call_args);
		if (!run->call_text) {
			cut_short(run, MAFH_RUN_ERROR);
			set_run_error(run, MAFH_ENOMEM, "out of memory handing out a call");
			return 0;
		}
		run->call.size = sizeof(run->call);
		run->call.id = run->next_id;
		run->call.tool = run->call_tool;
		run->call.arguments = run->call_text;
		run->call.arguments_len = strlen(run->call_text);
		op->kind = MAFH_OP_CALL;
		op->call = &run->call;
		op->fn = run->call_fn;
		op->ud = run->call_ud;
		run->pending = P_CALL;
		return 1;
	}
	if (run->now < run->next_poll_ms) {
		op->kind = MAFH_OP_WAIT_UNTIL;
		op->until_ms = run->next_poll_ms < run->deadline ? run->next_poll_ms
								 : run->deadline;
		run->result.ops.wait++;
		run->pending = P_SLEEP;
		if (run->wait_files && notifying(run) &&
		    mafp_call_file_name(run->wait_request + strlen(MAFP_DIR_CALLS) + 1,
					sizeof(run->wait_request) - strlen(MAFP_DIR_CALLS) - 1,
					run->next_id, MAFP_SUFFIX_REQUEST) == 0) {
			memcpy(run->wait_request, MAFP_DIR_CALLS "/", strlen(MAFP_DIR_CALLS) + 1);
			run->wait_names[0] = run->wait_request;
			run->wait_names[1] = MAFP_MARKER_EXIT_CODE;
			run->wait_names[2] = NULL;
			op->wait_dir = run->wait_dir;
			op->wait_names = run->wait_names;
		}
		return 1;
	}
	if (run->next_id > MAFP_CALL_ID_MAX)
		goto id_range;
	if (run->transport == MAFH_TRANSPORT_WAIT) {
		int64_t slice = wait_slice(run);

		build_wait(run, slice);
		/* Room for the event line and the largest request it may print; the exec's own
		 * overhead gets a few seconds past the slice, so the deadline is not overrun
		 * by more than that. */
		op_exec(run, op, slice + (run->exec_timeout_ms < 5000 ? run->exec_timeout_ms : 5000),
			run->limits.max_request_bytes + WAIT_HEAD_MAX + 2);
		run->pending = P_WAIT_EXEC;
		return 1;
	}
	if (run->probe_exit_next) {
		host_tools_path(run, MAFP_MARKER_EXIT_CODE);
		op_read(run, op, MAFP_MARKER_MAX);
		run->pending = P_PROBE_EXIT;
		return 1;
	}
	if (call_path(run, run->next_id, MAFP_SUFFIX_REQUEST) != 0)
		goto id_range;
	op_read(run, op, run->limits.max_request_bytes);
	run->pending = P_READ_REQUEST;
	return 1;
id_range:
	cut_short(run, MAFH_RUN_ERROR);
	set_run_error(run, MAFH_E2BIG, "the program used every call id up to %d",
		      MAFP_CALL_ID_MAX);
	return 0;
}

/* ---- the op loop -------------------------------------------------------------------------- */

static void finish(struct mafh_run *run)
{
	run->phase = PH_DONE;
	if (run->result.status == MAFH_RUN_RUNNING)
		settle_status(run);
	else if (run->result.exit_code < 0 && run->launched && run->result.record.have_record)
		run->result.exit_code = run->result.record.exit_code;
	run->result.output = run->output;
}

int mafh_run_next_op(struct mafh_run *run, int64_t now_ms, const struct mafh_op **opp)
{
	struct mafh_op *op;

	if (!run || !opp)
		return MAFH_EINVAL;
	if (run->pending != P_NONE)
		return MAFH_EBUSY;
	op = &run->op;
	*opp = op;
	memset(op, 0, sizeof(*op));
	op->size = sizeof(*op);
	if (!run->started) {
		run->started = 1;
		run->t_start = now_ms;
		run->deadline = now_ms + run->timeout_ms;
	}
	run->now = now_ms;
	if (run->phase != PH_DONE)
		run->result.wall_ms = now_ms - run->t_start;

	for (;;) {
		/* The deadline and a stop request cut in before any op of the live phases. */
		if (run->phase <= PH_SERVE && !run->ending) {
			if (atomic_load(&run->stop_requested))
				cut_short(run, MAFH_RUN_STOPPED);
			else if (now_ms >= run->deadline)
				cut_short(run, MAFH_RUN_TIMEOUT);
		}
		switch (run->phase) {
		case PH_WRITE_PROGRAM:
			host_tools_path(run, MAFP_FILE_PROGRAM);
			op_write(run, op, run->program, run->program_len);
			run->pending = P_WRITE_PROGRAM;
			break;
		case PH_WRITE_SHIM: {
			char *text = NULL;
			size_t len = 0;
			struct mafh_error e;

			if (mafh_shim_source(run->reg, &text, &len, &e) != 0) {
				cut_short(run, MAFH_RUN_ERROR);
				set_run_error(run, e.code, "%s", e.message);
				continue;
			}
			free(run->wbuf);
			run->wbuf = text;
			run->wlen = len;
			host_tools_path(run, MAFP_FILE_SHIM);
			op_write(run, op, run->wbuf, run->wlen);
			run->pending = P_WRITE_SHIM;
			break;
		}
		case PH_LAUNCH:
			build_launch(run);
			op_exec(run, op, clamp64(run->deadline - now_ms, 1, run->exec_timeout_ms),
				LAUNCH_OUT_CAP);
			run->pending = P_LAUNCH;
			break;
		case PH_SERVE:
			if (!serve_op(run, op))
				continue;
			break;
		case PH_END_OUTPUT:
			if (run->output_read) {
				run->phase = PH_STOP;
				continue;
			}
			host_tools_path(run, MAFP_FILE_OUTPUT);
			op_read(run, op, run->limits.max_output_bytes);
			run->pending = P_READ_OUTPUT;
			break;
		case PH_STOP:
			if (run->stop_done || !run->result.supervisor_pid) {
				run->phase = !run->result.record.have_record ? PH_EXIT_RECORD
					     : run->output_read ? PH_RECLAIM : PH_OUTPUT;
				continue;
			}
			argv_reset(run, "stop");
			snprintf(run->argv_store[0], sizeof(run->argv_store[0]), "%lld",
				 (long long)run->result.supervisor_pid);
			argv_push(run, "--supervisor-pid");
			argv_push(run, run->argv_store[0]);
			argv_push(run, "--timeout");
			argv_push(run, STOP_TIMEOUT_S);
			op_exec(run, op, run->exec_timeout_ms, STOP_OUT_CAP);
			run->pending = P_STOP;
			break;
		case PH_EXIT_RECORD:
			if (run->result.record.have_record) {
				run->phase = run->output_read ? PH_RECLAIM : PH_OUTPUT;
				continue;
			}
			host_tools_path(run, MAFP_FILE_EXIT_RECORD);
			op_read(run, op, MAFP_EXIT_RECORD_MAX);
			run->pending = P_READ_RECORD;
			break;
		case PH_OUTPUT:
			if (run->output_read) {
				run->phase = PH_RECLAIM;
				continue;
			}
			host_tools_path(run, MAFP_FILE_OUTPUT);
			op_read(run, op, run->limits.max_output_bytes);
			run->pending = P_READ_OUTPUT;
			break;
		case PH_RECLAIM:
			if (run->keep_run_dir) {
				finish(run);
				continue;
			}
			argv_reset(run, "reclaim");
			op_exec(run, op, run->exec_timeout_ms, LAUNCH_OUT_CAP);
			run->pending = P_RECLAIM;
			break;
		case PH_DONE:
			op->kind = MAFH_OP_DONE;
			return 0;
		}
		break;
	}
	run->op_started_ms = now_ms;
	return 0;
}

static void take_launch(struct mafh_run *run, const struct mafh_op_result *res)
{
	const struct mafh_exec_result *x = &res->exec;
	char line[200];
	const char *p, *end, *why = NULL;
	int got = 0;

	if (res->error) {
		run->result.status = MAFH_RUN_ERROR;
		set_run_error(run, res->error, "the launcher could not be run: %s",
			      res->detail.message[0] ? res->detail.message
						     : mafh_strerror(res->error));
		run->phase = PH_RECLAIM;
		return;
	}
	if (x->timed_out) {
		run->result.status = MAFH_RUN_ERROR;
		set_run_error(run, MAFH_ETIMEDOUT, "maf-launch run did not return in time");
		run->phase = PH_RECLAIM;
		return;
	}
	if (x->exit_code != 0) {
		first_line(line, sizeof(line), x->err ? x->err : "", x->err_len);
		run->result.status = MAFH_RUN_LAUNCH_FAILED;
		run->result.exit_code = x->exit_code;
		set_run_error(run, MAFH_ELAUNCH, "maf-launch run failed with exit code %d: %s",
			      x->exit_code, line[0] ? line : "(no message)");
		run->phase = PH_RECLAIM;
		return;
	}
	/* The launch line is the first line starting with '{'; a session exists only if the
	 * launcher itself printed the session line (never trusted from a file). */
	for (p = x->out ? x->out : ""; x->out && p < x->out + x->out_len; p = end + 1) {
		end = memchr(p, '\n', (size_t)(x->out + x->out_len - p));
		if (!end)
			end = x->out + x->out_len;
		if (!got && p < end && *p == '{') {
			struct mafp_launch_info info;

			if (mafp_launch_info_decode(p, (size_t)(end - p), &info, &why) == 0) {
				run->result.pid = info.pid;
				run->result.supervisor_pid = info.supervisor_pid;
				got = 1;
			}
		} else if ((size_t)(end - p) == strlen(MAFP_SESSION_LINE) &&
			   memcmp(p, MAFP_SESSION_LINE, strlen(MAFP_SESSION_LINE)) == 0) {
			run->result.session = 1;
		}
	}
	if (!got) {
		run->result.status = MAFH_RUN_ERROR;
		set_run_error(run, MAFH_EPROTO, "maf-launch run printed no usable launch line: %s",
			      why ? why : "none found");
		run->phase = PH_RECLAIM;
		return;
	}
	run->launched = 1;
	run->phase = PH_SERVE;
	run->last_activity_ms = run->now;
	/* Nothing can be waiting yet: give the program a moment to start. */
	run->next_poll_ms = run->now + (run->transport == MAFH_TRANSPORT_FILES
						? (int64_t)run->gap_est_ms : 0);
	if (notifying(run))
		wait_for_files(run);
}

static void take_read_error(struct mafh_run *run, const struct mafh_op_result *res,
			    const char *what)
{
	cut_short(run, MAFH_RUN_ERROR);
	set_run_error(run, res->error, "reading %s failed: %s", what,
		      res->detail.message[0] ? res->detail.message : mafh_strerror(res->error));
}

static void take_output(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->output_read = 1;
	if (res->error) {
		note_error(run, res->error, "the program's output could not be read: %s",
			   res->detail.message);
		return;
	}
	if (res->read.status == MAFH_READ_TOO_BIG) {
		run->result.output_truncated = 1;
		note_error(run, MAFH_E2BIG, "the program's output is larger than %llu bytes",
			   (unsigned long long)run->limits.max_output_bytes);
		return;
	}
	if (res->read.status != MAFH_READ_OK)
		return;
	{
		char *o = malloc(res->read.len + 1);

		if (!o) {
			note_error(run, MAFH_ENOMEM, "out of memory reading the output");
			return;
		}
		if (res->read.len)
			memcpy(o, res->read.data, res->read.len);
		o[res->read.len] = '\0';
		free(run->output);
		run->output = o;
		run->result.output = o;
		run->result.output_len = res->read.len;
	}
}

static void observe_latency(struct mafh_run *run)
{
	double took = (double)(run->now - run->op_started_ms);

	run->lat_est_ms = run->lat_est_ms ? 0.75 * run->lat_est_ms + 0.25 * took : took;
}

int mafh_run_op_result(struct mafh_run *run, int64_t now_ms, const struct mafh_op_result *res)
{
	static const enum mafh_op_kind kind_of[] = {
		[P_WRITE_PROGRAM] = MAFH_OP_WRITE, [P_WRITE_SHIM] = MAFH_OP_WRITE,
		[P_LAUNCH] = MAFH_OP_EXEC,         [P_READ_REQUEST] = MAFH_OP_READ,
		[P_PROBE_EXIT] = MAFH_OP_READ,     [P_WAIT_EXEC] = MAFH_OP_EXEC,
		[P_CALL] = MAFH_OP_CALL,           [P_WRITE_RESPONSE] = MAFH_OP_WRITE,
		[P_SLEEP] = MAFH_OP_WAIT_UNTIL,    [P_READ_OUTPUT] = MAFH_OP_READ,
		[P_STOP] = MAFH_OP_EXEC,           [P_READ_RECORD] = MAFH_OP_READ,
		[P_RECLAIM] = MAFH_OP_EXEC,
	};
	enum pending p;

	if (!run || !res || run->pending == P_NONE || res->kind != kind_of[run->pending])
		return MAFH_EINVAL;
	p = run->pending;
	run->pending = P_NONE;
	run->now = now_ms;
	run->result.wall_ms = now_ms - run->t_start;
	if (res->kind == MAFH_OP_READ || res->kind == MAFH_OP_WRITE || res->kind == MAFH_OP_STAT)
		observe_latency(run);

	switch (p) {
	case P_NONE:
		break;
	case P_WRITE_PROGRAM:
	case P_WRITE_SHIM:
		if (p == P_WRITE_SHIM) {
			free(run->wbuf);
			run->wbuf = NULL;
		}
		if (res->error) {
			run->result.status = MAFH_RUN_ERROR;
			set_run_error(run, res->error, "writing the %s failed: %s",
				      p == P_WRITE_SHIM ? "shim" : "program", res->detail.message);
			run->ending = 1;
			run->phase = PH_RECLAIM;
			break;
		}
		if (!run->ending)
			run->phase = (p == P_WRITE_PROGRAM && run->write_shim) ? PH_WRITE_SHIM
									     : PH_LAUNCH;
		break;
	case P_LAUNCH:
		take_launch(run, res);
		break;
	case P_READ_REQUEST:
		run->donor_id = 0;
		if (res->error) {
			take_read_error(run, res, "a request");
			break;
		}
		switch (res->read.status) {
		case MAFH_READ_OK:
			memcpy(run->donor, run->path, sizeof(run->donor));
			run->donor_id = run->next_id;
			if (run->misses == 0 && run->last_answer_ms &&
			    run->gap_est_ms > (double)run->poll_min_ms)
				/* Found at the first look after an answer: try a little sooner
				 * next time (a miss pushes the gap back up by half). */
				run->gap_est_ms *= 0.995;
			take_request(run, res->read.data ? res->read.data : "", res->read.len);
			break;
		case MAFH_READ_TOO_BIG: {
			char why[128];

			snprintf(why, sizeof(why), "the request is larger than %llu bytes",
				 (unsigned long long)run->limits.max_request_bytes);
			refuse(run, why);
			break;
		}
		case MAFH_READ_NOT_REGULAR: {
			char why[128];

			snprintf(why, sizeof(why), "the request file %04ld is not a regular file",
				 run->next_id);
			refuse(run, why);
			break;
		}
		case MAFH_READ_ABSENT:
			run->misses++;
			/* The exit marker is probed only when no request is waiting, and only
			 * on every second empty look (third before the first request: most
			 * programs are still starting up then), since each probe is an op. */
			run->probe_exit_next = run->misses % (run->last_answer_ms ? 2 : 3) == 0;
			/* Woken by a change that was not the request: maybe the exit marker. */
			if (notifying(run))
				run->probe_exit_next = 1;
			if (!run->probe_exit_next)
				schedule_after_miss(run);
			break;
		}
		break;
	case P_PROBE_EXIT:
		run->probe_exit_next = 0;
		if (res->error) {
			take_read_error(run, res, "the exit marker");
			break;
		}
		if (res->read.status == MAFH_READ_OK)
			take_exit_marker(run, res->read.data ? res->read.data : "", res->read.len);
		else
			schedule_after_miss(run);
		break;
	case P_WAIT_EXEC:
		if (res->error) {
			cut_short(run, MAFH_RUN_ERROR);
			set_run_error(run, res->error, "maf-launch wait could not be run: %s",
				      res->detail.message);
			break;
		}
		take_wait_event(run, &res->exec);
		break;
	case P_CALL:
		take_call_result(run, res);
		mafh__reply_clear(&run->reply);
		break;
	case P_WRITE_RESPONSE:
		free(run->wbuf);
		run->wbuf = NULL;
		run->donor_id = 0;
		if (res->error) {
			char name[32];

			mafp_call_file_name(name, sizeof(name), run->next_id, MAFP_SUFFIX_RESPONSE);
			cut_short(run, MAFH_RUN_ERROR);
			set_run_error(run, res->error, "writing the response %s failed: %s", name,
				      res->detail.message[0] ? res->detail.message
							     : mafh_strerror(res->error));
			break;
		}
		run->result.calls++;
		if (run->response_is_refusal)
			run->result.refusals++;
		run->total_response_bytes += run->wlen;
		run->next_id++;
		schedule_after_answer(run);
		break;
	case P_SLEEP:
		if (run->op.wait_dir) {
			/* Ended early by a change, or at its end: look now either way. */
			run->wait_files = 0;
			run->next_poll_ms = run->now;
		}
		break;
	case P_READ_OUTPUT:
		take_output(run, res);
		run->phase = run->phase == PH_END_OUTPUT ? PH_STOP : PH_RECLAIM;
		break;
	case P_STOP:
		run->stop_done = 1;
		if (res->error || res->exec.timed_out || res->exec.exit_code != 0) {
			char line[160];

			first_line(line, sizeof(line), res->exec.err ? res->exec.err : "",
				   res->exec.err_len);
			note_error(run, res->error ? res->error : MAFH_EIO,
				   "maf-launch stop failed (exit code %d): %s", res->exec.exit_code,
				   res->error ? res->detail.message : line);
		} else if (res->exec.out_len) {
			/* stop prints the exit record when there is one. */
			size_t n = res->exec.out_len;

			while (n && (res->exec.out[n - 1] == '\n' || res->exec.out[n - 1] == '\r'))
				n--;
			take_record(run, res->exec.out, n);
		}
		break;
	case P_READ_RECORD:
		if (!res->error && res->read.status == MAFH_READ_OK)
			take_record(run, res->read.data ? res->read.data : "", res->read.len);
		run->phase = run->output_read ? PH_RECLAIM : PH_OUTPUT;
		break;
	case P_RECLAIM:
		if (res->error || res->exec.timed_out || res->exec.exit_code != 0) {
			char line[160];

			first_line(line, sizeof(line), res->exec.err ? res->exec.err : "",
				   res->exec.err_len);
			note_error(run, res->error ? res->error : MAFH_EIO,
				   "maf-launch reclaim failed (exit code %d): %s", res->exec.exit_code,
				   res->error ? res->detail.message : line);
		}
		finish(run);
		break;
	}
	return 0;
}

struct mafh_reply *mafh__run_reply(struct mafh_run *run, const struct mafh_op *op)
{
	return run->pending == P_CALL && op && op->call == &run->call ? &run->reply : NULL;
}

struct mafh_backend *mafh__run_backend(const struct mafh_run *run)
{
	return run->backend;
}

int mafh__run_stop_requested(const struct mafh_run *run)
{
	return atomic_load(&((struct mafh_run *)run)->stop_requested);
}
