/* Unit tests for the blocking driver (mafh_run_drive, host/src/driver.c) over a fake
 * backend table and a fake clock: a whole run over the files transport, and over a relay
 * whose answers go on the exec's stdin. No process, no filesystem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core_fixture.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_driver),
		cmocka_unit_test(test_driver_exec_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
