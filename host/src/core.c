/* The sans-I/O core: a run as a state machine that hands out the operations it needs and
 * takes their results, performing no I/O itself. Every transition lives in this file: the
 * table below says, for each state, the op it hands out, how the op is made and how its
 * result moves the run on. A run ends one way, through end_run(), which chooses the status
 * and starts the ending ops (ending_next() orders them).
 *
 * The course of a run: write program.py and the shim, exec `maf-launch run`, serve (files:
 * a look for the next request, paced or woken by the backend; wait: `maf-launch wait`;
 * relay: `maf-launch relay`, which writes the last answer, given on its stdin, and waits
 * for the next; where the exec takes no input the answer is written just before), and
 * once the exit marker appears: `maf-launch stop` (which proves the tree is gone and prints
 * the exit record), the output, `maf-launch reclaim`. A run cut short (deadline, stop, error)
 * reads the output first, since it is the only witness of what the program did.
 *
 * Tool calls are handed out as CALL ops rather than called here: a tool is the caller's code,
 * and an async host runs it its own way (mafh_run_call_tool runs the registered callback). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define LAUNCH_OUT_CAP 4096
#define STOP_OUT_CAP (MAFP_EXIT_RECORD_MAX + 1024)
#define WAIT_HEAD_MAX 256
/* A request that does not decode is read once more after this grace: a writer that does not
 * publish through a rename (the program may write request files itself) can be seen torn. */
#define TORN_GRACE_MS 20
/* The ending's own budget (MAFH_ENDING_MS from the moment the run ends, its deadline at the
 * latest), shared out so that whatever the launcher does, the run is over within it: the
 * stop gets all but ENDING_RESERVE_MS, kept for the reads and the reclaim after it, and
 * tells the launcher to give up STOP_MARGIN_MS before its exec is cut, so that it still
 * prints the record. No ending exec gets less than ENDING_EXEC_MIN_MS. */
#define ENDING_RESERVE_MS 4000
#define STOP_MARGIN_MS 1000
#define ENDING_EXEC_MIN_MS 1000
/* The largest response `maf-launch relay` takes on its stdin. A backend holds an exec's
 * input whole (the local one in a memfd, a remote one in the request that starts the exec),
 * so a larger one is written first, by a WRITE op. */
#define RELAY_ANSWER_MAX (48 * 1024)

/* ---- events and errors -------------------------------------------------------------------- */

static void emit(struct mafh_run *run, struct mafh_event *ev)
{
	if (!run->on_event)
		return;
	ev->size = sizeof(*ev);
	ev->time_ms = run->now - run->t_start;
	run->on_event(ev, run->event_ud);
}

/* Adds a sentence to the run's list of errors and reports it as an event. */
static void log_error(struct mafh_run *run, int code, const char *msg)
{
	size_t n = strlen(msg);
	struct mafh_event ev = {.kind = MAFH_EVENT_ERROR, .code = code, .message = msg};

	if (!run->errors_dropped && run->errors_len + n + 64 < sizeof(run->errors)) {
		memcpy(run->errors + run->errors_len, msg, n);
		run->errors_len += n;
		run->errors[run->errors_len++] = '\n';
		run->errors[run->errors_len] = '\0';
	} else {
		run->errors_dropped++;
		snprintf(run->errors + run->errors_len, sizeof(run->errors) - run->errors_len,
			 "(%d more errors)\n", run->errors_dropped);
	}
	emit(run, &ev);
}

/* A failure that does not end the run by itself (or comes after its end began): kept in the
 * list, and as the run's error if it has none yet. */
static void note(struct mafh_run *run, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(struct mafh_run *run, int code, const char *fmt, ...)
{
	char msg[sizeof(run->result.error.message)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!run->result.error.code) {
		run->result.error.code = code;
		memcpy(run->result.error.message, msg, sizeof(msg));
	}
	log_error(run, code, msg);
}

/* The cause of the run's end: the run's error from now on. */
static void vcause(struct mafh_run *run, int code, const char *fmt, va_list ap)
{
	run->result.error.code = code;
	vsnprintf(run->result.error.message, sizeof(run->result.error.message), fmt, ap);
	log_error(run, code, run->result.error.message);
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

/* ---- ending ------------------------------------------------------------------------------- */

/* Frees the arguments, their text and the note of the call last taken. */
static void drop_call_texts(struct mafh_run *run)
{
	cJSON_Delete(run->call_args);
	run->call_args = NULL;
	free(run->call_text);
	run->call_text = NULL;
	free(run->raw_request);
	run->raw_request = NULL;
	run->raw_due = 0;
	free(run->answer_note);
	run->answer_note = NULL;
	run->answer_note_len = 0;
}

static void drop_call(struct mafh_run *run)
{
	free(run->wbuf);
	run->wbuf = NULL;
	drop_call_texts(run);
	run->call_t = NULL;
}

/* The one way a run ends. status MAFH_RUN_RUNNING means the program ended by itself (its
 * exit marker appeared): the status is settled from the record at the end. Any other status
 * cuts the run short, with code and the sentence as its cause. Once the end has begun, a
 * later failure is only noted. */
static void end_run(struct mafh_run *run, enum mafh_run_status status, int code,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void end_run(struct mafh_run *run, enum mafh_run_status status, int code,
		    const char *fmt, ...)
{
	va_list ap;

	if (run->ending) {
		if (fmt) {
			char msg[sizeof(run->result.error.message)];

			va_start(ap, fmt);
			vsnprintf(msg, sizeof(msg), fmt, ap);
			va_end(ap);
			note(run, code, "%s", msg);
		}
		return;
	}
	run->ending = 1;
	run->end_by = (run->now < run->deadline ? run->now : run->deadline) + MAFH_ENDING_MS;
	run->cut = status != MAFH_RUN_RUNNING;
	run->result.status = status;
	if (fmt) {
		va_start(ap, fmt);
		vcause(run, code, fmt, ap);
		va_end(ap);
	}
	drop_call(run);
	run->state = ST_ENDING;
}

/* The next ending op, from what is done: a run cut short reads the output before it stops
 * the tree; one that ended by itself stops it first (stop prints the record). */
static enum mafh__state ending_next(const struct mafh_run *run)
{
	if (run->stream_open)
		return ST_STREAM_CLOSE;
	if (run->launched) {
		if (run->cut && !run->output_read)
			return ST_OUTPUT;
		if (!run->stop_done && run->result.supervisor_pid)
			return ST_STOP;
		if (!run->result.record.have_record && !run->record_looked)
			return ST_RECORD;
		if (!run->output_read)
			return ST_OUTPUT;
	}
	if (!run->keep_run_dir && !run->reclaimed)
		return ST_RECLAIM;
	return ST_DONE;
}

/* Takes an exit record. Returns 0, or -1 (nothing taken) when buf is not one. */
static int take_record(struct mafh_run *run, const char *buf, size_t len)
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
		emit(run, &ev);
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
		note(run, MAFH_EPROTO, "the exit marker said %d but the supervisor's record says "
		     "%s, exit code %d: the record is taken", run->result.exit_code, r->status,
		     r->exit_code);
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

static void finish(struct mafh_run *run)
{
	struct mafh_event ev = {.kind = MAFH_EVENT_RUN_ENDED};

	run->state = ST_DONE;
	if (run->result.status == MAFH_RUN_RUNNING)
		settle_status(run);
	else if (run->result.exit_code < 0 && run->launched && run->result.record.have_record)
		run->result.exit_code = run->result.record.exit_code;
	run->result.output = run->output;
	ev.status = run->result.status;
	ev.exit_code = run->result.exit_code;
	emit(run, &ev);
}

/* ---- op construction ---------------------------------------------------------------------- */

static void op_exec(struct mafh_run *run, struct mafh_op *op, int64_t timeout_ms,
		    size_t out_cap)
{
	op->kind = MAFH_OP_EXEC;
	op->argv = run->argv.v;
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

/* Files transport over a backend (or driver) that can wait for a change. Not fixed at
 * creation: WAIT falls back to FILES when the launcher has no `wait`. */
static int notifying(const struct mafh_run *run)
{
	return run->transport == MAFH_TRANSPORT_FILES && (run->caps & MAFH_CAP_WAIT_CHANGE);
}

/* The next pause waits for the next request or the exit marker, for at most poll_max_ms: the
 * wait is a hint (a notification can miss a directory the program replaced), so looks keep
 * coming at the idle pace of polling. */
static void wait_for_files(struct mafh_run *run)
{
	run->wait_files = 1;
	run->next_look_ms = run->now + run->pacing.poll_max_ms;
}

/* ---- serving ------------------------------------------------------------------------------ */

/* The response for request next_id is text (owned from now on). */
static void answer(struct mafh_run *run, char *text, int refused, const char *sentence)
{
	if (!text) {
		end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory encoding a response");
		return;
	}
	free(run->wbuf);
	run->wbuf = text;
	run->wlen = strlen(text);
	run->answer_refused = refused;
	snprintf(run->answer_sentence, sizeof(run->answer_sentence), "%s", sentence);
	run->state = ST_SERVE;
}

static void refuse(struct mafh_run *run, const char *sentence)
{
	answer(run, mafp_response_encode_refusal(sentence), 1, sentence);
}

/* Request next_id wants no answer (upstream's abandoned marker): the next one is due at
 * once. */
static void step_over(struct mafh_run *run)
{
	run->next_id++;
	mafh__pacing_stepped(&run->pacing);
	run->next_look_ms = run->now;
	run->wait_files = 0;
}

/* Pass-through: the request next_id, as read (buf, or none with OVERSIZED or UNREADABLE),
 * goes to the registry's callback as it is. A holding run reads no request: one found at
 * the last id, where it waits, turns it to polling the exit marker. */
static void take_raw_request(struct mafh_run *run, const char *buf, size_t len, unsigned flags,
			     uint64_t size)
{
	run->request_ms = run->now;
	run->call_tool[0] = '\0';
	if (run->holding) {
		run->hold_polling = 1;
		run->next_look_ms = run->now + run->pacing.poll_max_ms;
		run->wait_files = 0;
		return;
	}
	free(run->raw_request);
	run->raw_request = NULL;
	if (buf) {
		run->raw_request = malloc(len + 1);
		if (!run->raw_request) {
			end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory taking a request");
			return;
		}
		memcpy(run->raw_request, buf, len);
		run->raw_request[len] = '\0';
	}
	run->raw_request_len = buf ? len : 0;
	run->raw_flags = MAFH_CALL_RAW | flags;
	run->raw_size = size;
	run->raw_due = 1;
}

/* A request's bytes arrived (a read or a wait event): step over it, refuse it, or hand it
 * out as a CALL. */
static void take_request(struct mafh_run *run, const char *buf, size_t len)
{
	struct mafh__judged j;

	if (run->reg->pass_through) {
		take_raw_request(run, buf, len, 0, len);
		return;
	}
	run->request_ms = run->now;
	mafh__request_judge(run->reg, &run->limits, run->answered, buf, len, run->next_id, &j);
	memcpy(run->call_tool, j.tool, sizeof(run->call_tool));
	switch (j.verdict) {
	case MAFH__REQ_UNREAD:
		/* Its writer may not be done with the file: the answer gets a file of its own. */
		run->replaces_id = 0;
		if (run->torn_retried_id != run->next_id) {
			/* Maybe torn: look once more after a grace before refusing. */
			run->torn_retried_id = run->next_id;
			run->next_look_ms = run->now + TORN_GRACE_MS;
			run->wait_files = 0;    /* a plain sleep: the file is there already */
			return;
		}
		refuse(run, j.sentence);
		return;
	case MAFH__REQ_STEP_OVER:
		/* Upstream steps over an abandoned id without answering it. */
		step_over(run);
		return;
	case MAFH__REQ_REFUSE:
		refuse(run, j.sentence);
		return;
	case MAFH__REQ_CALL:
		run->call_args = j.args;
		run->call_t = j.t;
		return;
	}
}

static int64_t wait_slice(const struct mafh_run *run)
{
	int64_t left = run->deadline - run->now;

	return clamp64(left < run->wait_slice_ms ? left : run->wait_slice_ms, 1,
		       run->wait_slice_ms);
}

/* The exit marker's bytes: the guest's claim of how the program ended. */
static void take_exit_marker(struct mafh_run *run, const char *buf, size_t len)
{
	long code;

	if (mafp_marker_parse(buf, len, 0, 255, &code) == 0)
		run->result.exit_code = (int)code;
	/* The marker is a claim the program could forge: `maf-launch stop` makes sure no
	 * process of the run survives, and prints the exit record. */
	end_run(run, MAFH_RUN_RUNNING, 0, NULL);
}

/* The launcher command that printed the event being taken. */
static const char *wait_word(const struct mafh_run *run)
{
	if (run->transport == MAFH_TRANSPORT_STREAM)
		return "serve";
	return run->transport == MAFH_TRANSPORT_RELAY && !run->liveness_probe ? "relay" : "wait";
}

static void take_event(struct mafh_run *run, const struct mafh__wait_event *evp);

static void take_wait_event(struct mafh_run *run, const struct mafh_exec_result *x)
{
	struct mafh__wait_event ev;
	char line[160];

	if (x->timed_out || x->exit_code != 0) {
		if (x->exit_code == MAFP_EXIT_USAGE && !run->wait_used &&
		    (run->transport == MAFH_TRANSPORT_WAIT ||
		     run->transport == MAFH_TRANSPORT_RELAY)) {
			/* A launcher without `relay`: fall back to `wait` (an answer carried
			 * is written on its own); without `wait`: to polling the files. */
			run->transport = run->transport == MAFH_TRANSPORT_RELAY
					 ? MAFH_TRANSPORT_WAIT : MAFH_TRANSPORT_FILES;
			run->next_look_ms = run->now;
			return;
		}
		mafh__first_line(line, sizeof(line), x->err, x->err_len);
		end_run(run, MAFH_RUN_ERROR, MAFH_EIO, "maf-launch %s %s%s%s", wait_word(run),
			x->timed_out ? "did not return in time" : "failed", line[0] ? ": " : "",
			line);
		return;
	}
	if (mafh__wait_event_parse(x->out, x->out_len, &ev) != 0) {
		end_run(run, MAFH_RUN_ERROR, MAFH_EPROTO, "maf-launch %s printed no event line",
			wait_word(run));
		return;
	}
	take_event(run, &ev);
}

/* An event of `maf-launch wait`, `relay` or `serve`. */
static void take_event(struct mafh_run *run, const struct mafh__wait_event *evp)
{
	struct mafh__wait_event ev = *evp;
	char line[160];

	run->wait_used = 1;
	switch (ev.kind) {
	case MAFH__WAIT_TIMEOUT:
		return;
	case MAFH__WAIT_EXIT:
		if (mafh__wait_event_whole(&ev))
			take_exit_marker(run, ev.body, ev.body_len);
		else
			/* A marker the program planted as something else: the supervisor will
			 * replace it, or the deadline will end the run. Look again later. */
			run->next_look_ms = run->now + run->pacing.poll_max_ms;
		return;
	case MAFH__WAIT_REQUEST:
		if (ev.id != run->next_id)
			break;
		run->request_ms = run->now;
		run->call_tool[0] = '\0';
		if (ev.unreadable) {
			if (run->reg->pass_through) {
				take_raw_request(run, NULL, 0, MAFH_CALL_UNREADABLE, 0);
				return;
			}
			snprintf(line, sizeof(line), "the request file %04ld is not a regular file "
				 "that can be read", run->next_id);
			refuse(run, line);
		} else if (!mafh__wait_event_whole(&ev) ||
			   ev.size > (double)run->limits.max_request_bytes) {
			if (run->reg->pass_through) {
				take_raw_request(run, NULL, 0, MAFH_CALL_OVERSIZED,
						 ev.size > 0 ? (uint64_t)ev.size : 0);
				return;
			}
			snprintf(line, sizeof(line), "the request is larger than %llu bytes",
				 (unsigned long long)run->limits.max_request_bytes);
			refuse(run, line);
		} else {
			take_request(run, ev.body, ev.body_len);
		}
		return;
	case MAFH__WAIT_LOST:
		end_run(run, MAFH_RUN_LOST, MAFH_EPROTO, "the supervisor %lld ended without "
			"writing the exit marker: the run is lost",
			(long long)run->result.supervisor_pid);
		return;
	case MAFH__WAIT_BAD:
	case MAFH__WAIT_OTHER:
		break;
	}
	end_run(run, MAFH_RUN_ERROR, MAFH_EPROTO, "maf-launch %s printed an unexpected event",
		wait_word(run));
}

/* The answer due goes on the stdin of `maf-launch relay`: the backend's exec takes an input,
 * the launcher's relay takes it there, it is small enough, and there is an id after it to
 * wait for. Otherwise it is written first and the relay only waits: an argv is never a
 * carrier, since every process of the machine may read it in /proc/PID/cmdline. */
static int relay_carries(const struct mafh_run *run)
{
	return run->transport == MAFH_TRANSPORT_RELAY && (run->caps & MAFH_CAP_EXEC_STDIN) &&
	       !run->relay_no_stdin && run->wlen <= RELAY_ANSWER_MAX &&
	       run->next_id < MAFP_CALL_ID_MAX;
}

/* The next serving state, from what is due. */
static enum mafh__state serve_next(struct mafh_run *run)
{
	if (run->hold_polling)
		return run->now < run->next_look_ms ? ST_PAUSE : ST_PROBE_EXIT;
	if (run->transport == MAFH_TRANSPORT_STREAM) {
		if (!run->stream_open)
			return ST_STREAM_OPEN;
		if (run->stream_sent)
			return ST_STREAM_RECV;
		/* An answer goes on the stream, whatever its size (serve takes up to the
		 * response cap), but for the last id, which has no request after it. */
		if (run->wbuf)
			return run->next_id < MAFP_CALL_ID_MAX ? ST_STREAM_SEND : ST_ANSWER;
		if (run->call_args || run->raw_due)
			return ST_CALL;
		if (run->now < run->next_look_ms)
			return ST_PAUSE;     /* a request that did not decode, looked at again */
		if (run->next_id > MAFP_CALL_ID_MAX) {
			end_run(run, MAFH_RUN_ERROR, MAFH_E2BIG, "the program used every call id "
				"up to %d", MAFP_CALL_ID_MAX);
			return ST_ENDING;
		}
		return ST_STREAM_SEND;
	}
	if (run->wbuf)
		return relay_carries(run) ? ST_WAIT_EXEC : ST_ANSWER;
	if (run->call_args || run->raw_due)
		return ST_CALL;
	if (run->now < run->next_look_ms &&
	    !(run->liveness_ms && run->launched && run->transport == MAFH_TRANSPORT_FILES &&
	      run->now >= run->next_liveness_ms))
		return ST_PAUSE;
	if (run->next_id > MAFP_CALL_ID_MAX) {
		end_run(run, MAFH_RUN_ERROR, MAFH_E2BIG, "the program used every call id up to %d",
			MAFP_CALL_ID_MAX);
		return ST_ENDING;
	}
	if (run->transport == MAFH_TRANSPORT_WAIT || run->transport == MAFH_TRANSPORT_RELAY)
		return ST_WAIT_EXEC;
	/* Quiet for a while over files: is the supervisor still there to write the marker? */
	if (run->liveness_ms && run->result.supervisor_pid && run->now >= run->next_liveness_ms) {
		run->liveness_probe = 1;
		return ST_WAIT_EXEC;
	}
	return run->probe_exit_next ? ST_PROBE_EXIT : ST_LOOK;
}

/* ---- the states: how each makes its op and takes its result ------------------------------- */

/* Each emit fills op and returns 1, or returns 0 after moving the run to another state. */

static int emit_write_program(struct mafh_run *run, struct mafh_op *op)
{
	host_tools_path(run, MAFP_FILE_PROGRAM);
	op_write(run, op, run->program, run->program_len);
	return 1;
}

static void take_write_program(struct mafh_run *run, const struct mafh_op_result *res)
{
	if (res->error) {
		end_run(run, MAFH_RUN_ERROR, res->error, "writing the program failed: %s",
			res->detail.message);
		return;
	}
	run->state = run->write_shim ? ST_WRITE_SHIM : ST_LAUNCH;
}

static int emit_write_shim(struct mafh_run *run, struct mafh_op *op)
{
	struct mafh_error e = {0};
	char *text = NULL;
	size_t len = 0;

	if (mafh_shim_source(run->reg, &text, &len, &e) != 0) {
		end_run(run, MAFH_RUN_ERROR, e.code, "%s", e.message);
		return 0;
	}
	free(run->wbuf);
	run->wbuf = text;
	run->wlen = len;
	host_tools_path(run, MAFP_FILE_SHIM);
	op_write(run, op, run->wbuf, run->wlen);
	return 1;
}

static void take_write_shim(struct mafh_run *run, const struct mafh_op_result *res)
{
	free(run->wbuf);
	run->wbuf = NULL;
	if (res->error) {
		end_run(run, MAFH_RUN_ERROR, res->error, "writing the shim failed: %s",
			res->detail.message);
		return;
	}
	run->state = ST_LAUNCH;
}

static int emit_launch(struct mafh_run *run, struct mafh_op *op)
{
	struct mafh__launch_args la = {
		.launcher = run->launcher, .run_dir = run->run_dir,
		.timeout_ms = run->deadline - run->now,
		.max_output_bytes = run->limits.max_output_bytes, .egress = run->egress,
		.seccomp = run->seccomp, .landlock = run->landlock, .user = run->user,
		.max_procs = run->max_procs[0] ? run->max_procs : NULL,
		.max_memory = run->max_memory[0] ? run->max_memory : NULL,
		.writable = run->writable, .prog_argv = run->prog_argv,
	};

	mafh__argv_launch(&run->argv, &la);
	op_exec(run, op, clamp64(run->deadline - run->now, 1, run->exec_timeout_ms),
		LAUNCH_OUT_CAP);
	return 1;
}

static void take_launch(struct mafh_run *run, const struct mafh_op_result *res)
{
	const struct mafh_exec_result *x = &res->exec;
	struct mafp_launch_info info;
	struct mafh_event ev = {.kind = MAFH_EVENT_RUN_STARTED};
	const char *why = NULL;
	char line[200];

	if (res->error) {
		end_run(run, MAFH_RUN_ERROR, res->error, "the launcher could not be run: %s",
			res->detail.message[0] ? res->detail.message : mafh_strerror(res->error));
		return;
	}
	if (x->timed_out) {
		end_run(run, MAFH_RUN_ERROR, MAFH_ETIMEDOUT, "maf-launch run did not return in "
			"time");
		return;
	}
	if (x->exit_code != 0) {
		mafh__first_line(line, sizeof(line), x->err, x->err_len);
		run->result.exit_code = x->exit_code;
		end_run(run, MAFH_RUN_LAUNCH_FAILED, MAFH_ELAUNCH, "maf-launch run failed with "
			"exit code %d: %s", x->exit_code, line[0] ? line : "(no message)");
		return;
	}
	if (mafh__launch_output_parse(x->out, x->out_len, &info, &run->result.session,
				      &why) != 0) {
		end_run(run, MAFH_RUN_ERROR, MAFH_EPROTO, "maf-launch run printed no usable launch "
			"line: %s", why);
		return;
	}
	run->result.pid = info.pid;
	run->result.supervisor_pid = info.supervisor_pid;
	memcpy(run->result.identity, info.identity, sizeof(run->result.identity));
	memcpy(run->result.landlock, info.landlock, sizeof(run->result.landlock));
	run->result.uid = info.uid;
	run->result.gid = info.gid;
	/* The launcher's word, over its own stdout: a program under its own identity, or
	 * under Landlock, cannot write R/host_tools, so the marker and record are the
	 * supervisor's. */
	run->result.verified = strcmp(info.identity, MAFP_IDENTITY_OWN) == 0 ||
			       strncmp(info.landlock, "abi-", 4) == 0;
	run->launched = 1;
	run->next_liveness_ms = run->now + run->liveness_ms;
	run->state = ST_SERVE;
	run->next_look_ms = mafh__pacing_launched(&run->pacing, run->now);
	if (run->transport != MAFH_TRANSPORT_FILES)
		run->next_look_ms = run->now;
	if (notifying(run))
		wait_for_files(run);
	ev.pid = info.pid;
	ev.supervisor_pid = info.supervisor_pid;
	emit(run, &ev);
}

static int emit_look(struct mafh_run *run, struct mafh_op *op)
{
	call_path(run, run->next_id, MAFP_SUFFIX_REQUEST);
	op_read(run, op, run->limits.max_request_bytes);
	return 1;
}

static void take_read_error(struct mafh_run *run, const struct mafh_op_result *res,
			    const char *what)
{
	end_run(run, MAFH_RUN_ERROR, res->error, "reading %s failed: %s", what,
		res->detail.message[0] ? res->detail.message : mafh_strerror(res->error));
}

static void after_miss(struct mafh_run *run)
{
	if (notifying(run))
		wait_for_files(run);
	else
		run->next_look_ms = mafh__pacing_next_after_miss(&run->pacing, run->now);
}

static void take_look(struct mafh_run *run, const struct mafh_op_result *res)
{
	char why[128];

	run->state = ST_SERVE;
	run->replaces_id = 0;
	run->call_tool[0] = '\0';
	if (res->error) {
		take_read_error(run, res, "a request");
		return;
	}
	switch (res->read.status) {
	case MAFH_READ_OK:
		memcpy(run->replaces, run->path, sizeof(run->replaces));
		run->replaces_id = run->next_id;
		mafh__pacing_found(&run->pacing);
		take_request(run, res->read.data ? res->read.data : "", res->read.len);
		break;
	case MAFH_READ_TOO_BIG:
		if (run->reg->pass_through) {
			take_raw_request(run, NULL, 0, MAFH_CALL_OVERSIZED, res->read.size);
			break;
		}
		run->request_ms = run->now;
		snprintf(why, sizeof(why), "the request is larger than %llu bytes",
			 (unsigned long long)run->limits.max_request_bytes);
		refuse(run, why);
		break;
	case MAFH_READ_NOT_REGULAR:
		if (run->reg->pass_through) {
			take_raw_request(run, NULL, 0, MAFH_CALL_UNREADABLE, 0);
			break;
		}
		run->request_ms = run->now;
		snprintf(why, sizeof(why), "the request file %04ld is not a regular file",
			 run->next_id);
		refuse(run, why);
		break;
	case MAFH_READ_ABSENT:
		run->probe_exit_next = mafh__pacing_missed(&run->pacing);
		/* Woken by a change that was not the request: maybe the exit marker. */
		if (notifying(run))
			run->probe_exit_next = 1;
		if (!run->probe_exit_next)
			after_miss(run);
		break;
	}
}

/* A READ of R/host_tools/name, of at most cap bytes. */
static int read_host_tools_file(struct mafh_run *run, struct mafh_op *op, const char *name,
				size_t cap)
{
	host_tools_path(run, name);
	op_read(run, op, cap);
	return 1;
}

static int emit_probe_exit(struct mafh_run *run, struct mafh_op *op)
{
	return read_host_tools_file(run, op, MAFP_MARKER_EXIT_CODE, MAFP_MARKER_MAX);
}

static void take_probe_exit(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->state = ST_SERVE;
	run->probe_exit_next = 0;
	if (res->error)
		take_read_error(run, res, "the exit marker");
	else if (res->read.status == MAFH_READ_OK)
		take_exit_marker(run, res->read.data ? res->read.data : "", res->read.len);
	else
		after_miss(run);
}

static int emit_wait_exec(struct mafh_run *run, struct mafh_op *op)
{
	/* A liveness check looks once, without waiting. */
	int64_t slice = run->liveness_probe ? 0 : wait_slice(run);

	run->relay_carried = 0;
	if (run->transport == MAFH_TRANSPORT_RELAY && !run->liveness_probe) {
		run->relay_carried = run->wbuf && relay_carries(run);
		/* Carrying the answer to next_id, it waits for the request after it. */
		mafh__argv_relay(&run->argv, run->launcher, run->run_dir,
				 run->next_id + run->relay_carried, slice,
				 run->limits.max_request_bytes, run->result.supervisor_pid,
				 run->relay_carried ? run->next_id : 0);
	} else {
		mafh__argv_wait(&run->argv, run->launcher, run->run_dir, run->next_id, slice,
				run->limits.max_request_bytes, run->result.supervisor_pid);
	}
	/* Room for the event line and the largest request it may print; the exec's own
	 * overhead gets a few seconds past the slice, so the deadline is not overrun by more. */
	op_exec(run, op, slice + (run->exec_timeout_ms < 5000 ? run->exec_timeout_ms : 5000),
		run->limits.max_request_bytes + WAIT_HEAD_MAX + 2);
	if (run->relay_carried) {
		op->data = run->wbuf;
		op->len = run->wlen;
		run->result.exec_inputs++;
	}
	return 1;
}

static void answer_written(struct mafh_run *run, int64_t written_ms);

static void take_wait_exec(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->state = ST_SERVE;
	if (run->liveness_probe) {
		run->liveness_probe = 0;
		run->next_liveness_ms = run->now + run->liveness_ms;
		/* A launcher without `wait` or its --supervisor-pid: no more checks. */
		if (!res->error && res->exec.exit_code == MAFP_EXIT_USAGE) {
			run->liveness_ms = 0;
			return;
		}
	}
	if (res->error) {
		end_run(run, MAFH_RUN_ERROR, res->error, "maf-launch %s could not be run: %s",
			wait_word(run), res->detail.message);
		return;
	}
	if (run->relay_carried) {
		run->relay_carried = 0;
		/* The relay writes the answer before it waits, and prints nothing when it could
		 * not: an event means the answer is in place. */
		if (!res->exec.timed_out && res->exec.exit_code == 0) {
			answer_written(run, run->op_started_ms);
		} else if (!res->exec.timed_out && res->exec.exit_code == MAFP_EXIT_USAGE &&
			   run->wait_used) {
			/* A relay that refuses --value-stdin (a launcher older than it) wrote
			 * nothing: the answer, still due, is written first from now on. */
			run->relay_no_stdin = 1;
			log_error(run, MAFH_EPROTO, "maf-launch relay does not take an answer on "
				  "its stdin: writing each answer first");
			return;
		} else if (res->exec.exit_code != MAFP_EXIT_USAGE || run->wait_used) {
			char line[160];

			mafh__first_line(line, sizeof(line), res->exec.err, res->exec.err_len);
			end_run(run, MAFH_RUN_ERROR, MAFH_EIO, "maf-launch relay %s, carrying the "
				"answer to call %ld: %s", res->exec.timed_out ? "did not return in "
				"time" : "failed", run->next_id, line);
			return;
		}
	}
	take_wait_event(run, &res->exec);
}

static int emit_pause(struct mafh_run *run, struct mafh_op *op)
{
	op->kind = MAFH_OP_WAIT_UNTIL;
	op->until_ms = run->next_look_ms < run->deadline ? run->next_look_ms : run->deadline;
	if (run->liveness_ms && run->transport == MAFH_TRANSPORT_FILES &&
	    run->next_liveness_ms < op->until_ms)
		op->until_ms = run->next_liveness_ms;
	run->result.ops.wait++;
	if (run->wait_files && notifying(run) &&
	    mafp_call_file_name(run->wait_request + strlen(MAFP_DIR_CALLS) + 1,
				sizeof(run->wait_request) - strlen(MAFP_DIR_CALLS) - 1, run->next_id,
				MAFP_SUFFIX_REQUEST) == 0) {
		memcpy(run->wait_request, MAFP_DIR_CALLS "/", strlen(MAFP_DIR_CALLS) + 1);
		run->wait_names[0] = run->wait_request;
		run->wait_names[1] = MAFP_MARKER_EXIT_CODE;
		run->wait_names[2] = NULL;
		op->wait_dir = run->wait_dir;
		op->wait_names = run->wait_names;
	}
	return 1;
}

static void take_pause(struct mafh_run *run, const struct mafh_op_result *res)
{
	(void)res;
	run->state = ST_SERVE;
	if (run->op.wait_dir) {
		/* Ended early by a change, or at its end: look now either way. */
		run->wait_files = 0;
		run->next_look_ms = run->now;
	}
}

static int emit_call(struct mafh_run *run, struct mafh_op *op)
{
	if (run->raw_due) {
		run->call = (struct mafh_call){
			.size = sizeof(run->call), .id = run->next_id, .tool = "",
			.arguments = run->raw_request ? run->raw_request : "",
			.arguments_len = run->raw_request_len, .flags = run->raw_flags,
			.request_size = run->raw_size,
		};
		op->kind = MAFH_OP_CALL;
		op->call = &run->call;
		op->fn = run->reg->pt_fn;
		op->ud = run->reg->pt_ud;
		return 1;
	}
	free(run->call_text);
	run->call_text = cJSON_PrintUnformatted(run->call_args);
	if (!run->call_text) {
		end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory handing out a call");
		return 0;
	}
	run->call = (struct mafh_call){
		.size = sizeof(run->call), .id = run->next_id, .tool = run->call_tool,
		.arguments = run->call_text, .arguments_len = strlen(run->call_text),
	};
	op->kind = MAFH_OP_CALL;
	op->call = &run->call;
	op->fn = run->call_t->fn;
	op->ud = run->call_t->ud;
	return 1;
}

/* The answer to a pass-through call: the callback's bytes as the response, a step over,
 * a look again, or holding. */
static void take_raw_call(struct mafh_run *run, const struct mafh_op_result *res)
{
	char sentence[MAFH__SENTENCE_MAX];
	char *text;
	cJSON *o;
	int refused = 0, verbatim = 0;

	run->state = ST_SERVE;
	sentence[0] = '\0';
	switch (res->raw_answer) {
	case MAFH_RAW_STEP_OVER:
		step_over(run);
		return;
	case MAFH_RAW_LOOK_AGAIN:
		/* Not there yet, to the callback (an empty file, not a regular one): looked at
		 * again at the slowest poll, as a supervisor polling for it would. */
		run->replaces_id = 0;
		run->next_look_ms = run->now + run->pacing.poll_max_ms;
		run->wait_files = 0;
		return;
	case MAFH_RAW_HOLD:
		/* Upstream's supervisor reads no request past its bound, and so neither does
		 * this run: it waits at the last id, which no program reaches by counting. */
		run->holding = 1;
		run->replaces_id = 0;
		run->next_id = MAFP_CALL_ID_MAX;
		run->next_look_ms = run->now;
		return;
	case MAFH_RAW_RESPOND:
		break;
	default:
		end_run(run, MAFH_RUN_ERROR, MAFH_EINVAL, "the host's answer to a pass-through call "
			"is not one of respond, step over, look again or hold");
		return;
	}
	if (res->error || !res->value) {
		text = mafh__answer_encode(res, "pass-through", &run->limits,
					   run->total_response_bytes, &refused, sentence,
					   sizeof(sentence));
	} else if (res->value_len > run->limits.max_response_bytes) {
		snprintf(sentence, sizeof(sentence), "the host's response is %zu bytes, more than "
			 "the cap of %llu bytes", res->value_len,
			 (unsigned long long)run->limits.max_response_bytes);
		refused = 1;
		text = mafp_response_encode_refusal(sentence);
	} else {
		text = malloc(res->value_len + 1);
		verbatim = 1;
		if (text) {
			memcpy(text, res->value, res->value_len);
			text[res->value_len] = '\0';
			/* Told apart for the event alone: the bytes go as they are. */
			o = mafp_json_parse(text, res->value_len, res->value_len);
			if (cJSON_IsObject(o) && cJSON_GetObjectItemCaseSensitive(o, "refusal") &&
			    !cJSON_GetObjectItemCaseSensitive(o, "value")) {
				const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "refusal");

				refused = 1;
				snprintf(sentence, sizeof(sentence), "%s",
					 cJSON_IsString(r) ? r->valuestring : "");
				mafh__sentence_clean(sentence);
			}
			cJSON_Delete(o);
		}
	}
	answer(run, text, refused, sentence);
	/* The callback's length, not strlen's: the bytes go as they are, a NUL included. */
	if (text && verbatim)
		run->wlen = res->value_len;
}

static void take_call(struct mafh_run *run, const struct mafh_op_result *res)
{
	char sentence[MAFH__SENTENCE_MAX];
	char *text;
	int refused, raw = run->raw_due;

	drop_call_texts(run);
	if (raw) {
		take_raw_call(run, res);
		mafh__reply_clear(&run->reply);
		return;
	}
	if (res->note && (run->answer_note = malloc(res->note_len + 1))) {
		memcpy(run->answer_note, res->note, res->note_len);
		run->answer_note[res->note_len] = '\0';
		run->answer_note_len = res->note_len;
	}
	text = mafh__answer_encode(res, run->call_tool, &run->limits, run->total_response_bytes,
				   &refused, sentence, sizeof(sentence));
	answer(run, text, refused, sentence);
	mafh__reply_clear(&run->reply);
}

static int emit_answer(struct mafh_run *run, struct mafh_op *op)
{
	call_path(run, run->next_id, MAFP_SUFFIX_RESPONSE);
	op_write(run, op, run->wbuf, run->wlen);
	if (run->replaces_id == run->next_id)
		op->replaces = run->replaces;
	return 1;
}

/* The answer to next_id is in place (at written_ms): counted, reported, and the next id is
 * due. */
static void answer_written(struct mafh_run *run, int64_t written_ms)
{
	struct mafh_event ev = {
		.kind = run->answer_refused ? MAFH_EVENT_CALL_REFUSED : MAFH_EVENT_CALL_SERVED,
		.call_id = run->next_id, .tool = run->call_tool[0] ? run->call_tool : NULL,
		.duration_ms = written_ms - run->request_ms,
		.message = run->answer_refused ? run->answer_sentence : NULL,
		.detail = run->answer_note, .detail_len = run->answer_note_len,
	};
	struct mafh__answered *slot;

	free(run->wbuf);
	run->wbuf = NULL;
	run->replaces_id = 0;
	run->answered++;
	run->result.calls++;
	run->result.refusals += run->answer_refused;
	run->total_response_bytes += run->wlen;
	slot = &run->recent[run->next_id % MAFH__RECENT];
	*slot = (struct mafh__answered){.id = run->next_id, .refused = run->answer_refused};
	emit(run, &ev);
	free(run->answer_note);
	run->answer_note = NULL;
	run->answer_note_len = 0;
	run->next_id++;
	run->next_liveness_ms = run->now + run->liveness_ms;
	run->next_look_ms = mafh__pacing_answered(&run->pacing, run->now);
	if (notifying(run))
		wait_for_files(run);    /* returns at once if the request is there already */
	else if (run->transport == MAFH_TRANSPORT_WAIT || run->transport == MAFH_TRANSPORT_RELAY)
		run->next_look_ms = run->now;   /* the wait itself blocks until it is there */
}

static void take_answer(struct mafh_run *run, const struct mafh_op_result *res)
{
	char name[32];

	run->state = ST_SERVE;
	if (res->error) {
		free(run->wbuf);
		run->wbuf = NULL;
		run->replaces_id = 0;
		mafp_call_file_name(name, sizeof(name), run->next_id, MAFP_SUFFIX_RESPONSE);
		end_run(run, MAFH_RUN_ERROR, res->error, "writing the response %s failed: %s", name,
			res->detail.message[0] ? res->detail.message : mafh_strerror(res->error));
		return;
	}
	answer_written(run, run->now);
}

static int emit_output(struct mafh_run *run, struct mafh_op *op)
{
	return read_host_tools_file(run, op, MAFP_FILE_OUTPUT, run->limits.max_output_bytes);
}

static void take_output(struct mafh_run *run, const struct mafh_op_result *res)
{
	char *o;

	run->state = ST_ENDING;
	run->output_read = 1;
	if (res->error) {
		note(run, res->error, "the program's output could not be read: %s",
		     res->detail.message);
		return;
	}
	if (res->read.status == MAFH_READ_TOO_BIG) {
		run->result.output_truncated = 1;
		note(run, MAFH_E2BIG, "the program's output is larger than %llu bytes",
		     (unsigned long long)run->limits.max_output_bytes);
		return;
	}
	if (res->read.status != MAFH_READ_OK)
		return;
	o = malloc(res->read.len + 1);
	if (!o) {
		note(run, MAFH_ENOMEM, "out of memory reading the output");
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

/* What is left of the ending's budget for an exec that leaves reserve_ms after it. */
static int64_t ending_left(const struct mafh_run *run, int64_t reserve_ms)
{
	return clamp64(run->end_by - run->now - reserve_ms, ENDING_EXEC_MIN_MS,
		       run->exec_timeout_ms);
}

static int emit_stop(struct mafh_run *run, struct mafh_op *op)
{
	int64_t left = ending_left(run, ENDING_RESERVE_MS);
	int64_t wait = left > 2 * STOP_MARGIN_MS ? left - STOP_MARGIN_MS : left / 2;

	mafh__argv_stop(&run->argv, run->launcher, run->run_dir, run->result.supervisor_pid,
			wait);
	op_exec(run, op, left, STOP_OUT_CAP);
	return 1;
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
		note(run, res->error, "maf-launch %s failed: %s", what, res->detail.message);
	else if (res->exec.timed_out)
		note(run, MAFH_ETIMEDOUT, "maf-launch %s did not return within %lld ms, its share "
		     "of the run's ending%s%s", what, (long long)(run->now - run->op_started_ms),
		     line[0] ? ": " : "", line);
	else
		note(run, MAFH_EIO, "maf-launch %s failed (exit code %d)%s%s", what,
		     res->exec.exit_code, line[0] ? ": " : "", line);
	return 1;
}

/* `maf-launch stop` says the run is lost: the supervisor is gone and left no marker and
 * record of its own. */
#define STOP_EXIT_LOST 3

static void take_stop(struct mafh_run *run, const struct mafh_op_result *res)
{
	size_t n = res->exec.out_len;
	char line[200];

	run->state = ST_ENDING;
	run->stop_done = 1;
	if (!res->error && !res->exec.timed_out && res->exec.exit_code == STOP_EXIT_LOST) {
		mafh__first_line(line, sizeof(line), res->exec.err, res->exec.err_len);
		if (run->result.status != MAFH_RUN_LOST) {
			run->result.status = MAFH_RUN_LOST;
			cause(run, MAFH_EPROTO, "%s", line[0] ? line : "maf-launch stop: the run is "
			      "lost");
		}
		return;
	}
	if (ending_exec_failed(run, res, "stop"))
		return;
	/* stop prints the exit record when there is one, and nothing else. */
	while (n && (res->exec.out[n - 1] == '\n' || res->exec.out[n - 1] == '\r'))
		n--;
	if (!n)
		run->stop_silent = 1;
	else if (take_record(run, res->exec.out, n) != 0)
		note(run, MAFH_EPROTO, "maf-launch stop printed what is not an exit record "
		     "(%zu bytes): the record is read from its file", n);
}

static int emit_record(struct mafh_run *run, struct mafh_op *op)
{
	return read_host_tools_file(run, op, MAFP_FILE_EXIT_RECORD, MAFP_EXIT_RECORD_MAX);
}

static void take_record_read(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->state = ST_ENDING;
	run->record_looked = 1;
	if (!res->error && res->read.status == MAFH_READ_OK) {
		/* stop prints the record whenever there is one: a stop that said nothing
		 * while the supervisor left one is not the launcher's. */
		if (run->stop_silent)
			note(run, MAFH_EPROTO, "maf-launch stop printed no exit record, yet the "
			     "supervisor left one: the record is taken from the file");
		(void)take_record(run, res->read.data ? res->read.data : "", res->read.len);
	}
}

static int emit_reclaim(struct mafh_run *run, struct mafh_op *op)
{
	mafh__argv_reclaim(&run->argv, run->launcher, run->run_dir, run->reclaim_keep);
	op_exec(run, op, ending_left(run, 0), LAUNCH_OUT_CAP);
	return 1;
}

static void take_reclaim(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->state = ST_ENDING;
	run->reclaimed = 1;
	ending_exec_failed(run, res, "reclaim");
}

/* ---- the stream ----------------------------------------------------------------------------- */

/* The stream broke (its command ended or was killed, the connection dropped, or it printed
 * what is not an event): closed, and the run goes on with relay (or files). An answer sent
 * without its event is still in wbuf, and is carried again: writing it twice is harmless,
 * running the tool twice would not be, and never happens. */
static void stream_broken(struct mafh_run *run, int code, const char *why)
{
	char msg[sizeof(run->result.error.message)];
	enum mafh_transport to = (run->caps & MAFH_CAP_BLOCKING_EXEC) ? MAFH_TRANSPORT_RELAY
								       : MAFH_TRANSPORT_FILES;

	snprintf(msg, sizeof(msg), "the stream of maf-launch serve broke (%s): going on with "
		 "the %s transport", why, mafh_transport_name(to));
	log_error(run, code, msg);
	run->transport = to;
	run->stream_sent = 0;
	run->stream_carried = 0;
	run->slen = 0;
	run->next_look_ms = run->now;
	run->state = run->stream_open ? ST_STREAM_CLOSE : ST_SERVE;
}

static int emit_stream_open(struct mafh_run *run, struct mafh_op *op)
{
	mafh__argv_serve(&run->argv, run->launcher, run->run_dir, run->limits.max_request_bytes,
			 run->limits.max_response_bytes, run->result.supervisor_pid);
	op->kind = MAFH_OP_STREAM_OPEN;
	op->argv = run->argv.v;
	run->result.ops.exec++;
	run->result.streams_opened++;
	return 1;
}

static void take_stream_open(struct mafh_run *run, const struct mafh_op_result *res)
{
	char why[sizeof(res->detail.message) + 32];

	run->state = ST_SERVE;
	if (res->error) {
		snprintf(why, sizeof(why), "it could not be opened: %s", res->detail.message[0]
			 ? res->detail.message : mafh_strerror(res->error));
		stream_broken(run, res->error, why);
		return;
	}
	run->stream_open = 1;
}

static int emit_stream_send(struct mafh_run *run, struct mafh_op *op)
{
	char head[96];
	int n;

	if (run->wbuf)
		n = snprintf(head, sizeof(head), "{\"answer\":%ld,\"size\":%zu}\n", run->next_id,
			     run->wlen);
	else
		n = snprintf(head, sizeof(head), "{\"next\":%ld}\n", run->next_id);
	free(run->sframe);
	run->sframe = malloc((size_t)n + (run->wbuf ? run->wlen : 0));
	if (!run->sframe) {
		end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory framing a response");
		return 0;
	}
	memcpy(run->sframe, head, (size_t)n);
	if (run->wbuf)
		memcpy(run->sframe + n, run->wbuf, run->wlen);
	run->sframe_len = (size_t)n + (run->wbuf ? run->wlen : 0);
	run->stream_carried = run->wbuf != NULL;
	op->kind = MAFH_OP_STREAM_WRITE;
	op->data = run->sframe;
	op->len = run->sframe_len;
	return 1;
}

static void take_stream_send(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->state = ST_SERVE;
	free(run->sframe);
	run->sframe = NULL;
	if (res->error) {
		stream_broken(run, res->error, res->detail.message[0] ? res->detail.message
			      : mafh_strerror(res->error));
		return;
	}
	run->stream_sent = 1;
}

#define STREAM_READ_CAP 65536

static int emit_stream_recv(struct mafh_run *run, struct mafh_op *op)
{
	op->kind = MAFH_OP_STREAM_READ;
	op->until_ms = run->deadline;
	op->cap = STREAM_READ_CAP;
	return 1;
}

static void take_stream_recv(struct mafh_run *run, const struct mafh_op_result *res)
{
	uint64_t max_body = run->limits.max_request_bytes > MAFP_MARKER_MAX
			    ? run->limits.max_request_bytes : MAFP_MARKER_MAX;
	struct mafh__wait_event ev;
	long n;

	run->state = ST_SERVE;
	if (res->stream_len) {
		if (run->slen + res->stream_len > max_body + 512) {
			stream_broken(run, MAFH_EPROTO, "it printed more than an event holds");
			return;
		}
		if (mafh__append(&run->sbuf, &run->slen, &run->scap, SIZE_MAX, res->stream_data,
				 res->stream_len) < 0) {
			end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory reading the stream");
			return;
		}
	}
	n = run->slen ? mafh__stream_event_len(run->sbuf, run->slen, max_body, &ev) : 0;
	if (n < 0 || (n > 0 && (size_t)n != run->slen)) {
		/* serve prints one event a frame, and only then. */
		stream_broken(run, MAFH_EPROTO, "it printed what is not one event");
		return;
	}
	if (n == 0) {
		if (res->stream_ended || (res->error && res->error != MAFH_ETIMEDOUT))
			stream_broken(run, res->error ? res->error : MAFH_EPIPE,
				      res->detail.message[0] ? res->detail.message
				      : "its output ended");
		return;
	}
	run->slen = 0;
	run->stream_sent = 0;
	if (run->stream_carried) {
		/* The event means the answer is in place. */
		run->stream_carried = 0;
		answer_written(run, run->op_started_ms);
	}
	if (ev.kind == MAFH__WAIT_TIMEOUT)
		return;             /* serve never times out; a host may ask again all the same */
	take_event(run, &ev);
}

static int emit_stream_close(struct mafh_run *run, struct mafh_op *op)
{
	(void)run;
	op->kind = MAFH_OP_STREAM_CLOSE;
	return 1;
}

static void take_stream_close(struct mafh_run *run, const struct mafh_op_result *res)
{
	(void)res;
	run->stream_open = 0;
	run->stream_sent = 0;
	run->slen = 0;
	run->state = run->ending ? ST_ENDING : ST_SERVE;
}

/* Every state's op: its kind, how it is made, how its result is taken. SERVE and ENDING
 * choose the next state; DONE hands out DONE. */
static const struct {
	enum mafh_op_kind kind;
	int live;     /* the deadline and a stop request cut the run short here */
	int (*emit)(struct mafh_run *run, struct mafh_op *op);
	void (*take)(struct mafh_run *run, const struct mafh_op_result *res);
} states[ST_COUNT] = {
	[ST_WRITE_PROGRAM] = {MAFH_OP_WRITE, 1, emit_write_program, take_write_program},
	[ST_WRITE_SHIM] = {MAFH_OP_WRITE, 1, emit_write_shim, take_write_shim},
	[ST_LAUNCH] = {MAFH_OP_EXEC, 1, emit_launch, take_launch},
	[ST_SERVE] = {MAFH_OP_DONE, 1, NULL, NULL},
	[ST_LOOK] = {MAFH_OP_READ, 1, emit_look, take_look},
	[ST_PROBE_EXIT] = {MAFH_OP_READ, 1, emit_probe_exit, take_probe_exit},
	[ST_WAIT_EXEC] = {MAFH_OP_EXEC, 1, emit_wait_exec, take_wait_exec},
	[ST_PAUSE] = {MAFH_OP_WAIT_UNTIL, 1, emit_pause, take_pause},
	[ST_CALL] = {MAFH_OP_CALL, 1, emit_call, take_call},
	[ST_ANSWER] = {MAFH_OP_WRITE, 1, emit_answer, take_answer},
	[ST_ENDING] = {MAFH_OP_DONE, 0, NULL, NULL},
	[ST_OUTPUT] = {MAFH_OP_READ, 0, emit_output, take_output},
	[ST_STOP] = {MAFH_OP_EXEC, 0, emit_stop, take_stop},
	[ST_RECORD] = {MAFH_OP_READ, 0, emit_record, take_record_read},
	[ST_RECLAIM] = {MAFH_OP_EXEC, 0, emit_reclaim, take_reclaim},
	[ST_STREAM_OPEN] = {MAFH_OP_STREAM_OPEN, 1, emit_stream_open, take_stream_open},
	[ST_STREAM_SEND] = {MAFH_OP_STREAM_WRITE, 1, emit_stream_send, take_stream_send},
	[ST_STREAM_RECV] = {MAFH_OP_STREAM_READ, 1, emit_stream_recv, take_stream_recv},
	[ST_STREAM_CLOSE] = {MAFH_OP_STREAM_CLOSE, 0, emit_stream_close, take_stream_close},
	[ST_DONE] = {MAFH_OP_DONE, 0, NULL, NULL},
};

void mafh__core_begin(struct mafh_run *run)
{
	run->state = run->program ? ST_WRITE_PROGRAM : ST_LAUNCH;
	run->next_id = 1;
}

int mafh_run_next_op(struct mafh_run *run, int64_t now_ms, const struct mafh_op **opp)
{
	struct mafh_op *op;

	if (!run || !opp)
		return MAFH_EINVAL;
	if (run->pending)
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
	if (run->state != ST_DONE)
		run->result.wall_ms = now_ms - run->t_start;
	for (;;) {
		if (states[run->state].live && !run->ending) {
			if (atomic_load(&run->stop_requested))
				end_run(run, MAFH_RUN_STOPPED, MAFH_ECANCELED,
					"the run was stopped by the host");
			else if (now_ms >= run->deadline)
				end_run(run, MAFH_RUN_TIMEOUT, MAFH_ETIMEDOUT,
					"the run's deadline of %lld ms passed",
					(long long)run->timeout_ms);
		}
		switch (run->state) {
		case ST_SERVE:
			run->state = serve_next(run);
			continue;
		case ST_ENDING:
			run->state = ending_next(run);
			if (run->state == ST_DONE)
				finish(run);
			continue;
		case ST_DONE:
			op->kind = MAFH_OP_DONE;
			return 0;
		default:
			break;
		}
		if (states[run->state].emit(run, op))
			break;
	}
	run->pending = 1;
	run->op_started_ms = now_ms;
	return 0;
}

int mafh_run_op_result(struct mafh_run *run, int64_t now_ms, const struct mafh_op_result *res)
{
	if (!run || !res || !run->pending || res->kind != states[run->state].kind)
		return MAFH_EINVAL;
	run->pending = 0;
	run->drv_call_out = 0;
	run->now = now_ms;
	run->result.wall_ms = now_ms - run->t_start;
	if (res->kind == MAFH_OP_READ || res->kind == MAFH_OP_WRITE || res->kind == MAFH_OP_STAT)
		mafh__pacing_observe(&run->pacing, now_ms - run->op_started_ms);
	states[run->state].take(run, res);
	run->result.transport = run->transport;
	return 0;
}

int mafh_run_call_tool(struct mafh_run *run, const struct mafh_op *op,
		       struct mafh_op_result *res)
{
	struct mafh_reply *reply;
	int rc;

	if (!run || !op || !res || !run->pending || run->state != ST_CALL ||
	    op->call != &run->call)
		return MAFH_EINVAL;
	reply = &run->reply;
	mafh__reply_clear(reply);
	if (!op->fn) {
		res->refusal = "this host serves the tool through no callback";
		return 0;
	}
	rc = op->fn(op->call, reply, op->ud);
	if (rc < 0)
		res->error = rc;
	res->value = reply->value;
	res->value_len = reply->value_len;
	res->refusal = reply->refusal;
	res->note = reply->note;
	res->note_len = reply->note_len;
	res->raw_answer = reply->raw_answer;
	return 0;
}
