/* Unit tests for shared/protocol.c's JSON: mafp_json_parse and its caps (size, depth,
 * trailing bytes, an embedded NUL), the exit record, and the launch line. */
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "protocol.h"
#include "protocol_helpers.h"

/* ----------------------------------------------------------------------------------------- */
/* mafp_json_parse */

static cJSON *parse(const char *s, size_t len, size_t max)
{
	char *p = unterminated(s, len);
	cJSON *j = mafp_json_parse(p, len, max);

	free(p);
	return j;
}

static void json_ok(const char *s, size_t len, size_t max)
{
	cJSON *j = parse(s, len, max);

	if (!j)
		fail_msg("JSON refused: %.*s", (int)len, s);
	cJSON_Delete(j);
}

static void json_bad(const char *s, size_t len, size_t max)
{
	cJSON *j = parse(s, len, max);

	if (j) {
		cJSON_Delete(j);
		fail_msg("JSON accepted: %.*s", (int)len, s);
	}
}

#define JSON_OK(s) json_ok(s, LEN(s), 4096)
#define JSON_BAD(s) json_bad(s, LEN(s), 4096)

static void test_json_parse_basic(void **state)
{
	cJSON *j;

	(void)state;
	JSON_OK("{}");
	JSON_OK("[]");
	JSON_OK("1");
	JSON_OK("\"s\"");
	JSON_OK("null");
	JSON_OK("{\"a\":[1,2,{\"b\":null}]}");
	JSON_OK(" \n{} ");
	JSON_OK("{}\n");
	JSON_OK("{} \t\r\n");
	j = parse("{\"k\":\"v\"}", 9, 9);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "k")->valuestring, "v");
	cJSON_Delete(j);
	assert_null(mafp_json_parse(NULL, 2, 10));
	assert_null(mafp_json_parse("{}", 0, 10));
	JSON_BAD("");
	JSON_BAD(" ");
	JSON_BAD("{");
	JSON_BAD("{\"a\":");
	JSON_BAD("{\"a\":1");
	JSON_BAD("[1,2");
	JSON_BAD("\"unterminated");
	JSON_BAD("{'a':1}");
}

static void test_json_parse_size_cap(void **state)
{
	(void)state;
	json_ok("{}", 2, 2);
	json_bad("{}", 2, 1);
	json_bad("{}", 2, 0);
	/* Trailing white space counts against the cap. */
	json_bad("{}\n", 3, 2);
	/* len bounds the parse: the bytes after it are not looked at. */
	json_ok("{}garbage", 2, 100);
	json_ok("[1]]]]", 3, 100);
}

static void test_json_parse_trailing_garbage(void **state)
{
	(void)state;
	JSON_BAD("{}x");
	JSON_BAD("{} x");
	JSON_BAD("{}{}");
	JSON_BAD("{},");
	JSON_BAD("{}]");
	JSON_BAD("1 2");
	JSON_BAD("{}\v");
	JSON_BAD("{}\f");
	JSON_BAD("{\"value\":1}}");
}

static void test_json_parse_embedded_nul(void **state)
{
	(void)state;
	JSON_BAD("{}\0");
	JSON_BAD("{}\n\0");
	JSON_BAD("{\"a\":\"b\0c\"}");
	JSON_BAD("\0{}");
	JSON_BAD("{\"a\0\":1}");
	/* Escaped as \u0000, in a value or a key: cJSON would cut the string there. */
	JSON_BAD("{\"a\":\"b\\u0000c\"}");
	JSON_BAD("[\"\\u0000\"]");
	JSON_BAD("{\"k\\u0000ey\":1}");
	JSON_BAD("\"\\u0000\"");
	JSON_BAD("\"\\u00001\"");
	/* Not a NUL: an escaped backslash followed by the text u0000, other code points. */
	JSON_OK("{\"a\":\"\\\\u0000\"}");
	JSON_OK("[\"\\u0001\",\"\\u0010\",\"\\u0100\",\"u0000\"]");
}

static void test_json_parse_depth(void **state)
{
	char *s;

	(void)state;
	s = nested(MAFP_JSON_DEPTH_MAX, "[", "]", "1");
	json_ok(s, strlen(s), 1 << 20);
	free(s);
	s = nested(MAFP_JSON_DEPTH_MAX + 1, "[", "]", "1");
	json_bad(s, strlen(s), 1 << 20);
	free(s);
	s = nested(MAFP_JSON_DEPTH_MAX, "{\"a\":", "}", "1");
	json_ok(s, strlen(s), 1 << 20);
	free(s);
	s = nested(MAFP_JSON_DEPTH_MAX + 1, "{\"a\":", "}", "1");
	json_bad(s, strlen(s), 1 << 20);
	free(s);
	/* Mixed. */
	s = nested(MAFP_JSON_DEPTH_MAX / 2 + 1, "[{\"x\":", "}]", "0");
	json_bad(s, strlen(s), 1 << 20);
	free(s);
	/* Far deeper than cJSON's own limit: refused before parsing. */
	s = nested(100000, "[", "]", "");
	json_bad(s, strlen(s), 1 << 20);
	free(s);
	/* Unclosed deep nesting. */
	s = nested(MAFP_JSON_DEPTH_MAX + 1, "[", "", "");
	json_bad(s, strlen(s), 1 << 20);
	free(s);
}

static void test_json_parse_depth_ignores_strings(void **state)
{
	char *s = malloc(4096), *w;
	int i;

	(void)state;
	assert_non_null(s);
	/* Brackets in strings are not nesting, escaped quotes do not end the string. */
	w = s + sprintf(s, "{\"a\":\"");
	for (i = 0; i < 200; i++)
		*w++ = '[';
	w += sprintf(w, "\\\"");
	for (i = 0; i < 200; i++)
		*w++ = '{';
	w += sprintf(w, "\\\\\"}");
	json_ok(s, (size_t)(w - s), 4096);
	/* Real nesting after a string holding an escaped backslash is still counted. */
	w = s + sprintf(s, "[\"\\\\\",");
	for (i = 0; i < MAFP_JSON_DEPTH_MAX; i++)
		*w++ = '[';
	for (i = 0; i < MAFP_JSON_DEPTH_MAX; i++)
		*w++ = ']';
	*w++ = ']';
	json_bad(s, (size_t)(w - s), 4096);
	free(s);
}

/* ----------------------------------------------------------------------------------------- */
/* Exit record */

static void full_record(struct mafp_exit_record *r)
{
	memset(r, 0, sizeof(*r));
	r->status = MAFP_STATUS_SIGNALED;
	r->exit_code = 137;
	r->signal = 9;
	r->wall_ms = 1234;
	r->cpu_ms = 567;
	r->peak_rss_kb = 8910;
	r->output_bytes = (int64_t)1 << 40;
	r->output_truncated = 1;
	r->calls = 3;
	strcpy(r->seccomp, "default+egress");
	strcpy(r->landlock, "abi-6");
	strcpy(r->error, "");
}

static int decode_record(const char *s, size_t len, struct mafp_exit_record *r, const char **why)
{
	char *p = unterminated(s, len);
	int rc = mafp_exit_record_decode(p, len, r, why);

	free(p);
	return rc;
}

static void test_exit_record_encode_exact(void **state)
{
	struct mafp_exit_record r;
	char *s;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.status = MAFP_STATUS_EXITED;
	strcpy(r.seccomp, "default");
	strcpy(r.landlock, "abi-7");
	s = mafp_exit_record_encode(&r);
	assert_non_null(s);
	assert_string_equal(s, "{\"status\":\"exited\",\"exit_code\":0,\"signal\":0,\"wall_ms\":0,"
			    "\"cpu_ms\":0,\"peak_rss_kb\":0,\"output_bytes\":0,"
			    "\"output_truncated\":false,\"calls\":0,\"seccomp\":\"default\","
			    "\"landlock\":\"abi-7\"}");
	free(s);
	/* The error appears only when there is one; strings are escaped. */
	r.status = MAFP_STATUS_LAUNCH_FAILED;
	r.exit_code = 127;
	strcpy(r.error, "not found: \"x\"\n");
	s = mafp_exit_record_encode(&r);
	assert_non_null(s);
	assert_non_null(strstr(s, "\"status\":\"launch_failed\""));
	assert_non_null(strstr(s, "\"error\":\"not found: \\\"x\\\"\\n\""));
	assert_null(strchr(s, '\n'));
	free(s);
}

static void test_exit_record_round_trip(void **state)
{
	struct mafp_exit_record in, out;
	const char *why = NULL;
	enum mafp_status st;
	char *s;

	(void)state;
	for (st = MAFP_STATUS_EXITED; st <= MAFP_STATUS_LAUNCH_FAILED; st++) {
		full_record(&in);
		in.status = st;
		if (st == MAFP_STATUS_LAUNCH_FAILED)
			strcpy(in.error, "cannot execute: Permission denied");
		s = mafp_exit_record_encode(&in);
		assert_non_null(s);
		assert_true(strlen(s) <= MAFP_EXIT_RECORD_MAX);
		memset(&out, 0x5a, sizeof(out));
		assert_int_equal(decode_record(s, strlen(s), &out, &why), 0);
		assert_int_equal(out.status, in.status);
		assert_int_equal(out.exit_code, in.exit_code);
		assert_int_equal(out.signal, in.signal);
		assert_int_equal(out.wall_ms, in.wall_ms);
		assert_int_equal(out.cpu_ms, in.cpu_ms);
		assert_int_equal(out.peak_rss_kb, in.peak_rss_kb);
		assert_int_equal(out.output_bytes, in.output_bytes);
		assert_int_equal(out.output_truncated, 1);
		assert_int_equal(out.calls, in.calls);
		assert_string_equal(out.seccomp, in.seccomp);
		assert_string_equal(out.landlock, in.landlock);
		assert_string_equal(out.error, in.error);
		free(s);
	}
	/* Large values survive the trip. (Not all the way to 2^53, the decoder's limit: cJSON
	 * prints with 15 significant digits whenever that reads back within its tolerance of
	 * about 2^-52 relative, so 2^53 itself comes back as 2^53 - 2. No real count gets
	 * near 4.5e15, where that starts.) */
	full_record(&in);
	in.wall_ms = in.cpu_ms = in.peak_rss_kb = in.output_bytes = in.calls =
		((int64_t)1 << 50) + 1;
	in.exit_code = 255;
	in.signal = 64;
	memset(in.seccomp, 'x', sizeof(in.seccomp) - 1);
	memset(in.error, 'e', sizeof(in.error) - 1);
	in.seccomp[sizeof(in.seccomp) - 1] = in.error[sizeof(in.error) - 1] = '\0';
	s = mafp_exit_record_encode(&in);
	assert_non_null(s);
	assert_int_equal(decode_record(s, strlen(s), &out, &why), 0);
	assert_int_equal(out.wall_ms, ((int64_t)1 << 50) + 1);
	assert_int_equal(out.calls, ((int64_t)1 << 50) + 1);
	assert_int_equal(out.exit_code, 255);
	assert_int_equal(out.signal, 64);
	assert_string_equal(out.seccomp, in.seccomp);
	assert_string_equal(out.error, in.error);
	free(s);
}

static void test_exit_record_defaults_and_unknown_fields(void **state)
{
	static const char rec[] = "{\"status\":\"timeout\",\"future\":{\"x\":[1]},\"calls\":2}\n";
	struct mafp_exit_record r;
	const char *why = NULL;

	(void)state;
	memset(&r, 0x5a, sizeof(r));
	assert_int_equal(decode_record(rec, LEN(rec), &r, &why), 0);
	assert_int_equal(r.status, MAFP_STATUS_TIMEOUT);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(r.signal, 0);
	assert_int_equal(r.wall_ms, 0);
	assert_int_equal(r.output_truncated, 0);
	assert_int_equal(r.calls, 2);
	assert_string_equal(r.seccomp, "");
	assert_string_equal(r.landlock, "");
	assert_string_equal(r.error, "");
}

static void record_bad(const char *s)
{
	struct mafp_exit_record r;
	const char *why = NULL;

	if (decode_record(s, strlen(s), &r, &why) != -1)
		fail_msg("exit record accepted: %s", s);
	assert_non_null(why);
}

#define REC(fields) "{\"status\":\"exited\"," fields "}"

static void test_exit_record_rejects(void **state)
{
	char big[MAFP_EXIT_RECORD_MAX + 2];
	struct mafp_exit_record r;
	const char *why = NULL;
	char *s;

	(void)state;
	/* Not an object, torn, empty. */
	record_bad("");
	record_bad("[]");
	record_bad("\"exited\"");
	record_bad("null");
	record_bad("{\"status\":\"exited\"");
	record_bad("{\"status\":\"exited\",\"exit_code\":1");
	record_bad(REC("\"exit_code\":0") "x");
	/* Status. */
	record_bad("{}");
	record_bad("{\"exit_code\":0}");
	record_bad("{\"status\":\"crashed\"}");
	record_bad("{\"status\":\"\"}");
	record_bad("{\"status\":0}");
	record_bad("{\"status\":null}");
	record_bad("{\"status\":[\"exited\"]}");
	record_bad("{\"Status\":\"exited\"}");
	/* Numbers of the wrong type or out of range. */
	record_bad(REC("\"exit_code\":256"));
	record_bad(REC("\"exit_code\":-1"));
	record_bad(REC("\"exit_code\":1.5"));
	record_bad(REC("\"exit_code\":\"0\""));
	record_bad(REC("\"exit_code\":true"));
	record_bad(REC("\"exit_code\":null"));
	record_bad(REC("\"exit_code\":1e300"));
	record_bad(REC("\"signal\":65"));
	record_bad(REC("\"signal\":-9"));
	record_bad(REC("\"wall_ms\":-1"));
	record_bad(REC("\"wall_ms\":9007199254740994"));
	record_bad(REC("\"wall_ms\":1e400"));
	record_bad(REC("\"wall_ms\":-1e400"));
	record_bad(REC("\"cpu_ms\":0.5"));
	record_bad(REC("\"peak_rss_kb\":{}"));
	record_bad(REC("\"output_bytes\":[]"));
	record_bad(REC("\"calls\":-3"));
	/* Booleans and strings. */
	record_bad(REC("\"output_truncated\":1"));
	record_bad(REC("\"output_truncated\":\"true\""));
	record_bad(REC("\"output_truncated\":null"));
	record_bad(REC("\"seccomp\":1"));
	record_bad(REC("\"seccomp\":\"0123456789012345678901234567890x\"")); /* 32 bytes */
	record_bad(REC("\"landlock\":null"));
	record_bad(REC("\"error\":[]"));
	/* The edges that are accepted. */
	assert_int_equal(decode_record(REC("\"seccomp\":\"0123456789012345678901234567890\""),
				       LEN(REC("\"seccomp\":\"0123456789012345678901234567890\"")),
				       &r, &why), 0);
	assert_int_equal(decode_record(REC("\"wall_ms\":9007199254740992,\"exit_code\":255.0"),
				       LEN(REC("\"wall_ms\":9007199254740992,\"exit_code\":255.0")),
				       &r, &why), 0);
	assert_int_equal(r.exit_code, 255);
	assert_int_equal(r.wall_ms, (int64_t)1 << 53);
	/* Over 4096 bytes, even when the surplus is white space. */
	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"status\":\"exited\"}", LEN("{\"status\":\"exited\"}"));
	assert_int_equal(decode_record(big, MAFP_EXIT_RECORD_MAX, &r, &why), 0);
	assert_int_equal(decode_record(big, MAFP_EXIT_RECORD_MAX + 1, &r, &why), -1);
	/* An error string too long for the record (256 bytes). */
	s = malloc(600);
	assert_non_null(s);
	strcpy(s, "{\"status\":\"launch_failed\",\"error\":\"");
	memset(s + strlen(s), 'e', 256);
	strcpy(s + LEN("{\"status\":\"launch_failed\",\"error\":\"") + 256, "\"}");
	record_bad(s);
	free(s);
}

/* ----------------------------------------------------------------------------------------- */
/* Launch line */

static int decode_launch(const char *s, size_t len, struct mafp_launch_info *info)
{
	const char *why = NULL;
	char *p = unterminated(s, len);
	int rc = mafp_launch_info_decode(p, len, info, &why);

	free(p);
	if (rc != 0)
		assert_non_null(why);
	return rc;
}

#define LAUNCH_BAD(s)                                                                         \
	do {                                                                                  \
		struct mafp_launch_info i_;                                                   \
		if (decode_launch(s, LEN(s), &i_) != -1)                                      \
			fail_msg("launch line accepted: %s", s);                             \
	} while (0)

/* The launcher's allocation-free launch line is cJSON's, byte for byte. */
static void test_launch_info_format(void **state)
{
	static const int64_t values[] = {0, 1, 2, 9, 10, 4242, 65535, 4194304, 1000000007,
					 INT32_MAX};
	char buf[128];
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		for (j = 0; j < sizeof(values) / sizeof(values[0]); j++) {
			struct mafp_launch_info in = {.pid = values[i], .supervisor_pid = values[j],
						       .session = values[i]};
			char *s = mafp_launch_info_encode(&in);
			int n = mafp_launch_info_format(&in, buf, sizeof(buf));

			assert_non_null(s);
			assert_int_equal(n, (int)strlen(s));
			assert_string_equal(buf, s);
			free(s);
		}
	}
	{
		struct mafp_launch_info in = {.pid = 1234, .supervisor_pid = 1233, .session = 1234},
					neg = {.pid = -1, .supervisor_pid = 1, .session = 1},
					big = {.pid = (int64_t)INT32_MAX + 1, .supervisor_pid = 1,
					       .session = 1};

		/* Too small a buffer, and values no pid takes, are refused. */
		assert_int_equal(mafp_launch_info_format(&in, buf, 10), -1);
		assert_int_equal(mafp_launch_info_format(&neg, buf, sizeof(buf)), -1);
		assert_int_equal(mafp_launch_info_format(&big, buf, sizeof(buf)), -1);
	}
}

static void test_launch_info(void **state)
{
	struct mafp_launch_info in = {.pid = 1234, .supervisor_pid = 1233, .session = 1234}, out;
	char *s, big[MAFP_LAUNCH_LINE_MAX + 2];

	(void)state;
	s = mafp_launch_info_encode(&in);
	assert_non_null(s);
	assert_string_equal(s, "{\"pid\":1234,\"supervisor_pid\":1233,\"session\":1234}");
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(decode_launch(s, strlen(s), &out), 0);
	assert_int_equal(out.pid, 1234);
	assert_int_equal(out.supervisor_pid, 1233);
	assert_int_equal(out.session, 1234);
	free(s);
	/* Session is optional, a trailing newline is white space, unknown fields ignored. */
	assert_int_equal(decode_launch("{\"pid\":2,\"supervisor_pid\":1}\n",
				       LEN("{\"pid\":2,\"supervisor_pid\":1}\n"), &out), 0);
	assert_int_equal(out.session, 0);
	assert_int_equal(decode_launch("{\"supervisor_pid\":1,\"x\":[],\"pid\":2147483647}",
				       LEN("{\"supervisor_pid\":1,\"x\":[],\"pid\":2147483647}"),
				       &out), 0);
	assert_int_equal(out.pid, INT32_MAX);

	LAUNCH_BAD("");
	LAUNCH_BAD("[]");
	LAUNCH_BAD("maf-host-tools: session");
	LAUNCH_BAD("{\"pid\":2,\"supervisor_pid\":1");
	LAUNCH_BAD("{\"pid\":2,\"supervisor_pid\":1}\nmaf-host-tools: session\n");
	LAUNCH_BAD("{\"supervisor_pid\":1}");
	LAUNCH_BAD("{\"pid\":2}");
	LAUNCH_BAD("{\"pid\":0,\"supervisor_pid\":1}");
	LAUNCH_BAD("{\"pid\":-2,\"supervisor_pid\":1}");
	LAUNCH_BAD("{\"pid\":2147483648,\"supervisor_pid\":1}");
	LAUNCH_BAD("{\"pid\":2.5,\"supervisor_pid\":1}");
	LAUNCH_BAD("{\"pid\":\"2\",\"supervisor_pid\":1}");
	LAUNCH_BAD("{\"pid\":null,\"supervisor_pid\":1}");
	LAUNCH_BAD("{\"pid\":2,\"supervisor_pid\":0}");
	LAUNCH_BAD("{\"pid\":2,\"supervisor_pid\":true}");
	LAUNCH_BAD("{\"pid\":2,\"supervisor_pid\":1,\"session\":-1}");
	LAUNCH_BAD("{\"pid\":2,\"supervisor_pid\":1,\"session\":\"2\"}");
	/* Over the 1024-byte cap. */
	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"pid\":2,\"supervisor_pid\":1}", LEN("{\"pid\":2,\"supervisor_pid\":1}"));
	assert_int_equal(decode_launch(big, MAFP_LAUNCH_LINE_MAX, &out), 0);
	assert_int_equal(decode_launch(big, MAFP_LAUNCH_LINE_MAX + 1, &out), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_parse_basic),
		cmocka_unit_test(test_json_parse_size_cap),
		cmocka_unit_test(test_json_parse_trailing_garbage),
		cmocka_unit_test(test_json_parse_embedded_nul),
		cmocka_unit_test(test_json_parse_depth),
		cmocka_unit_test(test_json_parse_depth_ignores_strings),
		cmocka_unit_test(test_exit_record_encode_exact),
		cmocka_unit_test(test_exit_record_round_trip),
		cmocka_unit_test(test_exit_record_defaults_and_unknown_fields),
		cmocka_unit_test(test_exit_record_rejects),
		cmocka_unit_test(test_launch_info),
		cmocka_unit_test(test_launch_info_format),
	};

	return cmocka_run_group_tests_name("protocol_json", tests, NULL, NULL);
}
