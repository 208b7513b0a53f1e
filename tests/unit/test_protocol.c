/* Unit tests for shared/protocol.c: names, markers, exit codes, JSON caps, and every
 * encoder/decoder of the wire protocol. */
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

#define LEN(s) (sizeof(s) - 1)

/* A heap copy of n bytes with no terminator after them, so that ASan catches a parser that
 * reads past len. */
static char *unterminated(const char *s, size_t n)
{
	char *p = malloc(n ? n : 1);

	assert_non_null(p);
	memcpy(p, s, n);
	return p;
}

/* ----------------------------------------------------------------------------------------- */
/* Run directory and file names */

static void run_dir_ok(const char *dir)
{
	const char *why = NULL;

	if (mafp_run_dir_check(dir, &why) != 0)
		fail_msg("'%s' refused: %s", dir, why);
}

static void run_dir_bad(const char *dir)
{
	const char *why = NULL;

	if (mafp_run_dir_check(dir, &why) != -1)
		fail_msg("'%s' accepted", dir ? dir : "(null)");
	assert_non_null(why);
	assert_true(strlen(why) > 0);
}

static void test_run_dir_check(void **state)
{
	char longest[MAFP_RUN_DIR_MAX + 2];

	(void)state;
	run_dir_ok("/tmp/run");
	run_dir_ok("/tmp/run/");
	run_dir_ok("/a");
	run_dir_ok("/a/.b/..c/c./c..");
	run_dir_ok("/tmp/maf run-1");
	run_dir_bad(NULL);
	run_dir_bad("");
	run_dir_bad("tmp/run");
	run_dir_bad("./run");
	run_dir_bad("/");
	run_dir_bad("///");
	run_dir_bad("/tmp/a:b");
	run_dir_bad("/tmp/a\\b");
	run_dir_bad("/tmp/./run");
	run_dir_bad("/tmp/../run");
	run_dir_bad("/tmp/run/.");
	run_dir_bad("/tmp/run/..");
	run_dir_bad("/..");
	run_dir_bad("/.");
	run_dir_bad("/tmp//./run");

	/* Exactly MAFP_RUN_DIR_MAX bytes is accepted, one more is not. */
	memset(longest, 'a', sizeof(longest));
	longest[0] = '/';
	longest[MAFP_RUN_DIR_MAX] = '\0';
	run_dir_ok(longest);
	longest[MAFP_RUN_DIR_MAX] = 'a';
	longest[MAFP_RUN_DIR_MAX + 1] = '\0';
	run_dir_bad(longest);
}

static void test_host_tools_path(void **state)
{
	char buf[64];
	const char *want = "/r/host_tools/program_pid";

	(void)state;
	assert_int_equal(mafp_host_tools_path(buf, sizeof(buf), "/r", MAFP_MARKER_PID), 0);
	assert_string_equal(buf, want);
	/* Exactly fits with its terminator; one byte less does not. */
	assert_int_equal(mafp_host_tools_path(buf, strlen(want) + 1, "/r", MAFP_MARKER_PID), 0);
	assert_string_equal(buf, want);
	assert_int_equal(mafp_host_tools_path(buf, strlen(want), "/r", MAFP_MARKER_PID), -1);
	assert_int_equal(mafp_host_tools_path(buf, sizeof(buf), "/r", MAFP_DIR_CALLS), 0);
	assert_string_equal(buf, "/r/host_tools/host_tool_calls");
}

static void test_call_file_name(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), 7, MAFP_SUFFIX_REQUEST), 0);
	assert_string_equal(buf, "0007.request.json");
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), 1, MAFP_SUFFIX_CLAIM), 0);
	assert_string_equal(buf, "0001.claim");
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), 42, MAFP_SUFFIX_RESPONSE), 0);
	assert_string_equal(buf, "0042.response.json");
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), 9999, ""), 0);
	assert_string_equal(buf, "9999");
	/* Past 4 digits the number just grows (upstream pads to at least 4). */
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), 12345, ""), 0);
	assert_string_equal(buf, "12345");
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), MAFP_CALL_ID_MAX, ".claim"), 0);
	assert_string_equal(buf, "999999.claim");
	/* Out of range. */
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), 0, ""), -1);
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), -1, ""), -1);
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), MAFP_CALL_ID_MAX + 1, ""), -1);
	assert_int_equal(mafp_call_file_name(buf, sizeof(buf), LONG_MIN, ""), -1);
	/* Too small a buffer: "0007.claim" needs 11 bytes. */
	assert_int_equal(mafp_call_file_name(buf, 11, 7, ".claim"), 0);
	assert_string_equal(buf, "0007.claim");
	assert_int_equal(mafp_call_file_name(buf, 10, 7, ".claim"), -1);
}

/* ----------------------------------------------------------------------------------------- */
/* Markers */

static int marker(const char *s, long min, long max, long *out)
{
	char *p = unterminated(s, strlen(s));
	int rc = mafp_marker_parse(p, strlen(s), min, max, out);

	free(p);
	return rc;
}

static void marker_ok(const char *s, long min, long max, long want)
{
	long v = 0x5a5a;

	if (marker(s, min, max, &v) != 0)
		fail_msg("marker '%s' in [%ld, %ld] refused", s, min, max);
	assert_int_equal(v, want);
}

static void marker_bad(const char *s, long min, long max)
{
	long v = 0x5a5a;

	if (marker(s, min, max, &v) != -1)
		fail_msg("marker '%s' in [%ld, %ld] accepted as %ld", s, min, max, v);
	assert_int_equal(v, 0x5a5a); /* untouched on failure */
}

/* mafp_call_file_hand_over, in a directory of its own: the file becomes the new name with
 * exactly the new bytes; any other file than the one named by dev and ino is refused
 * (EEXIST) untouched. */
static void test_call_file_hand_over(void **state)
{
	char dir[] = "/tmp/mafp-test-XXXXXX", buf[64];
	struct stat st, st2;
	ssize_t n;
	int d, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	d = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(d >= 0);
	fd = openat(d, "0001.response.json", O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "a response, longer", 18), 18);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	/* Not that file: refused, nothing written. */
	assert_int_equal(mafp_call_file_hand_over(d, "0001.response.json", "0002.request.json",
						  (uint64_t)st.st_dev, (uint64_t)st.st_ino + 1,
						  "x", 1), -1);
	assert_int_equal(errno, EEXIST);
	/* Handed over: cut to the new length, renamed, the same inode. */
	assert_int_equal(mafp_call_file_hand_over(d, "0001.response.json", "0002.request.json",
						  (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						  "a request", 9), 0);
	assert_int_equal(fstatat(d, "0001.response.json", &st2, AT_SYMLINK_NOFOLLOW), -1);
	fd = openat(d, "0002.request.json", O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	assert_int_equal(n, 9);
	assert_memory_equal(buf, "a request", 9);
	assert_int_equal(fstat(fd, &st2), 0);
	assert_int_equal(st2.st_ino, st.st_ino);
	close(fd);
	/* A second link: refused, and the other name keeps its bytes. */
	assert_int_equal(linkat(d, "0002.request.json", d, "other", 0), 0);
	assert_int_equal(mafp_call_file_hand_over(d, "0002.request.json", "0002.response.json",
						  (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						  "no", 2), -1);
	assert_int_equal(errno, EEXIST);
	/* A symlink is not followed; a missing file is not made. */
	assert_int_equal(symlinkat("other", d, "link"), 0);
	assert_int_equal(mafp_call_file_hand_over(d, "link", "0003.request.json",
						  (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						  "no", 2), -1);
	assert_int_equal(mafp_call_file_hand_over(d, "none", "0004.request.json",
						  (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						  "no", 2), -1);
	assert_int_equal(errno, ENOENT);
	fd = openat(d, "other", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 9);
	close(fd);
	assert_int_equal(fstatat(d, "0003.request.json", &st2, 0), -1);
	assert_int_equal(fstatat(d, "0004.request.json", &st2, 0), -1);
	unlinkat(d, "0002.request.json", 0);
	unlinkat(d, "other", 0);
	unlinkat(d, "link", 0);
	close(d);
	assert_int_equal(rmdir(dir), 0);
}

static void test_marker_parse_valid(void **state)
{
	(void)state;
	marker_ok("0", 0, 255, 0);
	marker_ok("137", 0, 255, 137);
	marker_ok("255", 0, 255, 255);
	marker_ok("1234", 1, INT_MAX, 1234);
	marker_ok("2147483647", 1, INT_MAX, INT_MAX);
	marker_ok("007", 0, 255, 7);
	marker_ok("-5", -10, 10, -5);
	marker_ok("-10", -10, 10, -10);
	marker_ok("10", -10, 10, 10);
	/* 32 bytes is the cap, leading zeros included. */
	marker_ok("00000000000000000000000000000042", 0, 100, 42);
}

static void test_marker_parse_whitespace_and_junk(void **state)
{
	(void)state;
	marker_bad("", 0, 255);
	marker_bad(" 1", 0, 255);
	marker_bad("1 ", 0, 255);
	marker_bad("1\n", 0, 255);
	marker_bad("\t1", 0, 255);
	marker_bad("+1", 0, 255);
	marker_bad("0x10", 0, 255);
	marker_bad("1a", 0, 255);
	marker_bad("1.0", 0, 255);
	marker_bad("1e2", 0, 255);
	marker_bad("-", -10, 10);
	marker_bad("--1", -10, 10);
	marker_bad("1-", -10, 10);
	marker_bad("٣", 0, 255); /* a non-ASCII digit */
	/* 33 bytes is over the cap even when the value is small. */
	marker_bad("000000000000000000000000000000042", 0, 100);
}

static void test_marker_parse_embedded_nul(void **state)
{
	long v = 0x5a5a;

	(void)state;
	assert_int_equal(mafp_marker_parse("12\0" "3", 4, 0, 1000, &v), -1);
	assert_int_equal(mafp_marker_parse("\0", 1, 0, 1000, &v), -1);
	/* len, not the terminator, bounds the parse. */
	assert_int_equal(mafp_marker_parse("12345", 2, 0, 1000, &v), 0);
	assert_int_equal(v, 12);
}

static void test_marker_parse_negative(void **state)
{
	(void)state;
	/* A sign is accepted only when the range allows negative values. */
	marker_bad("-1", 0, 255);
	marker_bad("-0", 0, 255);
	marker_bad("-1", 1, 255);
	marker_bad("-11", -10, 10);
	marker_ok("-0", -1, 1, 0);
}

static void test_marker_parse_range_and_overflow(void **state)
{
	(void)state;
	marker_bad("256", 0, 255);
	marker_bad("1000", 0, 255);
	marker_bad("0", 1, 255);
	marker_bad("2147483648", 1, INT_MAX);
	marker_bad("99999999999999999999", 0, 255);
	marker_bad("99999999999999999999999999999999", 0, INT_MAX);
	/* An empty range accepts nothing; a range of negatives takes no positive. */
	marker_bad("5", 5, 4);
	marker_bad("5", -10, -1);
	marker_bad("0", -10, -1);
	marker_ok("-1", -10, -1, -1);
}

/* Bounds at LONG_MAX: the overflow check lets v reach LONG_MAX / 10 and then computes
 * v * 10 + digit, which overflows a long for digits 8 and 9 (undefined behaviour, reported
 * by UBSan; without it the value wraps negative and the range check happens to refuse it),
 * and min = LONG_MIN makes its -min overflow. No caller uses such bounds today.
 * Last in the list: under -fno-sanitize-recover it ends the program. */
static void test_marker_parse_long_max_overflow(void **state)
{
	(void)state;
	marker_ok("9223372036854775807", 0, LONG_MAX, LONG_MAX);
	marker_bad("9999999999999999999", 0, LONG_MAX);
	marker_ok("-9223372036854775807", -LONG_MAX, 0, -LONG_MAX);
	marker_bad("9223372036854775808", 0, LONG_MAX);
	marker_bad("9223372036854775809", 0, LONG_MAX);
	marker_bad("-9223372036854775808", -LONG_MAX, 0);
	/* min = LONG_MIN: the bound computes -min, itself an overflow. */
	marker_ok("5", LONG_MIN, LONG_MAX, 5);
	marker_ok("-9223372036854775807", LONG_MIN, 0, -LONG_MAX);
}

/* ----------------------------------------------------------------------------------------- */
/* Exit codes and status names */

static void test_exit_code_from_wait_status(void **state)
{
	(void)state;
	assert_int_equal(mafp_exit_code_from_wait_status(0), 0);
	assert_int_equal(mafp_exit_code_from_wait_status(3 << 8), 3);
	assert_int_equal(mafp_exit_code_from_wait_status(255 << 8), 255);
	assert_int_equal(mafp_exit_code_from_wait_status(SIGKILL), 128 + SIGKILL);
	assert_int_equal(mafp_exit_code_from_wait_status(SIGTERM), 128 + SIGTERM);
	assert_int_equal(mafp_exit_code_from_wait_status(SIGSYS), 128 + SIGSYS);
	/* A core dump does not change the code sh reports. */
	assert_int_equal(mafp_exit_code_from_wait_status(SIGSEGV | 0x80), 128 + SIGSEGV);
	/* Stopped and continued are not endings: 255. */
	assert_int_equal(mafp_exit_code_from_wait_status((SIGSTOP << 8) | 0x7f), 255);
	assert_int_equal(mafp_exit_code_from_wait_status(0xffff), 255);
}

static void test_exit_code_from_real_wait(void **state)
{
	int st;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(42);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(mafp_exit_code_from_wait_status(st), 42);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		raise(SIGKILL);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(mafp_exit_code_from_wait_status(st), 137);
}

static void test_status_names(void **state)
{
	static const struct {
		enum mafp_status st;
		const char *name;
	} names[] = {
		{MAFP_STATUS_EXITED, "exited"},
		{MAFP_STATUS_SIGNALED, "signaled"},
		{MAFP_STATUS_TIMEOUT, "timeout"},
		{MAFP_STATUS_STOPPED, "stopped"},
		{MAFP_STATUS_LAUNCH_FAILED, "launch_failed"},
	};
	enum mafp_status st;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_string_equal(mafp_status_name(names[i].st), names[i].name);
		st = (enum mafp_status)99;
		assert_int_equal(mafp_status_from_name(names[i].name, &st), 0);
		assert_int_equal(st, names[i].st);
	}
	assert_string_equal(mafp_status_name((enum mafp_status)5), "unknown");
	assert_string_equal(mafp_status_name((enum mafp_status)-1), "unknown");
	assert_string_equal(mafp_status_name((enum mafp_status)1000), "unknown");
	assert_int_equal(mafp_status_from_name("unknown", &st), -1);
	assert_int_equal(mafp_status_from_name("", &st), -1);
	assert_int_equal(mafp_status_from_name("EXITED", &st), -1);
	assert_int_equal(mafp_status_from_name("exited ", &st), -1);
	assert_int_equal(mafp_status_from_name("exit", &st), -1);
}

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

static char *nested(int depth, const char *open, const char *close, const char *inner)
{
	size_t n = strlen(inner) + (size_t)depth * (strlen(open) + strlen(close)) + 1;
	char *s = malloc(n), *w = s;
	int i;

	assert_non_null(s);
	for (i = 0; i < depth; i++)
		w += sprintf(w, "%s", open);
	w += sprintf(w, "%s", inner);
	for (i = 0; i < depth; i++)
		w += sprintf(w, "%s", close);
	return s;
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

/* ----------------------------------------------------------------------------------------- */
/* Tool names */

static void test_tool_name_valid(void **state)
{
	char name[MAFP_TOOL_NAME_MAX + 2];

	(void)state;
	assert_true(mafp_tool_name_valid("lookup"));
	assert_true(mafp_tool_name_valid("a"));
	assert_true(mafp_tool_name_valid("get-weather_v2.1"));
	assert_true(mafp_tool_name_valid("ns:tool!"));
	assert_false(mafp_tool_name_valid(""));
	assert_false(mafp_tool_name_valid("a b"));
	assert_false(mafp_tool_name_valid("a/b"));
	assert_false(mafp_tool_name_valid(".."
					  "/x"));
	assert_false(mafp_tool_name_valid("a\\b"));
	assert_false(mafp_tool_name_valid("a\"b"));
	assert_false(mafp_tool_name_valid("a\tb"));
	assert_false(mafp_tool_name_valid("a\nb"));
	assert_false(mafp_tool_name_valid("a\x7f"));
	assert_false(mafp_tool_name_valid("caf\xc3\xa9"));
	memset(name, 'n', sizeof(name));
	name[MAFP_TOOL_NAME_MAX] = '\0';
	assert_true(mafp_tool_name_valid(name));
	name[MAFP_TOOL_NAME_MAX] = 'n';
	name[MAFP_TOOL_NAME_MAX + 1] = '\0';
	assert_false(mafp_tool_name_valid(name));
}

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
		cmocka_unit_test(test_run_dir_check),
		cmocka_unit_test(test_call_file_hand_over),
		cmocka_unit_test(test_host_tools_path),
		cmocka_unit_test(test_call_file_name),
		cmocka_unit_test(test_marker_parse_valid),
		cmocka_unit_test(test_marker_parse_whitespace_and_junk),
		cmocka_unit_test(test_marker_parse_embedded_nul),
		cmocka_unit_test(test_marker_parse_negative),
		cmocka_unit_test(test_marker_parse_range_and_overflow),
		cmocka_unit_test(test_exit_code_from_wait_status),
		cmocka_unit_test(test_exit_code_from_real_wait),
		cmocka_unit_test(test_status_names),
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
		cmocka_unit_test(test_tool_name_valid),
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
		cmocka_unit_test(test_marker_parse_long_max_overflow),
		cmocka_unit_test(test_base64),
	};

	return cmocka_run_group_tests_name("protocol", tests, NULL, NULL);
}
