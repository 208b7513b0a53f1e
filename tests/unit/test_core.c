/* Unit tests for the sans-I/O core (host/src/run.c): the run is driven op by op with
 * scripted results, on a fake clock (core_fixture.h). No process, no filesystem. Here: the
 * capabilities a run needs, the files transport's requests and answers (torn, bad, past a
 * cap), the events and errors, the options, and a pass-through registry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_fixture.h"

static void test_capabilities_refused(void **state)
{
	struct mafh_registry *reg;
	struct mafh_run_options o;
	struct mafh_run *run = (struct mafh_run *)1;
	struct mafh_error err = {0};

	(void)state;
	assert_int_equal(mafh_registry_new(&reg), 0);
	mafh_run_options_init(&o);
	o.run_dir = R;
	o.program = "x";
	o.program_len = 1;
	assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAP_EXEC | MAFH_CAP_FILES_IN |
					     MAFH_CAP_DETACHED_EXEC, &o, &run, &err),
			 MAFH_ENOTSUP);
	assert_null(run);
	assert_non_null(strstr(err.message, "FILES_OUT"));
	assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAPS_REQUIRED & ~MAFH_CAP_DETACHED_EXEC,
					     &o, &run, &err), MAFH_ENOTSUP);
	assert_non_null(strstr(err.message, "DETACHED_EXEC"));
	assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAPS_REQUIRED & ~MAFH_CAP_EXEC, &o, &run,
					     &err), MAFH_ENOTSUP);
	assert_non_null(strstr(err.message, "EXEC"));
	o.transport = MAFH_TRANSPORT_WAIT;
	assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAPS_REQUIRED, &o, &run, &err),
			 MAFH_ENOTSUP);
	assert_non_null(strstr(err.message, "BLOCKING_EXEC"));
	o.transport = MAFH_TRANSPORT_STREAM;
	assert_int_equal(mafh_run_new_sansio(reg, ~MAFH_CAP_STREAM, &o, &run, &err),
			 MAFH_ENOTSUP);
	assert_non_null(strstr(err.message, "STREAM"));
	/* Refused before anything: the registry is not sealed by a refused run. */
	assert_false(mafh_registry_sealed(reg));
	o.transport = MAFH_TRANSPORT_FILES;
	o.run_dir = "relative/dir";
	assert_int_equal(mafh_run_new_sansio(reg, ~0u, &o, &run, &err), MAFH_EINVAL);
	o.run_dir = "/a/../b";
	assert_int_equal(mafh_run_new_sansio(reg, ~0u, &o, &run, &err), MAFH_EINVAL);
	o.run_dir = R;
	o.egress = "sideways";
	assert_int_equal(mafh_run_new_sansio(reg, ~0u, &o, &run, &err), MAFH_EINVAL);
	o.egress = NULL;
	assert_int_equal(mafh_run_new(reg, NULL, &o, &run, &err), MAFH_EINVAL);
	mafh_registry_free(reg);
}

/* What a run tells as it goes: one event per call answered, with the tool, the refusal and
 * the tool's note; every error; an answer the program never received taken back. */
static void test_events(void **state)
{
	struct fixture f;
	struct mafh_op op;
	struct mafh_op_result res;
	const struct mafh_run_result *r;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	serve(&f, 1, req(1, "{\"a\": 2}"), 1);
	/* A tool that refuses and leaves a note for the operator. */
	op = next(&f);
	give_read(&f, MAFH_READ_OK, req(2, "{\"a\": 1}"));
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_CALL);
	assert_int_equal(op.call->id, 2);
	assert_string_equal(op.call->arguments, "{\"a\":1}");
	mafh_op_result_init(&res, MAFH_OP_CALL);
	res.refusal = "the weather service is down";
	res.note = "traceback line 1\nline 2";
	res.note_len = 23;
	give(&f, &res);
	op = next(&f);
	assert_non_null(strstr(op.data, "the weather service is down"));
	assert_null(strstr(op.data, "traceback"));
	give_write_ok(&f);
	/* A request for a tool that is not there, and one too big to read. */
	serve(&f, 3, "{\"id\": \"0003\", \"name\": \"mul\", \"arguments\": {}}", 0);
	op = next(&f);
	give_read(&f, MAFH_READ_TOO_BIG, NULL);
	op = next(&f);
	give_write_ok(&f);
	exit_with(&f, 5, "0");
	/* The record says the answer to call 4 reached no caller. */
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(&f, 0, "{\"status\":\"exited\",\"exit_code\":0,\"calls\":3,"
		  "\"undelivered\":[4,9]}\n", "");
	op = next(&f);
	give_read(&f, MAFH_READ_OK, "out");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 1, "", "maf-launch reclaim: cannot remove x\n");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	r = mafh_run_result(f.run);
	assert_string_equal(f.events,
			    "run_started 0 -: \n"
			    "call_served 1 add: \n"
			    "call_refused 2 add: the weather service is down | traceback line 1\n"
			    "line 2\n"
			    "call_refused 3 mul: there is no host tool named 'mul'\n"
			    "call_refused 4 -: the request is larger than 1048576 bytes\n"
			    "call_undelivered 4 -: \n"
			    "error 0 -: maf-launch reclaim failed (exit code 1): maf-launch reclaim: "
			    "cannot remove x\n"
			    "run_ended 0 -: \n");
	assert_int_equal(r->status, MAFH_RUN_EXITED);
	/* Four answers written, one of them never received. */
	assert_int_equal(r->calls, 3);
	assert_int_equal(r->refusals, 2);
	assert_int_equal(r->undelivered, 1);
	assert_int_equal(r->record.undelivered, 2);
	assert_string_equal(r->errors, "maf-launch reclaim failed (exit code 1): maf-launch "
			    "reclaim: cannot remove x\n");
	teardown_run(&f);
}

/* Every error is kept, in order; the first stays the run's error. */
static void test_every_error_kept(void **state)
{
	struct fixture f;
	struct mafh_op op;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 100);
	start(&f);
	f.now += 200;
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(&f, MAFH_READ_TOO_BIG, NULL);
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(&f, 125, "", "maf-launch stop: the supervisor is gone\n");
	ending_from_files(&f, NULL, 0, NULL);
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_TIMEOUT);
	assert_int_equal(mafh_run_result(f.run)->error.code, MAFH_ETIMEDOUT);
	assert_string_equal(mafh_run_result(f.run)->errors,
			    "the run's deadline of 100 ms passed\n"
			    "the program's output is larger than 1048576 bytes\n"
			    "maf-launch stop failed (exit code 125): maf-launch stop: the supervisor "
			    "is gone\n");
	teardown_run(&f);
}

static void test_happy_path_files(void **state)
{
	struct fixture f;
	const struct mafh_run_result *r;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	assert_string_equal(serve(&f, 1, req(1, "{\"a\": 2}"), 1), "{\"value\":3}");
	assert_string_equal(serve(&f, 2, req(2, "{\"a\": -1}"), 1),
			    "{\"refusal\":\"a must not be negative\"}");
	exit_with(&f, 3, "0");
	finish_normally(&f, "hello");
	r = mafh_run_result(f.run);
	assert_int_equal(r->status, MAFH_RUN_EXITED);
	assert_int_equal(r->exit_code, 0);
	assert_int_equal(r->calls, 2);
	assert_int_equal(r->refusals, 1);
	assert_int_equal(f.tool_calls, 2);
	assert_string_equal(r->output, "hello");
	assert_int_equal(r->output_len, 5);
	assert_true(r->record.have_record);
	assert_string_equal(r->record.seccomp, "default");
	assert_int_equal(r->ops.exec, 3);  /* run, stop, reclaim */
	assert_int_equal(r->ops.write, 4); /* program, shim, two responses */
	assert_true(r->ops.read >= 5);
	assert_int_equal(r->ops.stat, 0);
	assert_true(r->wall_ms > 0);
	/* After DONE, DONE again. */
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	teardown_run(&f);
}

static void test_torn_read(void **state)
{
	struct fixture f;
	struct mafh_op op;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	/* Seen half-written, then whole: served normally. */
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0001.request.json");
	give_read(&f, MAFH_READ_OK, "{\"id\": \"0001\", \"na");
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0001.request.json");
	give_read(&f, MAFH_READ_OK, req(1, "{\"a\": 1}"));
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_CALL);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	give_write_ok(&f);
	/* Still malformed on the second look: a refusal, and the program goes on. */
	assert_string_equal(serve(&f, 2, "{\"id\": \"0002\", \"na", 0),
			    "{\"refusal\":\"the request is not a JSON object\"}");
	assert_string_equal(serve(&f, 3, req(3, "{\"a\": 5}"), 1), "{\"value\":6}");
	exit_with(&f, 4, "0");
	finish_normally(&f, "");
	assert_int_equal(mafh_run_result(f.run)->calls, 3);
	assert_int_equal(mafh_run_result(f.run)->refusals, 1);
	teardown_run(&f);
}

/* mafh_run_write_donor: the request a response may reuse, only when it was read whole and
 * decoded, and only during that response's WRITE. */
static void test_write_donor(void **state)
{
	struct fixture f;
	struct mafh_op op;
	char ev[1024];

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	assert_null(write_donor(&f));
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0001.request.json");
	assert_null(write_donor(&f));
	give_read(&f, MAFH_READ_OK, req(1, "{\"a\": 1}"));
	op = next(&f);
	assert_null(write_donor(&f));
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	assert_string_equal(write_donor(&f), CALLS "0001.request.json");
	give_write_ok(&f);
	assert_null(write_donor(&f));
	/* Decoded, then refused (no such argument): the writer was done, so it may be reused. */
	op = next(&f);
	give_read(&f, MAFH_READ_OK, req(2, "{\"b\": 1}"));
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0002.response.json");
	assert_string_equal(write_donor(&f), CALLS "0002.request.json");
	give_write_ok(&f);
	/* Torn twice: its writer may still be at it, so the refusal gets a file of its own. */
	op = next(&f);
	give_read(&f, MAFH_READ_OK, "{\"id\": \"0003\", \"na");
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0003.request.json");
	give_read(&f, MAFH_READ_OK, "{\"id\": \"0003\", \"na");
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0003.response.json");
	assert_null(write_donor(&f));
	give_write_ok(&f);
	/* Too big, or not a regular file: not read whole. */
	op = next(&f);
	give_read(&f, MAFH_READ_TOO_BIG, NULL);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0004.response.json");
	assert_null(write_donor(&f));
	give_write_ok(&f);
	teardown_run(&f);

	/* A request that came as a wait event was never read as a file. */
	setup_run(&f, NULL, MAFH_TRANSPORT_WAIT, 60000);
	start(&f);
	snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
		 strlen(req(1, "{\"a\": 1}")), req(1, "{\"a\": 1}"));
	give_wait_event(&f, 1, ev);
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	assert_null(write_donor(&f));
	give_write_ok(&f);
	teardown_run(&f);
}

static void test_bad_requests(void **state)
{
	struct fixture f;
	struct mafh_op op;
	const char *r;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	/* Out of order: request 1 claims to be 2. */
	r = serve(&f, 1, req(2, "{\"a\": 1}"), 0);
	assert_non_null(strstr(r, "does not match its file name"));
	/* Unknown tool, wrong type, missing argument, extra argument, not an object. */
	r = serve(&f, 2, "{\"id\": \"0002\", \"name\": \"nope\", \"arguments\": {}}", 0);
	assert_non_null(strstr(r, "no host tool named 'nope'"));
	r = serve(&f, 3, req(3, "{\"a\": \"1\"}"), 0);
	assert_non_null(strstr(r, "must be of JSON type number"));
	r = serve(&f, 4, req(4, "{}"), 0);
	assert_non_null(strstr(r, "needs the argument 'a'"));
	r = serve(&f, 5, req(5, "{\"a\": 1, \"b\": 2}"), 0);
	assert_non_null(strstr(r, "no parameter 'b'"));
	r = serve(&f, 6, req(6, "[1]"), 0);
	assert_non_null(strstr(r, "refusal"));
	r = serve(&f, 7, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1", 0);
	assert_non_null(strstr(r, "refusal"));

	/* Oversized: refused from the read's own cap, never read whole. */
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0008.request.json");
	assert_int_equal(op.cap, 1u << 20);
	give_read(&f, MAFH_READ_TOO_BIG, NULL);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0008.response.json");
	assert_non_null(strstr(op.data, "larger than 1048576 bytes"));
	give_write_ok(&f);
	/* A symlink, directory or FIFO. */
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0009.request.json");
	give_read(&f, MAFH_READ_NOT_REGULAR, NULL);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0009.response.json");
	assert_non_null(strstr(op.data, "not a regular file"));
	give_write_ok(&f);
	/* Abandoned: stepped over, no response. */
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0010.request.json");
	give_read(&f, MAFH_READ_OK, "{\"id\": \"0010\", \"abandoned\": true}");
	assert_string_equal(serve(&f, 11, req(11, "{\"a\": 1}"), 1), "{\"value\":2}");
	exit_with(&f, 12, "0");
	finish_normally(&f, "");
	assert_int_equal(mafh_run_result(f.run)->exit_code, 0);
	assert_int_equal(mafh_run_result(f.run)->calls, 10);
	assert_int_equal(mafh_run_result(f.run)->refusals, 9);
	assert_int_equal(f.tool_calls, 1);
	teardown_run(&f);
}

static void test_budget_spent(void **state)
{
	struct fixture f;
	struct mafh_limits lim;
	const char *r;

	(void)state;
	mafh_limits_init(&lim);
	lim.max_calls = 2;
	setup_run(&f, &lim, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	/* A refusal counts against the budget. */
	r = serve(&f, 1, req(1, "{\"a\": \"x\"}"), 0);
	assert_non_null(strstr(r, "refusal"));
	assert_string_equal(serve(&f, 2, req(2, "{\"a\": 1}"), 1), "{\"value\":2}");
	r = serve(&f, 3, req(3, "{\"a\": 1}"), 0);
	assert_non_null(strstr(r, "budget of 2 host-tool calls for this run is spent"));
	r = serve(&f, 4, req(4, "{\"a\": 1}"), 0);
	assert_non_null(strstr(r, "spent"));
	exit_with(&f, 5, "0");
	finish_normally(&f, "");
	assert_int_equal(f.tool_calls, 1);
	teardown_run(&f);
}

static void test_oversized_response(void **state)
{
	struct fixture f;
	struct mafh_limits lim;
	struct mafh_op op;
	struct mafh_op_result res;

	(void)state;
	mafh_limits_init(&lim);
	lim.max_response_bytes = 30;
	setup_run(&f, &lim, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	op = next(&f);
	give_read(&f, MAFH_READ_OK, req(1, "{\"a\": 1}"));
	op = next(&f);
	assert_int_equal(op.kind, MAFH_OP_CALL);
	mafh_op_result_init(&res, MAFH_OP_CALL);
	/* A tool's value past the cap. */
	res.value = "\"0123456789012345678901234567890123456789\"";
	res.value_len = strlen(res.value);
	give(&f, &res);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	assert_non_null(strstr(op.data, "more than the cap of 30 bytes"));
	give_write_ok(&f);
	/* A tool failure (negative code) is a refusal naming it. */
	op = next(&f);
	give_read(&f, MAFH_READ_OK, req(2, "{\"a\": 1}"));
	op = next(&f);
	mafh_op_result_init(&res, MAFH_OP_CALL);
	res.error = MAFH_EIO;
	give(&f, &res);
	op = next(&f);
	assert_non_null(strstr(op.data, "the host tool 'add' failed"));
	give_write_ok(&f);
	exit_with(&f, 3, "0");
	finish_normally(&f, "");
	teardown_run(&f);
}

static void test_keep_and_argv(void **state)
{
	struct mafh_registry *reg;
	struct mafh_run_options o;
	struct mafh_run *run;
	struct mafh_op op;
	struct mafh_op_result res;
	const char *argv[] = {"/bin/prog", "--flag", NULL};

	(void)state;
	assert_int_equal(mafh_registry_new(&reg), 0);
	mafh_run_options_init(&o);
	o.run_dir = R;
	o.argv = argv;
	o.keep_run_dir = 1;
	o.seccomp = "off";
	o.egress = "open";
	o.landlock = "off";
	o.transport = MAFH_TRANSPORT_FILES;
	assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAPS_REQUIRED, &o, &run, NULL), 0);
	/* No program: no writes, straight to the launcher with the caller's argv. */
	assert_int_equal(next_op(run, 0, &op), 0);
	assert_int_equal(op.kind, MAFH_OP_EXEC);
	assert_string_equal(op.argv[0], "maf-launch");
	{
		size_t i = 0;

		while (op.argv[i] && strcmp(op.argv[i], "--") != 0)
			i++;
		assert_string_equal(op.argv[i + 1], "/bin/prog");
		assert_string_equal(op.argv[i + 2], "--flag");
		assert_null(op.argv[i + 3]);
	}
	mafh_op_result_init(&res, MAFH_OP_EXEC);
	res.exec.exit_code = 126;
	assert_int_equal(mafh_run_op_result(run, 1, &res), 0);
	/* keep_run_dir: no reclaim. */
	assert_int_equal(next_op(run, 2, &op), 0);
	assert_int_equal(op.kind, MAFH_OP_DONE);
	mafh_run_free(run);
	mafh_registry_free(reg);
}

/* A pass-through registry: every request's bytes reach the one callback as they are, and
 * what it answers is written as it is; step over, look again and hold. */
struct raw_seen {
	int calls;
	unsigned flags[8];
	uint64_t sizes[8];
	char bytes[8][64];
};

static int raw_tool(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	struct raw_seen *seen = ud;
	static const char *const big = "{\"value\": 12345678901234567890, \"k\":1.50}";
	int i = seen->calls++;

	assert_string_equal(call->tool, "");
	seen->flags[i] = call->flags;
	seen->sizes[i] = call->request_size;
	snprintf(seen->bytes[i], sizeof(seen->bytes[i]), "%.*s", (int)call->arguments_len,
		 call->arguments);
	switch (i) {
	case 0:
		return mafh_reply_raw(reply, MAFH_RAW_RESPOND, "{\"refusal\": \"no\"}", 17);
	case 1:
		return mafh_reply_raw(reply, MAFH_RAW_STEP_OVER, NULL, 0);
	case 2:
		return mafh_reply_raw(reply, MAFH_RAW_RESPOND, big, strlen(big));
	case 3:
		return mafh_reply_raw(reply, MAFH_RAW_LOOK_AGAIN, NULL, 0);
	default:
		return mafh_reply_raw(reply, MAFH_RAW_HOLD, NULL, 0);
	}
}

static void test_pass_through(void **state)
{
	struct mafh_param ps[] = {{"a", MAFH_JSON_NUMBER, 1}};
	struct mafh_tool t = {.size = sizeof(t), .name = "add", .params = ps, .n_params = 1};
	struct raw_seen seen = {0};
	struct mafh_run_options o;
	struct mafh_error err = {0};
	struct mafh_registry *with_tools;
	struct mafh_run *bad = NULL;
	struct fixture f;
	struct mafh_op op;
	int64_t before;

	(void)state;
	/* A registry is one or the other. */
	assert_int_equal(mafh_registry_new(&with_tools), 0);
	assert_int_equal(mafh_registry_add(with_tools, &t, &err), 0);
	assert_int_equal(mafh_registry_set_pass_through(with_tools, raw_tool, &seen, &err),
			 MAFH_EINVAL);
	mafh_registry_free(with_tools);

	memset(&f, 0, sizeof(f));
	f.now = 1000;
	assert_int_equal(mafh_registry_new(&f.reg), 0);
	assert_int_equal(mafh_registry_set_pass_through(f.reg, raw_tool, &seen, &err), 0);
	assert_int_equal(mafh_registry_add(f.reg, &t, &err), MAFH_EINVAL);
	mafh_run_options_init(&o);
	o.run_dir = R;
	o.program = "pass\n";
	o.program_len = 5;
	o.write_shim = 0;
	o.transport = MAFH_TRANSPORT_FILES;
	o.launcher = "/usr/bin/maf-launch";
	o.on_event = record_event;
	o.event_ud = &f;
	o.reclaim_keep = "work";
	assert_int_equal(mafh_run_new_sansio(f.reg, MAFH_CAPS_REQUIRED, &o, &f.run, &err), 0);
	o.reclaim_keep = "a/b";
	assert_int_equal(mafh_run_new_sansio(f.reg, MAFH_CAPS_REQUIRED, &o, &bad, &err),
			 MAFH_EINVAL);
	assert_null(bad);

	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, R "/host_tools/program.py");
	give_write_ok(&f);
	op = next(&f);
	assert_string_equal(op.argv[1], "run");
	give_exec(&f, 0, LAUNCH_OUT, "");

	/* Bytes that are no request at all: handed over, and the answer written as it is. */
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0001.request.json");
	give_read(&f, MAFH_READ_OK, "not json \xff");
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0001.response.json");
	assert_int_equal(op.len, 17);
	assert_memory_equal(op.data, "{\"refusal\": \"no\"}", 17);
	give_write_ok(&f);
	assert_non_null(strstr(f.events, "call_refused 1 -: no"));

	/* Stepped over: no response, the next request. */
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0002.request.json");
	give_read(&f, MAFH_READ_OK, "{\"abandoned\": true}");
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0003.request.json");

	/* Past max_request_bytes: not read, handed over as oversized, and a value whose
	 * digits a JSON library would round goes as it is. */
	op.kind = MAFH_OP_READ;
	{
		struct mafh_op_result res;

		mafh_op_result_init(&res, MAFH_OP_READ);
		res.read.status = MAFH_READ_TOO_BIG;
		res.read.size = 5u << 20;
		give(&f, &res);
	}
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_WRITE, CALLS "0003.response.json");
	assert_memory_equal(op.data, "{\"value\": 12345678901234567890, \"k\":1.50}", op.len);
	give_write_ok(&f);

	/* Looked at again after the slowest poll, then held: no request is read any more,
	 * only the exit marker. */
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0004.request.json");
	give_read(&f, MAFH_READ_OK, "");
	op = next(&f);
	give_call(&f, &op);
	before = f.now;
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, CALLS "0004.request.json");
	assert_true(f.now - before >= 200);
	give_read(&f, MAFH_READ_OK, "{}");
	op = next(&f);
	give_call(&f, &op);
	for (;;) {
		op = next(&f);
		assert_int_equal(op.kind, MAFH_OP_READ);
		if (strcmp(op.path, R "/host_tools/program_exit_code") == 0)
			break;
		assert_string_equal(op.path, CALLS "999999.request.json");
		give_read(&f, MAFH_READ_ABSENT, NULL);
	}
	give_read(&f, MAFH_READ_OK, "0");
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(&f, 0, RECORD "\n", "");
	op = next(&f);
	give_read(&f, MAFH_READ_OK, "");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	assert_string_equal(argv_after(&op, "--keep"), "work");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);

	assert_int_equal(seen.calls, 5);
	assert_int_equal(seen.flags[0], MAFH_CALL_RAW);
	assert_string_equal(seen.bytes[0], "not json \xff");
	assert_int_equal(seen.sizes[0], 10);
	assert_string_equal(seen.bytes[1], "{\"abandoned\": true}");
	assert_int_equal(seen.flags[2], MAFH_CALL_RAW | MAFH_CALL_OVERSIZED);
	assert_int_equal(seen.sizes[2], 5u << 20);
	assert_string_equal(seen.bytes[2], "");
	assert_string_equal(seen.bytes[3], "");
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_EXITED);
	assert_int_equal(mafh_run_result(f.run)->calls, 2);
	assert_int_equal(mafh_run_result(f.run)->refusals, 1);
	teardown_run(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capabilities_refused),
		cmocka_unit_test(test_happy_path_files),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_every_error_kept),
		cmocka_unit_test(test_torn_read),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_write_donor),
		cmocka_unit_test(test_budget_spent),
		cmocka_unit_test(test_oversized_response),
		cmocka_unit_test(test_keep_and_argv),
		cmocka_unit_test(test_pass_through),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
