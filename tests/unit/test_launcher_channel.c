/* Unit tests for the launcher's channel (guest/channel_files.c): when it reads a response
 * again, its call lines, and its UTF-8 check. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel.h"
#include "commands.h"
#include "identity.h"
#include "launch.h"
#include "tree.h"
#include "util.h"
#include "witness.h"

/* ----------------------------------------------------------------------------------------- */
/* mafl_channel_look_decide */

static void test_look_decide(void **state)
{
	struct channel_file_state seen = {.dev = 1, .ino = 2, .size = 3, .mtime_sec = 4,
					  .mtime_nsec = 5, .ctime_sec = 6, .ctime_nsec = 7};
	struct channel_file_state cur = seen;
	struct stat st;

	(void)state;
	/* No look failed yet: read at once, whatever the time. */
	assert_int_equal(mafl_channel_look_decide(NULL, &cur, 0, 1000), CHANNEL_LOOK_NOW);
	assert_int_equal(mafl_channel_look_decide(NULL, NULL, 0, 1000), CHANNEL_LOOK_NOW);
	/* Failed before: nothing until retry_at, changed or not. */
	assert_int_equal(mafl_channel_look_decide(&seen, &cur, 999, 1000), CHANNEL_LOOK_LATER);
	cur.size++;
	assert_int_equal(mafl_channel_look_decide(&seen, &cur, 999, 1000), CHANNEL_LOOK_LATER);
	/* Then: the same file is skipped, any difference is read. */
	cur = seen;
	assert_int_equal(mafl_channel_look_decide(&seen, &cur, 1000, 1000), CHANNEL_LOOK_SKIP);
	assert_int_equal(mafl_channel_look_decide(&seen, &cur, 5000, 1000), CHANNEL_LOOK_SKIP);
#define CHANGED(field) do { \
		cur = seen; \
		cur.field++; \
		assert_int_equal(mafl_channel_look_decide(&seen, &cur, 1000, 1000), \
				 CHANNEL_LOOK_NOW); \
	} while (0)
	CHANGED(dev);
	CHANGED(ino);
	CHANGED(size);
	CHANGED(mtime_sec);
	CHANGED(mtime_nsec);
	CHANGED(ctime_sec);
	CHANGED(ctime_nsec);
#undef CHANGED
	/* Gone (or not stat-able): a look, which costs an open that fails. */
	assert_int_equal(mafl_channel_look_decide(&seen, NULL, 1000, 1000), CHANNEL_LOOK_NOW);
	/* From a stat, every field. */
	memset(&st, 0, sizeof(st));
	st.st_dev = 11;
	st.st_ino = 12;
	st.st_size = 13;
	st.st_mtim.tv_sec = 14;
	st.st_mtim.tv_nsec = 15;
	st.st_ctim.tv_sec = 16;
	st.st_ctim.tv_nsec = 17;
	mafl_channel_file_state_of(&cur, &st);
	assert_true(cur.dev == 11 && cur.ino == 12 && cur.size == 13 && cur.mtime_sec == 14 &&
		    cur.mtime_nsec == 15 && cur.ctime_sec == 16 && cur.ctime_nsec == 17);
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_channel_parse_call */

/* Parses line; returns its return code with *call filled and the tree in *root. */
static int parse_line(const char *line, cJSON **root, struct channel_call *call, char *why)
{
	why[0] = '\0';
	return mafl_channel_parse_call(line, strlen(line), root, call, why, 256);
}

static void test_parse_call_tool_form(void **state)
{
	struct channel_call call;
	char why[256];
	cJSON *root;

	(void)state;
	assert_int_equal(parse_line("{\"id\": 1, \"name\": \"add\", \"arguments\": {\"a\": 1}}",
				    &root, &call, why), 0);
	assert_true(cJSON_IsNumber(call.id) && call.id->valuedouble == 1);
	assert_string_equal(call.name, "add");
	assert_true(cJSON_IsObject(call.arguments));
	assert_null(call.request);
	cJSON_Delete(root);
	/* No arguments: an empty object. */
	assert_int_equal(parse_line("{\"id\": \"x\", \"name\": \"add\"}", &root, &call, why), 0);
	assert_true(cJSON_IsObject(call.arguments) && !call.arguments->child);
	cJSON_Delete(root);
	/* A name the host's files cannot carry as ours: refused, with the id. */
	assert_int_equal(parse_line("{\"id\": 3, \"name\": \"d\u00e9j\u00e0\"}", &root, &call,
				    why), -1);
	assert_string_equal(why, "the call has no valid tool \"name\"");
	assert_true(cJSON_IsNumber(call.id));
	cJSON_Delete(root);
}

static void test_parse_call_raw_form(void **state)
{
	struct channel_call call;
	char why[256];
	cJSON *root;

	(void)state;
	/* The string unescaped, byte for byte; no name wanted, none checked. */
	assert_int_equal(parse_line("{\"id\": \"r\", \"request\": "
				    "\"{ \\\"name\\\": \\\"d\\u00e9 j\\\", "
				    "\\\"n\\\": 1e400, \\\"x\\\": Infinity }\"}",
				    &root, &call, why), 0);
	assert_string_equal(call.id->valuestring, "r");
	assert_string_equal(call.request,
			    "{ \"name\": \"d\xc3\xa9 j\", \"n\": 1e400, \"x\": Infinity }");
	assert_int_equal(call.request_len, strlen(call.request));
	assert_null(call.name);
	assert_null(call.arguments);
	cJSON_Delete(root);
	/* Raw wins over a name and arguments, even invalid ones. */
	assert_int_equal(parse_line("{\"id\": 2, \"name\": \"a/b\", \"arguments\": [1], "
				    "\"request\": \"x\"}", &root, &call, why), 0);
	assert_string_equal(call.request, "x");
	assert_null(call.name);
	cJSON_Delete(root);
	/* Empty is a request too. */
	assert_int_equal(parse_line("{\"id\": 3, \"request\": \"\"}", &root, &call, why), 0);
	assert_non_null(call.request);
	assert_int_equal(call.request_len, 0);
	cJSON_Delete(root);
	/* Not a string: refused, the id kept. */
	assert_int_equal(parse_line("{\"id\": 4, \"request\": {\"name\": \"add\"}}", &root,
				    &call, why), -1);
	assert_string_equal(why, "the call's \"request\" is not a JSON string");
	assert_true(cJSON_IsNumber(call.id) && call.id->valuedouble == 4);
	cJSON_Delete(root);
	assert_int_equal(parse_line("{\"id\": 5, \"request\": null}", &root, &call, why), -1);
	cJSON_Delete(root);
	/* The id is checked first, as for any call. */
	assert_int_equal(parse_line("{\"request\": \"x\"}", &root, &call, why), -1);
	assert_null(call.id);
	assert_non_null(strstr(why, "no \"id\""));
	cJSON_Delete(root);
	/* A NUL cannot be carried (the request's length is its string's): the line is refused. */
	assert_int_equal(parse_line("{\"id\": 6, \"request\": \"a\\u0000b\"}", &root, &call,
				    why), -1);
	assert_string_equal(why, "the call is not a JSON object");
	cJSON_Delete(root);
}

/* ----------------------------------------------------------------------------------------- */
/* mafp_utf8_valid */

static void test_text_is_utf8(void **state)
{
	static const char *const good[] = {
		"", "plain ASCII \x01\x7f", "d\xc3\xa9j\xc3\xa0", "\xe6\x97\xa5\xe6\x9c\xac",
		"\xf0\x9f\x98\x80", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf",
		"\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf",
	};
	static const char *const bad[] = {
		"\x80", "\xbf", "a\xc3", "\xc3(", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80",
		"\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x80\x80\x80",
		"\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xfe",
		"\xe6\x97", "\xf0\x9f\x98", "ok \xe6\x97\xa5 then \xa5",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!mafp_utf8_valid(good[i], strlen(good[i])))
			fail_msg("good[%zu] refused", i);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (mafp_utf8_valid(bad[i], strlen(bad[i])))
			fail_msg("bad[%zu] taken", i);
	/* By length, not by terminator: a sequence cut by len is not whole. */
	assert_false(mafp_utf8_valid("\xc3\xa9", 1));
	assert_true(mafp_utf8_valid("\xc3\xa9\xff", 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_look_decide),
		cmocka_unit_test(test_parse_call_tool_form),
		cmocka_unit_test(test_parse_call_raw_form),
		cmocka_unit_test(test_text_is_utf8),
	};

	return cmocka_run_group_tests_name("launcher_channel", tests, NULL, NULL);
}
