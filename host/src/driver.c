/* The drivers: mafh_run_advance takes a run as far as it can go without blocking, each of its
 * ops a task over the backend (task.c); the blocking driver is that and poll(2). */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "core.h"
#include "internal.h"

/* How long the blocking driver waits at most before mafh_run_stop is looked at again. */
#define STOP_SLICE_MS 50

/* The op under way is given its result, and its task freed. */
static int give(struct mafh_run *run, int64_t now, const struct mafh_op_result *res,
		struct mafh_error *err)
{
	enum mafh_op_kind kind = res->kind;
	int rc = mafh_run_op_result(run, now, res);

	mafh_task_free(run->drv_task);
	run->drv_task = NULL;
	if (rc != 0)
		return mafh__error_set(err, rc, "the run did not take the result of its %s",
				       mafh_op_kind_name(kind));
	return 0;
}

/* A run asked to stop leaves a wait or a stream read under way: nothing came, and the run
 * sees the stop at its next op. Any other op is let end (an exec keeps to its timeout).
 * 1 when the op was left, 0 when not, or a negative code. */
static int leave_for_stop(struct mafh_run *run, int64_t now, struct mafh_error *err)
{
	struct mafh_op_result res;
	int rc;

	if (run->drv_stop_seen || !mafh__run_stop_requested(run))
		return 0;
	run->drv_stop_seen = 1;
	if (run->drv_kind != MAFH_OP_WAIT_UNTIL && run->drv_kind != MAFH_OP_STREAM_READ)
		return 0;
	mafh_op_result_init(&res, run->drv_kind);
	rc = give(run, now, &res, err);
	return rc < 0 ? rc : 1;
}

/* What the op under way waits on goes into the run's epoll set, and the set is handed out in
 * its place: a caller watches one descriptor for the run's whole life, and registers nothing
 * a wait. Each wait takes every descriptor out and puts the new ones in, since one the backend
 * closed (and so left the set) may be back under the same number. */
static void watch_through_epoll(struct mafh_run *run, struct mafh_want *want)
{
	struct mafh_pollfd *w = run->drv_watched;
	int i, j, n = 0;

	if (run->drv_epfd == -1 && (run->drv_epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		run->drv_epfd = -2;     /* none to be had: the op's own descriptors, then */
	if (run->drv_epfd < 0)
		return;
	for (i = 0; i < run->drv_nwatched; i++)
		epoll_ctl(run->drv_epfd, EPOLL_CTL_DEL, w[i].fd, NULL);
	run->drv_nwatched = 0;
	if (!want->nfds)
		return;         /* a time alone: the set stays empty, so it does not wake */
	for (i = 0; i < want->nfds; i++) {
		for (j = 0; j < n && w[j].fd != want->fds[i].fd; j++)
			;
		if (j == n)
			w[n++] = (struct mafh_pollfd){.fd = want->fds[i].fd};
		w[j].events |= want->fds[i].events;
	}
	run->drv_nwatched = n;
	for (i = 0; i < n; i++) {
		struct epoll_event ev = {
			.events = (w[i].events & POLLIN ? EPOLLIN : 0) |
				  (w[i].events & POLLOUT ? EPOLLOUT : 0),
			.data.fd = w[i].fd,
		};

		epoll_ctl(run->drv_epfd, EPOLL_CTL_ADD, w[i].fd, &ev);
	}
	want->nfds = 1;
	want->fds[0] = (struct mafh_pollfd){.fd = run->drv_epfd, .events = POLLIN};
	want->stable = 1;
}

static int advance(struct mafh_run *run, struct mafh_backend *b, int64_t now,
		   struct mafh_want *want, const struct mafh_op **call, struct mafh_error *err)
{
	const struct mafh_op_result *res;
	const struct mafh_op *op;
	int rc;

	*call = NULL;
	want->nfds = 0;
	want->until_ms = INT64_MAX;
	want->stable = 0;
	if (run->drv_call_out)
		return mafh__error_set(err, MAFH_EBUSY, "the run's tool call has no result yet");
	if (run->drv_backend && run->drv_backend != b)
		return mafh__error_set(err, MAFH_EINVAL, "the run is driven over another backend");
	run->drv_backend = b;
	for (;;) {
		if (run->drv_task) {
			rc = leave_for_stop(run, now, err);
			if (rc < 0)
				return rc;
			if (rc > 0)
				continue;
			if (mafh_task_advance(run->drv_task, now, want, &res) == 1) {
				watch_through_epoll(run, want);
				return MAFH_PROGRESS_WAIT;
			}
			if ((rc = give(run, now, res, err)) < 0)
				return rc;
		}
		rc = mafh_run_next_op(run, now, &op);
		if (rc != 0)
			return mafh__error_set(err, rc, "the run could not hand out its next op");
		if (op->kind == MAFH_OP_DONE)
			return MAFH_PROGRESS_DONE;
		if (op->kind == MAFH_OP_CALL) {
			run->drv_call_out = 1;
			*call = op;
			return MAFH_PROGRESS_CALL;
		}
		run->drv_kind = op->kind;
		rc = mafh_task_new(b, &run->drv_state, op, now, &run->drv_task, NULL);
		if (rc < 0) {
			/* An op the backend cannot take (checked before any run): the run decides. */
			struct mafh_op_result r;

			mafh_op_result_init(&r, op->kind);
			r.error = rc;
			mafh__error_set(&r.detail, rc, "the backend cannot perform the run's %s op",
					mafh_op_kind_name(op->kind));
			if (op->kind == MAFH_OP_STREAM_READ)
				r.stream_ended = 1;
			if ((rc = give(run, now, &r, err)) < 0)
				return rc;
		}
	}
}

int mafh_run_advance(struct mafh_run *run, int64_t now_ms, struct mafh_want *want,
		     const struct mafh_op **call, struct mafh_error *err)
{
	struct mafh_backend *b = run ? mafh__run_backend(run) : NULL;

	if (!b || !want || !call)
		return mafh__error_set(err, MAFH_EINVAL, "advancing a run needs a run made over a "
				       "backend, a want and a call");
	return advance(run, b, now_ms, want, call, err);
}

static int64_t clock_now(const struct mafh_clock *c)
{
	return c && c->now_ms ? c->now_ms(c->ud) : mafh__now_ms();
}

/* Waits for what want names, at most until its time, and in slices of 50 ms so that a stop
 * from another thread is seen. A caller's own clock sleeps where no descriptor is watched. */
static void wait_for(const struct mafh_run *run, const struct mafh_clock *c,
		     const struct mafh_want *want)
{
	struct pollfd pf[MAFH_WANT_FDS];

	for (int i = 0; i < want->nfds; i++)
		pf[i] = (struct pollfd){.fd = want->fds[i].fd, .events = want->fds[i].events};
	if (!want->nfds && c && c->sleep_until_ms) {
		c->sleep_until_ms(want->until_ms, c->ud);
		return;
	}
	while (!mafh__run_stop_requested(run)) {
		int64_t now = clock_now(c), left = want->until_ms - now;

		if (left <= 0)
			return;
		if (left > STOP_SLICE_MS)
			left = STOP_SLICE_MS;
		if (!want->nfds)
			mafh__sleep_until_ms(now + left);
		else if (poll(pf, (nfds_t)want->nfds, (int)left) != 0)
			return;
	}
}

/* One turn of the blocking driver: an advance, and the wait or the call it comes to. 1 while
 * the run goes on, 0 once it is over, or a negative code. */
static int turn(struct mafh_run *run, struct mafh_backend *b, const struct mafh_clock *c,
		struct mafh_error *err)
{
	const struct mafh_op *call;
	struct mafh_want want;
	struct mafh_op_result res;
	int rc = advance(run, b, clock_now(c), &want, &call, err);

	if (rc < 0)
		return rc;
	if (rc == MAFH_PROGRESS_DONE)
		return 0;
	if (rc == MAFH_PROGRESS_WAIT) {
		wait_for(run, c, &want);
		return 1;
	}
	mafh_op_result_init(&res, MAFH_OP_CALL);
	mafh_run_call_tool(run, call, &res);
	rc = mafh_run_op_result(run, clock_now(c), &res);
	if (rc != 0)
		return mafh__error_set(err, rc, "the run did not take the result of its call");
	return 1;
}

int mafh_run_drive(struct mafh_run *run, struct mafh_backend *backend,
		   const struct mafh_clock *clock, struct mafh_error *err)
{
	int rc;

	if (!run || !backend)
		return mafh__error_set(err, MAFH_EINVAL, "driving a run needs a run and a backend");
	while ((rc = turn(run, backend, clock, err)) == 1)
		;
	return rc;
}

int mafh_run_step(struct mafh_run *run, struct mafh_error *err)
{
	struct mafh_backend *b = run ? mafh__run_backend(run) : NULL;

	if (!b)
		return mafh__error_set(err, MAFH_EINVAL, "a sans-I/O run has no backend to step");
	return turn(run, b, NULL, err);
}

int mafh_run_wait(struct mafh_run *run, struct mafh_error *err)
{
	struct mafh_backend *b = run ? mafh__run_backend(run) : NULL;

	if (!b)
		return mafh__error_set(err, MAFH_EINVAL, "a sans-I/O run has no backend to wait on");
	return mafh_run_drive(run, b, NULL, err);
}
