/* Unit tests for the sans-I/O core's transports (host/src/run.c, core_serve.c,
 * core_stream.c), driven op by op with scripted results on a fake clock (core_fixture.h):
 * wait, relay and stream, each with its fallback, serve's accepted lines, and the files
 * transport's waits for a change (MAFH_CAP_WAIT_CHANGE). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_fixture.h"
#include "protocol.h"

static void test_wait_transport(void **state)
{
	struct fixture f;
	struct mafh_op op;
	char ev[1024];
	const char *body = req(1, "{\"a\": 41}");

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_WAIT, 60000);
	start(&f);
	give_wait_event(&f, 1, "{\"event\":\"timeout\"}\n");
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s", strlen(body),
		 body);
	give_wait_event(&f, 1, ev);
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	assert_string_equal(op.data, "{\"value\":42}");
	give_write_ok(&f);
	give_wait_event(&f, 2, "{\"event\":\"request\",\"id\":2,\"size\":0,"
			       "\"error\":\"not a regular file\"}\n");
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0002.response.json");
	assert_non_null(strstr(op.data, "not a regular file"));
	give_write_ok(&f);
	give_wait_event(&f, 3, "{\"event\":\"request\",\"id\":3,\"size\":52428800,"
			       "\"oversized\":true}\n");
	op = next(&f);
	assert_non_null(strstr(op.data, "larger than"));
	give_write_ok(&f);
	/* A size that does not match the bytes is not trusted. */
	give_wait_event(&f, 4, "{\"event\":\"request\",\"id\":4,\"size\":9}\n{}");
	op = next(&f);
	assert_non_null(strstr(op.data, "refusal"));
	give_write_ok(&f);
	give_wait_event(&f, 5, "{\"event\":\"exit\",\"size\":1}\n0");
	finish_normally(&f, "out");
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	assert_int_equal(mafh_run_result(f.run)->calls, 4);
	/* One exec per event, one write per answer. */
	assert_int_equal(mafh_run_result(f.run)->ops.exec, 1 + 6 + 2);
	assert_int_equal(mafh_run_result(f.run)->ops.read, 1);
	teardown_run(&f);
}

static void test_wait_fallback(void **state)
{
	struct fixture f;
	struct mafh_op op;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_WAIT, 60000);
	start(&f);
	op = next(&f);
	assert_string_equal(op.argv[1], "wait");
	give_exec(&f, 2, "", "unknown command 'wait'");
	/* A launcher without wait: polling the files instead. */
	assert_string_equal(serve(&f, 1, req(1, "{\"a\": 1}"), 1), "{\"value\":2}");
	exit_with(&f, 2, "0");
	finish_normally(&f, "");
	teardown_run(&f);
}

static void test_wait_garbage(void **state)
{
	struct fixture f;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_WAIT, 60000);
	start(&f);
	give_wait_event(&f, 1, "{\"event\":\"timeout\"}\n");
	give_wait_event(&f, 1, "garbage");
	finish_in_error(&f);
	assert_int_equal(mafh_run_result(f.run)->error.code, MAFH_EPROTO);
	teardown_run(&f);
}

/* No element of op's argv holds answer[0..len), nor its base64. */
static void argv_free_of(const struct mafh_op *op, const char *answer, size_t len)
{
	char b64[MAFP_BASE64_LEN(4096) + 1];

	if (!len)
		return;
	assert_true(len <= 4096);
	mafp_base64_encode(answer, len, b64);
	for (size_t i = 0; op->argv[i]; i++) {
		assert_null(memmem(op->argv[i], strlen(op->argv[i]), answer, len));
		assert_null(strstr(op->argv[i], b64));
	}
}

/* One relay exec: --next N, and, when the answer to the call before it is due, --answer
 * N - 1 --value-stdin with the answer as the exec's input (no argument holds it). Returns
 * the answer carried (static buffer), "" when it carries none. */
static const char *give_relay_event(struct fixture *f, long expect_next, const char *text)
{
	static char answer[4096];
	char buf[32];
	struct mafh_op op = next(f);

	assert_int_equal(op.kind, MAFH_OP_EXEC);
	assert_string_equal(op.argv[1], "relay");
	snprintf(buf, sizeof(buf), "%ld", expect_next);
	assert_string_equal(argv_after(&op, "--next"), buf);
	assert_string_equal(argv_after(&op, "--supervisor-pid"), "42");
	answer[0] = '\0';
	if (argv_has(&op, "--value-stdin")) {
		snprintf(buf, sizeof(buf), "%ld", expect_next - 1);
		assert_string_equal(argv_after(&op, "--answer"), buf);
		assert_non_null(op.data);
		assert_true(op.len > 0 && op.len < sizeof(answer));
		memcpy(answer, op.data, op.len);
		answer[op.len] = '\0';
		argv_free_of(&op, answer, op.len);
	} else {
		assert_null(argv_after(&op, "--answer"));
		assert_null(op.data);
		assert_int_equal(op.len, 0);
	}
	give_exec(f, 0, text, "");
	return answer;
}

static void test_relay_transport(void **state)
{
	struct fixture f;
	struct mafh_op op;
	char ev[1024];
	const char *body = req(1, "{\"a\": 41}");

	(void)state;
	/* auto over a backend with a blocking exec and no change notification: relay. */
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_AUTO, 60000, RELAY_CAPS);
	start(&f);
	assert_string_equal(give_relay_event(&f, 1, "{\"event\":\"timeout\"}\n"), "");
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	assert_string_equal(give_relay_event(&f, 1, ev), "");
	op = next(&f);
	give_call(&f, &op);
	/* The answer rides on the stdin of the wait for the next request: no write. */
	assert_string_equal(give_relay_event(&f, 2, "{\"event\":\"timeout\"}\n"),
			    "{\"value\":42}");
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	assert_non_null(strstr(f.events, "call_served 1 add"));
	assert_string_equal(give_relay_event(&f, 2, "{\"event\":\"request\",\"id\":2,"
					     "\"size\":0,\"error\":\"not a regular file\"}\n"),
			    "");
	assert_non_null(strstr(give_relay_event(&f, 3, "{\"event\":\"exit\",\"size\":1}\n0"),
			       "not a regular file"));
	finish_normally(&f, "out");
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	assert_int_equal(mafh_run_result(f.run)->calls, 2);
	assert_int_equal(mafh_run_result(f.run)->refusals, 1);
	/* launch, five relays, stop, reclaim; the program and the shim the only writes (no
	 * MAFH_CAP_LAUNCH_STDIN). */
	assert_int_equal(mafh_run_result(f.run)->ops.exec, 1 + 5 + 2);
	assert_int_equal(mafh_run_result(f.run)->ops.write, 2);
	teardown_run(&f);
}

/* An exec that waits is given the launcher's exec timeout past its slice to start and come
 * back (an engine under load takes seconds to start one), but not more than 5 s past the
 * run's deadline; a stream's opening the same, its slice nothing. */
static void test_waiting_exec_times(void **state)
{
	static const unsigned caps[] = {RELAY_CAPS, RELAY_CAPS | MAFH_CAP_STREAM};
	struct fixture f;
	struct mafh_op op;

	(void)state;
	for (int i = 0; i < 2; i++) {
		/* A long run: the slice (2 s) and the whole exec timeout (30 s, the default). */
		setup_run_caps(&f, NULL, MAFH_TRANSPORT_AUTO, 60000, caps[i]);
		start(&f);
		op = next(&f);
		assert_int_equal(op.kind, i ? MAFH_OP_STREAM_OPEN : MAFH_OP_EXEC);
		assert_int_equal(op.timeout_ms, i ? 30000 : 2000 + 30000);
		teardown_run(&f);
		/* A run of 9 s: nothing past its deadline but the 5 s a waiting exec may. */
		setup_run_caps(&f, NULL, MAFH_TRANSPORT_AUTO, 9000, caps[i]);
		start(&f);
		op = next(&f);
		assert_int_equal(f.now + op.timeout_ms, 1000 + 9000); /* the deadline */
		teardown_run(&f);
		/* A run of 3 s: a waiting exec still has 5 s for its start, past the deadline. */
		setup_run_caps(&f, NULL, MAFH_TRANSPORT_AUTO, 3000, caps[i]);
		start(&f);
		op = next(&f);
		assert_int_equal(op.timeout_ms, i ? 5000 : 2000 + 5000);
		teardown_run(&f);
	}
}

/* Without MAFH_CAP_EXEC_STDIN the answer is written first, and the relay after it carries
 * none: two operations a call, the answer in no argv. */
static void test_relay_without_stdin(void **state)
{
	struct fixture f;
	struct mafh_op op;
	char ev[1024];
	const char *body = req(1, "{\"a\": 41}");

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_AUTO, 60000);
	start(&f);
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	assert_string_equal(give_relay_event(&f, 1, ev), "");
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	assert_string_equal(op.data, "{\"value\":42}");
	give_write_ok(&f);
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_EXEC);
	argv_free_of(&op, "{\"value\":42}", strlen("{\"value\":42}"));
	assert_string_equal(argv_after(&op, "--next"), "2");
	assert_null(argv_after(&op, "--answer"));
	assert_false(argv_has(&op, "--value-stdin"));
	assert_null(op.data);
	give_exec(&f, 0, "{\"event\":\"exit\",\"size\":1}\n0", "");
	finish_normally(&f, "out");
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	/* launch, two relays, stop, reclaim; the program, the shim and the answer written. */
	assert_int_equal(mafh_run_result(f.run)->ops.exec, 1 + 2 + 2);
	assert_int_equal(mafh_run_result(f.run)->ops.write, 3);
	teardown_run(&f);
}

/* A launcher without relay: the answer it was to carry is written, and `wait` serves on. A
 * relay that refuses --value-stdin once it has served: the answer is written first from then
 * on. A relay that fails otherwise once it has served, or never returns with the answer, is
 * the run's error. */
static void test_relay_fallback(void **state)
{
	struct fixture f;
	struct mafh_op op;
	struct mafh_op_result res;
	char ev[1024], ev2[1024];
	const char *body = req(1, "{\"a\": 1}");

	(void)state;
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_RELAY, 60000, RELAY_CAPS);
	start(&f);
	op = next(&f);
	assert_string_equal(op.argv[1], "relay");
	give_exec(&f, 2, "", "unknown command 'relay'");
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	give_wait_event(&f, 1, ev);
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	give_write_ok(&f);
	give_wait_event(&f, 2, "{\"event\":\"exit\",\"size\":1}\n0");
	finish_normally(&f, "");
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	teardown_run(&f);

	setup_run_caps(&f, NULL, MAFH_TRANSPORT_RELAY, 60000, RELAY_CAPS);
	start(&f);
	give_relay_event(&f, 1, ev);
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	assert_string_equal(op.argv[1], "relay");
	assert_true(argv_has(&op, "--value-stdin"));
	give_exec(&f, 2, "", "maf-launch relay: unexpected argument '--value-stdin'");
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	assert_string_equal(op.data, "{\"value\":2}");
	give_write_ok(&f);
	snprintf(ev2, sizeof(ev2), "{\"event\":\"request\",\"id\":2,\"size\":%zu}\n%s",
		 strlen(req(2, "{\"a\": 2}")), req(2, "{\"a\": 2}"));
	assert_string_equal(give_relay_event(&f, 2, ev2), "");
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0002.response.json");
	give_write_ok(&f);
	assert_string_equal(give_relay_event(&f, 3, "{\"event\":\"exit\",\"size\":1}\n0"), "");
	finish_normally(&f, "");
	assert_int_equal(mafh_run_result(f.run)->calls, 2);
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	assert_non_null(strstr(mafh_run_result(f.run)->errors, "does not take an answer on its "
			       "stdin"));
	teardown_run(&f);

	setup_run_caps(&f, NULL, MAFH_TRANSPORT_RELAY, 60000, RELAY_CAPS);
	start(&f);
	give_relay_event(&f, 1, ev);
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	assert_string_equal(op.argv[1], "relay");
	assert_non_null(argv_after(&op, "--answer"));
	give_exec(&f, 125, "", "maf-launch relay: cannot write the answer: No space left");
	finish_in_error(&f);
	assert_int_equal(mafh_run_result(f.run)->calls, 0);
	assert_non_null(strstr(mafh_run_result(f.run)->error.message, "No space left"));
	teardown_run(&f);

	/* One that never returns with it, saying nothing: the sentence ends at the call. */
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_RELAY, 60000, RELAY_CAPS);
	start(&f);
	give_relay_event(&f, 1, ev);
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	assert_non_null(argv_after(&op, "--answer"));
	mafh_op_result_init(&res, MAFH_OP_EXEC);
	res.exec.exit_code = -1;
	res.exec.timed_out = 1;
	give(&f, &res);
	finish_in_error(&f);
	assert_int_equal(mafh_run_result(f.run)->calls, 0);
	assert_string_equal(mafh_run_result(f.run)->error.message, "maf-launch relay did not "
			    "return in time, carrying the answer to call 1");
	teardown_run(&f);
}

/* A read of the stream that brings bytes[0..len) (none: until_ms passed), and its end. */
static void give_stream_n(struct fixture *f, const char *bytes, size_t len, int ended)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, MAFH_OP_STREAM_READ);
	res.stream_data = bytes;
	res.stream_len = len;
	res.stream_ended = ended;
	give(f, &res);
}

static void give_stream(struct fixture *f, const char *bytes, int ended)
{
	give_stream_n(f, bytes, bytes ? strlen(bytes) : 0, ended);
}

static void give_ok(struct fixture *f, enum mafh_op_kind kind)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, kind);
	give(f, &res);
}

/* Expects a frame written on the stream and returns it (static buffer). */
static const char *sent_frame(struct fixture *f)
{
	static char frame[4096];
	struct mafh_op op = next(f);

	assert_int_equal(op.kind, MAFH_OP_STREAM_WRITE);
	assert_true(op.len < sizeof(frame));
	memcpy(frame, op.data, op.len);
	frame[op.len] = '\0';
	give_ok(f, MAFH_OP_STREAM_WRITE);
	return frame;
}

static void test_stream_transport(void **state)
{
	struct fixture f;
	struct mafh_op op;
	char ev[1024];
	const char *body = req(1, "{\"a\": 41}");

	(void)state;
	/* auto over a backend with a stream: stream. */
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_AUTO, 60000, MAFH_CAPS_REQUIRED |
		       MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_WAIT_CHANGE | MAFH_CAP_STREAM);
	start(&f);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_OPEN);
	assert_string_equal(op.argv[1], "serve");
	assert_string_equal(argv_after(&op, "--run-dir"), R);
	assert_string_equal(argv_after(&op, "--supervisor-pid"), "42");
	assert_string_equal(argv_after(&op, "--max-answer-bytes"), "8388608");
	assert_true(argv_has(&op, "--ack"));
	give_ok(&f, MAFH_OP_STREAM_OPEN);
	assert_string_equal(sent_frame(&f), "{\"next\":1}\n");
	/* The event comes in pieces: nothing happens until it is whole. */
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_READ);
	give_stream(&f, NULL, 0);             /* until_ms passed with nothing */
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_READ);
	ev[20] = '\0';
	give_stream(&f, ev, 0);
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_READ);
	give_stream(&f, ev + 20, 0);
	op = next(&f);
	give_call(&f, &op);
	assert_string_equal(sent_frame(&f), "{\"answer\":1,\"size\":12}\n{\"value\":42}");
	/* The answer counts once serve accepts it, before the frame's event. */
	assert_int_equal(mafh_run_result(f.run)->calls, 0);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_READ);
	give_stream(&f, "{\"event\":\"accepted\",\"id\":1}\n", 0);
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	assert_non_null(strstr(f.events, "call_served 1 add"));
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_READ);
	give_stream(&f, "{\"event\":\"exit\",\"size\":1}\n0", 0);
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_CLOSE);
	give_ok(&f, MAFH_OP_STREAM_CLOSE);
	finish_normally(&f, "out");
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	/* launch, serve, stop, reclaim; the program and the shim the only writes. */
	assert_int_equal(mafh_run_result(f.run)->ops.exec, 4);
	assert_int_equal(mafh_run_result(f.run)->ops.write, 2);
	assert_string_equal(mafh_run_result(f.run)->errors, "");
	teardown_run(&f);
}

/* A stream that ends while an answer is out and not accepted: closed, and relay carries
 * the same answer again; the tool ran once. One that prints what is not an event goes the
 * same way. */
static void test_stream_fallback(void **state)
{
	struct fixture f;
	struct mafh_op op;
	char ev[1024];
	const char *body = req(1, "{\"a\": 1}");

	(void)state;
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_STREAM, 60000, RELAY_CAPS | MAFH_CAP_STREAM);
	start(&f);
	op = next(&f);
	give_ok(&f, MAFH_OP_STREAM_OPEN);
	sent_frame(&f);
	next(&f);
	give_stream(&f, ev, 0);
	op = next(&f);
	give_call(&f, &op);
	assert_int_equal(f.tool_calls, 1);
	assert_non_null(strstr(sent_frame(&f), "\"answer\":1"));
	next(&f);
	give_stream(&f, NULL, 1);             /* ended: killed before its event */
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_CLOSE);
	give_ok(&f, MAFH_OP_STREAM_CLOSE);
	assert_string_equal(give_relay_event(&f, 2, "{\"event\":\"exit\",\"size\":1}\n0"),
			    "{\"value\":2}");
	finish_normally(&f, "");
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	assert_int_equal(f.tool_calls, 1);
	assert_non_null(strstr(mafh_run_result(f.run)->errors, "the stream of maf-launch "
			       "serve broke"));
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	teardown_run(&f);

	setup_run_caps(&f, NULL, MAFH_TRANSPORT_STREAM, 60000, MAFH_CAPS_REQUIRED |
		       MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_STREAM);
	start(&f);
	next(&f);
	give_ok(&f, MAFH_OP_STREAM_OPEN);
	sent_frame(&f);
	next(&f);
	give_stream(&f, "this is no event\n", 0);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_CLOSE);
	give_ok(&f, MAFH_OP_STREAM_CLOSE);
	give_relay_event(&f, 1, "{\"event\":\"exit\",\"size\":1}\n0");
	finish_normally(&f, "");
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	teardown_run(&f);
}

/* A frame's write has the time of a short command, and not more than 5 s past the run's
 * deadline: a serve that stops reading a frame larger than its pipe holds (an answer of
 * megabytes) would hold it forever. One that times out breaks the stream, and relay carries
 * the answer again; the tool ran once. */
static void test_stream_write_times(void **state)
{
	struct fixture f;
	struct mafh_op op;
	struct mafh_op_result res;
	char ev[1024], frame[1024];
	const char *body = req(1, "{\"a\": 1}");

	(void)state;
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_STREAM, 60000, RELAY_CAPS | MAFH_CAP_STREAM);
	start(&f);
	next(&f);
	give_ok(&f, MAFH_OP_STREAM_OPEN);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_WRITE);
	assert_int_equal(op.timeout_ms, 30000);
	give_ok(&f, MAFH_OP_STREAM_WRITE);
	next(&f);
	give_stream(&f, ev, 0);
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_WRITE);
	assert_int_equal(op.timeout_ms, 30000);
	assert_true(op.len < sizeof(frame));
	memcpy(frame, op.data, op.len);
	frame[op.len] = '\0';
	assert_non_null(strstr(frame, "\"answer\":1"));
	mafh_op_result_init(&res, MAFH_OP_STREAM_WRITE);
	res.error = MAFH_ETIMEDOUT;
	give(&f, &res);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_CLOSE);
	give_ok(&f, MAFH_OP_STREAM_CLOSE);
	assert_int_equal(mafh_run_result(f.run)->calls, 0);
	assert_string_equal(give_relay_event(&f, 2, "{\"event\":\"exit\",\"size\":1}\n0"),
			    "{\"value\":2}");
	finish_normally(&f, "");
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	assert_int_equal(f.tool_calls, 1);
	assert_non_null(strstr(mafh_run_result(f.run)->errors, "the stream of maf-launch "
			       "serve broke"));
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	teardown_run(&f);

	/* A run of 9 s: its deadline; of 3 s: 5 s past it, as a waiting exec. */
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_STREAM, 9000, RELAY_CAPS | MAFH_CAP_STREAM);
	start(&f);
	next(&f);
	give_ok(&f, MAFH_OP_STREAM_OPEN);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_WRITE);
	assert_int_equal(f.now + op.timeout_ms, 1000 + 9000);
	teardown_run(&f);
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_STREAM, 3000, RELAY_CAPS | MAFH_CAP_STREAM);
	start(&f);
	next(&f);
	give_ok(&f, MAFH_OP_STREAM_OPEN);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_WRITE);
	assert_int_equal(op.timeout_ms, 5000);
	teardown_run(&f);
}

/* ---- serve --ack: an answer accepted the moment it is in place ---------------------------- */

#define ACCEPTED_1 "{\"event\":\"accepted\",\"id\":1}\n"
#define EXIT_EVENT "{\"event\":\"exit\",\"size\":1}\n0"
#define STARTED "run_started 0 -: \n"

/* A stream run up to its first answer on its way: request 1 asked for, taken and called,
 * and the frame carrying the answer ({"value":2}) written; a STREAM_READ is next. */
static void stream_answer_out(struct fixture *f)
{
	const char *body = req(1, "{\"a\": 1}");
	struct mafh_op op;
	char ev[1024];

	setup_run_caps(f, NULL, MAFH_TRANSPORT_STREAM, 60000, RELAY_CAPS | MAFH_CAP_STREAM);
	start(f);
	op = next(f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_OPEN);
	give_ok(f, MAFH_OP_STREAM_OPEN);
	assert_string_equal(sent_frame(f), "{\"next\":1}\n");
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	op = next(f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_READ);
	give_stream(f, ev, 0);
	op = next(f);
	give_call(f, &op);
	assert_string_equal(sent_frame(f), "{\"answer\":1,\"size\":11}\n{\"value\":2}");
	assert_int_equal(mafh_run_result(f->run)->calls, 0);
	op = next(f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_READ);
}

/* From the exit event read on the stream: closed, and the run ends as the program did. */
static void stream_exit_taken(struct fixture *f, int64_t calls)
{
	struct mafh_op op = next(f);

	assert_int_equal(op.kind, MAFH_OP_STREAM_CLOSE);
	give_ok(f, MAFH_OP_STREAM_CLOSE);
	finish_normally(f, "");
	assert_int_equal(mafh_run_result(f->run)->status, MAFH_RUN_EXITED);
	assert_int_equal(mafh_run_result(f->run)->transport, MAFH_TRANSPORT_STREAM);
	assert_int_equal(mafh_run_result(f->run)->calls, calls);
	assert_string_equal(mafh_run_result(f->run)->errors, "");
}

/* The accepted line and the next event in one read: the answer counts at the first, the
 * second is taken as the frame's event (a request, then the exit). */
static void test_stream_accepted_and_event_in_one_read(void **state)
{
	const char *body;
	struct fixture f;
	struct mafh_op op;
	char two[1024];

	(void)state;
	stream_answer_out(&f);
	body = req(2, "{\"a\": 2}");
	snprintf(two, sizeof(two), ACCEPTED_1 "{\"event\":\"request\",\"id\":2,\"size\":%zu}\n%s",
		 strlen(body), body);
	give_stream(&f, two, 0);
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_CALL);
	assert_int_equal(op.call->id, 2);
	give_call(&f, &op);
	assert_string_equal(sent_frame(&f), "{\"answer\":2,\"size\":11}\n{\"value\":3}");
	next(&f);
	give_stream(&f, "{\"event\":\"accepted\",\"id\":2}\n" EXIT_EVENT, 0);
	assert_string_equal(f.events, STARTED "call_served 1 add: \ncall_served 2 add: \n");
	stream_exit_taken(&f, 2);
	assert_int_equal(f.tool_calls, 2);
	teardown_run(&f);
}

/* The accepted line and the next event split at every byte, and a byte a read: the answer
 * counts once the accepted line is whole, and never twice. */
static void test_stream_accepted_split_anywhere(void **state)
{
	static const char text[] = ACCEPTED_1 EXIT_EVENT;
	size_t len = strlen(text), line = strlen(ACCEPTED_1);
	struct fixture f;

	(void)state;
	for (size_t cut = 0; cut <= len; cut++) {
		stream_answer_out(&f);
		give_stream_n(&f, text, cut, 0);
		assert_int_equal(mafh_run_result(f.run)->calls, cut >= line);
		if (cut < len) {
			assert_int_equal(next(&f).kind, MAFH_OP_STREAM_READ);
			give_stream_n(&f, text + cut, len - cut, 0);
		}
		stream_exit_taken(&f, 1);
		assert_string_equal(f.events, STARTED "call_served 1 add: \nrun_ended 0 -: \n");
		teardown_run(&f);
	}
	stream_answer_out(&f);
	for (size_t i = 0; i < len; i++) {
		if (i)
			assert_int_equal(next(&f).kind, MAFH_OP_STREAM_READ);
		give_stream_n(&f, text + i, 1, 0);
		assert_int_equal(mafh_run_result(f.run)->calls, i + 1 >= line);
	}
	stream_exit_taken(&f, 1);
	teardown_run(&f);
}

/* The point of it: a program that computes after its answer. The accepted line comes alone,
 * CALL_SERVED fires then, and the reads go on for the next event, which comes much later. */
static void test_stream_accepted_long_before_the_next_event(void **state)
{
	struct fixture f;
	struct mafh_op op;

	(void)state;
	stream_answer_out(&f);
	give_stream(&f, ACCEPTED_1, 0);
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	assert_string_equal(f.events, STARTED "call_served 1 add: \n");
	for (int i = 0; i < 3; i++) {
		op = next(&f);
		assert_int_equal(op.kind, MAFH_OP_STREAM_READ);
		f.now += 10000;
		give_stream(&f, NULL, 0);     /* nothing yet: the program computes */
	}
	assert_string_equal(f.events, STARTED "call_served 1 add: \n");
	next(&f);
	give_stream(&f, EXIT_EVENT, 0);
	stream_exit_taken(&f, 1);
	assert_string_equal(f.events, STARTED "call_served 1 add: \nrun_ended 0 -: \n");
	teardown_run(&f);
}

/* What serve printed broke the stream: closed, and relay goes on from expect_next, carrying
 * the answer carried ("" for none) with the exit, to the end. The tool ran once. */
static void stream_broken_then_relay(struct fixture *f, long expect_next, const char *carried,
				     const char *why)
{
	struct mafh_op op = next(f);

	assert_int_equal(op.kind, MAFH_OP_STREAM_CLOSE);
	give_ok(f, MAFH_OP_STREAM_CLOSE);
	assert_string_equal(give_relay_event(f, expect_next, EXIT_EVENT), carried);
	finish_normally(f, "");
	assert_int_equal(mafh_run_result(f->run)->status, MAFH_RUN_EXITED);
	assert_int_equal(mafh_run_result(f->run)->transport, MAFH_TRANSPORT_RELAY);
	assert_non_null(strstr(mafh_run_result(f->run)->errors, "the stream of maf-launch serve "
			       "broke"));
	assert_non_null(strstr(mafh_run_result(f->run)->errors, why));
	assert_int_equal(f->tool_calls, 1);
	assert_int_equal(mafh_run_result(f->run)->calls, 1);
}

/* An accepted line for another call accepts nothing: the answer is carried again. */
static void test_stream_accepted_for_another_call(void **state)
{
	static const char *const others[] = {"{\"event\":\"accepted\",\"id\":2}\n",
					     "{\"event\":\"accepted\"}\n",
					     "{\"event\":\"accepted\",\"id\":\"1\"}\n"};
	struct fixture f;

	(void)state;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		stream_answer_out(&f);
		give_stream(&f, others[i], 0);
		assert_int_equal(mafh_run_result(f.run)->calls, 0);
		stream_broken_then_relay(&f, 2, "{\"value\":2}", "it accepted an answer to call ");
		teardown_run(&f);
	}
}

/* An answer accepted twice, in one read or two: the first counts, the second breaks the
 * stream, and relay goes on with the next call, carrying nothing again. */
static void test_stream_accepted_twice(void **state)
{
	struct fixture f;

	(void)state;
	stream_answer_out(&f);
	give_stream(&f, ACCEPTED_1 ACCEPTED_1, 0);
	stream_broken_then_relay(&f, 2, "", "it accepted the answer to call 1 twice");
	teardown_run(&f);

	stream_answer_out(&f);
	give_stream(&f, ACCEPTED_1, 0);
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	next(&f);
	give_stream(&f, ACCEPTED_1 EXIT_EVENT, 0);
	stream_broken_then_relay(&f, 2, "", "it accepted the answer to call 1 twice");
	teardown_run(&f);
}

/* An accepted line after a frame that carried no answer; and a frame's event that comes
 * before the answer it carried was accepted, or with more after it. */
static void test_stream_accepted_out_of_turn(void **state)
{
	const char *body = req(1, "{\"a\": 1}");
	struct fixture f;
	struct mafh_op op;
	char ev[1024];

	(void)state;
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_STREAM, 60000, RELAY_CAPS | MAFH_CAP_STREAM);
	start(&f);
	next(&f);
	give_ok(&f, MAFH_OP_STREAM_OPEN);
	assert_string_equal(sent_frame(&f), "{\"next\":1}\n");
	next(&f);
	give_stream(&f, ACCEPTED_1, 0);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_CLOSE);
	give_ok(&f, MAFH_OP_STREAM_CLOSE);
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	assert_string_equal(give_relay_event(&f, 1, ev), "");
	op = next(&f);
	give_call(&f, &op);
	assert_string_equal(give_relay_event(&f, 2, EXIT_EVENT), "{\"value\":2}");
	finish_normally(&f, "");
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	assert_non_null(strstr(mafh_run_result(f.run)->errors, "it accepted an answer it was "
			       "not sent"));
	teardown_run(&f);

	/* serve --ack accepts an answer before it waits: an event first is not serve's. */
	stream_answer_out(&f);
	give_stream(&f, EXIT_EVENT, 0);
	stream_broken_then_relay(&f, 2, "{\"value\":2}", "without accepting the answer");
	teardown_run(&f);

	/* Only an accepted line may come before the frame's event, and nothing after it. */
	stream_answer_out(&f);
	give_stream(&f, ACCEPTED_1 EXIT_EVENT "{\"event\":\"timeout\"}\n", 0);
	stream_broken_then_relay(&f, 2, "", "it printed what is not one event");
	teardown_run(&f);
}

/* A launcher from before --ack refuses it, as any option it does not know (exit 2): the
 * stream ends on its first frame, before any answer, and relay serves the run. */
static void test_stream_ack_refused(void **state)
{
	const char *body = req(1, "{\"a\": 1}");
	struct mafh_op_result res;
	struct fixture f;
	struct mafh_op op;
	char ev[1024];

	(void)state;
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_AUTO, 60000, RELAY_CAPS | MAFH_CAP_STREAM);
	start(&f);
	op = next(&f);
	assert_true(argv_has(&op, "--ack"));
	give_ok(&f, MAFH_OP_STREAM_OPEN);
	assert_string_equal(sent_frame(&f), "{\"next\":1}\n");
	next(&f);
	mafh_op_result_init(&res, MAFH_OP_STREAM_READ);
	res.stream_ended = 1;
	snprintf(res.detail.message, sizeof(res.detail.message), "maf-launch ended: maf-launch "
		 "serve: unknown option '--ack'");
	give(&f, &res);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_STREAM_CLOSE);
	give_ok(&f, MAFH_OP_STREAM_CLOSE);
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(body), body);
	assert_string_equal(give_relay_event(&f, 1, ev), "");
	op = next(&f);
	give_call(&f, &op);
	assert_string_equal(give_relay_event(&f, 2, EXIT_EVENT), "{\"value\":2}");
	finish_normally(&f, "");
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	assert_int_equal(mafh_run_result(f.run)->transport, MAFH_TRANSPORT_RELAY);
	assert_int_equal(mafh_run_result(f.run)->calls, 1);
	assert_non_null(strstr(mafh_run_result(f.run)->errors, "unknown option '--ack'"));
	teardown_run(&f);
}

/* ---- waiting for a change (MAFH_CAP_WAIT_CHANGE) ----------------------------------------- */

/* The next op must be a WAIT_UNTIL that waits for request id or the exit marker. */
static int64_t expect_wait_for(struct fixture *f, long id)
{
	struct mafh_op op;
	const char *dir;
	const char *const *names;
	char want[64];

	assert_int_equal(next_op(f->run, f->now, &op), 0);
	assert_int_equal(op.kind, MAFH_OP_WAIT_UNTIL);
	assert_true(op.until_ms > f->now);
	assert_int_equal(wait_target(&op, &dir, &names), 1);
	assert_string_equal(dir, R "/host_tools");
	snprintf(want, sizeof(want), "host_tool_calls/%04ld.request.json", id);
	assert_string_equal(names[0], want);
	assert_string_equal(names[1], "program_exit_code");
	assert_null(names[2]);
	return op.until_ms;
}

static void give_wait(struct fixture *f, int64_t at)
{
	struct mafh_op_result res;

	f->now = at;
	mafh_op_result_init(&res, MAFH_OP_WAIT_UNTIL);
	assert_int_equal(mafh_run_op_result(f->run, f->now, &res), 0);
}

static void test_wait_target(void **state)
{
	struct fixture f;
	struct mafh_op op;
	const char *dir = "x";
	const char *const *names = (const char *const[]){"x", NULL};
	int64_t until;

	(void)state;
	/* AUTO over a backend that can wait for a change: the files transport, no exec per
	 * call even where exec may block. */
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_AUTO, 60000,
		       MAFH_CAPS_REQUIRED | MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_WAIT_CHANGE);
	assert_int_equal(wait_target(NULL, &dir, &names), 0);
	assert_null(dir);
	assert_null(names);
	start(&f);
	/* Right after the launch: a wait for request 1 or the exit marker, not a look. */
	until = expect_wait_for(&f, 1);
	/* Ended early (the driver saw the file appear): the run looks at once. */
	give_wait(&f, f.now + 1);
	assert_true(f.now < until);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0001.request.json");
	assert_int_equal(wait_target(&op, &dir, &names), 0);
	give_read(&f, MAFH_READ_OK, req(1, "{\"a\": 1}"));
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	give_write_ok(&f);
	/* After the answer: straight to a wait for the next one. */
	until = expect_wait_for(&f, 2);
	give_wait(&f, f.now + 1);
	/* A false alarm: the request is not there, so the exit marker is looked at at once
	 * (the change may have been the marker), then the wait resumes. */
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0002.request.json");
	give_read(&f, MAFH_READ_ABSENT, NULL);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit_code");
	give_read(&f, MAFH_READ_ABSENT, NULL);
	until = expect_wait_for(&f, 2);
	/* A torn request is read again after a plain sleep: no target (the file is there). */
	give_wait(&f, until);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0002.request.json");
	give_read(&f, MAFH_READ_OK, "{\"id\": \"0002\", \"na");
	assert_int_equal(next_op(f.run, f.now, &op), 0);
	assert_int_equal(op.kind, MAFH_OP_WAIT_UNTIL);
	assert_int_equal(wait_target(&op, &dir, &names), 0);
	give_wait(&f, op.until_ms);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0002.request.json");
	give_read(&f, MAFH_READ_OK, req(2, "{\"a\": 2}"));
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0002.response.json");
	give_write_ok(&f);
	/* The wait runs to its end with nothing seen: a look anyway (the wait is a hint). */
	until = expect_wait_for(&f, 3);
	give_wait(&f, until);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0003.request.json");
	give_read(&f, MAFH_READ_ABSENT, NULL);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit_code");
	give_read(&f, MAFH_READ_OK, "0");
	finish_normally(&f, "done\n");
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	assert_int_equal(mafh_run_result(f.run)->calls, 2);
	assert_int_equal(f.tool_calls, 2);
	teardown_run(&f);

	/* Without the capability a WAIT_UNTIL is a plain sleep: no target. */
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	assert_int_equal(next_op(f.run, f.now, &op), 0);
	assert_int_equal(op.kind, MAFH_OP_WAIT_UNTIL);
	assert_int_equal(wait_target(&op, &dir, &names), 0);
	teardown_run(&f);
	/* Explicitly the wait transport: still `maf-launch wait`, capability or not. */
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_WAIT, 60000,
		       MAFH_CAPS_REQUIRED | MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_WAIT_CHANGE);
	start(&f);
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_EXEC);
	assert_string_equal(op.argv[1], "wait");
	teardown_run(&f);
}

/* Where the backend would have it (MAFH_CAP_LAUNCH_STDIN), the program and the shim go on the
 * launch's stdin; a launcher that refuses --files-stdin (usage) has them written, and is
 * launched again. */
static void test_files_on_the_launchs_stdin(void **state)
{
	struct fixture f;
	struct mafh_op op;

	(void)state;
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_RELAY, 60000, RELAY_CAPS | MAFH_CAP_LAUNCH_STDIN);
	start(&f);
	assert_int_equal(mafh_run_result(f.run)->ops.write, 0);
	assert_int_equal(mafh_run_result(f.run)->exec_inputs, 1);
	teardown_run(&f);

	setup_run_caps(&f, NULL, MAFH_TRANSPORT_RELAY, 60000, RELAY_CAPS | MAFH_CAP_LAUNCH_STDIN);
	op = next(&f);
	assert_true(argv_has(&op, "--files-stdin"));
	give_exec(&f, 2, "", "maf-launch run: unknown option '--files-stdin'\n");
	start(&f);		/* the writes, then the launch without it */
	assert_int_equal(mafh_run_result(f.run)->ops.write, 2);
	assert_string_equal(mafh_run_result(f.run)->errors, "");
	teardown_run(&f);

	/* Any other failure of the launch is the launch's. */
	setup_run_caps(&f, NULL, MAFH_TRANSPORT_RELAY, 60000, RELAY_CAPS | MAFH_CAP_LAUNCH_STDIN);
	op = next(&f);
	give_exec(&f, 125, "", "maf-launch run: --files-stdin: cannot create R/host_tools/x\n");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_LAUNCH_FAILED);
	assert_non_null(strstr(mafh_run_result(f.run)->error.message, "cannot create"));
	teardown_run(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_files_on_the_launchs_stdin),
		cmocka_unit_test(test_wait_transport),
		cmocka_unit_test(test_wait_fallback),
		cmocka_unit_test(test_wait_garbage),
		cmocka_unit_test(test_relay_transport),
		cmocka_unit_test(test_relay_without_stdin),
		cmocka_unit_test(test_waiting_exec_times),
		cmocka_unit_test(test_relay_fallback),
		cmocka_unit_test(test_stream_transport),
		cmocka_unit_test(test_stream_fallback),
		cmocka_unit_test(test_stream_write_times),
		cmocka_unit_test(test_stream_accepted_and_event_in_one_read),
		cmocka_unit_test(test_stream_accepted_split_anywhere),
		cmocka_unit_test(test_stream_accepted_long_before_the_next_event),
		cmocka_unit_test(test_stream_accepted_for_another_call),
		cmocka_unit_test(test_stream_accepted_twice),
		cmocka_unit_test(test_stream_accepted_out_of_turn),
		cmocka_unit_test(test_stream_ack_refused),
		cmocka_unit_test(test_wait_target),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
