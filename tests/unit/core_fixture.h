/* The fixture of the sans-I/O core's unit tests (test_core*.c): a run over a registry of
 * one tool, add, made with mafh_run_new_sansio and driven op by op with scripted results
 * on a fake clock, and the steps most runs take (the launch, a request served, the
 * ending). Static inline, so that each test file compiles the helpers it uses and no
 * warning names the others. */
#ifndef CORE_FIXTURE_H
#define CORE_FIXTURE_H

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

/* A backend the relay transport serves, its answers on the exec's stdin. */
#define RELAY_CAPS (MAFH_CAPS_REQUIRED | MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_EXEC_STDIN)

struct fixture {
	struct mafh_registry *reg;
	struct mafh_run *run;
	int64_t now;
	int tool_calls;
	struct mafh_op last;    /* the op handed out last */
	int pending;            /* last is outstanding (not a WAIT_UNTIL served by next()) */
	char events[2048];      /* the run's events, one line each: KIND ID TOOL: MESSAGE */
};

static inline void record_event(const struct mafh_event *ev, void *ud)
{
	struct fixture *f = ud;
	size_t n = strlen(f->events);

	assert_int_equal(ev->size, sizeof(*ev));
	snprintf(f->events + n, sizeof(f->events) - n, "%s %lld %s: %s%s%.*s\n",
		 mafh_event_kind_name(ev->kind), (long long)ev->call_id,
		 ev->tool ? ev->tool : "-", ev->message ? ev->message : "",
		 ev->detail ? " | " : "", (int)ev->detail_len, ev->detail ? ev->detail : "");
}

static inline int add_tool(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
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
static inline const char *write_donor(const struct fixture *f)
{
	return f->pending && f->last.kind == MAFH_OP_WRITE ? f->last.replaces : NULL;
}

/* mafh_run_next_op into the caller's copy of the op. */
static inline int next_op(struct mafh_run *run, int64_t now, struct mafh_op *out)
{
	const struct mafh_op *op;
	int rc = mafh_run_next_op(run, now, &op);

	memset(out, 0, sizeof(*out));
	if (rc == 0)
		*out = *op;
	return rc;
}

/* The outstanding WAIT_UNTIL's wait target: 1 with dir and names, else 0 and both NULL. */
static inline int wait_target(const struct mafh_op *op, const char **dir,
			      const char *const **names)
{
	int has = op && op->kind == MAFH_OP_WAIT_UNTIL && op->wait_dir;

	*dir = has ? op->wait_dir : NULL;
	*names = has ? op->wait_names : NULL;
	return has;
}

/* Options a test sets past the fixture's own, before the run is made. */
typedef void (*options_fn)(struct mafh_run_options *o);

/* A run with the options given; reclaim_keep and keep_run_dir as mafh_run_options has
 * them, then more's (may be NULL). */
static inline void setup_run_opts(struct fixture *f, struct mafh_limits *lim,
				  enum mafh_transport tr, int64_t timeout_ms, unsigned caps,
				  const char *reclaim_keep, int keep_run_dir, options_fn more)
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
	o.reclaim_keep = reclaim_keep;
	o.keep_run_dir = keep_run_dir;
	if (more)
		more(&o);
	assert_int_equal(mafh_run_new_sansio(f->reg, caps, &o, &f->run, &err), 0);
}

static inline void setup_run_with(struct fixture *f, struct mafh_limits *lim,
				  enum mafh_transport tr, int64_t timeout_ms, unsigned caps,
				  const char *reclaim_keep, int keep_run_dir)
{
	setup_run_opts(f, lim, tr, timeout_ms, caps, reclaim_keep, keep_run_dir, NULL);
}

static inline void setup_run_caps(struct fixture *f, struct mafh_limits *lim,
				  enum mafh_transport tr, int64_t timeout_ms, unsigned caps)
{
	setup_run_with(f, lim, tr, timeout_ms, caps, NULL, 0);
}

static inline void setup_run(struct fixture *f, struct mafh_limits *lim, enum mafh_transport tr,
			     int64_t timeout_ms)
{
	setup_run_caps(f, lim, tr, timeout_ms, MAFH_CAPS_REQUIRED | MAFH_CAP_BLOCKING_EXEC);
}

static inline void teardown_run(struct fixture *f)
{
	mafh_run_free(f->run);
	mafh_registry_free(f->reg);
}

/* The next op that is not a WAIT_UNTIL (those are served by moving the fake clock). */
static inline struct mafh_op next(struct fixture *f)
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

static inline void give(struct fixture *f, struct mafh_op_result *res)
{
	f->now += 1;
	f->pending = 0;
	assert_int_equal(mafh_run_op_result(f->run, f->now, res), 0);
}

static inline void give_write_ok(struct fixture *f)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, MAFH_OP_WRITE);
	give(f, &res);
}

static inline void give_read(struct fixture *f, enum mafh_read_status st, const char *data)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, MAFH_OP_READ);
	res.read.status = st;
	res.read.data = (char *)data;
	res.read.len = data ? strlen(data) : 0;
	give(f, &res);
}

/* An exec's result with out[0..out_len): bytes of any value. */
static inline void give_exec_n(struct fixture *f, int code, const char *out, size_t out_len,
			       const char *err)
{
	struct mafh_op_result res;

	mafh_op_result_init(&res, MAFH_OP_EXEC);
	res.exec.exit_code = code;
	res.exec.out = (char *)out;
	res.exec.out_len = out_len;
	res.exec.err = (char *)err;
	res.exec.err_len = err ? strlen(err) : 0;
	give(f, &res);
}

static inline void give_exec(struct fixture *f, int code, const char *out, const char *err)
{
	give_exec_n(f, code, out, out ? strlen(out) : 0, err);
}

/* Runs the CALL op through its registered callback, as the blocking driver does. */
static inline void give_call(struct fixture *f, const struct mafh_op *op)
{
	struct mafh_op_result res;

	assert_int_equal(op->kind, MAFH_OP_CALL);
	mafh_op_result_init(&res, MAFH_OP_CALL);
	assert_int_equal(mafh_run_call_tool(f->run, &f->last, &res), 0);
	give(f, &res);
}

static inline void expect_path(const struct mafh_op *op, enum mafh_op_kind kind,
			       const char *path)
{
	assert_int_equal(op->kind, kind);
	assert_string_equal(op->path, path);
}

static inline const char *argv_after(const struct mafh_op *op, const char *flag)
{
	for (size_t i = 0; op->argv[i]; i++)
		if (strcmp(op->argv[i], flag) == 0)
			return op->argv[i + 1];
	return NULL;
}

static inline int argv_has(const struct mafh_op *op, const char *word)
{
	for (size_t i = 0; op->argv[i]; i++)
		if (strcmp(op->argv[i], word) == 0)
			return 1;
	return 0;
}

static inline void start_with(struct fixture *f, const char *launch_out);

/* Writes the program and the shim, execs the launcher and gives it a good launch line; where
 * the backend would have it (MAFH_CAP_LAUNCH_STDIN), the two go on the launch's stdin. */
static inline void start(struct fixture *f)
{
	start_with(f, LAUNCH_OUT);
}

static inline void start_with(struct fixture *f, const char *launch_out)
{
	struct mafh_op op;

	static const char head[] = "program.py 22\nimport maf_host_tools\nmaf_host_tools.py ";

	op = next(f);
	if (op.kind == MAFH_OP_EXEC) {
		assert_true(argv_has(&op, "--files-stdin"));
		assert_true(op.len > sizeof(head) && memcmp(op.data, head, sizeof(head) - 1) == 0);
		assert_non_null(memmem(op.data, op.len, "def call(name, /, **arguments):", 31));
	} else {
		expect_path(&op, MAFH_OP_WRITE, R "/host_tools/program.py");
		assert_int_equal(op.len, strlen("import maf_host_tools\n"));
		give_write_ok(f);
		op = next(f);
		expect_path(&op, MAFH_OP_WRITE, R "/host_tools/maf_host_tools.py");
		assert_non_null(strstr(op.data, "def call(name, /, **arguments):"));
		give_write_ok(f);
		op = next(f);
		assert_false(argv_has(&op, "--files-stdin"));
		assert_null(op.data);
	}
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
static inline void finish_normally(struct fixture *f, const char *output)
{
	struct mafh_op op = next(f);

	assert_int_equal(op.kind, MAFH_OP_EXEC);
	assert_string_equal(op.argv[1], "stop");
	assert_string_equal(argv_after(&op, "--supervisor-pid"), "42");
	assert_string_equal(argv_after(&op, "--run-dir"), R);
	/* The output still to read and no exact exec: the stop carries neither. */
	assert_false(argv_has(&op, "--output"));
	assert_false(argv_has(&op, "--reclaim"));
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

/* The rest of an ending whose stop vouched for nothing: the record read from its file
 * (record, or absent where NULL), the output (where output_due: output, or absent where
 * NULL), the reclaim, and the run done. */
static inline void ending_from_files(struct fixture *f, const char *record, int output_due,
				     const char *output)
{
	struct mafh_op op = next(f);

	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_exit.json");
	give_read(f, record ? MAFH_READ_OK : MAFH_READ_ABSENT, record);
	if (output_due) {
		op = next(f);
		expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
		give_read(f, output ? MAFH_READ_OK : MAFH_READ_ABSENT, output);
	}
	op = next(f);
	assert_string_equal(op.argv[1], "reclaim");
	give_exec(f, 0, "", "");
	assert_int_equal(next(f).kind, MAFH_OP_DONE);
}

/* A run that ended in error: its output read first, then the stop, which reclaims R once it
 * has printed the record. */
static inline void finish_in_error(struct fixture *f)
{
	struct mafh_op op = next(f);

	expect_path(&op, MAFH_OP_READ, R "/host_tools/program_output.txt");
	give_read(f, MAFH_READ_OK, "");
	op = next(f);
	assert_string_equal(op.argv[1], "stop");
	assert_false(argv_has(&op, "--output"));
	assert_true(argv_has(&op, "--reclaim"));
	give_exec(f, 0, RECORD, "");
	assert_int_equal(next(f).kind, MAFH_OP_DONE);
	assert_int_equal(mafh_run_result(f->run)->status, MAFH_RUN_ERROR);
}

/* Reads request N as absent until the exit marker is probed, which says code. */
static inline void exit_with(struct fixture *f, long id, const char *code)
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
static inline const char *serve(struct fixture *f, long id, const char *body, int expect_call)
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

static inline const char *req(long id, const char *args)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "{\"id\": \"%04ld\", \"name\": \"add\", \"arguments\": %s}", id,
		 args);
	return buf;
}

/* Answers the outstanding `maf-launch wait` (which must ask for request expect_next) with
 * text. */
static inline void give_wait_event(struct fixture *f, long expect_next, const char *text)
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

#endif
