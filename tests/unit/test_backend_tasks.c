/* Unit tests for the local backend's ops as tasks (mafh_task_*, host/src/task.c,
 * host/backends/local*.c), driven by a poll loop of the test's own (backend_fixture.h):
 * execs (their timeout, a grandchild left behind, one abandoned, one given stdin), a wait
 * for a change, many execs at once, the fallbacks without pidfds or inotify, and the thread
 * commands are spawned from. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend_fixture.h"

static void test_task_exec(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_op_result r;
	struct mafh_want w;
	const struct mafh_op_result *rp;
	void *slot = NULL;
	const char *big[] = {"sh", "-c", "head -c 3000000 /dev/zero; head -c 200000 /dev/zero >&2; "
			     "exit 5", NULL};
	const char *whole[] = {"head", "-c", "1500000", "/dev/urandom", NULL};
	const char *none[] = {"/nonexistent/prog", NULL};

	(void)state;
	/* Large output: stdout kept up to the op's cap and stderr to 64 KiB, the rest drained
	 * (the command would block on a full pipe otherwise, and never exit). */
	op.argv = big;
	op.timeout_ms = 20000;
	op.out_cap = 1u << 20;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	/* It waits on descriptors: the two pipes and the child's pidfd. */
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &rp), 1);
	assert_true(w.nfds >= 2);
	assert_true(w.until_ms <= now_ms() + 20000);
	mafh_task_free(t);
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_int_equal(r.exec.exit_code, 5);
	assert_false(r.exec.timed_out);
	assert_int_equal(r.exec.out_len, 1u << 20);
	assert_int_equal(r.exec.err_len, 64u << 10);
	for (size_t i = 0; i < r.exec.out_len; i++)
		if (r.exec.out[i] != 0)
			fail_msg("byte %zu of the output is %d", i, r.exec.out[i]);
	mafh_task_free(t);
	/* All of a large output, under the cap. */
	op.argv = whole;
	op.out_cap = 4u << 20;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.exec.exit_code, 0);
	assert_int_equal(r.exec.out_len, 1500000);
	mafh_task_free(t);
	/* Not found: 127, and the sentence. */
	op.argv = none;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.exec.exit_code, 127);
	assert_non_null(strstr(r.exec.err, "not found"));
	mafh_task_free(t);
	/* Checked before any backend sees it. */
	op.argv = whole;
	op.len = 3;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), MAFH_EINVAL);
	assert_null(t);
	assert_null(slot);      /* an exec keeps nothing in the slot */
	mafh_backend_free(b);
}

static void test_task_exec_timeout(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_op_result r;
	void *slot = NULL;
	char cmd[600];
	const char *argv[] = {"sh", "-c", cmd, NULL};
	long bg;

	(void)state;
	/* A command and a process it started in the background, both past the timeout: the
	 * whole process group is killed. */
	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > '%s'; echo out; sleep 30",
		 at("bg.pid"));
	op.argv = argv;
	op.timeout_ms = 300;
	op.out_cap = 100;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_true(r.exec.timed_out);
	assert_int_equal(r.exec.exit_code, -1);
	/* What came before the kill is kept. */
	assert_int_equal(r.exec.out_len, 4);
	assert_memory_equal(r.exec.out, "out\n", 4);
	mafh_task_free(t);
	bg = number_in(at("bg.pid"), NULL);
	assert_true(bg > 0);
	assert_true(process_ends(bg));
	mafh_backend_free(b);
}

static void test_task_exec_grandchild(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_op_result r;
	void *slot = NULL;
	char cmd[600];
	const char *argv[] = {"sh", "-c", cmd, NULL};
	long bg;

	(void)state;
	/* The command exits at once, leaving a process that holds its stdout and stderr for
	 * 30 s: the exec ends with the command, well within its own timeout of 20 s (were it
	 * held by the pipes, it would end timed out). */
	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > '%s'; echo started", at("bg.pid"));
	op.argv = argv;
	op.timeout_ms = 20000;
	op.out_cap = 100;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_false(r.exec.timed_out);
	assert_int_equal(r.exec.exit_code, 0);
	assert_int_equal(r.exec.out_len, 8);
	assert_memory_equal(r.exec.out, "started\n", 8);
	mafh_task_free(t);
	/* It is left alone: only a timeout kills the group. */
	bg = number_in(at("bg.pid"), NULL);
	assert_false(process_gone(bg));
	kill((pid_t)bg, SIGKILL);
	mafh_backend_free(b);
}

/* A task freed under way kills the command and its group, and reaps the command. */
static void test_task_exec_abandoned(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	void *slot = NULL;
	char cmd[600];
	const char *argv[] = {"sh", "-c", cmd, NULL};
	long bg, pid;

	(void)state;
	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > '%s'; echo $$ > '%s'; wait",
		 at("bg.pid"), at("sh.pid"));
	op.argv = argv;
	op.timeout_ms = 60000;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	pid = number_in(at("sh.pid"), t);
	bg = number_in(at("bg.pid"), t);
	assert_false(process_gone(pid));
	mafh_task_free(t);
	/* Reaped by the free itself: not even a zombie is left of the command. */
	assert_int_equal(kill((pid_t)pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_true(process_ends(bg));
	mafh_backend_free(b);
}

static void test_task_exec_input(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_op_result r;
	void *slot = NULL;
	const char *cat[] = {"cat", NULL};
	const char *ignores[] = {"true", NULL};
	const char *tty[] = {"sh", "-c", "test -t 0 && echo tty; exec wc -c", NULL};
	size_t len = 3u << 20;
	char *in = malloc(len);

	(void)state;
	assert_non_null(in);
	for (size_t i = 0; i < len; i++)
		in[i] = (char)('a' + i % 26);
	/* Past a pipe's capacity, both ways. */
	op.argv = cat;
	op.data = in;
	op.len = len;
	op.timeout_ms = 20000;
	op.out_cap = 4u << 20;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_int_equal(r.exec.exit_code, 0);
	assert_int_equal(r.exec.out_len, len);
	assert_memory_equal(r.exec.out, in, len);
	mafh_task_free(t);
	/* Not read at all. */
	op.argv = ignores;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.exec.exit_code, 0);
	mafh_task_free(t);
	/* Empty: an empty stdin, not /dev/null's absence of one nor a terminal. */
	op.argv = tty;
	op.data = "";
	op.len = 0;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.exec.exit_code, 0);
	assert_int_equal(strtoul(r.exec.out, NULL, 10), 0);
	mafh_task_free(t);
	free(in);
	mafh_backend_free(b);
}

/* Publishes path the way the shim does: path.part written, then renamed to path. */
static void publish_now(const char *path)
{
	struct publisher p = {.path = path};

	publish(&p);
	assert_int_equal(access(path, F_OK), 0);
}

static void test_task_wait(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_WAIT_UNTIL);
	struct mafh_want w;
	const struct mafh_op_result *r;
	const char *const names[] = {"host_tool_calls/0001.request.json", "program_exit_code",
				     NULL};
	char ht[300];
	void *slot = NULL;
	int64_t t0;

	(void)state;
	snprintf(ht, sizeof(ht), "%s", at("host_tools"));
	assert_int_equal(mkdir(ht, 0755), 0);
	op.wait_dir = ht;
	op.wait_names = names;
	/* Nothing comes: woke 0 at until_ms, having waited on the inotify descriptor. */
	t0 = now_ms();
	op.until_ms = t0 + 100;
	assert_int_equal(mafh_task_new(b, &slot, &op, t0, &t, NULL), 0);
	assert_non_null(slot);  /* the watches are the slot's */
	assert_int_equal(mafh_task_advance(t, t0, &w, &r), 1);
	assert_int_equal(w.nfds, 1);
	assert_int_equal(w.fds[0].events, POLLIN);
	assert_int_equal(w.until_ms, op.until_ms);
	drive(&t, &r, 1);
	assert_int_equal(r->error, 0);
	assert_int_equal(r->woke, 0);
	assert_true(now_ms() >= op.until_ms);
	mafh_task_free(t);
	/* A file made while it waits, in a subdirectory that did not exist when it started: it
	 * wakes (at until_ms, 20 s on, it would have woke 0). */
	op.until_ms = now_ms() + 20000;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	assert_int_equal(mkdir(at("host_tools/host_tool_calls"), 0755), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	publish_now(at("host_tools/host_tool_calls/0001.request.json"));
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	/* Already there: over at its start. */
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 0);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	/* The exit marker, in the top directory, from the same slot's kept watches. */
	op.wait_names = (const char *const[]){"host_tool_calls/0002.request.json",
					      "program_exit_code", NULL};
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	publish_now(at("host_tools/program_exit_code"));
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	assert_int_equal(unlink(at("host_tools/program_exit_code")), 0);
	/* The directory removed while a wait is under way: woken (a false alarm), and the next
	 * wait watches the new one. */
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", ht,
			 at("host_tools/host_tool_calls"));
		assert_int_equal(system(cmd), 0);
	}
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	publish_now(at("host_tools/host_tool_calls/0002.request.json"));
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	/* Bad names: an error of the op, with a sentence. */
	op.wait_names = (const char *const[]){"../x", NULL};
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 0);
	assert_int_equal(r->error, MAFH_EINVAL);
	assert_non_null(strstr(r->detail.message, "NAME or SUB/NAME"));
	mafh_task_free(t);
	/* Without a directory: a timer, on no descriptor. */
	op.wait_dir = NULL;
	op.wait_names = NULL;
	op.until_ms = now_ms() + 50;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	assert_int_equal(w.nfds, 0);
	assert_int_equal(w.until_ms, op.until_ms);
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 0);
	assert_true(now_ms() >= op.until_ms);
	mafh_task_free(t);
	mafh_backend_state_free(b, slot);
	mafh_backend_free(b);
}

/* Many execs at once from one thread: every one completes with its own result. */
#define CONCURRENT 200

static void test_task_concurrent(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t[CONCURRENT];
	const struct mafh_op_result *r[CONCURRENT];
	struct mafh_op op[CONCURRENT];
	char arg[CONCURRENT][16];
	const char *argv[CONCURRENT][5];
	void *slot[CONCURRENT];
	int64_t t0 = now_ms();
	int turns;

	(void)state;
	for (int i = 0; i < CONCURRENT; i++) {
		snprintf(arg[i], sizeof(arg[i]), "%d", i);
		argv[i][0] = "sh";
		argv[i][1] = "-c";
		argv[i][2] = "sleep 0.2; echo \"done $0\"";
		argv[i][3] = arg[i];
		argv[i][4] = NULL;
		op[i] = op_of(MAFH_OP_EXEC);
		op[i].argv = argv[i];
		op[i].timeout_ms = 50000;
		op[i].out_cap = 64;
		slot[i] = NULL;
		assert_int_equal(mafh_task_new(b, &slot[i], &op[i], now_ms(), &t[i], NULL), 0);
	}
	turns = drive(t, r, CONCURRENT);
	for (int i = 0; i < CONCURRENT; i++) {
		char want[32];

		snprintf(want, sizeof(want), "done %d\n", i);
		assert_int_equal(r[i]->error, 0);
		assert_false(r[i]->exec.timed_out);
		assert_int_equal(r[i]->exec.exit_code, 0);
		assert_int_equal(r[i]->exec.out_len, strlen(want));
		assert_memory_equal(r[i]->exec.out, want, strlen(want));
		mafh_task_free(t[i]);
	}
	/* For the record (not a condition): one after the other, they would take 40 s. */
	print_message("%d execs of 0.2 s from one thread: %lld ms, %d turns of poll\n",
		      CONCURRENT, (long long)(now_ms() - t0), turns);
	mafh_backend_free(b);
}

/* In a child of its own (the filter cannot be taken back): syscall denied with err by a
 * seccomp filter (none when syscall_nr < 0), then fn. Returns fn's exit code. */
static int with_syscall_denied(int syscall_nr, int err, int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

		if (syscall_nr >= 0 &&
		    (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), syscall_nr, 0) < 0 ||
		     seccomp_load(ctx) < 0))
			_exit(99);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Without pidfds: an exec looks at its child on a timer, and still ends with it. Exit code
 * 0, or the number of the check that failed. */
static int exec_without_pidfd(void)
{
	struct mafh_backend *b = NULL;
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_want w;
	const struct mafh_op_result *r;
	const char *argv[] = {"sh", "-c", "sleep 30 & sleep 0.1; echo ok", NULL};
	void *slot = NULL;
	int64_t start, limit;

	if (mafh_backend_local_new(NULL, &b) < 0)
		return 1;
	op.argv = argv;
	op.timeout_ms = 20000;
	op.out_cap = 16;
	start = now_ms();
	if (mafh_task_new(b, &slot, &op, start, &t, NULL) < 0)
		return 2;
	if (mafh_task_advance(t, start, &w, &r) != 1)
		return 3;
	if (w.nfds != 2 || w.until_ms > start + 50)
		return 4;       /* the pipes, and a look at most 50 ms on */
	limit = start + 15000;
	while (mafh_task_advance(t, now_ms(), &w, &r) == 1) {
		struct pollfd pf[MAFH_WANT_FDS];
		int64_t left = w.until_ms - now_ms();

		if (now_ms() > limit)
			return 5;
		for (int i = 0; i < w.nfds; i++)
			pf[i] = (struct pollfd){.fd = w.fds[i].fd, .events = w.fds[i].events};
		poll(pf, (nfds_t)w.nfds, left < 0 ? 0 : left > 1000 ? 1000 : (int)left);
	}
	if (r->error || r->exec.timed_out || r->exec.exit_code != 0 || r->exec.out_len != 3)
		return 6;
	mafh_task_free(t);
	mafh_backend_free(b);
	return 0;
}

/* Without inotify (EMFILE: the user out of instances): a wait is a timer, never an error,
 * and a name already there still ends it at once. */
static int wait_without_inotify(void)
{
	struct mafh_backend *b = NULL;
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_WAIT_UNTIL);
	struct mafh_want w;
	const struct mafh_op_result *r;
	void *slot = NULL;
	int64_t start = now_ms();

	if (mafh_backend_local_new(NULL, &b) < 0)
		return 1;
	op.wait_dir = dir;
	op.wait_names = (const char *const[]){"sub/present", NULL};
	op.until_ms = start + 20000;
	if (mafh_task_new(b, &slot, &op, start, &t, NULL) < 0)
		return 2;
	if (mafh_task_advance(t, start, &w, &r) != 1)
		return 3;
	if (w.nfds != 0 || w.until_ms != op.until_ms)
		return 4;
	mafh_task_free(t);
	if (mkdir(at("sub"), 0755) < 0 || close(open(at("sub/present"), O_CREAT | O_WRONLY, 0644)))
		return 5;
	if (mafh_task_new(b, &slot, &op, start, &t, NULL) < 0)
		return 6;
	if (mafh_task_advance(t, start, &w, &r) != 0 || r->error || r->woke != 1)
		return 7;
	mafh_task_free(t);
	/* The table's call: 1, not an error. */
	if (mafh_backend_wait_change(b, dir, op.wait_names, 10, NULL) != 1)
		return 8;
	mafh_backend_state_free(b, slot);
	mafh_backend_free(b);
	return 0;
}

/* The thread of this process that is pid's parent (its /proc/self/task/T/children lists
 * pid), or 0 when none is. */
static pid_t parent_thread(long pid)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t found = 0;

	while (d && (e = readdir(d)) != NULL) {
		char path[300];
		long child;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
		f = fopen(path, "r");
		while (f && fscanf(f, "%ld", &child) == 1)
			if (child == pid)
				found = (pid_t)atol(e->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/* An exec started on b that says its pid and waits: the thread that is its parent (0: none
 * found, -1: it did not start), the exec then ended. */
static pid_t exec_parent(struct mafh_backend *b)
{
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	char cmd[700];
	const char *argv[] = {"sh", "-c", cmd, NULL};
	const char *file = at("spawned.pid");
	void *slot = NULL;
	pid_t tid = -1;
	long pid;

	unlink(file);
	snprintf(cmd, sizeof(cmd), "echo $$ > '%s'; exec sleep 30", file);
	op.argv = argv;
	op.timeout_ms = 20000;
	if (mafh_task_new(b, &slot, &op, now_ms(), &t, NULL) < 0)
		return -1;
	pid = number_in(file, t);
	if (pid > 0)
		tid = parent_thread(pid);
	mafh_task_free(t);
	unlink(file);
	return tid;
}

/* Opens /dev/null n times into held (n at most 3000): how many were opened. */
static int hold(int *held, int n)
{
	int i = 0;

	while (i < n && (held[i] = open("/dev/null", O_RDONLY)) >= 0)
		i++;
	return i;
}

static void let_go(int *held, int n)
{
	while (n > 0)
		close(held[--n]);
}

/* In a child of the test, holding 3,000 descriptors: the same, where the spawner cannot be
 * had (close_range denied by the caller), or after a fork from a process that had one. 0
 * when the command ran and its parent is as expected (in_place: this thread; otherwise
 * another), or the failed check. */
static int spawn_in_child(int in_place)
{
	static int held[3000];
	struct mafh_backend *b = NULL;
	pid_t tid;

	if (hold(held, 3000) != 3000)
		return 4;
	if (mafh_backend_local_new("/bin/true", &b) < 0)
		return 1;
	tid = exec_parent(b);
	mafh_backend_free(b);
	let_go(held, 3000);
	if (tid <= 0)
		return 2;
	if (in_place ? tid != (pid_t)syscall(SYS_gettid) : tid == (pid_t)syscall(SYS_gettid))
		return 3;
	return 0;
}

static int spawn_in_place(void)
{
	return spawn_in_child(1);
}

static int spawn_after_fork(void)
{
	return spawn_in_child(0);
}

/* In a host holding thousands of descriptors, commands are spawned from the backend's own
 * thread, whose descriptor table is its own, so a spawn's cost does not grow with what the
 * host holds (host/backends/local_spawn.c): with 3,000 descriptors open here, the command is
 * a child of another thread and sees only its stdio. With few, the caller's thread spawns
 * (the hand-over would cost more than the copy). After a fork the child gets a spawner of
 * its own; where close_range cannot unshare a table, commands are spawned in place. */
static void test_task_spawner(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_op_result r;
	const char *ls[] = {"ls", "/proc/self/fd", NULL};
	void *slot = NULL;
	static int held[3000];
	int n;
	pid_t tid;

	(void)state;
	tid = exec_parent(b);
	assert_int_equal(tid, (pid_t)syscall(SYS_gettid));
	n = hold(held, 3000);
	assert_int_equal(n, 3000);
	tid = exec_parent(b);
	assert_true(tid > 0);
	assert_int_not_equal(tid, (pid_t)syscall(SYS_gettid));
	op.argv = ls;
	op.timeout_ms = 20000;
	op.out_cap = 4096;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.exec.exit_code, 0);
	assert_int_equal(r.exec.out_len, 8);
	assert_memory_equal(r.exec.out, "0\n1\n2\n3\n", 8);      /* 3: ls's directory */
	mafh_task_free(t);
	let_go(held, n);
	tid = exec_parent(b);
	assert_int_equal(tid, (pid_t)syscall(SYS_gettid));
	assert_int_equal(with_syscall_denied(-1, 0, spawn_after_fork), 0);
	assert_int_equal(with_syscall_denied(SCMP_SYS(close_range), ENOSYS, spawn_in_place), 0);
	mafh_backend_free(b);
}

static void test_task_fallbacks(void **state)
{
	(void)state;
	assert_int_equal(with_syscall_denied(SCMP_SYS(pidfd_open), ENOSYS, exec_without_pidfd), 0);
	assert_int_equal(with_syscall_denied(SCMP_SYS(inotify_init1), EMFILE,
					     wait_without_inotify), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_task_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exec_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exec_grandchild, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exec_abandoned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exec_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_concurrent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_fallbacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_spawner, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
