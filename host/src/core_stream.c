/* The stream transport: `maf-launch serve --ack` on a stream that stays open. A frame goes
 * out (the next id wanted, or an answer and the id after it) and one event comes back, read
 * until it is whole; after an answer, serve first prints a line that accepts it, the moment
 * the response file is in place: the answer counts as written then, while the program may
 * still be computing before its next call. A stream that breaks is closed, and the run goes
 * on with relay (or files). */
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define STREAM_READ_CAP 65536

/* The stream broke (its command ended or was killed, the connection dropped, or it printed
 * what is not serve's): closed, and the run goes on with relay (or files). An answer sent
 * and not accepted is still in wbuf, and is carried again: writing it twice is harmless,
 * running the tool twice would not be, and never happens. */
static enum mafh__outcome stream_broken(struct mafh_run *run, int code, const char *why)
{
	char msg[sizeof(run->result.error.message)];
	enum mafh_transport to = (run->caps & MAFH_CAP_BLOCKING_EXEC) ? MAFH_TRANSPORT_RELAY
								       : MAFH_TRANSPORT_FILES;

	snprintf(msg, sizeof(msg), "the stream of maf-launch serve broke (%s): going on with "
		 "the %s transport", why, mafh_transport_name(to));
	mafh__log_error(run, code, msg);
	run->transport = to;
	run->stream_sent = 0;
	run->stream_carried = 0;
	run->stream_accepted = 0;
	run->slen = 0;
	run->next_look_ms = run->now;
	return OC_BROKEN;
}

enum mafh__outcome mafh__emit_stream_open(struct mafh_run *run, struct mafh_op *op)
{
	mafh__argv_serve(&run->argv, run->launcher, run->run_dir, run->limits.max_request_bytes,
			 run->limits.max_response_bytes, run->result.supervisor_pid);
	op->kind = MAFH_OP_STREAM_OPEN;
	op->argv = run->argv.v;
	/* Its opening (over Docker: the exec made and started, the connection handed over)
	 * within the launcher's exec timeout, as its short commands; the stream itself lasts. */
	op->timeout_ms = mafh__exec_overhead(run, 0);
	run->result.ops.exec++;
	run->result.streams_opened++;
	return OC_PENDING;
}

enum mafh__outcome mafh__take_stream_open(struct mafh_run *run, const struct mafh_op_result *res)
{
	char why[sizeof(res->detail.message) + 32];

	if (res->error) {
		snprintf(why, sizeof(why), "it could not be opened: %s", res->detail.message[0]
			 ? res->detail.message : mafh_strerror(res->error));
		return stream_broken(run, res->error, why);
	}
	run->stream_open = 1;
	return OC_OK;
}

enum mafh__outcome mafh__emit_stream_send(struct mafh_run *run, struct mafh_op *op)
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
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory framing a response");
		return OC_FAILED;
	}
	memcpy(run->sframe, head, (size_t)n);
	if (run->wbuf)
		memcpy(run->sframe + n, run->wbuf, run->wlen);
	run->sframe_len = (size_t)n + (run->wbuf ? run->wlen : 0);
	run->stream_carried = run->wbuf != NULL;
	run->stream_accepted = 0;
	op->kind = MAFH_OP_STREAM_WRITE;
	op->data = run->sframe;
	op->len = run->sframe_len;
	/* A serve that stops reading holds a frame larger than the pipe's buffer (an answer
	 * of megabytes) forever: the write has the time of a short command, not past the
	 * deadline by more than a waiting exec, and one that times out breaks the stream. */
	op->timeout_ms = mafh__exec_overhead(run, 0);
	return OC_PENDING;
}

enum mafh__outcome mafh__take_stream_send(struct mafh_run *run, const struct mafh_op_result *res)
{
	free(run->sframe);
	run->sframe = NULL;
	if (res->error)
		return stream_broken(run, res->error, res->detail.message[0] ? res->detail.message
				     : mafh_strerror(res->error));
	run->stream_sent = 1;
	return OC_OK;
}

enum mafh__outcome mafh__emit_stream_recv(struct mafh_run *run, struct mafh_op *op)
{
	op->kind = MAFH_OP_STREAM_READ;
	op->until_ms = run->deadline;
	op->cap = STREAM_READ_CAP;
	return OC_PENDING;
}

/* An accepted line: serve has the answer the frame carried in place. It counts as written
 * now, before the frame's event comes. OC_OK, or the stream broken by a line that accepts
 * what was not sent. */
static enum mafh__outcome take_accepted(struct mafh_run *run, const struct mafh__wait_event *ev)
{
	char why[128];

	if (run->stream_accepted)
		snprintf(why, sizeof(why), "it accepted the answer to call %ld twice",
			 run->next_id - 1);
	else if (!run->stream_carried)
		snprintf(why, sizeof(why), "it accepted an answer it was not sent");
	else if (ev->id != run->next_id)
		snprintf(why, sizeof(why), "it accepted an answer to call %ld, not to call %ld",
			 ev->id, run->next_id);
	else {
		run->stream_carried = 0;
		run->stream_accepted = 1;
		mafh__answer_written(run, run->now);
		return OC_OK;
	}
	return stream_broken(run, MAFH_EPROTO, why);
}

/* Drops the first n bytes of sbuf. */
static void stream_take(struct mafh_run *run, size_t n)
{
	memmove(run->sbuf, run->sbuf + n, run->slen - n);
	run->slen -= n;
}

enum mafh__outcome mafh__take_stream_recv(struct mafh_run *run, const struct mafh_op_result *res)
{
	uint64_t max_body = run->limits.max_request_bytes > MAFP_MARKER_MAX
			    ? run->limits.max_request_bytes : MAFP_MARKER_MAX;
	struct mafh__wait_event ev;
	enum mafh__outcome o;
	long n;

	if (res->stream_len) {
		/* An event's head line and body, and an accepted line before them. */
		if (run->slen + res->stream_len > max_body + 1024)
			return stream_broken(run, MAFH_EPROTO, "it printed more than an event "
					     "holds");
		if (mafh__append(&run->sbuf, &run->slen, &run->scap, SIZE_MAX, res->stream_data,
				 res->stream_len) < 0) {
			mafh__end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory reading the "
				      "stream");
			return OC_FAILED;
		}
	}
	/* The accepted line of the answer carried, then the frame's event: they may come in
	 * one read or split anywhere. */
	for (;;) {
		n = run->slen ? mafh__stream_event_len(run->sbuf, run->slen, max_body, &ev) : 0;
		if (n <= 0 || ev.kind != MAFH__WAIT_ACCEPTED)
			break;
		if ((o = take_accepted(run, &ev)) != OC_OK)
			return o;
		stream_take(run, (size_t)n);
	}
	if (n < 0 || (n > 0 && (size_t)n != run->slen))
		/* serve prints one event a frame, and only then. */
		return stream_broken(run, MAFH_EPROTO, "it printed what is not one event");
	if (n == 0) {
		if (res->stream_ended || (res->error && res->error != MAFH_ETIMEDOUT))
			return stream_broken(run, res->error ? res->error : MAFH_EPIPE,
					     res->detail.message[0] ? res->detail.message
					     : "its output ended");
		return OC_ABSENT;
	}
	if (run->stream_carried)
		/* serve --ack accepts an answer before it waits for the next event. */
		return stream_broken(run, MAFH_EPROTO, "it printed an event without accepting "
				     "the answer before it");
	run->slen = 0;
	run->stream_sent = 0;
	run->stream_accepted = 0;
	if (ev.kind == MAFH__WAIT_TIMEOUT)
		return OC_ABSENT;   /* serve never times out; a host may ask again all the same */
	return mafh__take_event(run, &ev);
}

enum mafh__outcome mafh__emit_stream_close(struct mafh_run *run, struct mafh_op *op)
{
	(void)run;
	op->kind = MAFH_OP_STREAM_CLOSE;
	return OC_PENDING;
}

/* Closed for the run's end (OC_OK), or after the stream broke (OC_BROKEN): serving goes on
 * then, by another transport. */
enum mafh__outcome mafh__take_stream_close(struct mafh_run *run,
					   const struct mafh_op_result *res)
{
	(void)res;
	run->stream_open = 0;
	run->stream_sent = 0;
	run->stream_accepted = 0;
	run->slen = 0;
	return run->ending ? OC_OK : OC_BROKEN;
}
