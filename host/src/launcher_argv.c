/* The argv of each launcher command the core runs: argv only, never a shell string. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core.h"

static void start(struct mafh__argv *a, const char *launcher, const char *sub,
		  const char *run_dir)
{
	memset(a, 0, sizeof(*a));
	a->v[a->n++] = launcher;
	a->v[a->n++] = sub;
	a->v[a->n++] = "--run-dir";
	a->v[a->n++] = run_dir;
}

/* Adds s; past the cap the argv is marked full (n > MAFH__ARGV_MAX) and left cut. */
static void add(struct mafh__argv *a, const char *s)
{
	if (a->n < MAFH__ARGV_MAX)
		a->v[a->n] = s;
	a->n++;
}

static const char *num(struct mafh__argv *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *num(struct mafh__argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s = a->num[a->n_num++];

	va_start(ap, fmt);
	vsnprintf(s, sizeof(a->num[0]), fmt, ap);
	va_end(ap);
	return s;
}

static void option(struct mafh__argv *a, const char *name, const char *value)
{
	if (value) {
		add(a, name);
		add(a, value);
	}
}

static int done(struct mafh__argv *a)
{
	if (a->n > MAFH__ARGV_MAX) {
		a->v[MAFH__ARGV_MAX] = NULL;
		return -1;
	}
	a->v[a->n] = NULL;
	return 0;
}

int mafh__argv_launch(struct mafh__argv *a, const struct mafh__launch_args *la)
{
	size_t i;

	start(a, la->launcher, "run", la->run_dir);
	option(a, "--timeout", num(a, "%lld.%03lld", (long long)(la->timeout_ms / 1000),
				   (long long)(la->timeout_ms % 1000)));
	option(a, "--max-output-bytes", num(a, "%llu", (unsigned long long)la->max_output_bytes));
	option(a, "--egress", la->egress);
	option(a, "--seccomp", la->seccomp);
	option(a, "--landlock", la->landlock);
	option(a, "--user", la->user);
	option(a, "--max-procs", la->max_procs);
	option(a, "--max-memory", la->max_memory);
	for (i = 0; la->writable && la->writable[i]; i++)
		option(a, "--writable", la->writable[i]);
	if (la->files_stdin)
		add(a, "--files-stdin");
	add(a, "--");
	for (i = 0; la->prog_argv[i]; i++)
		add(a, la->prog_argv[i]);
	return done(a);
}

/* What `wait` and `relay` share: the request awaited, the slice, the cap on what is printed,
 * and the supervisor to watch. */
static void wait_options(struct mafh__argv *a, long next_id, int64_t slice_ms,
			 uint64_t max_bytes, int64_t supervisor_pid)
{
	option(a, "--next", num(a, "%ld", next_id));
	option(a, "--timeout-ms", num(a, "%lld", (long long)slice_ms));
	option(a, "--max-bytes", num(a, "%llu", (unsigned long long)max_bytes));
	if (supervisor_pid > 0)
		option(a, "--supervisor-pid", num(a, "%lld", (long long)supervisor_pid));
}

int mafh__argv_wait(struct mafh__argv *a, const char *launcher, const char *run_dir,
		    long next_id, int64_t slice_ms, uint64_t max_bytes, int64_t supervisor_pid)
{
	start(a, launcher, "wait", run_dir);
	wait_options(a, next_id, slice_ms, max_bytes, supervisor_pid);
	return done(a);
}

int mafh__argv_serve(struct mafh__argv *a, const char *launcher, const char *run_dir,
		     uint64_t max_bytes, uint64_t max_answer_bytes, int64_t supervisor_pid)
{
	start(a, launcher, "serve", run_dir);
	/* An answer counts as written the moment serve says it is in place, not when the
	 * program next calls or ends. A launcher without --ack refuses it (exit 2): the stream
	 * breaks on its first frame, and the run goes on with relay. */
	add(a, "--ack");
	option(a, "--max-bytes", num(a, "%llu", (unsigned long long)max_bytes));
	option(a, "--max-answer-bytes", num(a, "%llu", (unsigned long long)max_answer_bytes));
	if (supervisor_pid > 0)
		option(a, "--supervisor-pid", num(a, "%lld", (long long)supervisor_pid));
	return done(a);
}

int mafh__argv_relay(struct mafh__argv *a, const char *launcher, const char *run_dir,
		     long next_id, int64_t slice_ms, uint64_t max_bytes, int64_t supervisor_pid,
		     long answer_id)
{
	start(a, launcher, "relay", run_dir);
	wait_options(a, next_id, slice_ms, max_bytes, supervisor_pid);
	if (answer_id > 0) {
		option(a, "--answer", num(a, "%ld", answer_id));
		add(a, "--value-stdin");
	}
	return done(a);
}

int mafh__argv_stop(struct mafh__argv *a, const char *launcher, const char *run_dir,
		    int64_t supervisor_pid, int64_t wait_ms, long long output_max, int reclaim,
		    const char *keep)
{
	start(a, launcher, "stop", run_dir);
	option(a, "--supervisor-pid", num(a, "%lld", (long long)supervisor_pid));
	option(a, "--timeout", num(a, "%lld.%03lld", (long long)(wait_ms / 1000),
				   (long long)(wait_ms % 1000)));
	if (output_max >= 0)
		option(a, "--output", num(a, "%lld", output_max));
	if (reclaim) {
		add(a, "--reclaim");
		option(a, "--keep", keep);
	}
	return done(a);
}

int mafh__argv_reclaim(struct mafh__argv *a, const char *launcher, const char *run_dir,
		       const char *keep)
{
	start(a, launcher, "reclaim", run_dir);
	option(a, "--keep", keep);
	return done(a);
}
