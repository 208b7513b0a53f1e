/* Unit tests for shared/protocol.c's calls: every encoder and decoder of a request and a
 * response, and base64. */
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
/* Requests */

static int decode_request(const char *s, size_t len, size_t max, long id, struct mafp_request *r,
			  char *why, size_t why_size)
{
	char *p = unterminated(s, len);
	int rc = mafp_request_decode(p, len, max, id, r, why, why_size);

	free(p);
	return rc;
}

/* Expects a refusal whose sentence contains want (NULL: any). */
static void request_bad(const char *s, long id, const char *want)
{
	struct mafp_request r;
	char why[256] = "";

	if (decode_request(s, strlen(s), 4096, id, &r, why, sizeof(why)) != -1) {
		mafp_request_clear(&r);
		fail_msg("request accepted: %s", s);
	}
	assert_true(strlen(why) > 0);
	if (want && !strstr(why, want))
		fail_msg("refusal '%s' does not mention '%s' (request %s)", why, want, s);
	assert_null(r.arguments);
}

static void test_request_decode_valid(void **state)
{
	static const char req[] =
		"{\"id\": \"0007\", \"name\": \"lookup\", \"arguments\": {\"q\": \"x\", \"n\": [1, 2]}}";
	struct mafp_request r;
	char why[128] = "";
	const cJSON *q;

	(void)state;
	assert_int_equal(decode_request(req, LEN(req), 4096, 7, &r, why, sizeof(why)), 0);
	assert_int_equal(r.id, 7);
	assert_false(r.abandoned);
	assert_string_equal(r.name, "lookup");
	assert_true(cJSON_IsObject(r.arguments));
	q = cJSON_GetObjectItemCaseSensitive(r.arguments, "q");
	assert_true(cJSON_IsString(q));
	assert_string_equal(q->valuestring, "x");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.arguments, "n")), 2);
	mafp_request_clear(&r);
	assert_null(r.arguments);
	mafp_request_clear(&r); /* twice is harmless */

	/* No arguments: an empty object. */
	assert_int_equal(decode_request("{\"id\":\"0001\",\"name\":\"t\"}",
					LEN("{\"id\":\"0001\",\"name\":\"t\"}"), 4096, 1, &r, why,
					sizeof(why)), 0);
	assert_true(cJSON_IsObject(r.arguments));
	assert_null(r.arguments->child);
	mafp_request_clear(&r);

	/* Ids past 9999 have more digits. */
	assert_int_equal(decode_request("{\"id\":\"12345\",\"name\":\"t\",\"arguments\":{}}",
					LEN("{\"id\":\"12345\",\"name\":\"t\",\"arguments\":{}}"), 4096,
					12345, &r, why, sizeof(why)), 0);
	assert_int_equal(r.id, 12345);
	mafp_request_clear(&r);
}

static void test_request_decode_abandoned(void **state)
{
	struct mafp_request r;
	char why[128] = "";

	(void)state;
	assert_int_equal(decode_request("{\"id\": \"0003\", \"abandoned\": true}",
					LEN("{\"id\": \"0003\", \"abandoned\": true}"), 4096, 3, &r,
					why, sizeof(why)), 0);
	assert_int_equal(r.id, 3);
	assert_true(r.abandoned);
	assert_null(r.arguments);
	mafp_request_clear(&r);
	/* Abandoned is still checked against the file's id. */
	request_bad("{\"id\": \"0004\", \"abandoned\": true}", 3, "does not match");
	/* abandoned: false is an ordinary request, which then needs a name. */
	request_bad("{\"id\": \"0003\", \"abandoned\": false}", 3, "name");
	request_bad("{\"id\": \"0003\", \"abandoned\": \"true\"}", 3, "name");
	request_bad("{\"abandoned\": true}", 3, "id");
	/* Bytes a strict decoder refuses, even inside a string a tool would be handed. */
	request_bad("{\"id\": \"0003\", \"name\": \"t\", \"arguments\": {\"s\": \"\xff\xfe\"}}", 3,
		    "not valid UTF-8");
	request_bad("{\"id\": \"0003\", \"name\": \"t\", \"arguments\": {\"s\": \"\xed\xa0\x80\"}}", 3,
		    "not valid UTF-8");
	request_bad("{\"id\": \"0003\", \"name\": \"t\", \"arguments\": {\"s\": \"\xc0\xaf\"}}", 3,
		    "not valid UTF-8");
	/* A key twice, at any depth: a tool's parser may take the other one. */
	request_bad("{\"id\": \"0003\", \"name\": \"t\", \"arguments\": {\"a\": 1, \"a\": 2}}",
		    3, "a key twice");
	request_bad("{\"id\": \"0003\", \"name\": \"t\", \"arguments\": {}, \"arguments\": {}}",
		    3, "a key twice");
	request_bad("{\"id\": \"0003\", \"name\": \"t\", \"arguments\": {\"l\": [{\"b\": 1, "
		    "\"c\": 2, \"b\": 3}]}}", 3, "a key twice");
}

static void test_request_decode_id(void **state)
{
	(void)state;
	request_bad("{\"id\":\"0008\",\"name\":\"t\"}", 7, "does not match");
	request_bad("{\"id\":\"0007\",\"name\":\"t\"}", 70, "does not match");
	request_bad("{\"id\":7,\"name\":\"t\"}", 7, "\"id\"");
	request_bad("{\"id\":\"7\",\"name\":\"t\"}", 7, "\"id\"");
	request_bad("{\"id\":\"007\",\"name\":\"t\"}", 7, "\"id\"");
	request_bad("{\"id\":\"0000\",\"name\":\"t\"}", 0, "\"id\"");
	request_bad("{\"id\":\"-001\",\"name\":\"t\"}", -1, "\"id\"");
	request_bad("{\"id\":\" 007\",\"name\":\"t\"}", 7, "\"id\"");
	request_bad("{\"id\":\"0007 \",\"name\":\"t\"}", 7, "\"id\"");
	request_bad("{\"id\":\"0x07\",\"name\":\"t\"}", 7, "\"id\"");
	request_bad("{\"id\":\"1000000\",\"name\":\"t\"}", 1000000, "\"id\"");
	request_bad("{\"id\":null,\"name\":\"t\"}", 7, "\"id\"");
	request_bad("{\"name\":\"t\"}", 7, "\"id\"");
	request_bad("{\"ID\":\"0007\",\"name\":\"t\"}", 7, "\"id\"");
}

static void test_request_decode_name(void **state)
{
	char req[512];

	(void)state;
	request_bad("{\"id\":\"0001\"}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":\"\"}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":\"a b\"}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":\"../x\"}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":\"a\\\\b\"}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":\"a\\\"b\"}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":\"a\\nb\"}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":\"caf\\u00e9\"}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":7}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":null}", 1, "name");
	request_bad("{\"id\":\"0001\",\"name\":[\"t\"]}", 1, "name");
	/* 129 bytes is one too many; 128 fits exactly in the request's buffer. */
	snprintf(req, sizeof(req), "{\"id\":\"0001\",\"name\":\"%0129d\"}", 0);
	request_bad(req, 1, "name");
	{
		struct mafp_request r;
		char why[64];

		snprintf(req, sizeof(req), "{\"id\":\"0001\",\"name\":\"%0128d\"}", 0);
		assert_int_equal(decode_request(req, strlen(req), 4096, 1, &r, why, sizeof(why)), 0);
		assert_int_equal(strlen(r.name), MAFP_TOOL_NAME_MAX);
		mafp_request_clear(&r);
	}
}

/* A NUL escaped as \u0000 is not caught by the raw-byte NUL check: cJSON decodes it into the
 * string, and every C reader then sees the string cut short. PROTOCOL.md says a name is
 * 1..128 printable ASCII bytes, so "ab\u0000/../x" must be refused, not served as "ab"
 * (Python's json, upstream's reader, sees all 9 characters). */
static void test_request_decode_escaped_nul(void **state)
{
	(void)state;
	request_bad("{\"id\":\"0001\",\"name\":\"ab\\u0000/../x\",\"arguments\":{}}", 1, NULL);
	request_bad("{\"id\":\"0001\\u0000junk\",\"name\":\"ab\",\"arguments\":{}}", 1, NULL);
}

static void test_request_decode_arguments(void **state)
{
	(void)state;
	request_bad("{\"id\":\"0001\",\"name\":\"t\",\"arguments\":[]}", 1, "arguments");
	request_bad("{\"id\":\"0001\",\"name\":\"t\",\"arguments\":\"{}\"}", 1, "arguments");
	request_bad("{\"id\":\"0001\",\"name\":\"t\",\"arguments\":null}", 1, "arguments");
	request_bad("{\"id\":\"0001\",\"name\":\"t\",\"arguments\":1}", 1, "arguments");
	request_bad("{\"id\":\"0001\",\"name\":\"t\",\"arguments\":true}", 1, "arguments");
}

static void test_request_decode_malformed_and_oversized(void **state)
{
	static const char ok[] = "{\"id\":\"0001\",\"name\":\"t\",\"arguments\":{\"a\":1}}";
	struct mafp_request r;
	char why[256] = "", tiny[8];
	char *deep;

	(void)state;
	request_bad("", 1, "JSON object");
	request_bad("[]", 1, "JSON object");
	request_bad("\"0001\"", 1, "JSON object");
	request_bad("{\"id\":\"0001\",\"name\":\"t\",\"arguments\":{\"a\":", 1, "JSON object");
	request_bad("{\"id\":\"0001\",\"name\":\"t\"}{}", 1, "JSON object");
	/* The cap: exactly max_len bytes is fine, one less is refused with the size. */
	assert_int_equal(decode_request(ok, LEN(ok), LEN(ok), 1, &r, why, sizeof(why)), 0);
	mafp_request_clear(&r);
	assert_int_equal(decode_request(ok, LEN(ok), LEN(ok) - 1, 1, &r, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "larger than"));
	assert_null(r.arguments);
	/* Too deep. */
	deep = nested(MAFP_JSON_DEPTH_MAX, "{\"a\":", "}", "1");
	{
		char *req = malloc(strlen(deep) + 64);

		assert_non_null(req);
		sprintf(req, "{\"id\":\"0001\",\"name\":\"t\",\"arguments\":%s}", deep);
		request_bad(req, 1, "JSON object");
		free(req);
	}
	free(deep);
	/* A tiny sentence buffer is filled, truncated and terminated. */
	memset(tiny, 'x', sizeof(tiny));
	assert_int_equal(decode_request("[]", 2, 4096, 1, &r, tiny, sizeof(tiny)), -1);
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
	memset(tiny, 'x', sizeof(tiny));
	assert_int_equal(decode_request(ok, LEN(ok), 2, 1, &r, tiny, sizeof(tiny)), -1);
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
	memset(tiny, 'x', sizeof(tiny));
	assert_int_equal(decode_request(ok, LEN(ok), 4096, 99, &r, tiny, sizeof(tiny)), -1);
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
}

static void test_request_encode(void **state)
{
	struct mafp_request r;
	char why[128];
	cJSON *args;
	char *s;

	(void)state;
	args = cJSON_Parse("{\"q\":\"x\",\"n\":[1,{\"b\":true}]}");
	assert_non_null(args);
	s = mafp_request_encode(7, "lookup", args);
	assert_non_null(s);
	assert_string_equal(s, "{\"id\":\"0007\",\"name\":\"lookup\","
			    "\"arguments\":{\"q\":\"x\",\"n\":[1,{\"b\":true}]}}");
	/* arguments is borrowed: still ours, unchanged. */
	assert_non_null(cJSON_GetObjectItemCaseSensitive(args, "q"));
	assert_int_equal(decode_request(s, strlen(s), 4096, 7, &r, why, sizeof(why)), 0);
	assert_string_equal(r.name, "lookup");
	assert_true(cJSON_Compare(r.arguments, args, 1));
	mafp_request_clear(&r);
	free(s);
	cJSON_Delete(args);

	s = mafp_request_encode(12, "t", NULL);
	assert_non_null(s);
	assert_string_equal(s, "{\"id\":\"0012\",\"name\":\"t\",\"arguments\":{}}");
	free(s);
	s = mafp_request_encode(123456, "t", NULL);
	assert_non_null(s);
	assert_string_equal(s, "{\"id\":\"123456\",\"name\":\"t\",\"arguments\":{}}");
	free(s);
	assert_null(mafp_request_encode(0, "t", NULL));
	assert_null(mafp_request_encode(MAFP_CALL_ID_MAX + 1, "t", NULL));

	s = mafp_request_encode_abandoned(5);
	assert_non_null(s);
	assert_string_equal(s, "{\"id\":\"0005\",\"abandoned\":true}");
	assert_int_equal(decode_request(s, strlen(s), 4096, 5, &r, why, sizeof(why)), 0);
	assert_true(r.abandoned);
	mafp_request_clear(&r);
	free(s);
	assert_null(mafp_request_encode_abandoned(0));
	assert_null(mafp_request_encode_abandoned(-3));
}

/* ----------------------------------------------------------------------------------------- */
/* Responses */

static int decode_response(const char *s, size_t len, size_t max, struct mafp_response *r)
{
	char *p = unterminated(s, len);
	int rc = mafp_response_decode(p, len, max, r);

	free(p);
	return rc;
}

static void response_bad(const char *s)
{
	struct mafp_response r;

	if (decode_response(s, strlen(s), 4096, &r) != -1) {
		mafp_response_clear(&r);
		fail_msg("response accepted: %s", s);
	}
	assert_null(r.value);
	assert_null(r.refusal);
}

static void test_response_encode(void **state)
{
	cJSON *v = cJSON_Parse("{\"temp\":21.5,\"tags\":[\"a\",null]}");
	char *s;

	(void)state;
	assert_non_null(v);
	s = mafp_response_encode_value(v);
	assert_non_null(s);
	assert_string_equal(s, "{\"value\":{\"temp\":21.5,\"tags\":[\"a\",null]}}");
	free(s);
	cJSON_Delete(v);
	s = mafp_response_encode_value(NULL);
	assert_non_null(s);
	assert_string_equal(s, "{\"value\":null}");
	free(s);
	s = mafp_response_encode_refusal("the tool 'x' is unknown: \"no\"\n");
	assert_non_null(s);
	assert_string_equal(s, "{\"refusal\":\"the tool 'x' is unknown: \\\"no\\\"\\n\"}");
	free(s);
}

static void test_response_decode_value(void **state)
{
	struct mafp_response r;

	(void)state;
	assert_int_equal(decode_response("{\"value\": 42}", LEN("{\"value\": 42}"), 4096, &r), 0);
	assert_true(cJSON_IsNumber(r.value));
	assert_int_equal(r.value->valueint, 42);
	assert_null(r.refusal);
	mafp_response_clear(&r);
	assert_null(r.value);
	mafp_response_clear(&r);

	assert_int_equal(decode_response("{\"value\":null}\n", LEN("{\"value\":null}\n"), 4096, &r),
			 0);
	assert_non_null(r.value);
	assert_true(cJSON_IsNull(r.value));
	mafp_response_clear(&r);

	assert_int_equal(decode_response("{\"value\":{\"a\":[1,\"s\"]},\"extra\":0}",
					 LEN("{\"value\":{\"a\":[1,\"s\"]},\"extra\":0}"), 4096, &r), 0);
	assert_true(cJSON_IsObject(r.value));
	/* Detached from its parent: no dangling siblings. */
	assert_null(r.value->next);
	assert_null(r.value->prev);
	mafp_response_clear(&r);
}

static void test_response_decode_refusal(void **state)
{
	struct mafp_response r;

	(void)state;
	assert_int_equal(decode_response("{\"refusal\": \"no such tool\"}",
					 LEN("{\"refusal\": \"no such tool\"}"), 4096, &r), 0);
	assert_null(r.value);
	assert_string_equal(r.refusal, "no such tool");
	mafp_response_clear(&r);
	assert_null(r.refusal);
	assert_int_equal(decode_response("{\"refusal\": \"\"}", LEN("{\"refusal\": \"\"}"), 4096,
					 &r), 0);
	assert_string_equal(r.refusal, "");
	mafp_response_clear(&r);
	response_bad("{\"refusal\": 5}");
	response_bad("{\"refusal\": null}");
	response_bad("{\"refusal\": [\"no\"]}");
}

static void test_response_decode_both_neither(void **state)
{
	(void)state;
	response_bad("{\"value\": 1, \"refusal\": \"no\"}");
	response_bad("{\"refusal\": \"no\", \"value\": null}");
	response_bad("{}");
	response_bad("{\"Value\": 1}");
	response_bad("{\"result\": 1}");
	response_bad("[{\"value\": 1}]");
	response_bad("\"value\"");
	response_bad("null");
}

static void test_response_decode_torn(void **state)
{
	static const char whole[] = "{\"value\": {\"rows\": [[1, 2], [3, 4]], \"n\": \"four\"}}";
	struct mafp_response r;
	size_t n;

	(void)state;
	/* Every proper prefix of a response is incomplete: never delivered. */
	for (n = 0; n < LEN(whole); n++) {
		if (decode_response(whole, n, 4096, &r) != -1) {
			mafp_response_clear(&r);
			fail_msg("a torn response of %zu bytes was accepted", n);
		}
	}
	assert_int_equal(decode_response(whole, LEN(whole), 4096, &r), 0);
	mafp_response_clear(&r);
	/* A response written in pieces over an older, longer one: trailing garbage. */
	response_bad("{\"value\": 1}ue\": 12345}");
	/* Zero-filled tail (a file extended before its bytes landed). */
	assert_int_equal(decode_response("{\"value\":1}\0\0\0", LEN("{\"value\":1}\0\0\0"), 4096,
					 &r), -1);
	/* Size cap. */
	assert_int_equal(decode_response("{\"value\":1}", LEN("{\"value\":1}"), 10, &r), -1);
	assert_int_equal(decode_response("{\"value\":1}", LEN("{\"value\":1}"), 11, &r), 0);
	mafp_response_clear(&r);
}

static void test_response_round_trip(void **state)
{
	struct mafp_response r;
	cJSON *v = cJSON_Parse("[1,\"two\",{\"three\":3.5},null,true]");
	char *s;

	(void)state;
	assert_non_null(v);
	s = mafp_response_encode_value(v);
	assert_non_null(s);
	assert_int_equal(decode_response(s, strlen(s), 4096, &r), 0);
	assert_true(cJSON_Compare(r.value, v, 1));
	mafp_response_clear(&r);
	free(s);
	cJSON_Delete(v);
	s = mafp_response_encode_refusal("budget spent: 16 calls");
	assert_non_null(s);
	assert_int_equal(decode_response(s, strlen(s), 4096, &r), 0);
	assert_string_equal(r.refusal, "budget spent: 16 calls");
	mafp_response_clear(&r);
	free(s);
}

/* base64 as the Docker backend reads the engine's path-stat header: RFC 4648's vectors,
 * every length round trip, and nothing but the canonical text accepted. */
static void test_base64(void **state)
{
	static const char *const vec[][2] = {
		{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="},
		{"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
	};
	static const char *const bad[] = {
		"Zg=", "Zg", "Z===", "====", "Zh==", "Zm9=", "Zg==Zg==", "Zm 9", "Zm9v\n", "Zm-v",
		"Zm_v", "=m9v", "Z=9v",
	};
	unsigned char in[300], out[300];
	char text[401];
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		len = strlen(vec[i][0]);
		assert_int_equal(mafp_base64_encode(vec[i][0], len, text), strlen(vec[i][1]));
		assert_string_equal(text, vec[i][1]);
		assert_int_equal(mafp_base64_decode(vec[i][1], strlen(vec[i][1]), out), (long)len);
		assert_memory_equal(out, vec[i][0], len);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(mafp_base64_decode(bad[i], strlen(bad[i]), out), -1);
	for (i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 37 + 11);
	for (len = 0; len <= sizeof(in); len++) {
		assert_int_equal(mafp_base64_encode(in, len, text), MAFP_BASE64_LEN(len));
		assert_int_equal(mafp_base64_decode(text, MAFP_BASE64_LEN(len), out), (long)len);
		assert_memory_equal(out, in, len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_decode_valid),
		cmocka_unit_test(test_request_decode_abandoned),
		cmocka_unit_test(test_request_decode_id),
		cmocka_unit_test(test_request_decode_name),
		cmocka_unit_test(test_request_decode_escaped_nul),
		cmocka_unit_test(test_request_decode_arguments),
		cmocka_unit_test(test_request_decode_malformed_and_oversized),
		cmocka_unit_test(test_request_encode),
		cmocka_unit_test(test_response_encode),
		cmocka_unit_test(test_response_decode_value),
		cmocka_unit_test(test_response_decode_refusal),
		cmocka_unit_test(test_response_decode_both_neither),
		cmocka_unit_test(test_response_decode_torn),
		cmocka_unit_test(test_response_round_trip),
		cmocka_unit_test(test_base64),
	};

	return cmocka_run_group_tests_name("protocol_calls", tests, NULL, NULL);
}
