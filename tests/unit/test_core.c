/* Unit tests for the sans-I/O core (host/src/run.c): the run is driven op by op with
 * scripted results, on a fake clock. No process, no filesystem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cJSON.h"
#include "mafhost.h"
#include "protocol.h"

#define R "/tmp/run"
#define CALLS R "/host_tools/host_tool_calls/"
#define LAUNCH_OUT "{\"pid\":100,\"supervisor_pid\":42,\"session\":100}\nmaf-host-tools: session\n"
#define RECORD "{\"status\":\"exited\",\"exit_code\":0,\"signal\":0,\"wall_ms\":5,\"cpu_ms\":1," \
	"\"peak_rss_kb\":1,\"output_bytes\":5,\"output_truncated\":false,\"calls\":0," \
	"\"seccomp\":\"default\",\"landlock\":\"off\"}"

/* The record of a program that exited 7, as the driver's fake marker says. */
#define RECORD_7 "{\"status\":\"exited\",\"exit_code\":7,\"signal\":0,\"wall_ms\":5," \
	"\"cpu_ms\":1,\"peak_rss_kb\":1,\"output_bytes\":3,\"output_truncated\":false," \
	"\"calls\":2,\"seccomp\":\"default\",\"landlock\":\"off\"}"

struct fixture {
	struct mafh_registry *reg;
	struct mafh_run *run;
	int64_t now;
	int tool_calls;
	struct mafh_op last;    /* the op handed out last */
	int pending;            /* last is outstanding (not a WAIT_UNTIL served by next()) */
	char events[2048];      /* the run's events, one line each: KIND ID TOOL: MESSAGE */
};

static void record_event(const struct mafh_event *ev, void *ud)
{
	struct fixture *f = ud;
	size_t n = strlen(f->events);

	assert_int_equal(ev->size, sizeof(*ev));
	snprintf(f->events + n, sizeof(f->events) - n, "%s %lld %s: %s%s%.*s\n",
		 mafh_event_kind_name(ev->kind), (long long)ev->call_id,
		 ev->tool ? ev->tool : "-", ev->message ? ev->message : "",
		 ev->detail ? " | " : "", (int)ev->detail_len, ev->detail ? ev->detail : "");
}

static int add_tool(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	struct fixture *f = ud;
	cJSON *args = cJSON_ParseWithLength(call->arguments, call->arguments_len);
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(args, "a");
	char text[64];
	double v = a->valuedouble;

	cJSON_Delete(args);
	f->tool_calls++;
	if (v < 0)
		return mafh_reply_refuse(reply, "a must not be negative");
	snprintf(text, sizeof(text), "%g", v + 1);
	return mafh_reply_value(reply, text, strlen(text));
}

/* The file the outstanding WRITE may reuse (op.replaces), as a driver sees it: NULL for any
 * other op, or when no op is outstanding. */
static const char *write_donor(const struct fixture *f)
{
	return f->pending && f->last.kind == MAFH_OP_WRITE ? f->last.replaces : NULL;
}

/* mafh_run_next_op into the caller's copy of the op. */
static int next_op(struct mafh_run *run, int64_t now, struct mafh_op *out)
{
	const struct mafh_op *op;
	int rc = mafh_run_next_op(run, now, &op);

	memset(out, 0, sizeof(*out));
	if (rc == 0)
		*out = *op;
	return rc;
}

/* The outstanding WAIT_UNTIL's wait target: 1 with dir and names, else 0 and both NULL. */
static int wait_target(const struct mafh_op *op, const char **dir, const char *const **names)
{
	int has = op && op->kind == MAFH_OP_WAIT_UNTIL && op->wait_dir;

	*dir = has ? op->wait_dir : NULL;
	*names = has ? op->wait_names : NULL;
	return has;
}

static void setup_run_caps(struct fixture *f, struct mafh_limits *lim, enum mafh_transport tr,
			   int64_t timeout_ms, unsigned caps)
{
	struct mafh_param ps[] = {{"a", MAFH_JSON_NUMBER, 1}};
	struct mafh_tool t = {.size = sizeof(t), .name = "add", .description = "Adds one.",
			      .params = ps, .n_params = 1, .fn = add_tool, .ud = f};
	struct mafh_run_options o;
	struct mafh_error err = {0};

	memset(f, 0, sizeof(*f));
	f->now = 1000;
	assert_int_equal(mafh_registry_new(&f->reg), 0);
	assert_int_equal(mafh_registry_add(f->reg, &t, &err), 0);
	if (lim)
		assert_int_equal(mafh_registry_set_limits(f->reg, lim, &err), 0);
	mafh_run_options_init(&o);
	o.run_dir = R "/";
	o.program = "import maf_host_tools\n";
	o.program_len = strlen(o.program);
	o.transport = tr;
	o.launcher = "/usr/bin/maf-launch";
	o.timeout_ms = timeout_ms;
	o.on_event = record_event;
	o.event_ud = f;
	assert_int_equal(mafh_run_new_sansio(f->reg, caps, &o, &f->run, &err), 0);
}

static void setup_run(struct fixture *f, struct mafh_limits *lim, enum mafh_transport tr,
		      int64_t timeout_ms)
{
	setup_run_caps(f, lim, tr, timeout_ms, MAFH_CAPS_REQUIRED | MAFH_CAP_BLOCKING_EXEC);
}

static void teardown_run(struct fixture *f)
{
	mafh_run_free(f->run);
	mafh_registry_free(f->reg);
}

/* The next op that is not a WAIT_UNTIL (those are served by moving the fake clock). */
static struct mafh_op next(struct fixture *f)
{
	const struct mafh_op *op;
	struct mafh_op_result res;

	for (;;) {
		assert_int_equal(mafh_run_next_op(f->run, f->now, &op), 0);
		assert_int_equal(op->size, sizeof(*op));
		f->last = *op;
		f->pending = op->kind != MAFH_OP_DONE;
		if (op->kind != MAFH_OP_WAIT_UNTIL)
			return *op;
		assert_true(op->until_ms > f->now);
		f->now = op->until_ms;
		mafh_op_result_init(&res, MAFH_OP_WAIT_UNTIL);
		assert_int_equal(mafh_run_op_result(f->run, f->now, &res), 0);
	}
}

static void give(struct fixture *f, struct mafh_op_result *res)
{
	f->now += 1;
	f->pending = 0;
	assert_int_equal(mafh_run_op_result(f->run, f->now, res), 0);
}

static void give_write_ok(struct fixture *f)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, MAFH_OP_WRITE);
	give(f, &res);
}

static void give_read(struct fixture *f, enum mafh_read_status st, const char *data)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, MAFH_OP_READ);
	res.read.status = st;
	res.read.data = (char *)data;
	res.read.len = data ? strlen(data) : 0;
	give(f, &res);
}

static void give_exec(struct fixture *f, int code, const char *out, const char *err)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, MAFH_OP_EXEC);
	res.exec.exit_code = code;
	res.exec.out = (char *)out;
	res.exec.out_len = out ? strlen(out) : 0;
	res.exec.err = (char *)err;
	res.exec.err_len = err ? strlen(err) : 0;
	give(f, &res);
}

/* Runs the CALL op through its registered callback, as the blocking driver does. */
static void give_call(struct fixture *f, const struct mafh_op *op)
{
	struct mafh_op_result res;

	assert_int_equal(op->kind, MAFH_OP_CALL);
	mafh_op_result_init(&res, MAFH_OP_CALL);
	assert_int_equal(mafh_run_call_tool(f->run, &f->last, &res), 0);
	give(f, &res);
}

static void expect_path(const struct mafh_op *op, enum mafh_op_kind kind, const char *path)
{
	assert_int_equal(op->kind, kind);
	assert_string_equal(op->path, path);
}

static const char *argv_after(const struct mafh_op *op, const char *flag)
{
	for (size_t i = 0; op->argv[i]; i++)
		if (strcmp(op->argv[i], flag) == 0)
			return op->argv[i + 1];
	return NULL;
}

static void start_with(struct fixture *f, const char *launch_out);

/* Writes the program and the shim, execs the launcher and gives it a good launch line. */
static void start(struct fixture *f)
{
	start_with(f, LAUNCH_OUT);
}

static void start_with(struct fixture *f, const char *launch_out)
{
	struct mafh_op op;

	op = next(f);
	expect_path(&op, MAFH_OP_WRITE, R "/host_tools/program.py");
	assert_int_equal(op.len, strlen("import maf_host_tools\n"));
	give_write_ok(f);
	op = next(f);
	expect_path(&op, MAFH_OP_WRITE, R "/host_tools/maf_host_tools.py");
	assert_non_null(strstr(op.data, "def call(name, /, **arguments):"));
	give_write_ok(f);
	op = next(f);
	assert_int_equal(op.kind, MAFH_OP_EXEC);
	assert_string_equal(op.argv[0], "/usr/bin/maf-launch");
	assert_string_equal(op.argv[1], "run");
	assert_string_equal(argv_after(&op, "--run-dir"), R);
	assert_non_null(argv_after(&op, "--timeout"));
	assert_string_equal(argv_after(&op, "--max-output-bytes"), "1048576");
	assert_string_equal(argv_after(&op, "--"), "python3");
	assert_string_equal(argv_after(&op, "python3"), R "/host_tools/program.py");
	give_exec(f, 0, launch_out, "");
	assert_int_equal(mafh_run_result(f->run)->supervisor_pid, 42);
	assert_int_equal(mafh_run_result(f->run)->session, 1);
}

/* From the exit marker on: stop (which prints the record), output, reclaim. */
static void finish_normally(struct fixture *f, const char *output)
{
	struct mafh_op op = next(f);

	assert_int_equal(op.kind, MAFH_OP_EXEC);
	assert_string_equal(op.argv[1], "stop");
	assert_string_equal(argv_after(&op, "--supervisor-pid"), "42");
	assert_string_equal(argv_after(&op, "--run-dir"), R);
	give_exec(f, 0, RECORD "\n", "");
	op = next(f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	assert_int_equal(op.cap, 1u << 20);
	give_read(f, MAFH_READ_OK, output);
	op = next(f);
	assert_int_equal(op.kind, MAFH_OP_EXEC);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(f, 0, "", "");
	op = next(f);
	assert_int_equal(op.kind, MAFH_OP_DONE);
}

/* A run that ended in error: its output read first, then stop and reclaim. */
static void finish_in_error(struct fixture *f)
{
	struct mafh_op op = next(f);

	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(f, MAFH_READ_OK, "");
	op = next(f);
	assert_string_equal(op.argv[1], "stop");
	give_exec(f, 0, RECORD, "");
	op = next(f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(f, 0, "", "");
	assert_int_equal(next(f).kind, MAFH_OP_DONE);
	assert_int_equal(mafh_run_result(f->run)->status, MAFH_RUN_ERROR);
}

/* Reads request N as absent until the exit marker is probed, which says code. */
static void exit_with(struct fixture *f, long id, const char *code)
{
	char path[256];
	struct mafh_op op;

	snprintf(path, sizeof(path), CALLS "%04ld.request.json", id);
	for (;;) {
		op = next(f);
		assert_int_equal(op.kind, MAFH_OP_READ);
		if (strcmp(op.path, R "/host_tools/program_exit_code") == 0)
			break;
		assert_string_equal(op.path, path);
		give_read(f, MAFH_READ_ABSENT, NULL);
	}
	assert_int_equal(op.cap, 32);
	give_read(f, MAFH_READ_OK, code);
}

/* Serves request id with body; returns the response text written (static buffer). */
static const char *serve(struct fixture *f, long id, const char *body, int expect_call)
{
	static char resp[4096];
	char path[256];
	struct mafh_op op;

	snprintf(path, sizeof(path), CALLS "%04ld.request.json", id);
	op = next(f);
	expect_path(&op, MAFH_OP_READ, path);
	give_read(f, MAFH_READ_OK, body);
	op = next(f);
	if (op.kind == MAFH_OP_READ && strcmp(op.path, path) == 0) {
		/* A request that did not decode is looked at once more (maybe torn). */
		give_read(f, MAFH_READ_OK, body);
		op = next(f);
	}
	if (expect_call) {
		assert_string_equal(op.call->tool, "add");
		give_call(f, &op);
		op = next(f);
	} else {
		assert_int_not_equal(op.kind, MAFH_OP_CALL);
	}
	snprintf(path, sizeof(path), CALLS "%04ld.response.json", id);
	expect_path(&op, MAFH_OP_WRITE, path);
	assert_true(op.len < sizeof(resp));
	memcpy(resp, op.data, op.len);
	resp[op.len] = '\0';
	give_write_ok(f);
	return resp;
}

static const char *req(long id, const char *args)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "{\"id\": \"%04ld\", \"name\": \"add\", \"arguments\": %s}", id,
		 args);
	return buf;
}

/* ----------------------------------------------------------------------------------------- */

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
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit.json");
	give_read(&f, MAFH_READ_ABSENT, NULL);
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
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
static void give_wait_event(struct fixture *f, long expect_next, const char *text);

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
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit.json");
	give_read(&f, MAFH_READ_ABSENT, NULL);
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
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
	end_by = f.now + MAFH_ENDING_MS;
	op = next(&f);
	assert_string_equal(op.argv[1], "stop");
	assert_true(op.timeout_ms <= end_by - f.now - 4000);
	give_exec_timed_out(&f, &op);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit.json");
	give_read(&f, MAFH_READ_ABSENT, NULL);
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(&f, MAFH_READ_OK, "");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	assert_true(f.now + op.timeout_ms <= end_by);
	give_exec_timed_out(&f, &op);
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
	assert_true(f.now <= end_by);
	teardown_run(&f);
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
		op = next(&f);
		expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit.json");
		give_read(&f, MAFH_READ_OK, RECORD_7);
		op = next(&f);
		expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
		give_read(&f, MAFH_READ_OK, "");
		op = next(&f);
		assert_string_equal(op.argv[1], "reclaim");
		give_exec(&f, 0, "", "");
		assert_int_equal(next(&f).kind, MAFH_OP_DONE);
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
	give_exec(&f, 0, "{\"status\":\"stopped\",\"exit_code\":143,\"signal\":15}\n", "");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
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
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit.json");
	give_read(&f, MAFH_READ_OK, "{not json");
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
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

static void give_wait_event(struct fixture *f, long expect_next, const char *text)
{
	char buf[32];
	struct mafh_op op = next(f);

	assert_int_equal(op.kind, MAFH_OP_EXEC);
	assert_string_equal(op.argv[1], "wait");
	snprintf(buf, sizeof(buf), "%ld", expect_next);
	assert_string_equal(argv_after(&op, "--next"), buf);
	assert_string_equal(argv_after(&op, "--max-bytes"), "1048576");
	assert_non_null(argv_after(&op, "--timeout-ms"));
	give_exec(f, 0, text, "");
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
	op = next(&f);
	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit.json");
	give_read(&f, MAFH_READ_ABSENT, NULL);
	op = next(&f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(&f, 0, "", "");
	assert_int_equal(next(&f).kind, MAFH_OP_DONE);
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

#define RELAY_CAPS (MAFH_CAPS_REQUIRED | MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_EXEC_STDIN)

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

static int argv_has(const struct mafh_op *op, const char *flag)
{
	for (size_t i = 0; op->argv[i]; i++)
		if (strcmp(op->argv[i], flag) == 0)
			return 1;
	return 0;
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
	/* launch, five relays, stop, reclaim; the program and the shim the only writes. */
	assert_int_equal(mafh_run_result(f.run)->ops.exec, 1 + 5 + 2);
	assert_int_equal(mafh_run_result(f.run)->ops.write, 2);
	teardown_run(&f);
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
 * on. A relay that fails otherwise once it has served is the run's error. */
static void test_relay_fallback(void **state)
{
	struct fixture f;
	struct mafh_op op;
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
}

static void give_stream(struct fixture *f, const char *bytes, int ended)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, MAFH_OP_STREAM_READ);
	res.stream_data = bytes;
	res.stream_len = bytes ? strlen(bytes) : 0;
	res.stream_ended = ended;
	give(f, &res);
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
	/* The answer counts once its event is in. */
	assert_int_equal(mafh_run_result(f.run)->calls, 0);
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

/* A stream that ends while an answer is out without its event: closed, and relay carries
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

/* ---- the blocking driver over a fake backend table and a fake clock ---------------------- */

struct fake {
	int64_t now;
	int reads_of_2;
	int writes;
	char last_response[256];
};

static char *dupn(const char *s, size_t *len)
{
	*len = strlen(s);
	return strdup(s);
}

static int fake_exec(void *ctx, const char *const *argv, int64_t timeout_ms, size_t out_cap,
		     struct mafh_exec_result *res, struct mafh_error *err)
{
	struct fake *fk = ctx;

	(void)timeout_ms;
	(void)out_cap;
	(void)err;
	fk->now += 5;
	memset(res, 0, sizeof(*res));
	if (strcmp(argv[1], "run") == 0)
		res->out = dupn(LAUNCH_OUT, &res->out_len);
	else if (strcmp(argv[1], "stop") == 0)
		res->out = dupn(RECORD_7 "\n", &res->out_len);
	return 0;
}

static int fake_write(void *ctx, const char *path, const void *data, size_t len,
		      const char *replaces, struct mafh_error *err)
{
	struct fake *fk = ctx;

	(void)path;
	(void)replaces;
	(void)err;
	fk->now += 5;
	fk->writes++;
	snprintf(fk->last_response, sizeof(fk->last_response), "%.*s", (int)len,
		 (const char *)data);
	return 0;
}

static int fake_read(void *ctx, const char *path, size_t cap, struct mafh_read_result *res,
		     struct mafh_error *err)
{
	struct fake *fk = ctx;
	const char *text = NULL;

	(void)cap;
	(void)err;
	fk->now += 5;
	memset(res, 0, sizeof(*res));
	if (strstr(path, "0001.request.json"))
		text = "{\"id\": \"0001\", \"name\": \"add\", \"arguments\": {\"a\": 1}}";
	else if (strstr(path, "0002.request.json") && ++fk->reads_of_2 == 1)
		text = "{\"id\": \"0002\", \"name\": \"nofn\", \"arguments\": {}}";
	else if (strstr(path, "program_exit_code"))
		text = "7";
	else if (strstr(path, "program_output.txt"))
		text = "ok\n";
	if (!text) {
		res->status = MAFH_READ_ABSENT;
		return 0;
	}
	res->status = MAFH_READ_OK;
	res->data = dupn(text, &res->len);
	return 0;
}

static int fake_stat(void *ctx, const char *path, struct mafh_stat *st, struct mafh_error *err)
{
	(void)ctx;
	(void)path;
	(void)err;
	memset(st, 0, sizeof(*st));
	return 0;
}

static int64_t fake_now(void *ud)
{
	return ((struct fake *)ud)->now;
}

static void fake_sleep(int64_t until, void *ud)
{
	struct fake *fk = ud;

	if (until > fk->now)
		fk->now = until;
}

static void test_driver(void **state)
{
	struct fake fk = {.now = 100};
	struct mafh_backend_ops ops = {
		.size = sizeof(ops), .caps = MAFH_CAPS_REQUIRED, .ctx = &fk,
		.launcher_path = "/opt/maf-launch", .exec = fake_exec, .write_file = fake_write,
		.read_file = fake_read, .stat = fake_stat,
	};
	struct mafh_clock clock = {.now_ms = fake_now, .sleep_until_ms = fake_sleep, .ud = &fk};
	struct mafh_backend *b;
	struct mafh_registry *reg;
	struct mafh_param ps[] = {{"a", MAFH_JSON_NUMBER, 1}};
	struct fixture f = {0};
	struct mafh_tool add = {.size = sizeof(add), .name = "add", .params = ps, .n_params = 1,
				.fn = add_tool, .ud = &f};
	struct mafh_tool nofn = {.size = sizeof(nofn), .name = "nofn"};
	struct mafh_run_options o;
	struct mafh_run *run;
	struct mafh_error err = {0};
	const struct mafh_run_result *r;

	(void)state;
	assert_int_equal(mafh_backend_new(&ops, &b, &err), 0);
	assert_int_equal(mafh_registry_new(&reg), 0);
	assert_int_equal(mafh_registry_add(reg, &add, &err), 0);
	assert_int_equal(mafh_registry_add(reg, &nofn, &err), 0);
	mafh_run_options_init(&o);
	o.run_dir = R;
	o.program = "pass\n";
	o.program_len = 5;
	assert_int_equal(mafh_run_new(reg, b, &o, &run, &err), 0);
	assert_int_equal(mafh_run_drive(run, b, &clock, &err), 0);
	r = mafh_run_result(run);
	assert_int_equal(r->status, MAFH_RUN_EXITED);
	assert_int_equal(r->exit_code, 7);
	assert_int_equal(r->calls, 2);
	assert_int_equal(r->refusals, 1);
	assert_int_equal(f.tool_calls, 1);
	/* A tool with no callback is refused by the blocking driver. */
	assert_non_null(strstr(fk.last_response, "no callback"));
	assert_string_equal(r->output, "ok\n");
	assert_int_equal(fk.writes, 4);
	assert_int_equal(r->ops.exec, 3);
	assert_true(r->wall_ms > 0);
	/* Stepping a finished run: 0. */
	assert_int_equal(mafh_run_step(run, &err), 0);
	mafh_run_free(run);
	assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAPS_REQUIRED, &o, &run, &err), 0);
	assert_int_equal(mafh_run_wait(run, &err), MAFH_EINVAL);
	mafh_run_free(run);
	mafh_registry_free(reg);
	mafh_backend_free(b);
}

/* The blocking driver over a relay: an EXEC op with data goes to exec_input, the rest to
 * exec; no exec's argv holds the answer. */
struct stdin_fake {
	int64_t now;
	int execs, inputs, writes;
	char input[256];
	int leaked;
};

static int stdin_fake_exec(void *ctx, const char *const *argv, int64_t timeout_ms,
			   size_t out_cap, struct mafh_exec_result *res, struct mafh_error *err)
{
	static const char request[] = "{\"id\": \"0001\", \"name\": \"add\", \"arguments\": "
				      "{\"a\": 1}}";
	struct stdin_fake *fk = ctx;
	char ev[256];
	size_t i;

	(void)timeout_ms;
	(void)out_cap;
	(void)err;
	fk->now += 5;
	fk->execs++;
	for (i = 0; argv[i]; i++)
		fk->leaked |= strstr(argv[i], "{\"value\"") != NULL;
	memset(res, 0, sizeof(*res));
	if (strcmp(argv[1], "run") == 0) {
		res->out = dupn(LAUNCH_OUT, &res->out_len);
	} else if (strcmp(argv[1], "stop") == 0) {
		res->out = dupn(RECORD_7 "\n", &res->out_len);
	} else if (strcmp(argv[1], "relay") == 0) {
		for (i = 0; argv[i] && strcmp(argv[i], "--next") != 0; i++)
			;
		if (strcmp(argv[i + 1], "1") == 0)
			snprintf(ev, sizeof(ev), "{\"event\":\"request\",\"id\":1,\"size\":%zu}\n%s",
				 strlen(request), request);
		else
			snprintf(ev, sizeof(ev), "{\"event\":\"exit\",\"size\":1}\n7");
		res->out = dupn(ev, &res->out_len);
	}
	return 0;
}

static int stdin_fake_exec_input(void *ctx, const char *const *argv, const void *in,
				 size_t in_len, int64_t timeout_ms, size_t out_cap,
				 struct mafh_exec_result *res, struct mafh_error *err)
{
	struct stdin_fake *fk = ctx;

	fk->inputs++;
	snprintf(fk->input, sizeof(fk->input), "%.*s", (int)in_len, (const char *)in);
	return stdin_fake_exec(ctx, argv, timeout_ms, out_cap, res, err);
}

static int stdin_fake_write(void *ctx, const char *path, const void *data, size_t len,
			    const char *replaces, struct mafh_error *err)
{
	(void)path;
	(void)data;
	(void)len;
	(void)replaces;
	(void)err;
	((struct stdin_fake *)ctx)->writes++;
	return 0;
}

static int stdin_fake_read(void *ctx, const char *path, size_t cap,
			   struct mafh_read_result *res, struct mafh_error *err)
{
	(void)ctx;
	(void)path;
	(void)cap;
	(void)err;
	memset(res, 0, sizeof(*res));
	res->status = MAFH_READ_ABSENT;
	return 0;
}

static int64_t stdin_fake_now(void *ud)
{
	return ((struct stdin_fake *)ud)->now;
}

static void test_driver_exec_input(void **state)
{
	struct stdin_fake fk = {.now = 100};
	struct mafh_backend_ops ops = {
		.size = sizeof(ops), .caps = RELAY_CAPS, .ctx = &fk,
		.launcher_path = "/opt/maf-launch", .exec = stdin_fake_exec,
		.write_file = stdin_fake_write, .read_file = stdin_fake_read, .stat = fake_stat,
		.exec_input = stdin_fake_exec_input,
	};
	struct mafh_clock clock = {.now_ms = stdin_fake_now, .ud = &fk};
	struct mafh_backend *b;
	struct mafh_registry *reg;
	struct mafh_param ps[] = {{"a", MAFH_JSON_NUMBER, 1}};
	struct fixture f = {0};
	struct mafh_tool add = {.size = sizeof(add), .name = "add", .params = ps, .n_params = 1,
				.fn = add_tool, .ud = &f};
	struct mafh_run_options o;
	struct mafh_run *run;
	struct mafh_error err = {0};
	const struct mafh_run_result *r;

	(void)state;
	assert_int_equal(mafh_backend_new(&ops, &b, &err), 0);
	assert_true(mafh_backend_caps(b) & MAFH_CAP_EXEC_STDIN);
	assert_int_equal(mafh_registry_new(&reg), 0);
	assert_int_equal(mafh_registry_add(reg, &add, &err), 0);
	mafh_run_options_init(&o);
	o.run_dir = R;
	o.program = "pass\n";
	o.program_len = 5;
	o.transport = MAFH_TRANSPORT_RELAY;
	assert_int_equal(mafh_run_new(reg, b, &o, &run, &err), 0);
	assert_int_equal(mafh_run_drive(run, b, &clock, &err), 0);
	r = mafh_run_result(run);
	assert_int_equal(r->status, MAFH_RUN_EXITED);
	assert_int_equal(r->exit_code, 7);
	assert_int_equal(r->calls, 1);
	/* run, the relay for request 1, the one carrying its answer, stop, reclaim. */
	assert_int_equal(fk.execs, 5);
	assert_int_equal(fk.inputs, 1);
	assert_string_equal(fk.input, "{\"value\":2}");
	assert_int_equal(fk.writes, 2);        /* the program and the shim */
	assert_false(fk.leaked);
	mafh_run_free(run);
	mafh_registry_free(reg);
	mafh_backend_free(b);

	/* A table that declares the capability without its function is refused. */
	ops.exec_input = NULL;
	assert_int_equal(mafh_backend_new(&ops, &b, &err), MAFH_EINVAL);
	assert_null(b);
	assert_non_null(strstr(err.message, "EXEC_STDIN"));
	/* One from before exec_input (its size ends at stream_close) still works. */
	ops.caps = MAFH_CAPS_REQUIRED | MAFH_CAP_BLOCKING_EXEC;
	ops.size = offsetof(struct mafh_backend_ops, exec_input);
	assert_int_equal(mafh_backend_new(&ops, &b, &err), 0);
	assert_false(mafh_backend_caps(b) & MAFH_CAP_EXEC_STDIN);
	mafh_backend_free(b);
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
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_stop_not_the_launchers),
		cmocka_unit_test(test_stop_and_busy),
		cmocka_unit_test(test_ending_budget),
		cmocka_unit_test(test_launch_failed),
		cmocka_unit_test(test_bad_launch_line),
		cmocka_unit_test(test_backend_errors),
		cmocka_unit_test(test_forged_marker),
		cmocka_unit_test(test_wait_transport),
		cmocka_unit_test(test_lost_run),
		cmocka_unit_test(test_containment_from_launch_line),
		cmocka_unit_test(test_wait_fallback),
		cmocka_unit_test(test_wait_garbage),
		cmocka_unit_test(test_relay_transport),
		cmocka_unit_test(test_relay_without_stdin),
		cmocka_unit_test(test_relay_fallback),
		cmocka_unit_test(test_stream_transport),
		cmocka_unit_test(test_stream_fallback),
		cmocka_unit_test(test_wait_target),
		cmocka_unit_test(test_keep_and_argv),
		cmocka_unit_test(test_driver),
		cmocka_unit_test(test_driver_exec_input),
		cmocka_unit_test(test_pass_through),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
