/* Unit tests for the launcher's pure logic: the Python environment (guest/run.c), the
 * /proc/PID/stat parser and the descendant check (guest/tree.c), the channel's call lines,
 * its UTF-8 check and when it reads a response again (guest/channel_files.c), the option
 * parser over the commands' tables (guest/opt.c, guest/commands.c) and the small parsers of
 * guest/util.c. */
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
#include "run.h"
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
/* mafl_parse_stat_ppid */

static int stat_ppid(const char *s, pid_t *ppid)
{
	size_t n = strlen(s);
	char *p = malloc(n ? n : 1);
	int rc;

	assert_non_null(p);
	memcpy(p, s, n);
	rc = mafl_parse_stat_ppid(p, n, ppid);
	free(p);
	return rc;
}

static void ppid_ok(const char *s, pid_t want)
{
	pid_t got = -7;

	if (stat_ppid(s, &got) != 0)
		fail_msg("stat line refused: %s", s);
	if (got != want)
		fail_msg("stat line %s: ppid %d, want %d", s, (int)got, (int)want);
}

static void ppid_bad(const char *s)
{
	pid_t got = -7;

	if (stat_ppid(s, &got) != -1)
		fail_msg("stat line accepted (ppid %d): %s", (int)got, s);
	assert_int_equal(got, -7);
}

static void test_stat_ppid_plain(void **state)
{
	(void)state;
	ppid_ok("1234 (bash) S 1 1234 1234 34816 1234 4194560 1234 0 0 0\n", 1);
	ppid_ok("77 (python3) R 76 77 77 0 -1 4194304 355 0 0 0 1 0 0 0 20 0 1 0\n", 76);
	ppid_ok("1 (init) S 0 1 1 0 -1 4194560\n", 0);
	ppid_ok("5 (x) Z 2147483647 0", 2147483647);
	/* The last field may end the buffer. */
	ppid_ok("5 (x) S 42", 42);
	ppid_ok("5 (x) S 42 ", 42);
}

static void test_stat_ppid_hostile_names(void **state)
{
	(void)state;
	/* A command name may hold spaces, parentheses and ") S N": the last ')' closes it. */
	ppid_ok("5 (a b c) S 9 5 5 0\n", 9);
	ppid_ok("5 (a) b) S 42 5 5 0\n", 42);
	ppid_ok("5 (x) S 7) R 99 5 5 0\n", 99);
	ppid_ok("5 ()) S 1) (S 3) S 8 5 5 0\n", 8);
	ppid_ok("5 ( ) S 12 1 1\n", 12);
	ppid_ok("5 ()) S 13 1 1\n", 13);
	ppid_ok("5 (() S 14 1 1\n", 14);
	ppid_ok("5 (\n) S 15 1 1\n", 15);
	/* A name ending in ") S 1" with the real fields after it. */
	ppid_ok("5 (evil) S 1) S 300 5 5 0 -1\n", 300);
}

static void test_stat_ppid_malformed(void **state)
{
	pid_t got = -7;

	(void)state;
	ppid_bad("");
	ppid_bad("5 (x S 42 5");
	ppid_bad("5 x S 42 5");
	ppid_bad("5 (x)");
	ppid_bad("5 (x) ");
	ppid_bad("5 (x) S");
	ppid_bad("5 (x) S ");
	ppid_bad("5 (x)S 42 5");
	ppid_bad("5 (x)  S 42 5");
	ppid_bad("5 (x) SS 42 5");
	ppid_bad("5 (x) S  42 5");
	ppid_bad("5 (x) S -1 5");
	ppid_bad("5 (x) S +1 5");
	ppid_bad("5 (x) S x 5");
	ppid_bad("5 (x) S 42x 5");
	ppid_bad("5 (x) S 42\n");
	ppid_bad("5 (x) S 42\t5");
	ppid_bad("5 (x) S 2147483648 5");
	ppid_bad("5 (x) S 99999999999999999999999 5");
	/* A ')' after the fields would make them part of the name. */
	ppid_bad("5 (x) S 42 5 (y)");
	/* len, not the terminator, ends the text. */
	assert_int_equal(mafl_parse_stat_ppid("5 (x) S 42 5", 7, &got), -1);
	assert_int_equal(mafl_parse_stat_ppid("5 (x) S 42 5", 10, &got), 0);
	assert_int_equal(got, 42);
	assert_int_equal(mafl_parse_stat_ppid("5 (x) S 42 5", 0, &got), -1);
}

static void test_stat_ppid_real(void **state)
{
	char buf[1024];
	pid_t ppid = -1;
	ssize_t n;
	FILE *f;

	(void)state;
	f = fopen("/proc/self/stat", "r");
	if (!f)
		skip();
	n = (ssize_t)fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_true(n > 0);
	assert_int_equal(mafl_parse_stat_ppid(buf, (size_t)n, &ppid), 0);
	assert_int_equal(ppid, getppid());
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_tree_descends */

/* A /proc of our own making: DIR/PID/stat for each process, with the text given. */
struct fake_proc {
	char dir[64];
	int fd;
};

static void fake_proc_open(struct fake_proc *fp)
{
	snprintf(fp->dir, sizeof(fp->dir), "/tmp/maf-fake-proc-XXXXXX");
	assert_non_null(mkdtemp(fp->dir));
	fp->fd = open(fp->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fp->fd >= 0);
}

static void fake_proc_add(struct fake_proc *fp, int pid, const char *comm, int ppid)
{
	char path[128], text[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", fp->dir, pid);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/stat", fp->dir, pid);
	snprintf(text, sizeof(text), "%d (%s) S %d %d 0 0\n", pid, comm, ppid, pid);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void fake_proc_close(struct fake_proc *fp)
{
	char cmd[128];

	close(fp->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fp->dir);
	assert_int_equal(system(cmd), 0);
}

static void test_tree_descends_fake(void **state)
{
	struct fake_proc fp;
	int i;

	(void)state;
	fake_proc_open(&fp);
	fake_proc_add(&fp, 1, "init", 0);
	fake_proc_add(&fp, 10, "supervisor", 1);
	fake_proc_add(&fp, 20, "program", 10);
	fake_proc_add(&fp, 30, "sh", 20);
	fake_proc_add(&fp, 31, "daemon", 10);	/* its parent has exited: the subreaper's */
	fake_proc_add(&fp, 40, "outsider", 1);
	/* A name made to look like a parent link: the last ')' ends the name. */
	fake_proc_add(&fp, 41, "x) S 10 10 0 0 (", 1);
	fake_proc_add(&fp, 50, "loop", 51);
	fake_proc_add(&fp, 51, "loop", 50);
	fake_proc_add(&fp, 60, "orphan", 61);	/* 61 is gone: the walk cannot go on */
	assert_int_equal(mafl_tree_descends(fp.fd, 20, 10), 1);
	assert_int_equal(mafl_tree_descends(fp.fd, 30, 10), 1);
	assert_int_equal(mafl_tree_descends(fp.fd, 31, 10), 1);
	assert_int_equal(mafl_tree_descends(fp.fd, 30, 20), 1);
	assert_int_equal(mafl_tree_descends(fp.fd, 10, 10), 0);	/* not itself */
	assert_int_equal(mafl_tree_descends(fp.fd, 10, 20), 0);	/* nor its parent */
	assert_int_equal(mafl_tree_descends(fp.fd, 20, 30), 0);
	assert_int_equal(mafl_tree_descends(fp.fd, 40, 10), 0);
	assert_int_equal(mafl_tree_descends(fp.fd, 41, 10), 0);
	assert_int_equal(mafl_tree_descends(fp.fd, 50, 10), 0);	/* bounded */
	assert_int_equal(mafl_tree_descends(fp.fd, 60, 10), 0);
	assert_int_equal(mafl_tree_descends(fp.fd, 99, 10), 0);	/* no such process */
	assert_int_equal(mafl_tree_descends(fp.fd, 0, 10), 0);
	assert_int_equal(mafl_tree_descends(fp.fd, -20, 10), 0);
	assert_int_equal(mafl_tree_descends(fp.fd, 20, 0), 0);
	assert_int_equal(mafl_tree_descends(-1, 20, 10), 0);	/* no /proc */
	/* A chain as deep as the walk goes is found; one link deeper is not. */
	for (i = 0; i < MAFL_TREE_DEPTH_MAX; i++)
		fake_proc_add(&fp, 1000 + i, "deep", i ? 1000 + i - 1 : 10);
	assert_int_equal(mafl_tree_descends(fp.fd, 1000 + MAFL_TREE_DEPTH_MAX - 1, 10), 1);
	fake_proc_add(&fp, 1000 + MAFL_TREE_DEPTH_MAX, "deeper", 1000 + MAFL_TREE_DEPTH_MAX - 1);
	assert_int_equal(mafl_tree_descends(fp.fd, 1000 + MAFL_TREE_DEPTH_MAX, 10), 0);
	fake_proc_close(&fp);
}

static void test_tree_descends_real(void **state)
{
	int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int ready[2], hold[2], was_subreaper = 0;
	pid_t child, grandchild = 0;
	char c;

	(void)state;
	if (procfd < 0)
		skip();
	assert_int_equal(mafl_tree_descends(procfd, getpid(), getppid()), 1);
	assert_int_equal(mafl_tree_descends(procfd, getppid(), getpid()), 0);
	assert_int_equal(mafl_tree_descends(procfd, getpid(), getpid()), 0);
	/* As the supervisor is: the subreaper, so a daemon whose parent exited is still ours. */
	assert_int_equal(prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper, 0, 0, 0), 0);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(hold), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pid_t middle = getpid(), g = fork();

		if (g == 0) {
			pid_t me = getpid();

			close(ready[0]);
			close(hold[1]);
			while (getppid() == middle)
				usleep(1000);
			(void)!write(ready[1], &me, sizeof(me));
			(void)!read(hold[0], &c, 1);
			_exit(0);
		}
		_exit(g > 0 ? 0 : 1);
	}
	close(ready[1]);
	close(hold[0]);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(read(ready[0], &grandchild, sizeof(grandchild)), sizeof(grandchild));
	assert_int_equal(mafl_tree_descends(procfd, grandchild, getpid()), 1);
	assert_int_equal(mafl_tree_descends(procfd, grandchild, getppid()), 1);
	assert_int_equal(mafl_tree_descends(procfd, getpid(), grandchild), 0);
	close(hold[1]);
	assert_int_equal(waitpid(grandchild, NULL, 0), grandchild);
	/* Gone: nothing to find. */
	assert_int_equal(mafl_tree_descends(procfd, grandchild, getpid()), 0);
	close(ready[0]);
	prctl(PR_SET_CHILD_SUBREAPER, was_subreaper, 0, 0, 0);
	close(procfd);
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_identity_sweep */

/* The sweep runs as the uid it sweeps: it must not count itself as a survivor; and it must
 * count one that made itself non-dumpable (whose /proc/PID is root's), as this child is: it
 * changed its uid without an exec. */
static void test_identity_sweep(void **state)
{
	struct mafl_identity id = {.own = 1, .per_run = 1, .gid = 0};
	int ready[2], st;
	pid_t victim;
	char c;

	(void)state;
	if (geteuid() != 0)
		skip();
	id.uid = (uid_t)(MAFL_RUN_ID_BASE + (uid_t)getpid() + 7);
	id.gid = (gid_t)id.uid;
	/* Nobody runs as it: nothing found. */
	assert_int_equal(mafl_identity_sweep(&id, 1), 0);
	/* One process runs as it: killed, and reported. */
	assert_int_equal(pipe(ready), 0);
	victim = fork();
	assert_true(victim >= 0);
	if (victim == 0) {
		close(ready[0]);
		if (setgroups(0, NULL) < 0 || setresgid(id.gid, id.gid, id.gid) < 0 ||
		    setresuid(id.uid, id.uid, id.uid) < 0)
			_exit(1);
		(void)!write(ready[1], "x", 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(mafl_identity_sweep(&id, 1), 1);
	assert_int_equal(waitpid(victim, &st, 0), victim);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* And afterwards nobody again. */
	assert_int_equal(mafl_identity_sweep(&id, 1), 0);
}

/* ----------------------------------------------------------------------------------------- */
/* mafl_witness_parse, mafl_witness_hand_over */

static void test_witness_hand_over(void **state)
{
	static const char rec[] = "{\"status\":\"exited\",\"exit_code\":3}";
	char buf[8192], big[MAFP_EXIT_RECORD_MAX + 1];
	const char *r, *c;
	size_t rl, cl;
	ssize_t n;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(mafl_witness_hand_over(p[1], rec, strlen(rec), "3", 1), 0);
	n = mafl_read_full(p[0], buf, sizeof(buf));
	close(p[0]);
	assert_true(n > 0);
	assert_int_equal(mafl_witness_parse(buf, (size_t)n, &r, &rl, &c, &cl), 0);
	assert_int_equal(rl, strlen(rec));
	assert_memory_equal(r, rec, rl);
	assert_int_equal(cl, 1);
	assert_memory_equal(c, "3", 1);
	/* Whole or nothing: cut short, one byte more, or the head alone. */
	assert_int_equal(mafl_witness_parse(buf, (size_t)n - 1, &r, &rl, &c, &cl), -1);
	buf[n] = 'x';
	assert_int_equal(mafl_witness_parse(buf, (size_t)n + 1, &r, &rl, &c, &cl), -1);
	assert_int_equal(mafl_witness_parse(buf, 12, &r, &rl, &c, &cl), -1);
	assert_int_equal(mafl_witness_parse(buf, 0, &r, &rl, &c, &cl), -1);
	/* Not a hand-over at all. */
	buf[0] ^= 1;
	assert_int_equal(mafl_witness_parse(buf, (size_t)n, &r, &rl, &c, &cl), -1);
	/* No record (it could not be encoded) is allowed; no exit code, or too long, is not. */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(mafl_witness_hand_over(p[1], "", 0, "137", 3), 0);
	n = mafl_read_full(p[0], buf, sizeof(buf));
	close(p[0]);
	assert_int_equal(mafl_witness_parse(buf, (size_t)n, &r, &rl, &c, &cl), 0);
	assert_int_equal(rl, 0);
	assert_int_equal(cl, 3);
	memset(big, 'x', sizeof(big));
	assert_int_equal(pipe(p), 0);
	assert_int_equal(mafl_witness_hand_over(p[1], big, sizeof(big), "1", 1), -1);
	assert_int_equal(errno, EINVAL);
	/* closed, nothing sent */
	assert_int_equal(mafl_read_full(p[0], buf, sizeof(buf)), 0);
	close(p[0]);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(mafl_witness_hand_over(p[1], rec, strlen(rec), "", 0), -1);
	close(p[0]);
}

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
		cmocka_unit_test(test_stat_ppid_plain),
		cmocka_unit_test(test_stat_ppid_hostile_names),
		cmocka_unit_test(test_stat_ppid_malformed),
		cmocka_unit_test(test_stat_ppid_real),
		cmocka_unit_test(test_tree_descends_fake),
		cmocka_unit_test(test_tree_descends_real),
		cmocka_unit_test(test_identity_sweep),
		cmocka_unit_test(test_witness_hand_over),
		cmocka_unit_test(test_look_decide),
		cmocka_unit_test(test_parse_call_tool_form),
		cmocka_unit_test(test_parse_call_raw_form),
		cmocka_unit_test(test_text_is_utf8),
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
