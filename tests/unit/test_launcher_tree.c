/* Unit tests for the launcher's view of a run's processes and markers: the /proc/PID/stat
 * parser and the descendant check (guest/tree.c), the identity sweep (guest/identity.c)
 * and the witness markers' hand-over (guest/witness.c). */
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

#define R "/tmp/run"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat_ppid_plain),
		cmocka_unit_test(test_stat_ppid_hostile_names),
		cmocka_unit_test(test_stat_ppid_malformed),
		cmocka_unit_test(test_stat_ppid_real),
		cmocka_unit_test(test_tree_descends_fake),
		cmocka_unit_test(test_tree_descends_real),
		cmocka_unit_test(test_identity_sweep),
		cmocka_unit_test(test_witness_hand_over),
	};

	return cmocka_run_group_tests_name("launcher_tree", tests, NULL, NULL);
}
