/* Unit tests for the local backend's streams as tasks (mafh_task_*, host/src/task.c,
 * host/backends/local_stream.c), driven by a poll loop of the test's own
 * (backend_fixture.h), and for the latency wrapper's ops as tasks. */
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

#include "backend_fixture.h"

/* One read of a stream in slot: its bytes appended to buf (*len), its end in *ended. */
static void stream_read(struct mafh_backend *b, void **slot, int64_t for_ms, char *buf,
			size_t *len, size_t cap, int *ended, char *why, size_t why_size)
{
	struct mafh_op op = op_of(MAFH_OP_STREAM_READ);
	struct mafh_task *t = NULL;
	struct mafh_op_result r;

	op.cap = cap - *len < 65536 ? cap - *len : 65536;
	op.until_ms = now_ms() + for_ms;
	r = run_task(b, slot, &op, &t);
	assert_int_equal(r.error, 0);
	if (r.stream_len)
		memcpy(buf + *len, r.stream_data, r.stream_len);
	*len += r.stream_len;
	*ended = r.stream_ended;
	if (why)
		snprintf(why, why_size, "%s", r.detail.message);
	mafh_task_free(t);
}

static void test_task_stream(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op;
	struct mafh_op_result r;
	struct mafh_want w;
	const struct mafh_op_result *rp;
	void *slot = NULL;
	const char *cat[] = {"cat", NULL};
	size_t big = 100000, len;
	char *out = malloc(big), *in = malloc(big);
	int ended;

	(void)state;
	assert_non_null(out);
	assert_non_null(in);
	for (size_t i = 0; i < big; i++)
		in[i] = (char)('A' + i % 26);
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = cat;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_non_null(slot);
	mafh_task_free(t);
	/* Nothing written yet: a read waits on stdout and ends at its time with no bytes. */
	op = op_of(MAFH_OP_STREAM_READ);
	op.cap = 100;
	op.until_ms = now_ms() + 50;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &rp), 1);
	assert_true(w.nfds >= 1);
	assert_int_equal(w.fds[0].events, POLLIN);
	drive(&t, &rp, 1);
	assert_int_equal(rp->error, 0);
	assert_int_equal(rp->stream_len, 0);
	assert_false(rp->stream_ended);
	mafh_task_free(t);
	/* Writes and reads, echoed: small ones, then one past a pipe's capacity. */
	for (int round = 0; round < 3; round++) {
		char line[32];

		snprintf(line, sizeof(line), "frame %d\n", round);
		op = op_of(MAFH_OP_STREAM_WRITE);
		op.data = line;
		op.len = strlen(line);
		r = run_task(b, &slot, &op, &t);
		assert_int_equal(r.error, 0);
		mafh_task_free(t);
		for (len = 0, ended = 0; len < strlen(line) && !ended;)
			stream_read(b, &slot, 10000, out, &len, big, &ended, NULL, 0);
		assert_false(ended);
		assert_int_equal(len, strlen(line));
		assert_memory_equal(out, line, len);
	}
	op = op_of(MAFH_OP_STREAM_WRITE);
	op.data = in;
	op.len = big;
	op.timeout_ms = 20000;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	for (len = 0, ended = 0; len < big && !ended;)
		stream_read(b, &slot, 10000, out, &len, big, &ended, NULL, 0);
	assert_int_equal(len, big);
	assert_memory_equal(out, in, big);
	/* Closed: cat ends with its stdin, and the slot holds no stream after. */
	op = op_of(MAFH_OP_STREAM_CLOSE);
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	op = op_of(MAFH_OP_STREAM_READ);
	op.cap = 10;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &rp), 0);
	assert_int_equal(rp->error, MAFH_EINVAL);
	mafh_task_free(t);
	mafh_backend_state_free(b, slot);
	free(in);
	free(out);
	mafh_backend_free(b);
}

static void test_task_stream_ends(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op;
	struct mafh_op_result r;
	void *slot = NULL;
	const char *says[] = {"sh", "-c", "echo bye; echo 'serve: refused' >&2; exit 3", NULL};
	char cmd[600];
	const char *quiet[] = {"sh", "-c", cmd, NULL};
	char out[64], why[256];
	size_t len = 0;
	int ended = 0;
	int64_t t0;
	long pid;

	(void)state;
	signal(SIGPIPE, SIG_IGN);   /* as a host does: a write to an ended command is EPIPE */
	/* Its output, then its end, with what it said on stderr as the sentence. */
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = says;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	while (!ended)
		stream_read(b, &slot, 10000, out, &len, sizeof(out), &ended, why, sizeof(why));
	assert_int_equal(len, 4);
	assert_memory_equal(out, "bye\n", 4);
	assert_non_null(strstr(why, "sh ended: serve: refused"));
	/* A write to it now: MAFH_EPIPE, with the sentence. (An exiting process may release
	 * its stdout before its stdin: a write can still go through for a moment.) */
	op = op_of(MAFH_OP_STREAM_WRITE);
	op.data = "x\n";
	op.len = 2;
	for (int i = 0;; i++) {
		r = run_task(b, &slot, &op, &t);
		if (r.error || i == 500)
			break;
		mafh_task_free(t);
		usleep(10000);
	}
	assert_int_equal(r.error, MAFH_EPIPE);
	assert_non_null(strstr(r.detail.message, "refused"));
	mafh_task_free(t);
	/* Opened again in the same slot: a command that closes its stdout and goes on. Its
	 * stdout's end is the stream's; closing it kills it after a second's grace. */
	snprintf(cmd, sizeof(cmd), "echo $$ > '%s'; exec 1>&-; exec sleep 30", at("sh.pid"));
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = quiet;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	len = 0;
	ended = 0;
	stream_read(b, &slot, 10000, out, &len, sizeof(out), &ended, why, sizeof(why));
	assert_true(ended);
	assert_int_equal(len, 0);
	assert_non_null(strstr(why, "closed its stdout"));
	pid = number_in(at("sh.pid"), NULL);
	assert_false(process_gone(pid));
	t0 = now_ms();
	op = op_of(MAFH_OP_STREAM_CLOSE);
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	/* It waited out the grace (sleep 30 does not end with its stdin), then killed and
	 * reaped the command. */
	assert_true(now_ms() - t0 >= 1000);
	assert_int_equal(kill((pid_t)pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	mafh_task_free(t);
	/* A stream left open is closed by the slot's free. */
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = (const char *[]){"cat", NULL};
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	mafh_backend_state_free(b, slot);
	mafh_backend_free(b);
}

static void test_task_latency(void **state)
{
	struct mafh_backend *b = NULL;
	struct mafh_task *t = NULL;
	struct mafh_op op;
	struct mafh_op_result r;
	struct mafh_want w;
	const struct mafh_op_result *rp;
	const char *echo[] = {"echo", "hi", NULL};
	void *slot = NULL;
	char out[16];
	size_t len = 0;
	int ended = 0;
	int64_t t0;

	(void)state;
	assert_int_equal(mafh_backend_latency_new(local(), 200, &b), 0);
	assert_false(mafh_backend_caps(b) & MAFH_CAP_WAIT_CHANGE);
	/* An exec: first the latency, a timer on no descriptor, then the local exec's. */
	op = op_of(MAFH_OP_EXEC);
	op.argv = echo;
	op.timeout_ms = 10000;
	op.out_cap = 16;
	t0 = now_ms();
	assert_int_equal(mafh_task_new(b, &slot, &op, t0, &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, t0, &w, &rp), 1);
	assert_int_equal(w.nfds, 0);
	assert_true(w.until_ms >= t0 + 200);
	assert_int_equal(mafh_task_advance(t, w.until_ms, &w, &rp), 1);
	assert_true(w.nfds >= 2);
	drive(&t, &rp, 1);
	assert_int_equal(rp->exec.exit_code, 0);
	assert_int_equal(rp->exec.out_len, 3);
	assert_memory_equal(rp->exec.out, "hi\n", 3);
	mafh_task_free(t);
	/* A stream: its opening and writes cost the latency, its reads do not. */
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = (const char *[]){"cat", NULL};
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	op = op_of(MAFH_OP_STREAM_WRITE);
	op.data = "abc";
	op.len = 3;
	t0 = now_ms();
	assert_int_equal(mafh_task_new(b, &slot, &op, t0, &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, t0, &w, &rp), 1);
	assert_int_equal(w.nfds, 0);
	assert_true(w.until_ms >= t0 + 200);
	drive(&t, &rp, 1);
	assert_int_equal(rp->error, 0);
	mafh_task_free(t);
	op = op_of(MAFH_OP_STREAM_READ);
	op.cap = 16;
	op.until_ms = now_ms() + 10000;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	if (mafh_task_advance(t, now_ms(), &w, &rp) == 1) {
		/* Not there yet: it waits on stdout, not on a timer of its own. */
		assert_true(w.nfds >= 1);
		assert_int_equal(w.until_ms, op.until_ms);
	} else {
		/* cat's echo was there already: this read took it. */
		assert_int_equal(rp->error, 0);
		assert_true(rp->stream_len <= sizeof(out));
		memcpy(out, rp->stream_data, rp->stream_len);
		len = rp->stream_len;
		ended = rp->stream_ended;
	}
	mafh_task_free(t);
	while (len < 3 && !ended)
		stream_read(b, &slot, 10000, out, &len, sizeof(out), &ended, NULL, 0);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "abc", 3);
	/* A wait: a plain timer (the wrapper has no notification), with no latency. */
	op = op_of(MAFH_OP_WAIT_UNTIL);
	op.wait_dir = dir;
	op.wait_names = (const char *const[]){"x", NULL};
	t0 = now_ms();
	op.until_ms = t0 + 30;
	assert_int_equal(mafh_task_new(b, &slot, &op, t0, &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, t0, &w, &rp), 1);
	assert_int_equal(w.nfds, 0);
	assert_int_equal(w.until_ms, op.until_ms);
	mafh_task_free(t);
	mafh_backend_state_free(b, slot);
	mafh_backend_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_task_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_stream_ends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_latency, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
