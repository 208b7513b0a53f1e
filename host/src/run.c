/* A run's making and unmaking: its options checked and copied, the names of its enums, its
 * result. The state machine that drives it is core.c. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

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
	opts->max_procs = -1;
	opts->max_memory = -1;
	opts->liveness_ms = 2000;
	opts->ending_ms = MAFH_ENDING_MS;
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
	[MAFH_RUN_LOST] = "lost",
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
	[MAFH_OP_STREAM_OPEN] = "stream_open",
	[MAFH_OP_STREAM_WRITE] = "stream_write",
	[MAFH_OP_STREAM_READ] = "stream_read",
	[MAFH_OP_STREAM_CLOSE] = "stream_close",
};

static const char *const event_names[] = {
	[MAFH_EVENT_RUN_STARTED] = "run_started",
	[MAFH_EVENT_CALL_SERVED] = "call_served",
	[MAFH_EVENT_CALL_REFUSED] = "call_refused",
	[MAFH_EVENT_CALL_UNDELIVERED] = "call_undelivered",
	[MAFH_EVENT_ERROR] = "error",
	[MAFH_EVENT_RUN_ENDED] = "run_ended",
};

const char *mafh_event_kind_name(enum mafh_event_kind kind)
{
	return (unsigned)kind < sizeof(event_names) / sizeof(event_names[0]) ? event_names[kind]
									      : "unknown";
}

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

/* "UID" or "UID:GID", decimal, as `maf-launch run --user` takes it; NULL is the default. */
static int check_user(const char *u, struct mafh_error *err)
{
	const char *p = u;
	int digits = 0, colons = 0;

	if (!u)
		return 0;
	for (; *p; p++) {
		if (*p == ':' && digits && !colons) {
			colons = 1;
			digits = 0;
		} else if (*p >= '0' && *p <= '9' && digits < 10) {
			digits++;
		} else {
			break;
		}
	}
	if (*p || !digits)
		return mafh__error_set(err, MAFH_EINVAL, "the user option must be UID or UID:GID, "
				       "in decimal");
	return 0;
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
	case MAFH_CAP_STREAM:
		return "STREAM (an exec whose stdin and stdout stay open)";
	case MAFH_CAP_EXEC_STDIN:
		return "EXEC_STDIN (an exec given bytes on its stdin)";
	case MAFH_CAP_EXEC_EXACT:
		return "EXEC_EXACT (an exec's stdout byte for byte)";
	case MAFH_CAP_LAUNCH_STDIN:
		return "LAUNCH_STDIN (the run's files on the launch's stdin)";
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
	size_t i, n, nw;
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
	if (o.argv && (n == 0 || n > MAFH__PROG_ARGV_MAX))
		return mafh__error_set(err, MAFH_EINVAL, "the program argv must have 1 to %d "
				       "entries", MAFH__PROG_ARGV_MAX);

	/* Capabilities first, before anything else can fail later at the first call. */
	need = MAFH_CAPS_REQUIRED;
	if (o.transport == MAFH_TRANSPORT_WAIT || o.transport == MAFH_TRANSPORT_RELAY)
		need |= MAFH_CAP_BLOCKING_EXEC;
	if (o.transport == MAFH_TRANSPORT_STREAM)
		need |= MAFH_CAP_STREAM;
	if ((unsigned)o.transport > MAFH_TRANSPORT_STREAM)
		return mafh__error_set(err, MAFH_EINVAL, "unknown transport");
	for (i = 0; i < 7; i++) {
		unsigned cap = 1u << i;

		if ((need & cap) && !(caps & cap))
			return mafh__error_set(err, MAFH_ENOTSUP, "the backend lacks the %s "
					       "capability this run needs", cap_name(cap));
	}
	if (o.poll_min_ms <= 0 || o.poll_max_ms < o.poll_min_ms || o.wait_slice_ms <= 0 ||
	    o.exec_timeout_ms <= 0 || o.liveness_ms < 0)
		return mafh__error_set(err, MAFH_EINVAL, "poll, wait and exec intervals must be "
				       "positive, and poll_max_ms at least poll_min_ms");
	if (o.ending_ms < MAFH__ENDING_MIN_MS || o.ending_ms > MAFH__ENDING_MAX_MS)
		return mafh__error_set(err, MAFH_EINVAL, "the ending's budget must be %d to %d ms, "
				       "not %lld", MAFH__ENDING_MIN_MS, MAFH__ENDING_MAX_MS,
				       (long long)o.ending_ms);
	if ((rc = check_user(o.user, err)) ||
	    (o.max_procs < -1 || o.max_memory < -1 ?
	     (rc = mafh__error_set(err, MAFH_EINVAL, "max_procs and max_memory must be -1 (the "
				   "launcher's default), 0 (none) or a positive count")) : 0))
		return rc;
	if (o.reclaim_keep && (!o.reclaim_keep[0] || strchr(o.reclaim_keep, '/') ||
			       strcmp(o.reclaim_keep, ".") == 0 ||
			       strcmp(o.reclaim_keep, "..") == 0 || strlen(o.reclaim_keep) > 255))
		return mafh__error_set(err, MAFH_EINVAL, "reclaim_keep must be one path component "
				       "of R (no '/', not '.' or '..')");
	for (nw = 0; o.writable && o.writable[nw]; nw++) {
		if (o.writable[nw][0] != '/' || nw == MAFH__WRITABLE_MAX)
			return mafh__error_set(err, MAFH_EINVAL, "writable takes at most %d absolute "
					       "paths", MAFH__WRITABLE_MAX);
	}

	run = calloc(1, sizeof(*run));
	if (!run)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	run->drv_epfd = -1;
	run->reg = reg;
	run->backend = backend;
	run->caps = caps;
	run->limits = reg->limits;
	run->timeout_ms = o.timeout_ms;
	run->transport = o.transport;
	/* A wait the backend ends on a change costs no exec at all; else one exec a call of
	 * `maf-launch relay`, which answers and fetches the next request at once. */
	if (run->transport == MAFH_TRANSPORT_AUTO)
		run->transport = (caps & MAFH_CAP_STREAM) ? MAFH_TRANSPORT_STREAM
				 : (caps & MAFH_CAP_WAIT_CHANGE) ? MAFH_TRANSPORT_FILES
				 : (caps & MAFH_CAP_BLOCKING_EXEC) ? MAFH_TRANSPORT_RELAY
								   : MAFH_TRANSPORT_FILES;
	run->result.transport = run->transport;
	run->keep_run_dir = o.keep_run_dir;
	run->write_shim = o.program && o.write_shim;
	mafh__pacing_init(&run->pacing, o.poll_min_ms, o.poll_max_ms);
	run->on_event = o.on_event;
	run->event_ud = o.event_ud;
	run->wait_slice_ms = o.wait_slice_ms;
	run->exec_timeout_ms = o.exec_timeout_ms;
	run->ending_ms = o.ending_ms;
	run->run_dir = strdup(o.run_dir);
	/* Trailing slashes would make every derived path differ from what stop compares. */
	while (run->run_dir && strlen(run->run_dir) > 1 &&
	       run->run_dir[strlen(run->run_dir) - 1] == '/')
		run->run_dir[strlen(run->run_dir) - 1] = '\0';
	run->launcher = strdup(o.launcher ? o.launcher : backend_launcher);
	run->egress = dup_or_null(o.egress);
	run->seccomp = dup_or_null(o.seccomp);
	run->landlock = dup_or_null(o.landlock);
	run->user = dup_or_null(o.user);
	run->reclaim_keep = dup_or_null(o.reclaim_keep);
	if (o.max_procs >= 0)
		snprintf(run->max_procs, sizeof(run->max_procs), "%lld", (long long)o.max_procs);
	if (o.max_memory >= 0)
		snprintf(run->max_memory, sizeof(run->max_memory), "%lld",
			 (long long)o.max_memory);
	run->liveness_ms = o.liveness_ms;
	if (!run->run_dir || !run->launcher || (o.egress && !run->egress) ||
	    (o.seccomp && !run->seccomp) || (o.landlock && !run->landlock) ||
	    (o.user && !run->user) || (o.reclaim_keep && !run->reclaim_keep))
		goto nomem;
	if (nw) {
		run->writable = calloc(nw + 1, sizeof(char *));
		if (!run->writable)
			goto nomem;
		for (i = 0; i < nw; i++)
			if (!(run->writable[i] = strdup(o.writable[i])))
				goto nomem;
	}
	if (run->write_shim && o.shim) {
		if (!(run->shim = mafh__memdup(o.shim, o.shim_len)))
			goto nomem;
		run->shim_len = o.shim_len;
	}
	if (o.program) {
		if (!(run->program = mafh__memdup(o.program, o.program_len)))
			goto nomem;
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
		char p[MAFP_RUN_DIR_MAX + 128];

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

	mafh__core_begin(run);
	run->result.status = MAFH_RUN_RUNNING;
	run->result.exit_code = -1;
	run->result.output = run->output;
	run->result.errors = run->errors;
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
	free(run->user);
	free(run->reclaim_keep);
	free(run->raw_request);
	for (i = 0; run->writable && run->writable[i]; i++)
		free(run->writable[i]);
	free(run->writable);
	mafh_task_free(run->drv_task);
	mafh_backend_state_free(run->drv_backend, run->drv_state);
	if (run->drv_epfd >= 0)
		close(run->drv_epfd);
	free(run->wbuf);
	free(run->launch_in);
	free(run->shim);
	free(run->sframe);
	free(run->sbuf);
	cJSON_Delete(run->call_args);
	free(run->call_text);
	free(run->answer_note);
	mafh__reply_clear(&run->reply);
	free(run->output);
	free(run);
}

const struct mafh_run_result *mafh_run_result(const struct mafh_run *run)
{
	return &run->result;
}


struct mafh_backend *mafh__run_backend(const struct mafh_run *run)
{
	return run->backend;
}

int mafh__run_stop_requested(const struct mafh_run *run)
{
	return atomic_load(&((struct mafh_run *)run)->stop_requested);
}
