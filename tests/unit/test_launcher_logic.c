/* Unit tests for the launcher's pure logic: the Python environment (guest/run.c), the
 * option parser over the commands' tables (guest/opt.c, guest/commands.c) and the small
 * parsers of guest/util.c. The run's processes and markers are test_launcher_tree.c, the
 * channel's parsers test_launcher_channel.c. */
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

#define LEN(s) (sizeof(s) - 1)

#define R "/tmp/run"

/* ----------------------------------------------------------------------------------------- */
/* mafl_run_pythonpath_entry_ok */

static int entry_ok(const char *e, const char *run_dir)
{
	/* Entries are cut out of PYTHONPATH by length: no terminator after them. */
	size_t n = strlen(e);
	char *p = malloc(n ? n : 1);
	int rc;

	assert_non_null(p);
	memcpy(p, e, n);
	rc = mafl_run_pythonpath_entry_ok(p, n, run_dir);
	free(p);
	return rc;
}

#define KEEP(e) do { if (entry_ok(e, R) != 1) fail_msg("'%s' dropped", e); } while (0)
#define DROP(e) do { if (entry_ok(e, R) != 0) fail_msg("'%s' kept", e); } while (0)

static void test_pythonpath_entry_absolute_canonical(void **state)
{
	(void)state;
	KEEP("/usr/lib/python3/dist-packages");
	KEEP("/opt/lib");
	KEEP("/opt/lib/");
	KEEP("/");
	KEEP("/a/.hidden");
	KEEP("/a/..b");
	KEEP("/a/b.");
	KEEP("/a/b..");
	KEEP("/a/.../b");
	KEEP("/with space/x");
	DROP("");
	DROP("relative/lib");
	DROP("lib");
	DROP(".");
	DROP("..");
	DROP("./lib");
	DROP("~/lib");
	DROP("//opt/lib");
	DROP("/opt//lib");
	DROP("/opt/lib//");
	DROP("/opt/./lib");
	DROP("/opt/../lib");
	DROP("/opt/lib/.");
	DROP("/opt/lib/..");
	DROP("/.");
	DROP("/..");
	DROP("/./opt");
	DROP("/../opt");
}

static void test_pythonpath_entry_outside_run_dir(void **state)
{
	(void)state;
	DROP(R);
	DROP(R "/");
	DROP(R "/host_tools");
	DROP(R "/work/lib");
	KEEP("/tmp/runner");
	KEEP("/tmp/run2/lib");
	KEEP("/tmp/ru");
	KEEP("/tmp");
	KEEP("/var" R);
	/* The length, not a terminator, ends the entry. */
	assert_int_equal(mafl_run_pythonpath_entry_ok("/opt/lib:/tmp/run/x", 8, R), 1);
	assert_int_equal(mafl_run_pythonpath_entry_ok("/tmp/run:/opt", 8, R), 0);
	assert_int_equal(mafl_run_pythonpath_entry_ok("/tmp/runx", 8, R), 0);
	assert_int_equal(mafl_run_pythonpath_entry_ok("/opt/./x", 5, R), 1); /* "/opt/" */
	assert_int_equal(mafl_run_pythonpath_entry_ok("/opt/..", 6, R), 0);  /* "/opt/." */
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_run_build_env */

static size_t env_count(char **env)
{
	size_t n = 0;

	while (env[n])
		n++;
	return n;
}

static void env_free(char **env)
{
	mafl_run_free_env(env);
}

static size_t env_index(char **env, const char *entry)
{
	size_t i;

	for (i = 0; env[i]; i++)
		if (strcmp(env[i], entry) == 0)
			return i;
	fail_msg("'%s' is not in the environment", entry);
	return 0;
}

static size_t env_prefix_count(char **env, const char *prefix)
{
	size_t i, n = 0;

	for (i = 0; env[i]; i++)
		n += strncmp(env[i], prefix, strlen(prefix)) == 0;
	return n;
}

static void test_build_env_rebuilds_pythonpath(void **state)
{
	char *in[] = {
		"PATH=/usr/bin:/bin",
		"PYTHONPATH=/opt/a:rel:/tmp/run/host_tools:/opt/../etc:/opt/b::/tmp/runner",
		"TMPDIR=/tmp",
		"maf_kept=the image's own",
		"HOME=/root",
		"maf_entry=",
		"maf_kept_too=kept",
		NULL,
	};
	char **env;

	(void)state;
	env = mafl_run_build_env(in, R);
	assert_non_null(env);
	/* R/host_tools first, then only the good inherited entries, in order. */
	assert_string_equal(env[0], "PYTHONPATH=" R "/host_tools:/opt/a:/opt/b:/tmp/runner");
	assert_int_equal(env_prefix_count(env, "PYTHONPATH="), 1);
	/* Everything else kept, in order, then the two settings. */
	assert_string_equal(env[1], "PATH=/usr/bin:/bin");
	/* Not the shell launcher's two variables, which it unsets (an image's included). */
	assert_string_equal(env[2], "HOME=/root");
	assert_string_equal(env[3], "maf_kept_too=kept");
	assert_string_equal(env[4], "PYTHONUNBUFFERED=1");
	assert_string_equal(env[5], "PYTHONNOUSERSITE=1");
	/* The run's private temporary directory, under the three names programs look for. */
	assert_string_equal(env[6], "TMPDIR=" R "/tmp");
	assert_string_equal(env[7], "TMP=" R "/tmp");
	assert_string_equal(env[8], "TEMP=" R "/tmp");
	assert_int_equal(env_count(env), 9);
	/* The inherited TMPDIR is replaced, not kept beside the run's. */
	assert_int_equal(env_prefix_count(env, "TMPDIR="), 1);
	/* Borrowed, not copied: the caller's strings live as long as the launcher does. */
	assert_ptr_equal(env[1], in[0]);
	env_free(env);
}

static void test_build_env_without_pythonpath(void **state)
{
	char *none[] = {"TERM=dumb", NULL};
	char *empty[] = {"PYTHONPATH=", "TERM=dumb", NULL};
	char *seps[] = {"PYTHONPATH=:::", NULL};
	char *bad_only[] = {"PYTHONPATH=rel:/tmp/run:./x", NULL};
	char *nothing[] = {NULL};
	char **env;

	(void)state;
	env = mafl_run_build_env(none, R);
	assert_non_null(env);
	assert_string_equal(env[0], "PYTHONPATH=" R "/host_tools");
	assert_string_equal(env[1], "TERM=dumb");
	assert_int_equal(env_count(env), 7);
	env_free(env);
	env = mafl_run_build_env(empty, R);
	assert_non_null(env);
	assert_string_equal(env[0], "PYTHONPATH=" R "/host_tools");
	assert_int_equal(env_count(env), 7);
	env_free(env);
	env = mafl_run_build_env(seps, R);
	assert_non_null(env);
	assert_string_equal(env[0], "PYTHONPATH=" R "/host_tools");
	env_free(env);
	env = mafl_run_build_env(bad_only, R);
	assert_non_null(env);
	assert_string_equal(env[0], "PYTHONPATH=" R "/host_tools");
	env_free(env);
	env = mafl_run_build_env(nothing, R);
	assert_non_null(env);
	assert_string_equal(env[0], "PYTHONPATH=" R "/host_tools");
	assert_string_equal(env[1], "PYTHONUNBUFFERED=1");
	assert_string_equal(env[2], "PYTHONNOUSERSITE=1");
	assert_string_equal(env[3], "TMPDIR=" R "/tmp");
	assert_null(env[6]);
	env_free(env);
}

static void test_build_env_overrides_python_settings(void **state)
{
	char *in[] = {
		"PYTHONUNBUFFERED=0",
		"PYTHONNOUSERSITE=",
		"PYTHONPATHX=/keep/me",
		"PYTHONUNBUFFEREDX=1",
		"PYTHONHOME=/usr",
		"PYTHONPATH=/first",
		"PYTHONPATH=/second",
		"NOEQUALS",
		NULL,
	};
	char **env;

	(void)state;
	env = mafl_run_build_env(in, R);
	assert_non_null(env);
	assert_int_equal(env_prefix_count(env, "PYTHONPATH="), 1);
	assert_int_equal(env_prefix_count(env, "PYTHONUNBUFFERED="), 1);
	assert_int_equal(env_prefix_count(env, "PYTHONNOUSERSITE="), 1);
	env_index(env, "PYTHONUNBUFFERED=1");
	env_index(env, "PYTHONNOUSERSITE=1");
	/* Names that only start like ours are someone else's. */
	env_index(env, "PYTHONPATHX=/keep/me");
	env_index(env, "PYTHONUNBUFFEREDX=1");
	env_index(env, "PYTHONHOME=/usr");
	env_index(env, "NOEQUALS");
	/* With PYTHONPATH twice, the one the program's libc would read wins: getenv returns
	 * the first, but the launcher keeps the last; whichever, only one survives and it
	 * starts with R/host_tools. */
	assert_int_equal(strncmp(env[0], "PYTHONPATH=" R "/host_tools", LEN("PYTHONPATH=" R
									      "/host_tools")), 0);
	assert_int_equal(env_count(env), 3 + 4 + 3);
	env_free(env);
}

static void test_build_env_run_dir_prefix(void **state)
{
	char *in[] = {"PYTHONPATH=/tmp/run/lib:/tmp/run-other/lib:/tmp/run", NULL};
	char **env;

	(void)state;
	env = mafl_run_build_env(in, R);
	assert_non_null(env);
	assert_string_equal(env[0], "PYTHONPATH=" R "/host_tools:/tmp/run-other/lib");
	env_free(env);
}

static void test_build_env_drops_an_enclosing_runs_channel(void **state)
{
	char *in[] = {
		"MAF_HOST_TOOLS_FD=14",
		"MAF_HOST_TOOLS_SOCKET=/outer/host_tools/channel.sock",
		"MAF_HOST_TOOLS=add",
		"MAF_HOST_TOOLS_SOCKETX=keep",
		NULL,
	};
	char **env;

	(void)state;
	env = mafl_run_build_env(in, R);
	assert_non_null(env);
	assert_int_equal(env_prefix_count(env, "MAF_HOST_TOOLS_FD="), 0);
	assert_int_equal(env_prefix_count(env, "MAF_HOST_TOOLS_SOCKET="), 0);
	assert_int_equal(env_prefix_count(env, "MAF_HOST_TOOLS="), 0);
	env_index(env, "MAF_HOST_TOOLS_SOCKETX=keep");
	assert_int_equal(env_count(env), 3 + 1 + 3);
	env_free(env);
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_parse_seconds_ms */

static void seconds_ok(const char *s, long long max, long long want)
{
	long long v = -7;

	if (mafl_parse_seconds_ms(s, max, &v) != 0)
		fail_msg("'%s' (max %lld ms) refused", s, max);
	if (v != want)
		fail_msg("'%s': %lld ms, want %lld", s, v, want);
}

static void seconds_bad(const char *s, long long max)
{
	long long v = -7;

	if (mafl_parse_seconds_ms(s, max, &v) != -1)
		fail_msg("'%s' (max %lld ms) accepted as %lld", s, max, v);
	assert_int_equal(v, -7);
}

static void test_parse_seconds_ms(void **state)
{
	const long long year = 86400000LL * 365;

	(void)state;
	seconds_ok("30", year, 30000);
	seconds_ok("0", year, 0);
	seconds_ok("0.5", year, 500);
	seconds_ok("1.25", year, 1250);
	seconds_ok("1.001", year, 1001);
	seconds_ok("1.0019", year, 1001); /* below a millisecond is dropped */
	seconds_ok("0.0001", year, 0);
	seconds_ok(".5", year, 500);
	seconds_ok("5.", year, 5000);
	seconds_ok("007", year, 7000);
	seconds_ok("0.00000000000000000000000000001", year, 0);
	seconds_ok("3600", 3600000, 3600000);
	seconds_ok("3600.000", 3600000, 3600000);
	seconds_ok("31536000", year, year);
	seconds_bad("", year);
	seconds_bad(".", year);
	seconds_bad("-1", year);
	seconds_bad("+1", year);
	seconds_bad(" 1", year);
	seconds_bad("1 ", year);
	seconds_bad("1s", year);
	seconds_bad("1e3", year);
	seconds_bad("1.2.3", year);
	seconds_bad("1,5", year);
	seconds_bad("0x10", year);
	seconds_bad("inf", year);
	seconds_bad("nan", year);
	seconds_bad("3600.001", 3600000);
	seconds_bad("3601", 3600000);
	seconds_bad("31536000.001", year);
	seconds_bad("99999999999999999999999999999999999999", year);
	seconds_bad("9223372036854775807", LLONG_MAX);
	seconds_bad("1", 999);
	seconds_ok("0.999", 999, 999);
}

/* A bound near LLONG_MAX: the whole seconds are checked against max/1000 + 1 before they are
 * multiplied by 1000, so the product can overflow (signed: undefined; in practice it wraps
 * negative and passes the final "> max" check). */
static void test_parse_seconds_ms_huge_max(void **state)
{
	(void)state;
	seconds_bad("9223372036854776", LLONG_MAX);
	seconds_bad("9223372036854775.808", LLONG_MAX);
	seconds_ok("9223372036854775.807", LLONG_MAX, LLONG_MAX);
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_parse_u64 */

static void u64_ok(const char *s, unsigned long long max, unsigned long long want)
{
	unsigned long long v = 77;

	if (mafl_parse_u64(s, max, &v) != 0)
		fail_msg("'%s' (max %llu) refused", s, max);
	if (v != want)
		fail_msg("'%s': %llu, want %llu", s, v, want);
}

static void u64_bad(const char *s, unsigned long long max)
{
	unsigned long long v = 77;

	if (mafl_parse_u64(s, max, &v) != -1)
		fail_msg("'%s' (max %llu) accepted as %llu", s, max, v);
	assert_int_equal(v, 77);
}

static void test_parse_u64(void **state)
{
	(void)state;
	u64_ok("0", 10, 0);
	u64_ok("10", 10, 10);
	u64_ok("007", 10, 7);
	u64_ok("67108864", 1ull << 50, 67108864);
	u64_ok("1125899906842624", 1ull << 50, 1ull << 50);
	u64_ok("18446744073709551615", ULLONG_MAX, ULLONG_MAX);
	u64_ok("2147483647", 0x7fffffff, 0x7fffffff);
	u64_ok("999999", 999999, 999999);
	u64_bad("", 10);
	u64_bad("-1", 10);
	u64_bad("+1", 10);
	u64_bad(" 1", 10);
	u64_bad("1 ", 10);
	u64_bad("1x", 10);
	u64_bad("0x1", 10);
	u64_bad("1.0", 10);
	u64_bad("11", 10);
	u64_bad("100", 10);
	u64_bad("1125899906842625", 1ull << 50);
	u64_bad("18446744073709551616", ULLONG_MAX);
	u64_bad("99999999999999999999999", ULLONG_MAX);
	u64_bad("2147483648", 0x7fffffff);
	u64_bad("1000000", 999999);
}

/* Bounds below 9: the overflow check computes max - digit in unsigned arithmetic, which
 * wraps when the digit is larger than max, and the check then lets anything through. */
static void test_parse_u64_small_max(void **state)
{
	(void)state;
	u64_ok("5", 5, 5);
	u64_ok("0", 0, 0);
	u64_bad("6", 5);
	u64_bad("9", 5);
	u64_bad("07", 5);
	u64_bad("19", 5);
	u64_bad("1", 0);
	u64_bad("9", 8);
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_opt_match, mafl_opt_next */

static void test_opt_match(void **state)
{
	const struct mafl_command *run = &mafl_commands[MAFL_COMMAND_RUN];
	const struct mafl_command *relay = &mafl_commands[MAFL_COMMAND_RELAY];
	const struct mafl_opt *o;
	const char *v;

	(void)state;
	o = mafl_opt_match(run, "--run-dir", &v);
	assert_non_null(o);
	assert_int_equal(o->key, MAFL_O_RUN_DIR);
	assert_null(v);
	o = mafl_opt_match(run, "--run-dir=/tmp/r", &v);
	assert_int_equal(o->key, MAFL_O_RUN_DIR);
	assert_string_equal(v, "/tmp/r");
	o = mafl_opt_match(run, "--run-dir=", &v);
	assert_string_equal(v, "");
	assert_int_equal(mafl_opt_match(run, "--help", &v)->key, MAFL_O_HELP);
	assert_int_equal(mafl_opt_match(run, "-h", &v)->key, MAFL_O_HELP);
	/* A prefix, a longer name, another command's option, a flag given a value: none. */
	assert_null(mafl_opt_match(run, "--run", &v));
	assert_null(mafl_opt_match(run, "--run-dirs", &v));
	assert_null(mafl_opt_match(run, "--floor", &v));
	assert_null(mafl_opt_match(run, "--help=1", &v));
	assert_null(mafl_opt_match(relay, "--value-stdin=1", &v));
	assert_int_equal(mafl_opt_match(relay, "--value-stdin", &v)->key, MAFL_O_VALUE_STDIN);
	/* --timeout-ms is not --timeout, nor the reverse. */
	assert_null(mafl_opt_match(relay, "--timeout", &v));
	assert_null(mafl_opt_match(&mafl_commands[MAFL_COMMAND_CALL], "--timeout-ms", &v));
}

static void test_opt_next(void **state)
{
	char *argv[] = {"run", "--run-dir", "/tmp/r", "--timeout=5", "--tool", "a", "--",
			"--grace", "x", NULL};
	char *relay_argv[] = {"relay", "--value-stdin", "--next", "-1", NULL};
	char *init_argv[] = {"init", "--grace", "1", "-", "--grace", NULL};
	struct mafl_args a;
	const char *v;

	(void)state;
	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_RUN], 9, argv);
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_O_RUN_DIR);
	assert_string_equal(v, "/tmp/r");
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_O_TIMEOUT);
	assert_string_equal(v, "5");
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_O_TOOL);
	assert_string_equal(v, "a");
	/* "--" ends the options and is passed over: what follows is the program's. */
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_OPT_END);
	assert_int_equal(a.i, 7);
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_OPT_END);

	/* A flag takes no value; a value that looks like an option is still the value. */
	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_RELAY], 4, relay_argv);
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_O_VALUE_STDIN);
	assert_null(v);
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_O_NEXT);
	assert_string_equal(v, "-1");
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_OPT_END);

	/* A command with operands: they begin at the first word that is not an option, '-'
	 * included. */
	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_INIT], 5, init_argv);
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_O_GRACE);
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_OPT_END);
	assert_int_equal(a.i, 3);
}

/* Options are options only as sleep's sole argument: any other word is an interval. */
static void test_opt_next_alone(void **state)
{
	char *one[] = {"sleep", "--version", NULL};
	char *two[] = {"sleep", "--version", "1", NULL};
	char *minus[] = {"sleep", "-1", NULL};
	struct mafl_args a;
	const char *v;

	(void)state;
	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_SLEEP], 2, one);
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_O_VERSION);
	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_SLEEP], 3, two);
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_OPT_END);
	assert_int_equal(a.i, 1);
	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_SLEEP], 2, minus);
	assert_int_equal(mafl_opt_next(&a, &v), MAFL_OPT_END);
	assert_int_equal(a.i, 1);
}

/* Every command's help is as wide as an 80-column terminal at most, and lists every option
 * of its table. */
static void test_opt_help(void **state)
{
	const struct mafl_command *c;

	(void)state;
	for (c = mafl_commands; c->name; c++) {
		const struct mafl_opt *o;
		char *text = NULL, *line;
		size_t size = 0;
		FILE *f = open_memstream(&text, &size);

		assert_non_null(f);
		mafl_opt_help_print(f, c);
		assert_int_equal(fclose(f), 0);
		for (line = text; *line; line = strchr(line, '\n') + 1)
			assert_true(strchr(line, '\n') - line <= 79);
		for (o = c->opts; o->name; o++)
			assert_non_null(strstr(text, o->name));
		assert_non_null(strstr(text, "\n  --help "));
		free(text);
	}
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_str_copy */

static void test_str_copy(void **state)
{
	char buf[8];

	(void)state;
	memset(buf, 'z', sizeof(buf));
	mafl_str_copy(buf, sizeof(buf), "abc");
	assert_string_equal(buf, "abc");
	assert_int_equal(buf[4], 'z'); /* nothing written past the terminator */
	mafl_str_copy(buf, sizeof(buf), "");
	assert_string_equal(buf, "");
	mafl_str_copy(buf, sizeof(buf), "1234567");
	assert_string_equal(buf, "1234567");
	mafl_str_copy(buf, sizeof(buf), "123456789abc");
	assert_string_equal(buf, "1234567");
	mafl_str_copy(buf, 4, "hello");
	assert_string_equal(buf, "hel");
	mafl_str_copy(buf, 1, "hello");
	assert_string_equal(buf, "");
	memset(buf, 'z', sizeof(buf));
	mafl_str_copy(buf, 0, "hello"); /* no room at all: untouched */
	assert_int_equal(buf[0], 'z');
	/* Truncation in a struct field, as the launcher uses it. */
	{
		struct {
			char name[4];
			char guard[4];
		} s;

		memset(&s, 'g', sizeof(s));
		mafl_str_copy(s.name, sizeof(s.name), "overlong");
		assert_string_equal(s.name, "ove");
		assert_memory_equal(s.guard, "gggg", 4);
	}
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_arena_calloc */

static void test_arena_zeroed_distinct_then_calloc(void **state)
{
	unsigned char *got[100], *prev = NULL;
	size_t i, total = 0;

	(void)state;
	/* Zeroed, 16-byte aligned, never overlapping, until the arena is spent; calloc after.
	 * Freeing both kinds is safe (ASan and the allocator would say otherwise). */
	for (i = 0; i < 100; i++) {
		unsigned char *p = mafl_arena_calloc(1000, 1);
		size_t j;

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		for (j = 0; j < 1000; j++)
			assert_int_equal(p[j], 0);
		if (prev)
			assert_true(p >= prev + 1000 || p + 1000 <= prev);
		memset(p, 0xa5, 1000);
		got[i] = prev = p;
		total += 1000;
	}
	assert_true(total > 32768); /* some came from calloc */
	for (i = 0; i < 100; i++)
		mafl_arena_free(got[i]);
	mafl_arena_free(NULL);
	/* An impossible size fails rather than wrapping. */
	assert_null(mafl_arena_calloc((size_t)-1 / 8, 16));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pythonpath_entry_absolute_canonical),
		cmocka_unit_test(test_pythonpath_entry_outside_run_dir),
		cmocka_unit_test(test_build_env_rebuilds_pythonpath),
		cmocka_unit_test(test_build_env_without_pythonpath),
		cmocka_unit_test(test_build_env_overrides_python_settings),
		cmocka_unit_test(test_build_env_run_dir_prefix),
		cmocka_unit_test(test_build_env_drops_an_enclosing_runs_channel),
		cmocka_unit_test(test_parse_seconds_ms),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_parse_u64_small_max),
		cmocka_unit_test(test_opt_match),
		cmocka_unit_test(test_opt_next),
		cmocka_unit_test(test_opt_next_alone),
		cmocka_unit_test(test_opt_help),
		cmocka_unit_test(test_str_copy),
		cmocka_unit_test(test_arena_zeroed_distinct_then_calloc),
		/* Last: under -fno-sanitize-recover its overflow ends the program. */
		cmocka_unit_test(test_parse_seconds_ms_huge_max),
	};

	return cmocka_run_group_tests_name("launcher_logic", tests, NULL, NULL);
}
