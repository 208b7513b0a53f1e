/* The sans-I/O core: a run as a state machine that hands out the operations it needs and
 * takes their results, performing no I/O itself. Every transition lives in the table below:
 * for each state, the op it hands out, the step that makes the op and the step that takes
 * its result, and where each outcome of those steps leads. The steps (core_*.c) return an
 * outcome and never set the state; apply() alone does, from the table. The states that hand
 * out no op (BEGIN, SERVE, ENDING) choose what is due, by the functions beside the table. A
 * run ends one way, through mafh__end_run() (core_end.c), which chooses the status and
 * leaves the order of the ending ops to ENDING.
 *
 * The course of a run: write program.py and the shim, exec `maf-launch run`, serve (files:
 * a look for the next request, paced or woken by the backend; wait: `maf-launch wait`;
 * relay: `maf-launch relay`, which writes the last answer, given on its stdin, and waits
 * for the next; where the exec takes no input the answer is written just before; stream:
 * `maf-launch serve` on a stream that stays open), and once the exit marker appears:
 * `maf-launch stop` (which proves the tree is gone and prints the exit record), the output,
 * `maf-launch reclaim`. A run cut short (deadline, stop, error) reads the output first,
 * since it is the only witness of what the program did.
 *
 * Tool calls are handed out as CALL ops rather than called here: a tool is the caller's code,
 * and an async host runs it its own way (mafh_run_call_tool runs the registered callback).
 *
 * docs/core-states.dot is the table drawn (mafh__core_dot); tests/unit/test_core_states.c
 * fails while it differs, and `make core-states` writes it again. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* ---- events and errors -------------------------------------------------------------------- */

void mafh__event(struct mafh_run *run, struct mafh_event *ev)
{
	if (!run->on_event)
		return;
	ev->size = sizeof(*ev);
	ev->time_ms = run->now - run->t_start;
	run->on_event(ev, run->event_ud);
}

void mafh__log_error(struct mafh_run *run, int code, const char *msg)
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
	mafh__event(run, &ev);
}

void mafh__note(struct mafh_run *run, int code, const char *fmt, ...)
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
	mafh__log_error(run, code, msg);
}

/* ---- op construction ---------------------------------------------------------------------- */

void mafh__op_exec(struct mafh_run *run, struct mafh_op *op, int64_t timeout_ms, size_t out_cap)
{
	op->kind = MAFH_OP_EXEC;
	op->argv = run->argv.v;
	op->timeout_ms = timeout_ms;
	op->out_cap = out_cap;
	run->result.ops.exec++;
}

void mafh__op_read(struct mafh_run *run, struct mafh_op *op, size_t cap)
{
	op->kind = MAFH_OP_READ;
	op->path = run->path;
	op->cap = cap;
	run->result.ops.read++;
}

void mafh__op_write(struct mafh_run *run, struct mafh_op *op, const void *data, size_t len)
{
	op->kind = MAFH_OP_WRITE;
	op->path = run->path;
	op->data = data;
	op->len = len;
	run->result.ops.write++;
}

int mafh__host_tools_path(struct mafh_run *run, const char *name)
{
	return mafp_host_tools_path(run->path, sizeof(run->path), run->run_dir, name);
}

void mafh__read_host_tools_file(struct mafh_run *run, struct mafh_op *op, const char *name,
				size_t cap)
{
	mafh__host_tools_path(run, name);
	mafh__op_read(run, op, cap);
}

int64_t mafh__clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void *mafh__memdup(const void *src, size_t len)
{
	void *p = malloc(len ? len : 1);

	if (p && len)
		memcpy(p, src, len);
	return p;
}

int mafh__notifying(const struct mafh_run *run)
{
	return run->transport == MAFH_TRANSPORT_FILES && (run->caps & MAFH_CAP_WAIT_CHANGE);
}

/* ---- the choices of the states that hand out no op ---------------------------------------- */

/* The program, and the shim, go on the launch's stdin where the backend would have them so
 * (MAFH_CAP_LAUNCH_STDIN), rather than a write each before it. */
static enum mafh__outcome choose_first(struct mafh_run *run)
{
	if (!run->program)
		return OC_LAUNCH_DUE;
	run->files_on_stdin = !run->files_plain && (run->caps & MAFH_CAP_EXEC_STDIN) &&
			      (run->caps & MAFH_CAP_LAUNCH_STDIN) &&
			      run->program_len <= MAFH__FILES_STDIN_MAX;
	return run->files_on_stdin ? OC_LAUNCH_DUE : OC_PROGRAM_DUE;
}

static enum mafh__outcome ids_spent(struct mafh_run *run)
{
	mafh__end_run(run, MAFH_RUN_ERROR, MAFH_E2BIG, "the program used every call id up to %d",
		      MAFP_CALL_ID_MAX);
	return OC_FAILED;
}

static enum mafh__outcome choose_streaming(struct mafh_run *run)
{
	if (!run->stream_open)
		return OC_OPEN_DUE;
	if (run->stream_sent)
		return OC_EVENT_DUE;
	/* An answer goes on the stream, whatever its size (serve takes up to the response
	 * cap), but for the last id, which has no request after it. */
	if (run->wbuf)
		return run->next_id < MAFP_CALL_ID_MAX ? OC_SEND_DUE : OC_ANSWER_DUE;
	if (run->call_args || run->raw_due)
		return OC_CALL_DUE;
	if (run->now < run->next_look_ms)
		return OC_NOT_YET;     /* a request that did not decode, looked at again */
	if (run->next_id > MAFP_CALL_ID_MAX)
		return ids_spent(run);
	return OC_SEND_DUE;
}

/* SERVE: what is due next, from what the run holds and the time. */
static enum mafh__outcome choose_serving(struct mafh_run *run)
{
	if (run->hold_polling)
		return run->now < run->next_look_ms ? OC_NOT_YET : OC_PROBE_DUE;
	if (run->transport == MAFH_TRANSPORT_STREAM)
		return choose_streaming(run);
	if (run->wbuf)
		return mafh__relay_carries(run) ? OC_RELAY_DUE : OC_ANSWER_DUE;
	if (run->call_args || run->raw_due)
		return OC_CALL_DUE;
	if (run->now < run->next_look_ms &&
	    !(run->liveness_ms && run->launched && run->transport == MAFH_TRANSPORT_FILES &&
	      run->now >= run->next_liveness_ms))
		return OC_NOT_YET;
	if (run->next_id > MAFP_CALL_ID_MAX)
		return ids_spent(run);
	if (run->transport == MAFH_TRANSPORT_WAIT || run->transport == MAFH_TRANSPORT_RELAY)
		return OC_WAIT_DUE;
	/* Quiet for a while over files: is the supervisor still there to write the marker? */
	if (run->liveness_ms && run->result.supervisor_pid && run->now >= run->next_liveness_ms) {
		run->liveness_probe = 1;
		return OC_LIVENESS_DUE;
	}
	return run->probe_exit_next ? OC_PROBE_DUE : OC_LOOK_DUE;
}

/* ENDING: the next ending op, from what is done. A run cut short reads the output before it
 * stops the tree; one that ended by itself stops it first (stop prints the record). */
static enum mafh__outcome choose_ending(struct mafh_run *run)
{
	if (run->stream_open)
		return OC_CLOSE_DUE;
	if (run->launched) {
		if (run->cut && !run->output_read)
			return OC_OUTPUT_DUE;
		if (!run->stop_done && run->result.supervisor_pid)
			return OC_STOP_DUE;
		if (!run->result.record.have_record && !run->record_looked)
			return OC_RECORD_DUE;
		if (!run->output_read)
			return OC_OUTPUT_DUE;
	}
	if (!run->keep_run_dir && !run->reclaimed)
		return OC_RECLAIM_DUE;
	return OC_OVER;
}

/* ---- the table ---------------------------------------------------------------------------- */

/* Every state: the op it hands out (MAFH_OP_DONE: none, or the end), the choice or the steps
 * that make the op and take its result, and the state each outcome leads to. A state with
 * an OC_CUT transition is live: the deadline and a stop request cut the run short there. */
static const struct {
	enum mafh_op_kind kind;
	enum mafh__outcome (*choose)(struct mafh_run *run);
	mafh__emit_fn *emit;
	mafh__take_fn *take;
	enum mafh__state next[OC_COUNT];
} states[ST_COUNT] = {
	[ST_BEGIN] = {MAFH_OP_DONE, choose_first, NULL, NULL, {
		[OC_PROGRAM_DUE] = ST_WRITE_PROGRAM,
		[OC_LAUNCH_DUE] = ST_LAUNCH,
	}},
	[ST_WRITE_PROGRAM] = {MAFH_OP_WRITE, NULL, mafh__emit_write_program,
			      mafh__take_write_program, {
		[OC_OK] = ST_LAUNCH,
		[OC_SHIM_DUE] = ST_WRITE_SHIM,
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_WRITE_SHIM] = {MAFH_OP_WRITE, NULL, mafh__emit_write_shim, mafh__take_write_shim, {
		[OC_OK] = ST_LAUNCH,
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_LAUNCH] = {MAFH_OP_EXEC, NULL, mafh__emit_launch, mafh__take_launch, {
		[OC_OK] = ST_SERVE,
		[OC_PROGRAM_DUE] = ST_WRITE_PROGRAM,  /* a launcher without --files-stdin */
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_SERVE] = {MAFH_OP_DONE, choose_serving, NULL, NULL, {
		[OC_NOT_YET] = ST_PAUSE,
		[OC_LOOK_DUE] = ST_LOOK,
		[OC_PROBE_DUE] = ST_PROBE_EXIT,
		[OC_WAIT_DUE] = ST_WAIT_EXEC,
		[OC_LIVENESS_DUE] = ST_WAIT_EXEC,
		[OC_RELAY_DUE] = ST_WAIT_EXEC,
		[OC_CALL_DUE] = ST_CALL,
		[OC_ANSWER_DUE] = ST_ANSWER,
		[OC_OPEN_DUE] = ST_STREAM_OPEN,
		[OC_SEND_DUE] = ST_STREAM_SEND,
		[OC_EVENT_DUE] = ST_STREAM_RECV,
		[OC_FAILED] = ST_ENDING,      /* every call id used */
		[OC_CUT] = ST_ENDING,
	}},
	[ST_LOOK] = {MAFH_OP_READ, NULL, mafh__emit_look, mafh__take_look, {
		[OC_REQUEST] = ST_SERVE,
		[OC_ABSENT] = ST_SERVE,
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_PROBE_EXIT] = {MAFH_OP_READ, NULL, mafh__emit_probe_exit, mafh__take_probe_exit, {
		[OC_ABSENT] = ST_SERVE,
		[OC_EXIT] = ST_ENDING,
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_WAIT_EXEC] = {MAFH_OP_EXEC, NULL, mafh__emit_wait_exec, mafh__take_wait_exec, {
		[OC_REQUEST] = ST_SERVE,
		[OC_ABSENT] = ST_SERVE,
		[OC_FALLBACK] = ST_SERVE,
		[OC_EXIT] = ST_ENDING,
		[OC_LOST] = ST_ENDING,
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_PAUSE] = {MAFH_OP_WAIT_UNTIL, NULL, mafh__emit_pause, mafh__take_pause, {
		[OC_OK] = ST_SERVE,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_CALL] = {MAFH_OP_CALL, NULL, mafh__emit_call, mafh__take_call, {
		[OC_OK] = ST_SERVE,
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_ANSWER] = {MAFH_OP_WRITE, NULL, mafh__emit_answer, mafh__take_answer, {
		[OC_OK] = ST_SERVE,
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_ENDING] = {MAFH_OP_DONE, choose_ending, NULL, NULL, {
		[OC_CLOSE_DUE] = ST_STREAM_CLOSE,
		[OC_OUTPUT_DUE] = ST_OUTPUT,
		[OC_STOP_DUE] = ST_STOP,
		[OC_RECORD_DUE] = ST_RECORD,
		[OC_RECLAIM_DUE] = ST_RECLAIM,
		[OC_OVER] = ST_DONE,
	}},
	[ST_OUTPUT] = {MAFH_OP_READ, NULL, mafh__emit_output, mafh__take_output, {
		[OC_OK] = ST_ENDING,
		[OC_ABSENT] = ST_ENDING,
		[OC_FAILED] = ST_ENDING,
	}},
	[ST_STOP] = {MAFH_OP_EXEC, NULL, mafh__emit_stop, mafh__take_stop, {
		[OC_OK] = ST_ENDING,
		[OC_LOST] = ST_ENDING,
		[OC_FAILED] = ST_ENDING,
	}},
	[ST_RECORD] = {MAFH_OP_READ, NULL, mafh__emit_record, mafh__take_record, {
		[OC_OK] = ST_ENDING,
		[OC_ABSENT] = ST_ENDING,
		[OC_FAILED] = ST_ENDING,
	}},
	[ST_RECLAIM] = {MAFH_OP_EXEC, NULL, mafh__emit_reclaim, mafh__take_reclaim, {
		[OC_OK] = ST_ENDING,
		[OC_FAILED] = ST_ENDING,
	}},
	[ST_STREAM_OPEN] = {MAFH_OP_STREAM_OPEN, NULL, mafh__emit_stream_open,
			    mafh__take_stream_open, {
		[OC_OK] = ST_SERVE,
		[OC_BROKEN] = ST_SERVE,       /* never opened: nothing to close */
		[OC_CUT] = ST_ENDING,
	}},
	[ST_STREAM_SEND] = {MAFH_OP_STREAM_WRITE, NULL, mafh__emit_stream_send,
			    mafh__take_stream_send, {
		[OC_OK] = ST_SERVE,
		[OC_BROKEN] = ST_STREAM_CLOSE,
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_STREAM_RECV] = {MAFH_OP_STREAM_READ, NULL, mafh__emit_stream_recv,
			    mafh__take_stream_recv, {
		[OC_ABSENT] = ST_SERVE,
		[OC_REQUEST] = ST_SERVE,
		[OC_BROKEN] = ST_STREAM_CLOSE,
		[OC_EXIT] = ST_ENDING,
		[OC_LOST] = ST_ENDING,
		[OC_FAILED] = ST_ENDING,
		[OC_CUT] = ST_ENDING,
	}},
	[ST_STREAM_CLOSE] = {MAFH_OP_STREAM_CLOSE, NULL, mafh__emit_stream_close,
			     mafh__take_stream_close, {
		[OC_OK] = ST_ENDING,
		[OC_BROKEN] = ST_SERVE,       /* closed after a break: serving goes on */
	}},
	[ST_DONE] = {MAFH_OP_DONE, NULL, NULL, NULL, {0}},
};

static const char *const state_names[ST_COUNT] = {
	[ST_BEGIN] = "BEGIN", [ST_WRITE_PROGRAM] = "WRITE_PROGRAM",
	[ST_WRITE_SHIM] = "WRITE_SHIM", [ST_LAUNCH] = "LAUNCH", [ST_SERVE] = "SERVE",
	[ST_LOOK] = "LOOK", [ST_PROBE_EXIT] = "PROBE_EXIT", [ST_WAIT_EXEC] = "WAIT_EXEC",
	[ST_PAUSE] = "PAUSE", [ST_CALL] = "CALL", [ST_ANSWER] = "ANSWER",
	[ST_ENDING] = "ENDING", [ST_OUTPUT] = "OUTPUT", [ST_STOP] = "STOP",
	[ST_RECORD] = "RECORD", [ST_RECLAIM] = "RECLAIM", [ST_STREAM_OPEN] = "STREAM_OPEN",
	[ST_STREAM_SEND] = "STREAM_SEND", [ST_STREAM_RECV] = "STREAM_RECV",
	[ST_STREAM_CLOSE] = "STREAM_CLOSE", [ST_DONE] = "DONE",
};

static const char *const outcome_names[OC_COUNT] = {
	[OC_PENDING] = "pending", [OC_OK] = "ok", [OC_FAILED] = "failed",
	[OC_ABSENT] = "absent", [OC_REQUEST] = "request", [OC_EXIT] = "exit",
	[OC_LOST] = "lost", [OC_FALLBACK] = "fallback", [OC_BROKEN] = "broken",
	[OC_CUT] = "cut", [OC_PROGRAM_DUE] = "program_due", [OC_LAUNCH_DUE] = "launch_due",
	[OC_SHIM_DUE] = "shim_due", [OC_NOT_YET] = "not_yet", [OC_LOOK_DUE] = "look_due",
	[OC_PROBE_DUE] = "probe_due", [OC_WAIT_DUE] = "wait_due",
	[OC_LIVENESS_DUE] = "liveness_due", [OC_CALL_DUE] = "call_due",
	[OC_ANSWER_DUE] = "answer_due", [OC_RELAY_DUE] = "relay_due",
	[OC_OPEN_DUE] = "open_due", [OC_SEND_DUE] = "send_due", [OC_EVENT_DUE] = "event_due",
	[OC_CLOSE_DUE] = "close_due", [OC_OUTPUT_DUE] = "output_due",
	[OC_STOP_DUE] = "stop_due", [OC_RECORD_DUE] = "record_due",
	[OC_RECLAIM_DUE] = "reclaim_due", [OC_OVER] = "over",
};

/* ---- the machine -------------------------------------------------------------------------- */

/* The one place the state changes: where the table takes outcome o from the run's state. */
static void apply(struct mafh_run *run, enum mafh__outcome o)
{
	enum mafh__state to = states[run->state].next[o];

	if (to == ST_BEGIN) {
		/* A step came to an outcome its state has no transition for: a bug here, which
		 * ends the run rather than leaving it nowhere. */
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_EIO, "the run's core has no transition "
			      "from %s on %s", state_names[run->state], outcome_names[o]);
		to = ST_ENDING;
	}
	run->state = to;
	if (to == ST_DONE)
		mafh__finish(run);
}

/* A live state, before its op: the run cut short by a stop request or the deadline. */
static int cut_short(struct mafh_run *run)
{
	if (atomic_load(&run->stop_requested))
		mafh__end_run(run, MAFH_RUN_STOPPED, MAFH_ECANCELED,
			      "the run was stopped by the host");
	else if (run->now >= run->deadline)
		mafh__end_run(run, MAFH_RUN_TIMEOUT, MAFH_ETIMEDOUT,
			      "the run's deadline of %lld ms passed", (long long)run->timeout_ms);
	else
		return 0;
	return 1;
}

void mafh__core_begin(struct mafh_run *run)
{
	run->state = ST_BEGIN;
	run->next_id = 1;
}

enum mafh__state mafh__core_next(enum mafh__state s, enum mafh__outcome o)
{
	return s < ST_COUNT && o < OC_COUNT ? states[s].next[o] : ST_BEGIN;
}

/* What state s hands out, for the graph. */
static const char *op_name(enum mafh__state s)
{
	return states[s].choose ? "(choice)" : mafh_op_kind_name(states[s].kind);
}

int mafh__core_dot(FILE *f)
{
	int bad = 0;

	bad |= fprintf(f, "// The sans-I/O core's states and transitions, printed from the table "
		       "in\n// host/src/core.c: `make core-states` writes this file, and "
		       "tests/unit/test_core_states.c\n// fails while it differs. An edge is "
		       "OUTCOME / the op its state hands out.\n"
		       "digraph core_states {\n\tnode [shape=box];\n") < 0;
	for (int s = 0; s < ST_COUNT; s++) {
		if (!state_names[s])
			return -1;
		bad |= fprintf(f, "\t%s [label=\"%s\\n%s\"%s];\n", state_names[s],
			       state_names[s], op_name(s), states[s].choose ? ", shape=diamond"
			       : s == ST_DONE ? ", shape=doublecircle" : "") < 0;
	}
	for (int s = 0; s < ST_COUNT; s++)
		for (int o = 0; o < OC_COUNT; o++) {
			enum mafh__state to = states[s].next[o];

			if (to == ST_BEGIN)
				continue;
			if (!outcome_names[o])
				return -1;
			bad |= fprintf(f, "\t%s -> %s [label=\"%s / %s\"];\n", state_names[s],
				       state_names[to], outcome_names[o], op_name(to)) < 0;
		}
	bad |= fprintf(f, "}\n") < 0;
	return bad || ferror(f) ? -1 : 0;
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
		enum mafh__outcome o;

		if (run->state == ST_DONE) {
			op->kind = MAFH_OP_DONE;
			return 0;
		}
		if (states[run->state].next[OC_CUT] && !run->ending && cut_short(run))
			o = OC_CUT;
		else if (states[run->state].choose)
			o = states[run->state].choose(run);
		else if ((o = states[run->state].emit(run, op)) == OC_PENDING)
			break;
		apply(run, o);
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
	apply(run, states[run->state].take(run, res));
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
