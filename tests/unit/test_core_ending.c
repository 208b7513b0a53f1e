/* Unit tests for how a sans-I/O run ends (host/src/run.c, core_end.c), driven op by op
 * with scripted results on a fake clock (core_fixture.h): the deadline and the ending's
 * budget, a stop, a launch that fails or says too little, backend errors, a forged exit
 * marker, a lost supervisor, and what the launch line says contained the program. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_fixture.h"

static void test_deadline(void **state)
{
	struct fixture f;
	struct mafh_op op;
	const struct mafh_run_result *r;
	int reads = 0;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 2000);
	start(&f);
	/* Nothing ever comes: the polls stay within the deadline, then the output is read,
	 * then the run stopped. */
	for (;;) {
		op = next(&f);
		assert_int_equal(op.kind, MAFH_OP_READ);
		if (strcmp(op.path, R "/host_tools/program_output.txt") == 0)
			break;
		assert_true(f.now <= 1000 + 2000);
		reads++;
		give_read(&f, MAFH_READ_ABSENT, NULL);
	}
	/* Idle polling backs off: a couple of seconds cost a handful of reads. */
	assert_true(reads >= 3 && reads <= 20);
	give_read(&f, MAFH_READ_OK, "partial output");
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(&f, 0, "", "");
	/* stop printed no record: it is read from the file. */
	ending_from_files(&f, NULL, 0, NULL);
	r = mafh_run_result(f.run);
	assert_int_equal(r->status, MAFH_RUN_TIMEOUT);
	assert_int_equal(r->error.code, MAFH_ETIMEDOUT);
	assert_string_equal(r->output, "partial output");
	teardown_run(&f);
}

/* A launcher whose stop and reclaim never return: each exec gets its share of the ending's
 * budget, so that the run is over MAFH_ENDING_MS after its deadline whatever they do. */
static void give_exec_timed_out(struct fixture *f, const struct mafh_op *op)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, MAFH_OP_EXEC);
	res.exec.exit_code = -1;
	res.exec.timed_out = 1;
	f->now += op->timeout_ms - 1;
	give(f, &res);
}

/* A run that has ended, its stop and reclaim never returning: the stop is given all of the
 * budget (ending by end_by) but reserve_ms and gives up margin_ms before its exec is cut,
 * the reclaim what is left, and the run is over by end_by. */
static void cut_ending(struct fixture *f, int64_t end_by, int64_t reserve_ms,
		       int64_t margin_ms)
{
	struct mafh_op op = next(f);

	assert_string_equal(op.argv[1], "stop");
	assert_true(op.timeout_ms <= end_by - f->now - reserve_ms &&
		    op.timeout_ms >= end_by - f->now - reserve_ms - 1000);
	assert_int_equal(strtod(argv_after(&op, "--timeout"), NULL) * 1000,
			 op.timeout_ms - margin_ms);
	give_exec_timed_out(f, &op);
	op = next(f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit.json");
	give_read(f, MAFH_READ_ABSENT, NULL);
	op = next(f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(f, MAFH_READ_OK, "");
	op = next(f);
	assert_string_equal(op.argv[1], "reclaim");
	assert_true(op.timeout_ms >= reserve_ms - 1000 && f->now + op.timeout_ms <= end_by);
	give_exec_timed_out(f, &op);
	assert_int_equal(next(f).kind, MAFH_OP_DONE);
	assert_true(f->now <= end_by);
}

static void test_ending_budget(void **state)
{
	struct fixture f;
	struct mafh_op op;
	int64_t end_by;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 2000);
	start(&f);
	for (;;) {
		op = next(&f);
		if (strcmp(op.path, R "/host_tools/program_output.txt") == 0)
			break;
		give_read(&f, MAFH_READ_ABSENT, NULL);
	}
	end_by = 1000 + 2000 + MAFH_ENDING_MS;
	give_read(&f, MAFH_READ_OK, "");
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	/* All of the budget but what the reads and the reclaim after it need; the launcher
	 * gives up a second before its exec is cut, so that it still prints the record. */
	assert_true(op.timeout_ms <= end_by - f.now - 4000 && op.timeout_ms >= 9000);
	assert_int_equal(strtod(argv_after(&op, "--timeout"), NULL) * 1000,
			 op.timeout_ms - 1000);
	give_exec_timed_out(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit.json");
	give_read(&f, MAFH_READ_ABSENT, NULL);
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	assert_true(f.now + op.timeout_ms <= end_by);
	assert_true(op.timeout_ms >= 1000);
	give_exec_timed_out(&f, &op);
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_true(f.now <= end_by);
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_TIMEOUT);
	teardown_run(&f);

	/* A run that ended early has the budget from its end, not from its deadline. */
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 600000);
	start(&f);
	exit_with(&f, 1, "0");
	cut_ending(&f, f.now + MAFH_ENDING_MS, 4000, 1000);
	teardown_run(&f);
}

/* A caller whose engine is slow under load raises the ending's budget with its exec
 * timeout: the shares grow with it (4/15 kept for what follows the stop, 1/15 the
 * launcher's margin), and the run is still over within it. */
static void raise_ending(struct mafh_run_options *o)
{
	o->ending_ms = 120000;
	o->exec_timeout_ms = 300000;
}

static void test_ending_budget_raised(void **state)
{
	struct fixture f;

	(void)state;
	setup_run_opts(&f, NULL, MAFH_TRANSPORT_FILES, 600000,
		       MAFH_CAPS_REQUIRED | MAFH_CAP_BLOCKING_EXEC, NULL, 0, raise_ending);
	start(&f);
	exit_with(&f, 1, "0");
	cut_ending(&f, f.now + 120000, 32000, 8000);
	teardown_run(&f);
}

/* The ending's budget is 6 s to an hour: less leaves an exec of it no time, more is no
 * bound. */
static void test_ending_budget_range(void **state)
{
	static const int64_t bad[] = {0, -1, 5999, 3600001};
	struct mafh_registry *reg;
	struct mafh_run_options o;
	struct mafh_run *run = NULL;
	struct mafh_error err = {0};

	(void)state;
	assert_int_equal(mafh_registry_new(&reg), 0);
	mafh_run_options_init(&o);
	assert_int_equal(o.ending_ms, MAFH_ENDING_MS);
	o.run_dir = R;
	o.program = "pass\n";
	o.program_len = 5;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.ending_ms = bad[i];
		assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAPS_REQUIRED, &o, &run, &err),
				 MAFH_EINVAL);
		assert_null(run);
		assert_non_null(strstr(err.message, "the ending's budget must be 6000 to 3600000"));
	}
	o.ending_ms = 6000;
	assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAPS_REQUIRED, &o, &run, &err), 0);
	mafh_run_free(run);
	/* A caller built before the field: its size ends before it, and the default holds. */
	o.ending_ms = 1;
	o.size = offsetof(struct mafh_run_options, ending_ms);
	assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAPS_REQUIRED, &o, &run, &err), 0);
	mafh_run_free(run);
	mafh_registry_free(reg);
}

/* A stop that exits 0 but prints nothing, or what is not a record, while the supervisor
 * left one: not the launcher's stop. The record is taken from its file, and the
 * disagreement is an error on the result. */
static void test_stop_not_the_launchers(void **state)
{
	static const char *const outs[] = {"", "still writing .....\nstill wri"};
	struct fixture f;
	struct mafh_op op;
	const struct mafh_run_result *r;

	(void)state;
	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
		start(&f);
		exit_with(&f, 1, "0");
		op = next(&f);
		assert_string_equal(op.argv[1], "stop");
		give_exec(&f, 0, outs[i], "");
		ending_from_files(&f, RECORD_7, 1, "");
		r = mafh_run_result(f.run);
		assert_int_equal(r->exit_code, 7);
		assert_false(r->verified);
		assert_int_equal(r->error.code, MAFH_EPROTO);
		assert_non_null(strstr(r->errors, i ? "printed what is not an exit record"
					       : "printed no exit record"));
		teardown_run(&f);
	}
}

static void test_stop_and_busy(void **state)
{
	struct fixture f;
	struct mafh_op op, op2;
	struct mafh_op_result res;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	op = next(&f);
	/* One op at a time; a result of the wrong kind is refused. */
	assert_int_equal(next_op(f.run, f.now, &op2), MAFH_EBUSY);
	mafh_op_result_init(&res, MAFH_OP_WRITE);
	assert_int_equal(mafh_run_op_result(f.run, f.now, &res), MAFH_EINVAL);
	give_read(&f, MAFH_READ_ABSENT, NULL);
	mafh_run_stop(f.run);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(&f, MAFH_READ_ABSENT, NULL);
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	assert_true(argv_has(&op, "--reclaim"));
	give_exec(&f, 0, "{\"status\":\"stopped\",\"exit_code\":143,\"signal\":15}\n", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_STOPPED);
	assert_int_equal(mafh_run_result(f.run)->exit_code, 143);
	assert_string_equal(mafh_run_result(f.run)->record.status, "stopped");
	teardown_run(&f);
}

static void test_launch_failed(void **state)
{
	struct fixture f;
	struct mafh_op op;
	const struct mafh_run_result *r;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	op = next(&f);
	give_write_ok(&f);
	op = next(&f);
	give_write_ok(&f);
	op = next(&f);
	assert_string_equal(op.argv[1], "run");
	give_exec(&f, 127, "", "maf-launch run: python3: not found\nmore\n");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	r = mafh_run_result(f.run);
	assert_int_equal(r->status, MAFH_RUN_LAUNCH_FAILED);
	assert_int_equal(r->exit_code, 127);
	assert_non_null(strstr(r->error.message, "python3: not found"));
	assert_null(strstr(r->error.message, "more"));
	teardown_run(&f);
}

static void test_bad_launch_line(void **state)
{
	struct fixture f;
	struct mafh_op op;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	next(&f);
	give_write_ok(&f);
	next(&f);
	give_write_ok(&f);
	next(&f);
	/* A session line alone proves nothing and gives no supervisor to stop. */
	give_exec(&f, 0, "maf-host-tools: session\n{\"pid\":\"x\"}\n", "");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 1, "", "busy");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_ERROR);
	assert_int_equal(mafh_run_result(f.run)->error.code, MAFH_EPROTO);
	teardown_run(&f);
}

static void test_backend_errors(void **state)
{
	struct fixture f;
	struct mafh_op op;
	struct mafh_op_result res;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	op = next(&f);
	give_read(&f, MAFH_READ_OK, req(1, "{\"a\": 1}"));
	op = next(&f);
	give_call(&f, &op);
	op = next(&f);
	/* The response path cannot be written (e.g. a directory planted there). */
	mafh_op_result_init(&res, MAFH_OP_WRITE);
	res.error = MAFH_EIO;
	snprintf(res.detail.message, sizeof(res.detail.message), "Is a directory");
	give(&f, &res);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(&f, MAFH_READ_TOO_BIG, NULL);
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(&f, 1, "", "not the supervisor");
	ending_from_files(&f, "{not json", 0, NULL);
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_ERROR);
	assert_non_null(strstr(mafh_run_result(f.run)->error.message, "0001.response.json"));
	assert_true(mafh_run_result(f.run)->output_truncated);
	assert_false(mafh_run_result(f.run)->record.have_record);
	teardown_run(&f);
}

static void test_forged_marker(void **state)
{
	struct fixture f;
	struct mafh_op op;

	(void)state;
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	exit_with(&f, 1, "abc");
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(&f, 0, "", "");
	op = next(&f);
	give_read(&f, MAFH_READ_ABSENT, NULL); /* record */
	op = next(&f);
	give_read(&f, MAFH_READ_ABSENT, NULL); /* output */
	op = next(&f);
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_ERROR);
	assert_int_equal(mafh_run_result(f.run)->exit_code, -1);
	assert_string_equal(mafh_run_result(f.run)->output, "");
	teardown_run(&f);

	/* A marker (or an event quoting one) that the supervisor's record contradicts: the
	 * record's verdict, an error of the run, and not verified. */
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start_with(&f, "{\"pid\":100,\"supervisor_pid\":42,\"session\":100,\"uid\":1048676,"
		   "\"gid\":1048676,\"identity\":\"own\",\"landlock\":\"abi-7\"}\n"
		   "maf-host-tools: session\n");
	assert_true(mafh_run_result(f.run)->verified);
	exit_with(&f, 1, "0");
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(&f, 0, "{\"status\":\"stopped\",\"exit_code\":143,\"signal\":15,"
		  "\"wall_ms\":5,\"cpu_ms\":1,\"peak_rss_kb\":1,\"output_bytes\":0,"
		  "\"output_truncated\":false,\"calls\":0,\"seccomp\":\"default\","
		  "\"landlock\":\"off\"}\n", "");
	op = next(&f);
	give_read(&f, MAFH_READ_OK, "");  /* output */
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_int_equal(mafh_run_result(f.run)->status, MAFH_RUN_STOPPED);
	assert_int_equal(mafh_run_result(f.run)->exit_code, 143);
	assert_false(mafh_run_result(f.run)->verified);
	assert_non_null(strstr(mafh_run_result(f.run)->errors, "the record is taken"));
	teardown_run(&f);
}

/* The supervisor's end without the marker: a lost run, promptly, over either transport. */
static void test_lost_run(void **state)
{
	struct fixture f;
	struct mafh_op op;
	const struct mafh_run_result *r;
	int64_t t0;

	(void)state;
	/* wait: it names the supervisor, and says when it is gone. */
	setup_run(&f, NULL, MAFH_TRANSPORT_WAIT, 60000);
	start(&f);
	op = next(&f);
	assert_string_equal(op.argv[1], "wait");
	assert_string_equal(argv_after(&op, "--supervisor-pid"), "42");
	give_exec(&f, 0, "{\"event\":\"lost\"}\n", "");
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(&f, MAFH_READ_OK, "partial");
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(&f, 3, "", "maf-launch stop: the supervisor 42 is gone and run /tmp/run has "
		  "no exit marker: the run is lost\n");
	ending_from_files(&f, NULL, 0, NULL);
	r = mafh_run_result(f.run);
	assert_int_equal(r->status, MAFH_RUN_LOST);
	assert_string_equal(mafh_run_status_name(r->status), "lost");
	assert_int_equal(r->exit_code, -1);
	assert_string_equal(r->output, "partial");
	assert_non_null(strstr(r->error.message, "supervisor 42 ended without"));
	assert_non_null(strstr(r->errors, "the run is lost"));
	teardown_run(&f);

	/* files: after liveness_ms of quiet, one look through `maf-launch wait --timeout-ms 0
	 * --supervisor-pid`; a supervisor still there means nothing more. */
	setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
	start(&f);
	t0 = f.now;
	for (;;) {
		op = next(&f);
		if (op.kind == MAFH_OP_EXEC)
			break;
		assert_int_equal(op.kind, MAFH_OP_READ);
		give_read(&f, MAFH_READ_ABSENT, NULL);
	}
	assert_true(f.now - t0 >= 2000);
	assert_string_equal(op.argv[1], "wait");
	assert_string_equal(argv_after(&op, "--timeout-ms"), "0");
	assert_string_equal(argv_after(&op, "--supervisor-pid"), "42");
	give_exec(&f, 0, "{\"event\":\"timeout\"}\n", "");
	/* Looks go on; the next check comes another liveness_ms later. */
	t0 = f.now;
	for (;;) {
		op = next(&f);
		if (op.kind == MAFH_OP_EXEC)
			break;
		give_read(&f, MAFH_READ_ABSENT, NULL);
	}
	assert_true(f.now - t0 >= 2000);
	/* The marker written by a program (stop finds the supervisor gone and the marker not
	 * its own): lost too, whatever the marker said. */
	give_exec(&f, 0, "{\"event\":\"exit\",\"size\":1}\n0", "");
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(&f, 3, "", "maf-launch stop: the supervisor 42 is gone and the exit marker or "
		  "record of run /tmp/run is not one it wrote: the run is lost\n");
	op = next(&f);
	give_read(&f, MAFH_READ_ABSENT, NULL);
	op = next(&f);
	give_read(&f, MAFH_READ_OK, "");
	op = next(&f);
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	r = mafh_run_result(f.run);
	assert_int_equal(r->status, MAFH_RUN_LOST);
	assert_non_null(strstr(r->error.message, "not one it wrote"));
	teardown_run(&f);
}

/* What contained the program is the launch line's word; without an identity of its own or
 * Landlock, the result is the program's word too. */
static void test_containment_from_launch_line(void **state)
{
	static const struct {
		const char *line;
		int verified;
		const char *identity, *landlock;
	} cases[] = {
		{"{\"pid\":100,\"supervisor_pid\":42,\"session\":100,\"uid\":268435498,"
		 "\"gid\":268435498,\"identity\":\"own\",\"landlock\":\"unsupported\"}\n", 1, "own",
		 "unsupported"},
		{"{\"pid\":100,\"supervisor_pid\":42,\"session\":100,\"uid\":1000,\"gid\":1000,"
		 "\"identity\":\"launcher\",\"landlock\":\"abi-7\"}\n", 1, "launcher", "abi-7"},
		{"{\"pid\":100,\"supervisor_pid\":42,\"session\":100,\"uid\":1000,\"gid\":1000,"
		 "\"identity\":\"launcher\",\"landlock\":\"off\"}\n", 0, "launcher", "off"},
		{"{\"pid\":100,\"supervisor_pid\":42,\"session\":100}\n", 0, "", ""},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture f;
		struct mafh_op op;
		const struct mafh_run_result *r;

		setup_run(&f, NULL, MAFH_TRANSPORT_FILES, 60000);
		op = next(&f);
		give_write_ok(&f);
		op = next(&f);
		give_write_ok(&f);
		op = next(&f);
		assert_int_equal(op.kind, MAFH_OP_EXEC);
		give_exec(&f, 0, cases[i].line, "");
		r = mafh_run_result(f.run);
		assert_int_equal(r->verified, cases[i].verified);
		assert_string_equal(r->identity, cases[i].identity);
		assert_string_equal(r->landlock, cases[i].landlock);
		assert_int_equal(r->supervisor_pid, 42);
		teardown_run(&f);
	}
}

/* ---- the stop that carries the rest of the ending (MAFH_CAP_EXEC_EXACT) ------------------ */

#define EXACT (MAFH_CAPS_REQUIRED | MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_EXEC_EXACT)

/* A run over files that exited 0, up to the stop, which asks for the output and the reclaim. */
static struct mafh_op exact_to_stop(struct fixture *f, const char *keep)
{
	struct mafh_op op;

	setup_run_with(f, NULL, MAFH_TRANSPORT_FILES, 60000, EXACT, keep, 0);
	start(f);
	exit_with(f, 1, "0");
	op = next(f);
	assert_int_equal(op.kind, MAFH_OP_EXEC);
	assert_string_equal(op.argv[1], "stop");
	assert_string_equal(argv_after(&op, "--output"), "1048576");
	assert_true(argv_has(&op, "--reclaim"));
	/* Room for the record and the whole output. */
	assert_true(op.out_cap >= (1u << 20) + 4096);
	return op;
}

/* The record, the output (bytes of any value) and R gone: one exec, nothing after it. */
static void test_stop_carries_output(void **state)
{
	static const char out[] = RECORD "\noutput 6\nhi\0\n\xff!";
	struct fixture f;
	const struct mafh_run_result *r;

	(void)state;
	exact_to_stop(&f, NULL);
	give_exec_n(&f, 0, out, sizeof(out) - 1, "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	r = mafh_run_result(f.run);
	assert_int_equal(r->status, MAFH_RUN_EXITED);
	assert_int_equal(r->exit_code, 0);
	assert_int_equal(r->output_len, 6);
	assert_memory_equal(r->output, "hi\0\n\xff!", 6);
	assert_string_equal(r->record.status, "exited");
	assert_string_equal(r->errors, "");
	assert_int_equal(r->ops.exec, 2);		/* run, stop */
	teardown_run(&f);

	/* No output, and an output over the limit: neither read after. */
	exact_to_stop(&f, NULL);
	give_exec(&f, 0, RECORD "\noutput absent\n", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_int_equal(mafh_run_result(f.run)->output_len, 0);
	assert_string_equal(mafh_run_result(f.run)->errors, "");
	teardown_run(&f);
	exact_to_stop(&f, NULL);
	give_exec(&f, 0, RECORD "\noutput over\n", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	r = mafh_run_result(f.run);
	assert_true(r->output_truncated);
	assert_non_null(strstr(r->errors, "larger than 1048576 bytes"));
	teardown_run(&f);
}

/* What stop does not vouch for is done the old way: an unreadable output is read as a file
 * and R reclaimed after it; with no record, the record's file is read too. */
static void test_stop_leaves_the_rest(void **state)
{
	struct fixture f;
	struct mafh_op op;

	(void)state;
	exact_to_stop(&f, NULL);
	give_exec(&f, 0, RECORD "\noutput unreadable\n", "maf-launch stop: cannot open\n");
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(&f, MAFH_READ_OK, "late");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_string_equal(mafh_run_result(f.run)->output, "late");
	teardown_run(&f);

	exact_to_stop(&f, NULL);
	give_exec(&f, 0, "\noutput 2\nok", "");
	ending_from_files(&f, RECORD, 0, NULL);
	assert_string_equal(mafh_run_result(f.run)->output, "ok");
	assert_string_equal(mafh_run_result(f.run)->record.status, "exited");
	teardown_run(&f);
}

/* What is not what stop prints is believed in no part: the record and the output are read
 * from their files, and R is reclaimed. */
static void test_stop_output_forged(void **state)
{
	static const char *const forged[] = {
		RECORD "\noutput 10\nshort",          /* fewer bytes than said */
		RECORD "\noutput 2\nlonger",          /* more */
		RECORD "\noutput 02\nok",             /* a leading zero */
		RECORD "\noutput -1\n",
		RECORD "\noutput 2000000\n",          /* past max_output_bytes */
		RECORD "\noutput 99999999999999999999\n",
		RECORD "\noutput  2\nok",
		RECORD "\noutput absent\nmore",
		RECORD "\noutput over",               /* no newline */
		RECORD "\nsomething else\n",
		RECORD,                               /* no line after the record */
		"",
	};
	struct fixture f;

	(void)state;
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		exact_to_stop(&f, NULL);
		give_exec(&f, 0, forged[i], "");
		/* Nothing at all ("") is a silent stop, as before: the record is read too. */
		ending_from_files(&f, RECORD, 1, "real");
		assert_string_equal(mafh_run_result(f.run)->output, "real");
		if (forged[i][0])
			assert_non_null(strstr(mafh_run_result(f.run)->errors, "maf-launch stop "
						"printed what is not"));
		teardown_run(&f);
	}
}

/* A launcher without --output and --reclaim refuses them as usage, and is asked again
 * without; a stop that could not reclaim says so, and nothing is tried again. */
static void test_stop_older_launcher_and_failed_reclaim(void **state)
{
	struct fixture f;
	struct mafh_op op;
	const struct mafh_run_result *r;

	(void)state;
	exact_to_stop(&f, NULL);
	give_exec(&f, 2, "", "maf-launch stop: unknown option '--output'\n");
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	assert_false(argv_has(&op, "--output"));
	assert_false(argv_has(&op, "--reclaim"));
	give_exec(&f, 0, RECORD "\n", "");
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(&f, MAFH_READ_OK, "x");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	r = mafh_run_result(f.run);
	assert_int_equal(r->status, MAFH_RUN_EXITED);
	assert_string_equal(r->errors, "");
	teardown_run(&f);

	/* Twice a usage error: the second is the stop's failure. */
	exact_to_stop(&f, NULL);
	give_exec(&f, 2, "", "");
	op = next(&f);
	assert_false(argv_has(&op, "--reclaim"));
	give_exec(&f, 2, "", "no\n");
	ending_from_files(&f, NULL, 1, NULL);
	assert_non_null(strstr(mafh_run_result(f.run)->errors, "maf-launch stop failed"));
	teardown_run(&f);

	exact_to_stop(&f, NULL);
	give_exec(&f, 4, RECORD "\noutput 2\nok", "maf-launch stop: R/x cannot be removed\n");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	r = mafh_run_result(f.run);
	assert_int_equal(r->status, MAFH_RUN_EXITED);
	assert_string_equal(r->output, "ok");
	assert_non_null(strstr(r->errors, "could not reclaim the run directory: maf-launch "
				"stop: R/x cannot be removed"));
	teardown_run(&f);
}

/* The reclaim's --keep goes with the stop's; keep_run_dir: the stop carries the output and
 * never a reclaim. */
static void test_stop_keeps(void **state)
{
	struct fixture f;
	struct mafh_op op;

	(void)state;
	op = exact_to_stop(&f, "work");
	assert_string_equal(argv_after(&op, "--keep"), "work");
	give_exec(&f, 0, RECORD "\noutput 0\n", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_int_equal(mafh_run_result(f.run)->output_len, 0);
	teardown_run(&f);

	setup_run_with(&f, NULL, MAFH_TRANSPORT_FILES, 60000, EXACT, NULL, 1);
	start(&f);
	exit_with(&f, 1, "0");
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	assert_string_equal(argv_after(&op, "--output"), "1048576");
	assert_false(argv_has(&op, "--reclaim"));
	give_exec(&f, 0, RECORD "\noutput 3\nabc", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_string_equal(mafh_run_result(f.run)->output, "abc");
	teardown_run(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_stop_not_the_launchers),
		cmocka_unit_test(test_stop_and_busy),
		cmocka_unit_test(test_ending_budget),
		cmocka_unit_test(test_ending_budget_raised),
		cmocka_unit_test(test_ending_budget_range),
		cmocka_unit_test(test_launch_failed),
		cmocka_unit_test(test_bad_launch_line),
		cmocka_unit_test(test_backend_errors),
		cmocka_unit_test(test_forged_marker),
		cmocka_unit_test(test_lost_run),
		cmocka_unit_test(test_containment_from_launch_line),
		cmocka_unit_test(test_stop_carries_output),
		cmocka_unit_test(test_stop_leaves_the_rest),
		cmocka_unit_test(test_stop_output_forged),
		cmocka_unit_test(test_stop_older_launcher_and_failed_reclaim),
		cmocka_unit_test(test_stop_keeps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
