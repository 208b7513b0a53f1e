/* The fixture of the local backend's unit tests (test_backend_*.c): a temporary
 * directory per test (setup, teardown, at), the local backend, a writer that publishes a
 * file from another thread, and a poll loop of the tests' own that drives tasks
 * (mafh_task_*) to their end. Static inline, so that each test file compiles the helpers
 * it uses and no warning names the others. */
#ifndef BACKEND_FIXTURE_H
#define BACKEND_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mafhost.h"

/* The test's temporary directory, made by setup and removed with all it holds by teardown. */
static char dir[256];

static inline int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/mafh-test-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static inline int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static inline const char *at(const char *rel)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, rel);
	return buf[i];
}

static inline struct mafh_backend *local(void)
{
	struct mafh_backend *b = NULL;

	assert_int_equal(mafh_backend_local_new("/bin/true", &b), 0);
	assert_non_null(b);
	return b;
}

/* A writer in another thread: after a pause, makes the directory (if asked) and publishes
 * a file the way the shim and the supervisor do, through NAME.part and a rename. */
struct publisher {
	pthread_t thread;
	const char *mkdir_path;
	const char *path;
	int pause_ms;
};

static inline void *publish(void *arg)
{
	struct publisher *p = arg;
	struct timespec ts = {.tv_sec = p->pause_ms / 1000,
			      .tv_nsec = (long)(p->pause_ms % 1000) * 1000000};
	char part[600];
	int fd;

	nanosleep(&ts, NULL);
	if (p->mkdir_path)
		mkdir(p->mkdir_path, 0755);
	snprintf(part, sizeof(part), "%s.part", p->path);
	fd = open(part, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, "{}", 2) != 2)
			perror("write");
		close(fd);
		rename(part, p->path);
	}
	return NULL;
}

/* ---- tasks (mafh_task_*), driven from a poll loop ---------------------------------------- */

static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The most the tasks of one drive may take: a safety net against a hang, not a measurement. */
#define DRIVE_LIMIT_MS 60000

/* Advances tasks[0..n) from this one thread until every one is over, polling between turns
 * on everything they want and sleeping no later than the earliest time they name. res[i] is
 * task i's result. Returns how many turns it took. */
static inline int drive(struct mafh_task **tasks, const struct mafh_op_result **res, int n)
{
	struct pollfd *pf = calloc((size_t)n * MAFH_WANT_FDS, sizeof(*pf));
	char *over = calloc((size_t)n, 1);
	int64_t start = now_ms();
	int left = n, turns = 0;

	assert_non_null(pf);
	assert_non_null(over);
	while (left > 0) {
		int64_t until = INT64_MAX, now = now_ms(), wait;
		int nf = 0;

		assert_true(now - start < DRIVE_LIMIT_MS);
		turns++;
		for (int i = 0; i < n; i++) {
			struct mafh_want w;

			if (over[i])
				continue;
			if (mafh_task_advance(tasks[i], now, &w, &res[i]) == 0) {
				assert_non_null(res[i]);
				over[i] = 1;
				left--;
				continue;
			}
			assert_true(w.nfds >= 0 && w.nfds <= MAFH_WANT_FDS);
			for (int k = 0; k < w.nfds; k++)
				pf[nf++] = (struct pollfd){.fd = w.fds[k].fd,
							   .events = w.fds[k].events};
			if (w.until_ms < until)
				until = w.until_ms;
		}
		if (!left)
			break;
		/* A task that waits on nothing and no time would never be taken further. */
		assert_true(nf > 0 || until != INT64_MAX);
		wait = until == INT64_MAX ? 1000 : until - now_ms();
		wait = wait < 0 ? 0 : wait > 1000 ? 1000 : wait;
		assert_true(poll(pf, (nfds_t)nf, (int)wait) >= 0 || errno == EINTR);
	}
	free(pf);
	free(over);
	return turns;
}

/* One op as a task over b in slot *state, driven to its end: its result (copied; exec and
 * read data stay the task's, freed with it by the caller through *task). */
static inline struct mafh_op_result run_task(struct mafh_backend *b, void **state,
					     const struct mafh_op *op, struct mafh_task **task)
{
	const struct mafh_op_result *r = NULL;

	assert_int_equal(mafh_task_new(b, state, op, now_ms(), task, NULL), 0);
	drive(task, &r, 1);
	return *r;
}

static inline struct mafh_op op_of(enum mafh_op_kind kind)
{
	struct mafh_op op;

	memset(&op, 0, sizeof(op));
	op.size = sizeof(op);
	op.kind = kind;
	return op;
}

/* Whether process pid is gone: no longer there, or a zombie (killed, not yet reaped by its
 * new parent). */
static inline int process_gone(long pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Waits (a safety net of 5 s) for pid to be gone: SIGKILL is delivered asynchronously. */
static inline int process_ends(long pid)
{
	for (int i = 0; i < 500; i++) {
		if (process_gone(pid))
			return 1;
		usleep(10000);
	}
	return 0;
}

/* A number the file at path holds, waited for (a safety net of 10 s) while task, when not
 * NULL, goes on. */
static inline long number_in(const char *path, struct mafh_task *task)
{
	for (int i = 0; i < 1000; i++) {
		char buf[32] = "";
		struct mafh_want w;
		const struct mafh_op_result *r;
		int fd = open(path, O_RDONLY);

		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof(buf) - 1);

			close(fd);
			if (n > 0 && buf[n - 1] == '\n')
				return strtol(buf, NULL, 10);
		}
		if (task)
			assert_int_equal(mafh_task_advance(task, now_ms(), &w, &r), 1);
		usleep(10000);
	}
	fail_msg("%s was not written", path);
	return -1;
}

#endif
