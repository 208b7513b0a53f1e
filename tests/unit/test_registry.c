/* Unit tests for the tool registry (host/src/registry.c), the shim generator (shim.c) and the
 * error names: names, declared parameters, argument checks, limits, sealing, the transfer
 * figure. No process, no filesystem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mafhost.h"

static int echo_tool(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	(void)ud;
	return mafh_reply_value(reply, call->arguments, call->arguments_len);
}

static struct mafh_tool tool(const char *name, const struct mafh_param *params, size_t n)
{
	struct mafh_tool t;

	memset(&t, 0, sizeof(t));
	t.size = sizeof(t);
	t.name = name;
	t.description = "A test tool.";
	t.params = params;
	t.n_params = n;
	t.fn = echo_tool;
	return t;
}

static struct mafh_registry *new_registry(void)
{
	struct mafh_registry *reg = NULL;

	assert_int_equal(mafh_registry_new(&reg), 0);
	assert_non_null(reg);
	return reg;
}

static void test_free_null(void **state)
{
	(void)state;
	mafh_registry_free(NULL);
	mafh_backend_free(NULL);
	mafh_run_free(NULL);
	mafh_exec_result_clear(NULL);
	mafh_read_result_clear(NULL);
}

static void test_names(void **state)
{
	struct mafh_registry *reg = new_registry();
	struct mafh_error err = {0};
	struct mafh_tool t;
	char long_name[200];

	(void)state;
	t = tool("lookup_state", NULL, 0);
	assert_int_equal(mafh_registry_add(reg, &t, &err), 0);
	t = tool("lookup_state", NULL, 0);
	assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EEXIST);
	assert_non_null(strstr(err.message, "already registered"));
	for (const char *const *bad = (const char *const[]){"", "a b", "a/b", "a\\b", "a\"b",
							     "caf\xc3\xa9", NULL}; *bad; bad++) {
		t = tool(*bad, NULL, 0);
		assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EINVAL);
	}
	t = tool(NULL, NULL, 0);
	assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EINVAL);
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	t = tool(long_name, NULL, 0);
	assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EINVAL);
	/* Names that are not Python identifiers are fine: they get no wrapper. */
	t = tool("state-lookup.v2", NULL, 0);
	assert_int_equal(mafh_registry_add(reg, &t, &err), 0);
	assert_int_equal(mafh_registry_count(reg), 2);
	assert_string_equal(mafh_registry_tool_name(reg, 0), "lookup_state");
	assert_string_equal(mafh_registry_tool_description(reg, 1), "A test tool.");
	assert_null(mafh_registry_tool_name(reg, 2));
	/* A size field unset is refused. */
	t = tool("z", NULL, 0);
	t.size = 0;
	assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EINVAL);
	mafh_registry_free(reg);
}

static void test_params_validation(void **state)
{
	struct mafh_registry *reg = new_registry();
	struct mafh_error err = {0};
	struct mafh_param dup[] = {{"a", MAFH_JSON_STRING, 1}, {"a", MAFH_JSON_NUMBER, 0}};
	struct mafh_param noname[] = {{"", MAFH_JSON_STRING, 1}};
	struct mafh_param badtype[] = {{"a", (enum mafh_json_type)42, 1}};
	struct mafh_tool t;

	(void)state;
	t = tool("t1", dup, 2);
	assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EINVAL);
	assert_non_null(strstr(err.message, "declared twice"));
	t = tool("t2", noname, 1);
	assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EINVAL);
	t = tool("t3", badtype, 1);
	assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EINVAL);
	assert_non_null(strstr(err.message, "unknown JSON type"));
	t = tool("t4", NULL, 3);
	assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EINVAL);
	assert_int_equal(mafh_registry_count(reg), 0);
	mafh_registry_free(reg);
}

static int check(struct mafh_registry *reg, const char *name, const char *json,
		 struct mafh_error *err)
{
	return mafh_registry_check_args(reg, name, json, strlen(json), err);
}

static void test_check_args(void **state)
{
	struct mafh_registry *reg = new_registry();
	struct mafh_error err = {0};
	struct mafh_param ps[] = {
		{"s", MAFH_JSON_STRING, 1},  {"n", MAFH_JSON_NUMBER, 0},
		{"i", MAFH_JSON_INTEGER, 0}, {"b", MAFH_JSON_BOOLEAN, 0},
		{"o", MAFH_JSON_OBJECT, 0},  {"a", MAFH_JSON_ARRAY, 0},
		{"z", MAFH_JSON_NULL, 0},    {"x", MAFH_JSON_ANY, 0},
	};
	struct mafh_tool t = tool("typed", ps, sizeof(ps) / sizeof(ps[0]));
	struct mafh_tool open = tool("open", NULL, 0);

	(void)state;
	assert_int_equal(mafh_registry_add(reg, &t, &err), 0);
	assert_int_equal(mafh_registry_add(reg, &open, &err), 0);

	assert_int_equal(check(reg, "typed", "{\"s\":\"x\"}", &err), 0);
	assert_int_equal(check(reg, "typed", "{\"s\":\"x\",\"n\":1.5,\"i\":-3,\"b\":false,"
				       "\"o\":{},\"a\":[1],\"z\":null,\"x\":[{}]}", &err), 0);
	assert_int_equal(check(reg, "typed", "{}", &err), MAFH_EINVAL);
	assert_non_null(strstr(err.message, "needs the argument 's'"));
	assert_int_equal(check(reg, "typed", "{\"s\":1}", &err), MAFH_EINVAL);
	assert_non_null(strstr(err.message, "JSON type string"));
	assert_int_equal(check(reg, "typed", "{\"s\":\"x\",\"i\":1.5}", &err), MAFH_EINVAL);
	assert_non_null(strstr(err.message, "JSON type integer"));
	assert_int_equal(check(reg, "typed", "{\"s\":\"x\",\"i\":1e300}", &err), MAFH_EINVAL);
	assert_int_equal(check(reg, "typed", "{\"s\":\"x\",\"b\":0}", &err), MAFH_EINVAL);
	assert_int_equal(check(reg, "typed", "{\"s\":\"x\",\"o\":[]}", &err), MAFH_EINVAL);
	assert_int_equal(check(reg, "typed", "{\"s\":\"x\",\"a\":{}}", &err), MAFH_EINVAL);
	assert_int_equal(check(reg, "typed", "{\"s\":\"x\",\"z\":0}", &err), MAFH_EINVAL);
	/* A declared list is closed; the key is quoted with control bytes masked. */
	assert_int_equal(check(reg, "typed", "{\"s\":\"x\",\"q\\n\":1}", &err), MAFH_EINVAL);
	assert_non_null(strstr(err.message, "no parameter 'q?'"));
	assert_int_equal(check(reg, "typed", "[]", &err), MAFH_EINVAL);
	/* No declared parameters: any object. */
	assert_int_equal(check(reg, "open", "{\"anything\":[1,2]}", &err), 0);
	assert_int_equal(check(reg, "nope", "{}", &err), MAFH_ENOENT);
	assert_non_null(strstr(err.message, "no host tool named 'nope'"));
	mafh_registry_free(reg);
}

static void test_limits(void **state)
{
	struct mafh_registry *reg = new_registry();
	struct mafh_error err = {0};
	struct mafh_limits lim, got;

	(void)state;
	mafh_limits_init(&lim);
	assert_int_equal(lim.max_calls, 16);
	assert_int_equal(lim.max_response_bytes, 8u << 20);
	got.size = sizeof(got);
	mafh_registry_get_limits(reg, &got);
	assert_memory_equal(&got, &lim, sizeof(lim));

	lim.max_calls = -1;
	assert_int_equal(mafh_registry_set_limits(reg, &lim, &err), MAFH_EINVAL);
	lim.max_calls = 1000000;
	assert_int_equal(mafh_registry_set_limits(reg, &lim, &err), MAFH_EINVAL);
	lim.max_calls = 3;
	lim.max_response_bytes = 0;
	assert_int_equal(mafh_registry_set_limits(reg, &lim, &err), MAFH_EINVAL);
	lim.max_response_bytes = 100;
	lim.max_output_bytes = 7;
	assert_int_equal(mafh_registry_set_limits(reg, &lim, &err), 0);
	mafh_registry_get_limits(reg, &got);
	assert_int_equal(got.max_calls, 3);
	assert_int_equal(got.max_response_bytes, 100);
	lim.size = 0;
	assert_int_equal(mafh_registry_set_limits(reg, &lim, &err), MAFH_EINVAL);
	mafh_registry_free(reg);
}

static void test_transfer_bytes(void **state)
{
	struct mafh_registry *reg = new_registry();
	struct mafh_limits lim;

	(void)state;
	/* Defaults: 16 x 8 MiB + 1 MiB of output. */
	assert_true(mafh_registry_transfer_bytes(reg) == 16ull * (8u << 20) + (1u << 20));
	mafh_limits_init(&lim);
	lim.max_calls = 0;
	assert_int_equal(mafh_registry_set_limits(reg, &lim, NULL), 0);
	assert_true(mafh_registry_transfer_bytes(reg) == (1u << 20));
	lim.max_calls = 999999;
	lim.max_response_bytes = UINT64_MAX;
	lim.max_output_bytes = 10;
	/* Too large for size_t halves: refused, the figure is unchanged. */
	assert_int_equal(mafh_registry_set_limits(reg, &lim, NULL), MAFH_EINVAL);
	lim.max_response_bytes = SIZE_MAX / 2;
	assert_int_equal(mafh_registry_set_limits(reg, &lim, NULL), 0);
	assert_true(mafh_registry_transfer_bytes(reg) == UINT64_MAX);
	mafh_registry_free(reg);
}

static void test_sealing(void **state)
{
	struct mafh_registry *reg = new_registry();
	struct mafh_error err = {0};
	struct mafh_run_options opts;
	struct mafh_run *run = NULL;
	struct mafh_tool t = tool("before", NULL, 0);
	struct mafh_limits lim;

	(void)state;
	assert_int_equal(mafh_registry_add(reg, &t, &err), 0);
	assert_false(mafh_registry_sealed(reg));
	mafh_run_options_init(&opts);
	opts.run_dir = "/tmp/r";
	opts.program = "print(1)\n";
	opts.program_len = 9;
	assert_int_equal(mafh_run_new_sansio(reg, MAFH_CAPS_REQUIRED, &opts, &run, &err), 0);
	assert_true(mafh_registry_sealed(reg));
	t = tool("after", NULL, 0);
	assert_int_equal(mafh_registry_add(reg, &t, &err), MAFH_EPERM);
	assert_non_null(strstr(err.message, "sealed"));
	assert_non_null(strstr(err.message, "'after'"));
	mafh_limits_init(&lim);
	assert_int_equal(mafh_registry_set_limits(reg, &lim, &err), MAFH_EPERM);
	assert_int_equal(mafh_registry_count(reg), 1);
	mafh_run_free(run);
	mafh_registry_free(reg);
}

static void test_shim(void **state)
{
	struct mafh_registry *reg = new_registry();
	struct mafh_tool t;
	char *text = NULL;
	size_t len = 0;

	(void)state;
	t = tool("lookup", NULL, 0);
	t.description = "Says \"hi\"\n\\ and caf\xc3\xa9\x01";
	assert_int_equal(mafh_registry_add(reg, &t, NULL), 0);
	t = tool("call", NULL, 0); /* collides with the shim's own global: no wrapper */
	assert_int_equal(mafh_registry_add(reg, &t, NULL), 0);
	assert_int_equal(mafh_shim_source(reg, &text, &len, NULL), 0);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	assert_non_null(strstr(text, "def call(name, /, **arguments):"));
	assert_non_null(strstr(text, "class HostToolError(Exception):"));
	assert_non_null(strstr(text, "O_CREAT | _os.O_EXCL"));
	assert_non_null(strstr(text, "POLL_INTERVAL = 0.05"));
	assert_non_null(strstr(text, "CALL_TIMEOUT = 300.0"));
	assert_non_null(strstr(text, ".request.json\""));
	assert_non_null(strstr(text, "\"abandoned\": True"));
	assert_non_null(strstr(text, "NFKC"));
	/* Every byte of a description outside printable ASCII is escaped in a bytes literal. */
	assert_non_null(strstr(text, "(b\"lookup\".decode(\"utf-8\", \"replace\"), "
				     "b\"Says \\x22hi\\x22\\x0a\\x5c and caf\\xc3\\xa9\\x01\""));
	for (size_t i = 0; i < len; i++)
		assert_true(text[i] == '\n' || (text[i] >= 0x20 && text[i] < 0x7f));
	free(text);
	mafh_registry_free(reg);
}

static void test_names_of_enums(void **state)
{
	enum mafh_json_type jt;
	enum mafh_transport tr;

	(void)state;
	assert_string_equal(mafh_strerror(MAFH_ENOTSUP), "the backend lacks a needed capability");
	assert_string_equal(mafh_strerror(12345), "unknown error");
	for (int i = MAFH_JSON_ANY; i <= MAFH_JSON_NULL; i++) {
		assert_int_equal(mafh_json_type_from_name(mafh_json_type_name(i), &jt), 0);
		assert_int_equal(jt, i);
	}
	assert_int_equal(mafh_json_type_from_name("float", &jt), MAFH_EINVAL);
	assert_int_equal(mafh_transport_from_name("wait", &tr), 0);
	assert_int_equal(tr, MAFH_TRANSPORT_WAIT);
	assert_string_equal(mafh_run_status_name(MAFH_RUN_LAUNCH_FAILED), "launch_failed");
	assert_string_equal(mafh_op_kind_name(MAFH_OP_WAIT_UNTIL), "wait_until");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_free_null),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_params_validation),
		cmocka_unit_test(test_check_args),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_transfer_bytes),
		cmocka_unit_test(test_sealing),
		cmocka_unit_test(test_shim),
		cmocka_unit_test(test_names_of_enums),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
