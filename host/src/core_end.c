/* The end of a run: mafh__end_run, the one way a run ends, and the ending's ops in the order
 * ENDING chooses them (core.c): the stream closed, the output, `maf-launch stop` (which
 * proves the tree is gone and prints the exit record), the record's file, `maf-launch
 * reclaim`. Failures along the ending are noted and the ending goes on. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define STOP_OUT_CAP (MAFP_EXIT_RECORD_MAX + 1024)
/* The ending's own budget (ending_ms, MAFH_ENDING_MS by default, from the moment the run
 * ends, its deadline at the latest), shared out so that whatever the launcher does, the run
 * is over within it: the stop gets all but a reserve of 4/15 of it (4 s of the default
 * 15), kept for the reads and the reclaim after it, and tells the launcher to give up a
 * margin of 1/15 of it (1 s) before its exec is cut, so that it still prints the record.
 * No ending exec gets less than ENDING_EXEC_MIN_MS. */
#define ENDING_RESERVE(run) ((run)->ending_ms * 4 / 15)
#define STOP_MARGIN(run) ((run)->ending_ms / 15)
#define ENDING_EXEC_MIN_MS 1000
/* `maf-launch stop` says the run is lost: the supervisor is gone and left no marker and
 * record of its own. */
#define STOP_EXIT_LOST 3
/* `maf-launch stop --reclaim` says the run has ended and all is printed, but R could not
 * be deleted. */
#define STOP_EXIT_NOT_RECLAIMED 4
/* The largest output a stop is asked to bring back: past it the output is read as a file. */
#define STOP_OUTPUT_MAX (256ULL << 20)

/* The cause of the run's end: the run's error from now on. */
static void vcause(struct mafh_run *run, int code, const char *fmt, va_list ap)
{
	run->result.error.code = code;
	vsnprintf(run->result.error.message, sizeof(run->result.error.message), fmt, ap);
	mafh__log_error(run, code, run->result.error.message);
}

static void cause(struct mafh_run *run, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void cause(struct mafh_run *run, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vcause(run, code, fmt, ap);
	va_end(ap);
}

static void drop_call(struct mafh_run *run)
{
	free(run->wbuf);
	run->wbuf = NULL;
	mafh__drop_call_texts(run);
	run->call_t = NULL;
}

void mafh__end_run(struct mafh_run *run, enum mafh_run_status status, int code,
		   const char *fmt, ...)
{
	va_list ap;

	if (run->ending) {
		if (fmt) {
			char msg[sizeof(run->result.error.message)];

			va_start(ap, fmt);
			vsnprintf(msg, sizeof(msg), fmt, ap);
			va_end(ap);
			mafh__note(run, code, "%s", msg);
		}
		return;
	}
	run->ending = 1;
	run->end_by = (run->now < run->deadline ? run->now : run->deadline) + run->ending_ms;
	run->cut = status != MAFH_RUN_RUNNING;
	run->result.status = status;
	if (fmt) {
		va_start(ap, fmt);
		vcause(run, code, fmt, ap);
		va_end(ap);
	}
	drop_call(run);
}

/* Takes an exit record. Returns 0, or -1 (nothing taken) when buf is not one. */
static int record_take(struct mafh_run *run, const char *buf, size_t len)
{
	struct mafp_exit_record rec;
	struct mafh_exit_record *r = &run->result.record;
	const char *why;

	if (mafp_exit_record_decode(buf, len, &rec, &why) != 0)
		return -1;
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
	r->undelivered = rec.n_undelivered;
	memcpy(r->seccomp, rec.seccomp, sizeof(r->seccomp));
	memcpy(r->landlock, rec.landlock, sizeof(r->landlock));
	memcpy(r->error, rec.error, sizeof(r->error));
	if (rec.output_truncated)
		run->result.output_truncated = 1;
	/* Answers the program never received: calls the launcher's channel still owed when
	 * the program ended. The host wrote them, but they are not calls served. */
	for (int i = 0; i < rec.n_undelivered; i++) {
		long id = rec.undelivered[i];
		struct mafh__answered *a = &run->recent[id % MAFH__RECENT];
		struct mafh_event ev = {.kind = MAFH_EVENT_CALL_UNDELIVERED, .call_id = id};

		if (a->id != id)
			continue;   /* never answered: nothing to take back */
		run->result.calls--;
		run->result.refusals -= a->refused;
		run->result.undelivered++;
		a->id = 0;
		mafh__event(run, &ev);
	}
	return 0;
}

/* The status of a run that ended by itself, from the marker and the record. */
static void settle_status(struct mafh_run *run)
{
	const struct mafh_exit_record *r = &run->result.record;

	/* The verdict is the supervisor's record. The exit marker, and a wait, relay or serve
	 * event quoting it, is a claim: a record that disagrees wins and the disagreement is an
	 * error of the run, and a claim no record confirms is never verified. */
	if (r->have_record && run->result.exit_code >= 0 && run->result.exit_code != r->exit_code) {
		mafh__note(run, MAFH_EPROTO, "the exit marker said %d but the supervisor's record "
			   "says %s, exit code %d: the record is taken", run->result.exit_code,
			   r->status, r->exit_code);
		run->result.verified = 0;
		run->result.exit_code = r->exit_code;
	} else if (!r->have_record) {
		run->result.verified = 0;
	}
	if (run->result.exit_code < 0 && r->have_record)
		run->result.exit_code = r->exit_code;
	if (run->result.exit_code < 0) {
		run->result.status = MAFH_RUN_ERROR;
		cause(run, MAFH_EPROTO, "the exit marker is not a decimal exit code and there is "
		      "no exit record");
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

void mafh__finish(struct mafh_run *run)
{
	struct mafh_event ev = {.kind = MAFH_EVENT_RUN_ENDED};

	if (run->result.status == MAFH_RUN_RUNNING)
		settle_status(run);
	else if (run->result.exit_code < 0 && run->launched && run->result.record.have_record)
		run->result.exit_code = run->result.record.exit_code;
	run->result.output = run->output;
	ev.status = run->result.status;
	ev.exit_code = run->result.exit_code;
	mafh__event(run, &ev);
}

/* ---- the ending's ops --------------------------------------------------------------------- */

static void output_over(struct mafh_run *run)
{
	run->result.output_truncated = 1;
	mafh__note(run, MAFH_E2BIG, "the program's output is larger than %llu bytes",
		   (unsigned long long)run->limits.max_output_bytes);
}

/* The whole output, data[0..len): kept as the run's. */
static enum mafh__outcome output_take(struct mafh_run *run, const char *data, size_t len)
{
	char *o = malloc(len + 1);

	if (!o) {
		mafh__note(run, MAFH_ENOMEM, "out of memory reading the output");
		return OC_FAILED;
	}
	if (len)
		memcpy(o, data, len);
	o[len] = '\0';
	free(run->output);
	run->output = o;
	run->result.output = o;
	run->result.output_len = len;
	return OC_OK;
}

enum mafh__outcome mafh__emit_output(struct mafh_run *run, struct mafh_op *op)
{
	mafh__read_host_tools_file(run, op, MAFP_FILE_OUTPUT, run->limits.max_output_bytes);
	return OC_PENDING;
}

enum mafh__outcome mafh__take_output(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->output_read = 1;
	if (res->error) {
		mafh__note(run, res->error, "the program's output could not be read: %s",
			   res->detail.message);
		return OC_FAILED;
	}
	if (res->read.status == MAFH_READ_TOO_BIG) {
		output_over(run);
		return OC_FAILED;
	}
	if (res->read.status != MAFH_READ_OK)
		return OC_ABSENT;
	return output_take(run, res->read.data, res->read.len);
}

/* What is left of the ending's budget for an exec that leaves reserve_ms after it. */
static int64_t ending_left(const struct mafh_run *run, int64_t reserve_ms)
{
	return mafh__clamp64(run->end_by - run->now - reserve_ms, ENDING_EXEC_MIN_MS,
			     run->exec_timeout_ms);
}

/* The stop carries what it can of the rest of the ending: the output where the backend's
 * exec brings stdout back byte for byte and it is still to be read, and then the reclaim, R
 * being of no more use once both are out. */
enum mafh__outcome mafh__emit_stop(struct mafh_run *run, struct mafh_op *op)
{
	int64_t left = ending_left(run, ENDING_RESERVE(run));
	int64_t wait = left > 2 * STOP_MARGIN(run) ? left - STOP_MARGIN(run) : left / 2;
	uint64_t max = run->limits.max_output_bytes;
	size_t cap = STOP_OUT_CAP;

	run->stop_output = !run->stop_plain && !run->output_read &&
			   (run->caps & MAFH_CAP_EXEC_EXACT) && max <= STOP_OUTPUT_MAX;
	run->stop_reclaim = !run->stop_plain && !run->keep_run_dir && !run->reclaimed &&
			    (run->output_read || run->stop_output);
	if (run->stop_output)
		cap += (size_t)max + 64;
	mafh__argv_stop(&run->argv, run->launcher, run->run_dir, run->result.supervisor_pid,
			wait, run->stop_output ? (long long)max : -1, run->stop_reclaim,
			run->reclaim_keep);
	mafh__op_exec(run, op, left, cap);
	return OC_PENDING;
}

/* A launcher command of the ending that failed: noted, the run goes on ending. */
static int ending_exec_failed(struct mafh_run *run, const struct mafh_op_result *res,
			      const char *what)
{
	char line[160];

	if (!res->error && !res->exec.timed_out && res->exec.exit_code == 0)
		return 0;
	mafh__first_line(line, sizeof(line), res->exec.err, res->exec.err_len);
	if (res->error)
		mafh__note(run, res->error, "maf-launch %s failed: %s", what, res->detail.message);
	else if (res->exec.timed_out)
		mafh__note(run, MAFH_ETIMEDOUT, "maf-launch %s did not return within %lld ms, its "
			   "share of the run's ending%s%s", what,
			   (long long)(run->now - run->op_started_ms), line[0] ? ": " : "", line);
	else
		mafh__note(run, MAFH_EIO, "maf-launch %s failed (exit code %d)%s%s", what,
			   res->exec.exit_code, line[0] ? ": " : "", line);
	return 1;
}

/* What a stop with --output printed after the record's line, out[0..n): the output taken
 * (output_read set) or not. Returns 1 when R may be gone (the output is out, or there is
 * none to have), 0 when the output is still there to read, -1 when it is not what stop
 * prints. */
static int stop_output_take(struct mafh_run *run, const char *out, size_t n)
{
	const char *nl = memchr(out, '\n', n);
	size_t line = nl ? (size_t)(nl - out) : 0, body, i;
	unsigned long long b = 0;

	if (!nl || line < 8 || memcmp(out, "output ", 7) != 0)
		return -1;
	body = n - line - 1;
	if (line == 13 && memcmp(out + 7, "absent", 6) == 0 && !body) {
		run->output_read = 1;
		return 1;
	}
	if (line == 11 && memcmp(out + 7, "over", 4) == 0 && !body) {
		run->output_read = 1;
		output_over(run);
		return 1;
	}
	if (line == 17 && memcmp(out + 7, "unreadable", 10) == 0 && !body)
		return 0;
	/* 'output B': B decimal, no leading zero but for 0 itself, and B bytes to the end. */
	if (line - 7 > 19 || (out[7] == '0' && line > 8))
		return -1;
	for (i = 7; i < line; i++) {
		if (out[i] < '0' || out[i] > '9')
			return -1;
		b = b * 10 + (unsigned)(out[i] - '0');
	}
	if (b != body || b > run->limits.max_output_bytes)
		return -1;
	run->output_read = 1;
	output_take(run, nl + 1, body);
	return 1;
}

enum mafh__outcome mafh__take_stop(struct mafh_run *run, const struct mafh_op_result *res)
{
	size_t n = res->exec.out_len;
	const char *out = res->exec.out, *nl;
	int code = res->exec.exit_code, gone = 1;
	char line[200];

	/* A launcher that does not know --output or --reclaim says so as a usage error, and
	 * signals nothing: asked once more without them. */
	if ((run->stop_output || run->stop_reclaim) && !res->error && !res->exec.timed_out &&
	    code == MAFP_EXIT_USAGE) {
		run->stop_plain = 1;
		return OC_FAILED;
	}
	run->stop_done = 1;
	if (!res->error && !res->exec.timed_out && code == STOP_EXIT_LOST) {
		mafh__first_line(line, sizeof(line), res->exec.err, res->exec.err_len);
		if (run->result.status != MAFH_RUN_LOST) {
			run->result.status = MAFH_RUN_LOST;
			cause(run, MAFH_EPROTO, "%s", line[0] ? line : "maf-launch stop: the run is "
			      "lost");
		}
		return OC_LOST;
	}
	if (run->stop_reclaim && !res->error && !res->exec.timed_out &&
	    code == STOP_EXIT_NOT_RECLAIMED) {
		/* Ended, and all printed: only the reclaim failed, and it is not tried again. */
		mafh__first_line(line, sizeof(line), res->exec.err, res->exec.err_len);
		mafh__note(run, MAFH_EIO, "maf-launch stop could not reclaim the run directory%s%s",
			   line[0] ? ": " : "", line);
		run->reclaimed = 1;
	} else if (ending_exec_failed(run, res, "stop")) {
		return OC_FAILED;
	}
	if (run->stop_output) {
		/* The record's line (empty when there is none), then the output's. */
		nl = n ? memchr(out, '\n', n) : NULL;
		gone = nl ? stop_output_take(run, nl + 1, n - (size_t)(nl + 1 - out)) : -1;
		if (gone < 0) {
			mafh__note(run, MAFH_EPROTO, "maf-launch stop printed what is not an exit "
				   "record and an output (%zu bytes): both are read from their files",
				   n);
			return OC_FAILED;
		}
		n = (size_t)(nl - out);
	}
	/* stop prints the exit record when there is one, and nothing else. */
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	if (!n) {
		run->stop_silent = 1;
	} else if (record_take(run, out, n) != 0) {
		mafh__note(run, MAFH_EPROTO, "maf-launch stop printed what is not an exit record "
			   "(%zu bytes): the record is read from its file", n);
		return OC_FAILED;
	}
	/* With a record printed, stop has deleted R as it was asked. */
	if (run->stop_reclaim && !run->stop_silent && gone > 0)
		run->reclaimed = 1;
	return OC_OK;
}

enum mafh__outcome mafh__emit_record(struct mafh_run *run, struct mafh_op *op)
{
	mafh__read_host_tools_file(run, op, MAFP_FILE_EXIT_RECORD, MAFP_EXIT_RECORD_MAX);
	return OC_PENDING;
}

enum mafh__outcome mafh__take_record(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->record_looked = 1;
	if (res->error)
		return OC_FAILED;
	if (res->read.status != MAFH_READ_OK)
		return OC_ABSENT;
	/* stop prints the record whenever there is one: a stop that said nothing while the
	 * supervisor left one is not the launcher's. */
	if (run->stop_silent)
		mafh__note(run, MAFH_EPROTO, "maf-launch stop printed no exit record, yet the "
			   "supervisor left one: the record is taken from the file");
	if (record_take(run, res->read.data ? res->read.data : "", res->read.len) != 0)
		return OC_FAILED;
	return OC_OK;
}

enum mafh__outcome mafh__emit_reclaim(struct mafh_run *run, struct mafh_op *op)
{
	mafh__argv_reclaim(&run->argv, run->launcher, run->run_dir, run->reclaim_keep);
	mafh__op_exec(run, op, ending_left(run, 0), MAFH__LAUNCH_OUT_CAP);
	return OC_PENDING;
}

enum mafh__outcome mafh__take_reclaim(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->reclaimed = 1;
	return ending_exec_failed(run, res, "reclaim") ? OC_FAILED : OC_OK;
}
