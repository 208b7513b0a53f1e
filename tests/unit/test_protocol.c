/* Unit tests for shared/protocol.c: the run directory and the names of its files, the
 * markers, exit codes and status names, and tool names. The JSON caps, the exit record and
 * the launch line are test_protocol_json.c; requests, responses and base64
 * test_protocol_calls.c. */
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
		cmocka_unit_test(test_tool_name_valid),
		cmocka_unit_test(test_marker_parse_long_max_overflow),
	};

	return cmocka_run_group_tests_name("protocol", tests, NULL, NULL);
}
