/* Serving requests, strictly in id order: found by a look at the request file (files), or in
 * an event of `maf-launch wait`, `relay` or `serve`; judged, then refused, stepped over or
 * handed out as a CALL; the answer encoded and written, or carried by the next relay or
 * frame. The exit marker is looked at only when no request waits. */
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define WAIT_HEAD_MAX 256
/* A request that does not decode is read once more after this grace: a writer that does not
 * publish through a rename (the program may write request files itself) can be seen torn. */
#define TORN_GRACE_MS 20
/* The largest response `maf-launch relay` takes on its stdin. A backend holds an exec's
 * input whole (the local one in a memfd, a remote one in the request that starts the exec),
 * so a larger one is written first, by a WRITE op. */
#define RELAY_ANSWER_MAX (48 * 1024)
/* How far past the run's deadline a waiting exec may go, at most (its start and its output's
 * way back). */
#define EXEC_PAST_DEADLINE_MS 5000

/* The next pause waits for the next request or the exit marker, for at most poll_max_ms: the
 * wait is a hint (a notification can miss a directory the program replaced), so looks keep
 * coming at the idle pace of polling. */
void mafh__wait_for_files(struct mafh_run *run)
{
	run->wait_files = 1;
	run->next_look_ms = run->now + run->pacing.poll_max_ms;
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

/* ---- requests ----------------------------------------------------------------------------- */

/* The response for request next_id is text (owned from now on). 0, or -1 when the run ended
 * (out of memory). */
static int answer(struct mafh_run *run, char *text, int refused, const char *sentence)
{
	if (!text) {
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory encoding a "
			      "response");
		return -1;
	}
	free(run->wbuf);
	run->wbuf = text;
	run->wlen = strlen(text);
	run->answer_refused = refused;
	snprintf(run->answer_sentence, sizeof(run->answer_sentence), "%s", sentence);
	return 0;
}

static int refuse(struct mafh_run *run, const char *sentence)
{
	return answer(run, mafp_response_encode_refusal(sentence), 1, sentence);
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
 * the last id, where it waits, turns it to polling the exit marker. 0, or -1 when the run
 * ended (out of memory). */
static int take_raw_request(struct mafh_run *run, const char *buf, size_t len, unsigned flags,
			    uint64_t size)
{
	run->request_ms = run->now;
	run->call_tool[0] = '\0';
	if (run->holding) {
		run->hold_polling = 1;
		run->next_look_ms = run->now + run->pacing.poll_max_ms;
		run->wait_files = 0;
		return 0;
	}
	free(run->raw_request);
	run->raw_request = NULL;
	if (buf) {
		run->raw_request = malloc(len + 1);
		if (!run->raw_request) {
			mafh__end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory taking a "
				      "request");
			return -1;
		}
		memcpy(run->raw_request, buf, len);
		run->raw_request[len] = '\0';
	}
	run->raw_request_len = buf ? len : 0;
	run->raw_flags = MAFH_CALL_RAW | flags;
	run->raw_size = size;
	run->raw_due = 1;
	return 0;
}

/* A request's bytes arrived (a read or a wait event): step over it, refuse it, or hand it
 * out as a CALL. OC_REQUEST, or OC_FAILED when the run ended. */
static enum mafh__outcome take_request(struct mafh_run *run, const char *buf, size_t len)
{
	struct mafh__judged j;

	if (run->reg->pass_through)
		return take_raw_request(run, buf, len, 0, len) ? OC_FAILED : OC_REQUEST;
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
			return OC_REQUEST;
		}
		break;
	case MAFH__REQ_STEP_OVER:
		/* Upstream steps over an abandoned id without answering it. */
		step_over(run);
		return OC_REQUEST;
	case MAFH__REQ_REFUSE:
		break;
	case MAFH__REQ_CALL:
		run->call_args = j.args;
		run->call_t = j.t;
		return OC_REQUEST;
	}
	return refuse(run, j.sentence) ? OC_FAILED : OC_REQUEST;
}

/* A request that cannot be read whole (not a regular file, or over the cap, of size bytes):
 * refused with sentence, or handed to a pass-through callback flagged. */
static enum mafh__outcome take_unreadable(struct mafh_run *run, unsigned flag, uint64_t size,
					  const char *sentence)
{
	if (run->reg->pass_through)
		return take_raw_request(run, NULL, 0, flag, size) ? OC_FAILED : OC_REQUEST;
	run->request_ms = run->now;
	return refuse(run, sentence) ? OC_FAILED : OC_REQUEST;
}

/* The exit marker's bytes: the guest's claim of how the program ended. */
static enum mafh__outcome take_exit_marker(struct mafh_run *run, const char *buf, size_t len)
{
	long code;

	if (mafp_marker_parse(buf, len, 0, 255, &code) == 0)
		run->result.exit_code = (int)code;
	/* The marker is a claim the program could forge: `maf-launch stop` makes sure no
	 * process of the run survives, and prints the exit record. */
	mafh__end_run(run, MAFH_RUN_RUNNING, 0, NULL);
	return OC_EXIT;
}

/* ---- the files transport: looks --------------------------------------------------------- */

enum mafh__outcome mafh__emit_look(struct mafh_run *run, struct mafh_op *op)
{
	call_path(run, run->next_id, MAFP_SUFFIX_REQUEST);
	mafh__op_read(run, op, run->limits.max_request_bytes);
	return OC_PENDING;
}

static enum mafh__outcome take_read_error(struct mafh_run *run,
					  const struct mafh_op_result *res, const char *what)
{
	mafh__end_run(run, MAFH_RUN_ERROR, res->error, "reading %s failed: %s", what,
		      res->detail.message[0] ? res->detail.message : mafh_strerror(res->error));
	return OC_FAILED;
}

static void after_miss(struct mafh_run *run)
{
	if (mafh__notifying(run))
		mafh__wait_for_files(run);
	else
		run->next_look_ms = mafh__pacing_next_after_miss(&run->pacing, run->now);
}

enum mafh__outcome mafh__take_look(struct mafh_run *run, const struct mafh_op_result *res)
{
	char why[128];

	run->replaces_id = 0;
	run->call_tool[0] = '\0';
	if (res->error)
		return take_read_error(run, res, "a request");
	switch (res->read.status) {
	case MAFH_READ_OK:
		memcpy(run->replaces, run->path, sizeof(run->replaces));
		run->replaces_id = run->next_id;
		mafh__pacing_found(&run->pacing);
		return take_request(run, res->read.data ? res->read.data : "", res->read.len);
	case MAFH_READ_TOO_BIG:
		snprintf(why, sizeof(why), "the request is larger than %llu bytes",
			 (unsigned long long)run->limits.max_request_bytes);
		return take_unreadable(run, MAFH_CALL_OVERSIZED, res->read.size, why);
	case MAFH_READ_NOT_REGULAR:
		snprintf(why, sizeof(why), "the request file %04ld is not a regular file",
			 run->next_id);
		return take_unreadable(run, MAFH_CALL_UNREADABLE, 0, why);
	case MAFH_READ_ABSENT:
		run->probe_exit_next = mafh__pacing_missed(&run->pacing);
		/* Woken by a change that was not the request: maybe the exit marker. */
		if (mafh__notifying(run))
			run->probe_exit_next = 1;
		if (!run->probe_exit_next)
			after_miss(run);
		break;
	}
	return OC_ABSENT;
}

enum mafh__outcome mafh__emit_probe_exit(struct mafh_run *run, struct mafh_op *op)
{
	mafh__read_host_tools_file(run, op, MAFP_MARKER_EXIT_CODE, MAFP_MARKER_MAX);
	return OC_PENDING;
}

enum mafh__outcome mafh__take_probe_exit(struct mafh_run *run, const struct mafh_op_result *res)
{
	run->probe_exit_next = 0;
	if (res->error)
		return take_read_error(run, res, "the exit marker");
	if (res->read.status == MAFH_READ_OK)
		return take_exit_marker(run, res->read.data ? res->read.data : "", res->read.len);
	after_miss(run);
	return OC_ABSENT;
}

enum mafh__outcome mafh__emit_pause(struct mafh_run *run, struct mafh_op *op)
{
	op->kind = MAFH_OP_WAIT_UNTIL;
	op->until_ms = run->next_look_ms < run->deadline ? run->next_look_ms : run->deadline;
	if (run->liveness_ms && run->transport == MAFH_TRANSPORT_FILES &&
	    run->next_liveness_ms < op->until_ms)
		op->until_ms = run->next_liveness_ms;
	run->result.ops.wait++;
	if (run->wait_files && mafh__notifying(run) &&
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
	return OC_PENDING;
}

enum mafh__outcome mafh__take_pause(struct mafh_run *run, const struct mafh_op_result *res)
{
	(void)res;
	if (run->op.wait_dir) {
		/* Ended early by a change, or at its end: look now either way. */
		run->wait_files = 0;
		run->next_look_ms = run->now;
	}
	return OC_OK;
}

/* ---- the wait and relay transports: events ------------------------------------------------ */

/* The launcher command that printed the event being taken. */
static const char *wait_word(const struct mafh_run *run)
{
	if (run->transport == MAFH_TRANSPORT_STREAM)
		return "serve";
	return run->transport == MAFH_TRANSPORT_RELAY && !run->liveness_probe ? "relay" : "wait";
}

/* A request event for next_id. */
static enum mafh__outcome take_request_event(struct mafh_run *run,
					     const struct mafh__wait_event *ev)
{
	char line[160];

	run->request_ms = run->now;
	run->call_tool[0] = '\0';
	if (ev->unreadable) {
		snprintf(line, sizeof(line), "the request file %04ld is not a regular file that "
			 "can be read", run->next_id);
		return take_unreadable(run, MAFH_CALL_UNREADABLE, 0, line);
	}
	if (!mafh__wait_event_whole(ev) || ev->size > (double)run->limits.max_request_bytes) {
		snprintf(line, sizeof(line), "the request is larger than %llu bytes",
			 (unsigned long long)run->limits.max_request_bytes);
		/* A size past 2^64 (the event's number is the guest's) is not converted. */
		return take_unreadable(run, MAFH_CALL_OVERSIZED,
				       ev->size >= 18446744073709551616.0 ? UINT64_MAX
				       : ev->size > 0 ? (uint64_t)ev->size : 0, line);
	}
	return take_request(run, ev->body, ev->body_len);
}

enum mafh__outcome mafh__take_event(struct mafh_run *run, const struct mafh__wait_event *evp)
{
	struct mafh__wait_event ev = *evp;

	run->wait_used = 1;
	switch (ev.kind) {
	case MAFH__WAIT_TIMEOUT:
		return OC_ABSENT;
	case MAFH__WAIT_EXIT:
		if (mafh__wait_event_whole(&ev))
			return take_exit_marker(run, ev.body, ev.body_len);
		/* A marker the program planted as something else: the supervisor will replace
		 * it, or the deadline will end the run. Look again later. */
		run->next_look_ms = run->now + run->pacing.poll_max_ms;
		return OC_ABSENT;
	case MAFH__WAIT_REQUEST:
		if (ev.id != run->next_id)
			break;
		return take_request_event(run, &ev);
	case MAFH__WAIT_LOST:
		mafh__end_run(run, MAFH_RUN_LOST, MAFH_EPROTO, "the supervisor %lld ended without "
			      "writing the exit marker: the run is lost",
			      (long long)run->result.supervisor_pid);
		return OC_LOST;
	case MAFH__WAIT_ACCEPTED:    /* serve's, and taken there: never an event here */
	case MAFH__WAIT_BAD:
	case MAFH__WAIT_OTHER:
		break;
	}
	mafh__end_run(run, MAFH_RUN_ERROR, MAFH_EPROTO, "maf-launch %s printed an unexpected "
		      "event", wait_word(run));
	return OC_FAILED;
}

static enum mafh__outcome take_wait_event(struct mafh_run *run,
					  const struct mafh_exec_result *x)
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
			return OC_FALLBACK;
		}
		mafh__first_line(line, sizeof(line), x->err, x->err_len);
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_EIO, "maf-launch %s %s%s%s", wait_word(run),
			      x->timed_out ? "did not return in time" : "failed",
			      line[0] ? ": " : "", line);
		return OC_FAILED;
	}
	if (mafh__wait_event_parse(x->out, x->out_len, &ev) != 0) {
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_EPROTO, "maf-launch %s printed no event "
			      "line", wait_word(run));
		return OC_FAILED;
	}
	return mafh__take_event(run, &ev);
}

/* The answer due goes on the stdin of `maf-launch relay`: the backend's exec takes an input,
 * the launcher's relay takes it there, it is small enough, and there is an id after it to
 * wait for. Otherwise it is written first and the relay only waits: an argv is never a
 * carrier, since every process of the machine may read it in /proc/PID/cmdline. */
int mafh__relay_carries(const struct mafh_run *run)
{
	return run->transport == MAFH_TRANSPORT_RELAY && (run->caps & MAFH_CAP_EXEC_STDIN) &&
	       !run->relay_no_stdin && run->wlen <= RELAY_ANSWER_MAX &&
	       run->next_id < MAFP_CALL_ID_MAX;
}

/* What an exec that waits `slice` may take past it (starting it, carrying its output back):
 * the launcher's exec timeout, as for its other short commands (an engine under load can
 * take seconds to start an exec), but past the run's deadline by no more than
 * EXEC_PAST_DEADLINE_MS. */
int64_t mafh__exec_overhead(const struct mafh_run *run, int64_t slice)
{
	int64_t room = run->deadline - run->now - slice;

	if (room < EXEC_PAST_DEADLINE_MS)
		room = EXEC_PAST_DEADLINE_MS;
	return run->exec_timeout_ms < room ? run->exec_timeout_ms : room;
}

static int64_t wait_slice(const struct mafh_run *run)
{
	int64_t left = run->deadline - run->now;

	return mafh__clamp64(left < run->wait_slice_ms ? left : run->wait_slice_ms, 1,
			     run->wait_slice_ms);
}

enum mafh__outcome mafh__emit_wait_exec(struct mafh_run *run, struct mafh_op *op)
{
	/* A liveness check looks once, without waiting. */
	int64_t slice = run->liveness_probe ? 0 : wait_slice(run);

	run->relay_carried = 0;
	if (run->transport == MAFH_TRANSPORT_RELAY && !run->liveness_probe) {
		run->relay_carried = run->wbuf && mafh__relay_carries(run);
		/* Carrying the answer to next_id, it waits for the request after it. */
		mafh__argv_relay(&run->argv, run->launcher, run->run_dir,
				 run->next_id + run->relay_carried, slice,
				 run->limits.max_request_bytes, run->result.supervisor_pid,
				 run->relay_carried ? run->next_id : 0);
	} else {
		mafh__argv_wait(&run->argv, run->launcher, run->run_dir, run->next_id, slice,
				run->limits.max_request_bytes, run->result.supervisor_pid);
	}
	/* Room for the event line and the largest request it may print. */
	mafh__op_exec(run, op, slice + mafh__exec_overhead(run, slice),
		      run->limits.max_request_bytes + WAIT_HEAD_MAX + 2);
	if (run->relay_carried) {
		op->data = run->wbuf;
		op->len = run->wlen;
		run->result.exec_inputs++;
	}
	return OC_PENDING;
}

/* A relay that carried the answer to next_id returned: OC_PENDING when its event is to be
 * taken, else the outcome. */
static enum mafh__outcome take_relay_carried(struct mafh_run *run,
					     const struct mafh_op_result *res)
{
	char line[160];

	run->relay_carried = 0;
	/* The relay writes the answer before it waits, and prints nothing when it could not:
	 * an event means the answer is in place. */
	if (!res->exec.timed_out && res->exec.exit_code == 0) {
		mafh__answer_written(run, run->op_started_ms);
	} else if (!res->exec.timed_out && res->exec.exit_code == MAFP_EXIT_USAGE &&
		   run->wait_used) {
		/* A relay that refuses --value-stdin (a launcher older than it) wrote nothing:
		 * the answer, still due, is written first from now on. */
		run->relay_no_stdin = 1;
		mafh__log_error(run, MAFH_EPROTO, "maf-launch relay does not take an answer on "
				"its stdin: writing each answer first");
		return OC_FALLBACK;
	} else if (res->exec.exit_code != MAFP_EXIT_USAGE || run->wait_used) {
		mafh__first_line(line, sizeof(line), res->exec.err, res->exec.err_len);
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_EIO, "maf-launch relay %s, carrying the "
			      "answer to call %ld%s%s", res->exec.timed_out ? "did not return in "
			      "time" : "failed", run->next_id, line[0] ? ": " : "", line);
		return OC_FAILED;
	}
	return OC_PENDING;
}

enum mafh__outcome mafh__take_wait_exec(struct mafh_run *run, const struct mafh_op_result *res)
{
	enum mafh__outcome o;

	if (run->liveness_probe) {
		run->liveness_probe = 0;
		run->next_liveness_ms = run->now + run->liveness_ms;
		/* A launcher without `wait` or its --supervisor-pid: no more checks. */
		if (!res->error && res->exec.exit_code == MAFP_EXIT_USAGE) {
			run->liveness_ms = 0;
			return OC_FALLBACK;
		}
	}
	if (res->error) {
		mafh__end_run(run, MAFH_RUN_ERROR, res->error, "maf-launch %s could not be run: %s",
			      wait_word(run), res->detail.message);
		return OC_FAILED;
	}
	if (run->relay_carried && (o = take_relay_carried(run, res)) != OC_PENDING)
		return o;
	return take_wait_event(run, &res->exec);
}

/* ---- calls and answers -------------------------------------------------------------------- */

void mafh__drop_call_texts(struct mafh_run *run)
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

enum mafh__outcome mafh__emit_call(struct mafh_run *run, struct mafh_op *op)
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
		return OC_PENDING;
	}
	free(run->call_text);
	run->call_text = cJSON_PrintUnformatted(run->call_args);
	if (!run->call_text) {
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory handing out a call");
		return OC_FAILED;
	}
	run->call = (struct mafh_call){
		.size = sizeof(run->call), .id = run->next_id, .tool = run->call_tool,
		.arguments = run->call_text, .arguments_len = strlen(run->call_text),
	};
	op->kind = MAFH_OP_CALL;
	op->call = &run->call;
	op->fn = run->call_t->fn;
	op->ud = run->call_t->ud;
	return OC_PENDING;
}

/* A pass-through callback's bytes, as the response: copied whole (a NUL included), the
 * refusal they may be told apart for the event alone. NULL: out of memory. */
static char *raw_response(const struct mafh_op_result *res, int *refused, char *sentence,
			  size_t sentence_size)
{
	char *text = malloc(res->value_len + 1);
	const cJSON *r;
	cJSON *o;

	if (!text)
		return NULL;
	memcpy(text, res->value, res->value_len);
	text[res->value_len] = '\0';
	/* Told apart for the event alone: the bytes go as they are. */
	o = mafp_json_parse(text, res->value_len, res->value_len);
	if (cJSON_IsObject(o) && cJSON_GetObjectItemCaseSensitive(o, "refusal") &&
	    !cJSON_GetObjectItemCaseSensitive(o, "value")) {
		r = cJSON_GetObjectItemCaseSensitive(o, "refusal");
		*refused = 1;
		snprintf(sentence, sentence_size, "%s", cJSON_IsString(r) ? r->valuestring : "");
		mafh__sentence_clean(sentence);
	}
	cJSON_Delete(o);
	return text;
}

/* The answer to a pass-through call: the callback's bytes as the response, a step over,
 * a look again, or holding. */
static enum mafh__outcome take_raw_call(struct mafh_run *run, const struct mafh_op_result *res)
{
	char sentence[MAFH__SENTENCE_MAX];
	char *text;
	int refused = 0, verbatim = 0;

	sentence[0] = '\0';
	switch (res->raw_answer) {
	case MAFH_RAW_STEP_OVER:
		step_over(run);
		return OC_OK;
	case MAFH_RAW_LOOK_AGAIN:
		/* Not there yet, to the callback (an empty file, not a regular one): looked at
		 * again at the slowest poll, as a supervisor polling for it would. */
		run->replaces_id = 0;
		run->next_look_ms = run->now + run->pacing.poll_max_ms;
		run->wait_files = 0;
		return OC_OK;
	case MAFH_RAW_HOLD:
		/* Upstream's supervisor reads no request past its bound, and so neither does
		 * this run: it waits at the last id, which no program reaches by counting. */
		run->holding = 1;
		run->replaces_id = 0;
		run->next_id = MAFP_CALL_ID_MAX;
		run->next_look_ms = run->now;
		return OC_OK;
	case MAFH_RAW_RESPOND:
		break;
	default:
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_EINVAL, "the host's answer to a "
			      "pass-through call is not one of respond, step over, look again or "
			      "hold");
		return OC_FAILED;
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
		text = raw_response(res, &refused, sentence, sizeof(sentence));
		verbatim = 1;
	}
	if (answer(run, text, refused, sentence))
		return OC_FAILED;
	/* The callback's length, not strlen's: the bytes go as they are, a NUL included. */
	if (verbatim)
		run->wlen = res->value_len;
	return OC_OK;
}

enum mafh__outcome mafh__take_call(struct mafh_run *run, const struct mafh_op_result *res)
{
	char sentence[MAFH__SENTENCE_MAX];
	enum mafh__outcome o;
	char *text;
	int refused, raw = run->raw_due;

	mafh__drop_call_texts(run);
	if (raw) {
		o = take_raw_call(run, res);
		mafh__reply_clear(&run->reply);
		return o;
	}
	if (res->note && (run->answer_note = malloc(res->note_len + 1))) {
		memcpy(run->answer_note, res->note, res->note_len);
		run->answer_note[res->note_len] = '\0';
		run->answer_note_len = res->note_len;
	}
	text = mafh__answer_encode(res, run->call_tool, &run->limits, run->total_response_bytes,
				   &refused, sentence, sizeof(sentence));
	o = answer(run, text, refused, sentence) ? OC_FAILED : OC_OK;
	mafh__reply_clear(&run->reply);
	return o;
}

enum mafh__outcome mafh__emit_answer(struct mafh_run *run, struct mafh_op *op)
{
	call_path(run, run->next_id, MAFP_SUFFIX_RESPONSE);
	mafh__op_write(run, op, run->wbuf, run->wlen);
	if (run->replaces_id == run->next_id)
		op->replaces = run->replaces;
	return OC_PENDING;
}

void mafh__answer_written(struct mafh_run *run, int64_t written_ms)
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
	mafh__event(run, &ev);
	free(run->answer_note);
	run->answer_note = NULL;
	run->answer_note_len = 0;
	run->next_id++;
	run->next_liveness_ms = run->now + run->liveness_ms;
	run->next_look_ms = mafh__pacing_answered(&run->pacing, run->now);
	if (mafh__notifying(run))
		mafh__wait_for_files(run);    /* returns at once if the request is there already */
	else if (run->transport == MAFH_TRANSPORT_WAIT || run->transport == MAFH_TRANSPORT_RELAY)
		run->next_look_ms = run->now;   /* the wait itself blocks until it is there */
}

enum mafh__outcome mafh__take_answer(struct mafh_run *run, const struct mafh_op_result *res)
{
	char name[32];

	if (res->error) {
		free(run->wbuf);
		run->wbuf = NULL;
		run->replaces_id = 0;
		mafp_call_file_name(name, sizeof(name), run->next_id, MAFP_SUFFIX_RESPONSE);
		mafh__end_run(run, MAFH_RUN_ERROR, res->error, "writing the response %s failed: %s",
			      name, res->detail.message[0] ? res->detail.message
			      : mafh_strerror(res->error));
		return OC_FAILED;
	}
	mafh__answer_written(run, run->now);
	return OC_OK;
}
