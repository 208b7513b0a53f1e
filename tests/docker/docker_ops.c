/* A harness that drives the Docker backend through libmafhost's public API, for the tests
 * in this directory: one JSON object a line on stdin, one answer a line on stdout, so a test
 * can change the engine's world (stop or remove the container) between two operations.
 * Bytes cross as hex.
 *   {"op":"new","container":C,"launcher":L,"socket":S,"exec_stdin":true}   L, S optional;
 *       with exec_stdin, the ops are given to a backend over the Docker backend's own that
 *       declares MAFH_CAP_EXEC_STDIN too (the Docker backend does not declare it)
 *   {"op":"exec","argv":[...],"timeout_ms":N,"out_cap":N,"stdin_hex":H}   with stdin_hex,
 *       mafh_backend_exec_input
 *   {"op":"write","path":P,"hex":H}
 *   {"op":"read","path":P,"cap":N}
 *   {"op":"stat","path":P}
 *   {"op":"mkdtemp","template":T}
 *   {"op":"requests"}
 * Through mafh_task_* (the backend's ops without blocking), from this one thread, in one
 * poll(2) loop over the descriptors the tasks hand out:
 *   {"op":"tasks","ops":[OP,...],"abandon_ms":N}   all of them at once, each OP one of
 *       {"kind":"exec","argv":[...],"timeout_ms":N,"out_cap":N,"stdin_hex":H},
 *       {"kind":"read","path":P,"cap":N}, {"kind":"stat","path":P} and
 *       {"kind":"write","path":P,"hex":H}; with abandon_ms, the tasks still under way then
 *       are freed ("abandoned"). Answers
 *       "results" (one a task, with what the blocking ops give), "fds_max" (the most
 *       descriptors watched at once) and "threads_max" (this process's threads, at most).
 *   {"op":"streams","argv":[...],"hex":[H,...]}   a stream a hex string, all at once: each
 *       opened, H written, its stdout read until as many bytes came (or it ended, or a read
 *       failed), closed.
 *       Answers "results" ({"open","write","close": [rc, message], "out": hex, "ended",
 *       "end": [rc, message] of the read that saw the end, "state_left"}),
 *       "fds_max" and "threads_max".
 *   {"op":"threads","n":N,"each":M,"argv":[...],"dir":D}   N threads at once, each making M
 *       blocking execs of argv and M writes and reads of a file of its own in D: "ok", the
 *       count of those that went as they should (2 * N * M), "errors", their sentences.
 *   {"op":"flood","argv":[...],"write_bytes":N}   a stream opened, N bytes written while its
 *       command prints without end, then a read and its close: "write" and "read" ([rc,
 *       message]), "read_ended", and "rss_kb" and "hwm_kb" (this process's resident memory
 *       before the write, its peak after the read).
 * Every answer has "rc" (0 or the negative code) and "message" (the error's sentence, or
 * ""), and what the operation gave. usage: docker_ops < LINES */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cJSON.h"
#include "internal.h"
#include "mafhost.h"

#define LINE_MAX_BYTES (64u << 20)
#define BAD_LINE 1              /* perform's answer to a line it cannot perform */

static char *hex_of(const char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *h = malloc(n * 2 + 1);
	size_t i;

	if (!h)
		return NULL;
	for (i = 0; i < n; i++) {
		h[2 * i] = digits[(unsigned char)p[i] >> 4];
		h[2 * i + 1] = digits[(unsigned char)p[i] & 15];
	}
	h[2 * n] = '\0';
	return h;
}

static int nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* hex (even length, lower case) into a malloc'd buffer of *n bytes, or NULL. */
static char *bytes_of(const char *hex, size_t *n)
{
	size_t len = strlen(hex), i;
	char *b = malloc(len / 2 + 1);

	if (!b || len % 2) {
		free(b);
		return NULL;
	}
	for (i = 0; i < len / 2; i++) {
		int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(b);
			return NULL;
		}
		b[i] = (char)(hi << 4 | lo);
	}
	*n = len / 2;
	return b;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void add_hex(cJSON *out, const char *key, const char *p, size_t n)
{
	char *h = hex_of(p ? p : "", p ? n : 0);

	if (!h) {
		fprintf(stderr, "docker_ops: out of memory\n");
		exit(1);
	}
	cJSON_AddStringToObject(out, key, h);
	free(h);
}

static const char *const read_status[] = {"ok", "absent", "too_big", "not_regular"};
static const char *const file_type[] = {"none", "regular", "dir", "symlink", "other"};

/* ---- tasks ---------------------------------------------------------------------------- */

/* The most a loop of tasks may take: a safety net, not an assertion. */
#define LOOP_MAX_MS 300000

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A number from /proc/self/status ("Threads:", "VmHWM:", ...), or -1. */
static long status_of(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0)
			v = strtol(line + strlen(key), NULL, 10);
	fclose(f);
	return v;
}

/* One op a task, and what it is at. */
struct job {
	struct mafh_op op;
	struct mafh_task *t;
	void *state;               /* a stream's slot */
	const struct mafh_op_result *res;
	int rc;                    /* mafh_task_new's */
	struct mafh_error err;
	int over, abandoned;
	/* a stream's: the phase (0 open, 1 write, 2 read, 3 close, 4 over), what was read */
	int phase;
	char *out;
	size_t out_len;
	int ended;
	cJSON *result;
	const char **argv;
	char *data;
	size_t data_len;
};

/* What a loop saw. */
struct loop_seen {
	int fds_max;
	long threads_max;
};

typedef void (*job_over_fn)(struct mafh_backend *b, struct job *j, int64_t now);

/* A task for j->op; one that cannot be made (j->rc) is over at the loop's next look. */
static void job_start(struct mafh_backend *b, struct job *j, int64_t now)
{
	j->res = NULL;
	j->over = 0;
	memset(&j->err, 0, sizeof(j->err));
	j->rc = mafh_task_new(b, &j->state, &j->op, now, &j->t, &j->err);
}

static void noop_over(struct mafh_backend *b, struct job *j, int64_t now)
{
	(void)b;
	(void)j;
	(void)now;
}

static int out_append(struct job *j, const char *p, size_t n)
{
	char *o = realloc(j->out, j->out_len + n);

	if (!o)
		return -1;
	memcpy(o + j->out_len, p, n);
	j->out = o;
	j->out_len += n;
	return 0;
}

/* Takes every job's task to its end from this thread: each advanced, then one poll(2) over
 * all the descriptors they name, until the earliest time they give. on_over is called as
 * each task ends (it may start another on the job). With abandon_ms > 0, what is still
 * under way then is freed. 0, or -1 past LOOP_MAX_MS. */
static int loop(struct mafh_backend *b, struct job *jobs, int n, job_over_fn on_over,
		int64_t abandon_ms, struct loop_seen *seen)
{
	struct pollfd *pf = calloc((size_t)n * MAFH_WANT_FDS + 1, sizeof(*pf));
	int64_t start = now_ms(), now = start;

	if (!pf)
		return -1;
	for (;;) {
		int64_t until = INT64_MAX;
		int nfds = 0, pending = 0, i, k;
		long threads = status_of("Threads:");

		if (threads > seen->threads_max)
			seen->threads_max = threads;
		for (i = 0; i < n; i++) {
			struct job *j = &jobs[i];
			struct mafh_want w;

			while (!j->over) {
				if (j->t && mafh_task_advance(j->t, now, &w, &j->res) == 1) {
					for (k = 0; k < w.nfds; k++, nfds++) {
						pf[nfds].fd = w.fds[k].fd;
						pf[nfds].events = w.fds[k].events;
					}
					if (w.until_ms < until)
						until = w.until_ms;
					pending++;
					break;
				}
				j->over = 1;
				on_over(b, j, now);
			}
		}
		if (!pending)
			break;
		if (nfds > seen->fds_max)
			seen->fds_max = nfds;
		if (abandon_ms > 0 && now - start >= abandon_ms) {
			for (i = 0; i < n; i++) {
				if (!jobs[i].over) {
					mafh_task_free(jobs[i].t);
					jobs[i].t = NULL;
					jobs[i].over = jobs[i].abandoned = 1;
				}
			}
			break;
		}
		if (now - start > LOOP_MAX_MS) {
			free(pf);
			return -1;
		}
		if (abandon_ms > 0 && start + abandon_ms < until)
			until = start + abandon_ms;
		/* At least once a second: the loop's own bounds are looked at. */
		poll(pf, (nfds_t)nfds, until <= now ? 0 : until - now > 1000 ? 1000
						    : (int)(until - now));
		now = now_ms();
	}
	free(pf);
	return 0;
}

static void add_rc(cJSON *o, const char *key, int rc, const char *message)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);

	cJSON_AddItemToArray(a, cJSON_CreateNumber(rc));
	cJSON_AddItemToArray(a, cJSON_CreateString(message));
}

/* An op's result into j->result, as the blocking ops answer. */
static void op_over(struct mafh_backend *b, struct job *j, int64_t now)
{
	const struct mafh_op_result *r = j->res;
	cJSON *o = j->result;

	(void)b;
	(void)now;
	if (j->rc < 0) {
		cJSON_AddNumberToObject(o, "rc", j->rc);
		cJSON_AddStringToObject(o, "message", j->err.message);
		return;
	}
	cJSON_AddNumberToObject(o, "rc", r->error);
	cJSON_AddStringToObject(o, "message", r->error ? r->detail.message : "");
	switch (j->op.kind) {
	case MAFH_OP_EXEC:
		cJSON_AddNumberToObject(o, "exit_code", r->exec.exit_code);
		cJSON_AddBoolToObject(o, "timed_out", r->exec.timed_out);
		add_hex(o, "out", r->exec.out, r->exec.out_len);
		add_hex(o, "err", r->exec.err, r->exec.err_len);
		break;
	case MAFH_OP_READ:
		cJSON_AddStringToObject(o, "status", read_status[r->read.status]);
		cJSON_AddNumberToObject(o, "size", (double)r->read.size);
		add_hex(o, "hex", r->read.data, r->read.len);
		break;
	case MAFH_OP_STAT:
		cJSON_AddBoolToObject(o, "exists", r->stat.exists);
		cJSON_AddNumberToObject(o, "size", (double)r->stat.size);
		cJSON_AddStringToObject(o, "type", file_type[r->stat.type]);
		break;
	default:
		break;
	}
	mafh_task_free(j->t);
	j->t = NULL;
}

static const char **argv_of(const cJSON *o)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "argv");
	int n = cJSON_GetArraySize(args), i;
	const char **argv = calloc((size_t)n + 1, sizeof(*argv));

	for (i = 0; argv && i < n; i++)
		argv[i] = cJSON_GetArrayItem(args, i)->valuestring;
	return argv;
}

static void jobs_free(struct mafh_backend *b, struct job *jobs, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		mafh_task_free(jobs[i].t);
		mafh_backend_state_free(b, jobs[i].state);
		free(jobs[i].argv);
		free(jobs[i].data);
		free(jobs[i].out);
	}
	free(jobs);
}

static int do_tasks(struct mafh_backend *b, const cJSON *in, cJSON *out)
{
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(in, "ops");
	int n = cJSON_GetArraySize(ops), i, rc;
	struct job *jobs = calloc((size_t)n + 1, sizeof(*jobs));
	cJSON *results = cJSON_AddArrayToObject(out, "results");
	struct loop_seen seen = {0};
	int64_t now = now_ms();

	if (!jobs)
		return 1;
	for (i = 0; i < n; i++) {
		const cJSON *spec = cJSON_GetArrayItem(ops, i);
		const char *kind = str(spec, "kind");
		struct job *j = &jobs[i];

		j->op.size = sizeof(j->op);
		j->op.path = str(spec, "path");
		if (!kind) {
			jobs_free(b, jobs, n);
			return 1;
		}
		if (strcmp(kind, "exec") == 0) {
			j->op.kind = MAFH_OP_EXEC;
			j->argv = argv_of(spec);
			j->op.argv = j->argv;
			j->op.timeout_ms = (int64_t)num(spec, "timeout_ms", 0);
			j->op.out_cap = (size_t)num(spec, "out_cap", 1 << 20);
		} else if (strcmp(kind, "read") == 0) {
			j->op.kind = MAFH_OP_READ;
			j->op.cap = (size_t)num(spec, "cap", 1 << 20);
		} else if (strcmp(kind, "stat") == 0) {
			j->op.kind = MAFH_OP_STAT;
		} else if (strcmp(kind, "write") == 0) {
			j->op.kind = MAFH_OP_WRITE;
			j->data = bytes_of(str(spec, "hex") ? str(spec, "hex") : "", &j->data_len);
			j->op.data = j->data;
			j->op.len = j->data_len;
		} else {
			jobs_free(b, jobs, n);
			return 1;
		}
		if (str(spec, "stdin_hex")) {
			j->data = bytes_of(str(spec, "stdin_hex"), &j->data_len);
			j->op.data = j->data;
			j->op.len = j->data_len;
		}
		j->result = cJSON_CreateObject();
		cJSON_AddItemToArray(results, j->result);
	}
	for (i = 0; i < n; i++)
		job_start(b, &jobs[i], now);
	rc = loop(b, jobs, n, op_over, (int64_t)num(in, "abandon_ms", 0), &seen);
	for (i = 0; i < n; i++)
		if (jobs[i].abandoned)
			cJSON_AddBoolToObject(jobs[i].result, "abandoned", 1);
	cJSON_AddNumberToObject(out, "fds_max", seen.fds_max);
	cJSON_AddNumberToObject(out, "threads_max", (double)seen.threads_max);
	jobs_free(b, jobs, n);
	return rc < 0 ? MAFH_ETIMEDOUT : 0;
}

/* A stream's next op, as its last one ended. */
static void stream_over(struct mafh_backend *b, struct job *j, int64_t now)
{
	const struct mafh_op_result *r = j->res;
	int error = j->rc < 0 ? j->rc : r->error;
	const char *msg = j->rc < 0 ? j->err.message : r->detail.message;
	static const char *const phase[] = {"open", "write", "read", "close"};

	if (j->phase != 2 || error)
		add_rc(j->result, phase[j->phase], error, msg);
	if (j->phase == 2 && r) {
		if (r->stream_len && out_append(j, r->stream_data, r->stream_len) < 0)
			error = MAFH_ENOMEM;
		j->ended = r->stream_ended;
		if (r->stream_ended)
			add_rc(j->result, "end", r->error, r->detail.message);
	}
	mafh_task_free(j->t);
	j->t = NULL;
	memset(&j->op, 0, sizeof(j->op));
	j->op.size = sizeof(j->op);
	switch (j->phase) {
	case 0:
		j->phase = error ? 4 : 1;
		j->op.kind = MAFH_OP_STREAM_WRITE;
		j->op.data = j->data;
		j->op.len = j->data_len;
		break;
	case 1:
	case 2:
		/* Read on after a write that failed: the command's output says why. */
		j->phase = j->out_len < j->data_len && !j->ended && !(j->phase == 2 && error)
			   ? 2 : 3;
		j->op.kind = j->phase == 2 ? MAFH_OP_STREAM_READ : MAFH_OP_STREAM_CLOSE;
		j->op.cap = 65536;
		j->op.until_ms = now + 60000;
		break;
	default:
		j->phase = 4;
		break;
	}
	if (j->phase < 4)
		job_start(b, j, now);
	if (j->phase == 4) {
		add_hex(j->result, "out", j->out, j->out_len);
		cJSON_AddBoolToObject(j->result, "ended", j->ended);
		cJSON_AddBoolToObject(j->result, "state_left", j->state != NULL);
	}
}

static int do_streams(struct mafh_backend *b, const cJSON *in, cJSON *out)
{
	const cJSON *hexes = cJSON_GetObjectItemCaseSensitive(in, "hex");
	int n = cJSON_GetArraySize(hexes), i, rc;
	struct job *jobs = calloc((size_t)n + 1, sizeof(*jobs));
	cJSON *results = cJSON_AddArrayToObject(out, "results");
	struct loop_seen seen = {0};
	int64_t now = now_ms();

	if (!jobs)
		return 1;
	for (i = 0; i < n; i++) {
		struct job *j = &jobs[i];

		j->argv = argv_of(in);
		j->data = bytes_of(cJSON_GetArrayItem(hexes, i)->valuestring, &j->data_len);
		if (!j->argv || !j->data) {
			jobs_free(b, jobs, n);
			return 1;
		}
		j->op.size = sizeof(j->op);
		j->op.kind = MAFH_OP_STREAM_OPEN;
		j->op.argv = j->argv;
		j->result = cJSON_CreateObject();
		cJSON_AddItemToArray(results, j->result);
	}
	for (i = 0; i < n; i++)
		job_start(b, &jobs[i], now);
	rc = loop(b, jobs, n, stream_over, 0, &seen);
	cJSON_AddNumberToObject(out, "fds_max", seen.fds_max);
	cJSON_AddNumberToObject(out, "threads_max", (double)seen.threads_max);
	jobs_free(b, jobs, n);
	return rc < 0 ? MAFH_ETIMEDOUT : 0;
}

/* One op over a job's slot, to its end through the task loop: its result's error, the rest
 * in j->res (the task kept in j->t until the next). */
static int one(struct mafh_backend *b, struct job *j, enum mafh_op_kind kind)
{
	struct loop_seen seen = {0};

	mafh_task_free(j->t);
	j->t = NULL;
	j->op.kind = kind;
	job_start(b, j, now_ms());
	if (loop(b, j, 1, noop_over, 0, &seen) < 0)
		return MAFH_ETIMEDOUT;
	return j->rc < 0 ? j->rc : j->res->error;
}

/* ---- threads --------------------------------------------------------------------------- */

struct worker {
	pthread_t tid;
	struct mafh_backend *b;
	const char **argv;
	int each, ok;
	char path[64];
	struct mafh_error err;
};

/* Blocking calls from a thread of its own: execs of argv (exit code 0 expected), and a
 * file written and read back each time. */
static void *work(void *ud)
{
	struct worker *w = ud;
	int i;

	for (i = 0; i < w->each; i++) {
		struct mafh_exec_result x;
		struct mafh_read_result r = {0};
		char data[96];
		int n = snprintf(data, sizeof(data), "%s %d", w->path, i);

		if (mafh_backend_exec(w->b, w->argv, 60000, 1024, &x, &w->err) == 0 &&
		    x.exit_code == 0 && !x.timed_out)
			w->ok++;
		mafh_exec_result_clear(&x);
		if (mafh_backend_write_file(w->b, w->path, data, (size_t)n, NULL, &w->err) == 0 &&
		    mafh_backend_read_file(w->b, w->path, 100, &r, &w->err) == 0 &&
		    r.status == MAFH_READ_OK && r.len == (size_t)n &&
		    memcmp(r.data, data, r.len) == 0)
			w->ok++;
		mafh_read_result_clear(&r);
	}
	return NULL;
}

static int do_threads(struct mafh_backend *b, const cJSON *in, cJSON *out)
{
	int n = (int)num(in, "n", 8), each = (int)num(in, "each", 4), i, ok = 0;
	struct worker *w = calloc((size_t)n, sizeof(*w));
	const char **argv = argv_of(in);
	const char *dir = str(in, "dir");
	cJSON *errors = cJSON_AddArrayToObject(out, "errors");

	if (!w || !argv || !dir || n < 1) {
		free(w);
		free(argv);
		return 1;
	}
	for (i = 0; i < n; i++) {
		w[i].b = b;
		w[i].argv = argv;
		w[i].each = each;
		snprintf(w[i].path, sizeof(w[i].path), "%.40s/t%d", dir, i);
		if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0)
			w[i].each = -1;
	}
	for (i = 0; i < n; i++) {
		if (w[i].each >= 0)
			pthread_join(w[i].tid, NULL);
		ok += w[i].ok;
		if (w[i].err.message[0])
			cJSON_AddItemToArray(errors, cJSON_CreateString(w[i].err.message));
	}
	cJSON_AddNumberToObject(out, "ok", ok);
	free(w);
	free(argv);
	return 0;
}

static int do_flood(struct mafh_backend *b, const cJSON *in, cJSON *out)
{
	struct job j;
	size_t n = (size_t)num(in, "write_bytes", 16 << 20);
	int rc, fd;

	memset(&j, 0, sizeof(j));
	j.op.size = sizeof(j.op);
	j.argv = argv_of(in);
	j.data = malloc(n);
	if (!j.argv || !j.data) {
		free(j.argv);
		free(j.data);
		return 1;
	}
	memset(j.data, 'x', n);
	j.op.argv = j.argv;
	rc = one(b, &j, MAFH_OP_STREAM_OPEN);
	add_rc(out, "open", rc, rc ? j.res ? j.res->detail.message : j.err.message : "");
	if (rc == 0) {
		/* The peak from here on: resident memory now, then its peak (reset here). */
		fd = open("/proc/self/clear_refs", O_WRONLY);
		if (fd >= 0) {
			if (write(fd, "5", 1) != 1)
				cJSON_AddBoolToObject(out, "peak_not_reset", 1);
			close(fd);
		}
		cJSON_AddNumberToObject(out, "rss_kb", (double)status_of("VmRSS:"));
		j.op.data = j.data;
		j.op.len = n;
		rc = one(b, &j, MAFH_OP_STREAM_WRITE);
		add_rc(out, "write", rc, rc ? j.res->detail.message : "");
		j.op.cap = 65536;
		j.op.until_ms = now_ms() + 10000;
		rc = one(b, &j, MAFH_OP_STREAM_READ);
		add_rc(out, "read", rc, j.res->detail.message);
		cJSON_AddBoolToObject(out, "read_ended", j.res->stream_ended);
		cJSON_AddNumberToObject(out, "read_len", (double)j.res->stream_len);
		cJSON_AddNumberToObject(out, "hwm_kb", (double)status_of("VmHWM:"));
		one(b, &j, MAFH_OP_STREAM_CLOSE);
		cJSON_AddBoolToObject(out, "state_left", j.state != NULL);
	}
	mafh_task_free(j.t);
	mafh_backend_state_free(b, j.state);
	free(j.argv);
	free(j.data);
	return 0;
}

/* The Docker backend a line made, when *b is the same with MAFH_CAP_EXEC_STDIN. */
static struct mafh_backend *docker_b;

/* The Docker backend's ops under a backend that declares MAFH_CAP_EXEC_STDIN too, as a
 * binding that offers exec_input over them would: *b becomes that one (docker_b keeps the
 * Docker backend, which it borrows). */
static int with_exec_stdin(struct mafh_backend **b)
{
	struct mafh_backend *w;
	int rc = mafh__backend_new_nb(mafh_backend_caps(*b) | MAFH_CAP_EXEC_STDIN,
				      mafh_backend_launcher_path(*b), (*b)->ops.ctx, NULL, (*b)->nb,
				      &w);

	if (rc < 0)
		return rc;
	docker_b = *b;
	*b = w;
	return 0;
}

static struct mafh_backend *docker_of(struct mafh_backend *b)
{
	return docker_b ? docker_b : b;
}

static void backend_free(struct mafh_backend **b)
{
	if (docker_b)
		mafh_backend_free(*b);
	mafh_backend_free(docker_of(*b));
	docker_b = NULL;
	*b = NULL;
}

/* Performs one operation over *b into out; 0, the code of a failure, or BAD_LINE. */
static int perform(struct mafh_backend **b, const cJSON *in, cJSON *out, struct mafh_error *err)
{
	const char *op = str(in, "op");
	int rc;

	if (!op)
		return BAD_LINE;
	if (strcmp(op, "new") == 0) {
		struct mafh_docker_options o;

		mafh_docker_options_init(&o);
		o.socket_path = str(in, "socket");
		backend_free(b);
		rc = mafh_backend_docker_new(str(in, "container"), str(in, "launcher"), &o, b,
					     err);
		if (rc == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "exec_stdin")))
			rc = with_exec_stdin(b);
		return rc;
	}
	if (!*b)
		return BAD_LINE;
	if (strcmp(op, "exec") == 0) {
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(in, "argv");
		int n = cJSON_GetArraySize(args), i;
		const char **argv = calloc((size_t)n + 1, sizeof(*argv));
		struct mafh_exec_result res;

		if (!argv)
			return BAD_LINE;
		for (i = 0; i < n; i++)
			argv[i] = cJSON_GetArrayItem(args, i)->valuestring;
		if (str(in, "stdin_hex")) {
			size_t len = 0;
			char *data = bytes_of(str(in, "stdin_hex"), &len);

			rc = mafh_backend_exec_input(*b, argv, data, len,
						     (int64_t)num(in, "timeout_ms", 0),
						     (size_t)num(in, "out_cap", 1 << 20), &res, err);
			free(data);
		} else {
			rc = mafh_backend_exec(*b, argv, (int64_t)num(in, "timeout_ms", 0),
					       (size_t)num(in, "out_cap", 1 << 20), &res, err);
		}
		free(argv);
		cJSON_AddNumberToObject(out, "exit_code", res.exit_code);
		cJSON_AddBoolToObject(out, "timed_out", res.timed_out);
		add_hex(out, "out", res.out, res.out_len);
		add_hex(out, "err", res.err, res.err_len);
		mafh_exec_result_clear(&res);
		return rc;
	}
	if (strcmp(op, "write") == 0) {
		size_t n = 0;
		char *data = bytes_of(str(in, "hex") ? str(in, "hex") : "", &n);

		if (!data)
			return BAD_LINE;
		rc = mafh_backend_write_file(*b, str(in, "path"), data, n, NULL, err);
		free(data);
		return rc;
	}
	if (strcmp(op, "read") == 0) {
		struct mafh_read_result res;

		rc = mafh_backend_read_file(*b, str(in, "path"), (size_t)num(in, "cap", 1 << 20),
					    &res, err);
		cJSON_AddStringToObject(out, "status", read_status[res.status]);
		cJSON_AddNumberToObject(out, "size", (double)res.size);
		add_hex(out, "hex", res.data, res.len);
		mafh_read_result_clear(&res);
		return rc;
	}
	if (strcmp(op, "stat") == 0) {
		struct mafh_stat st;

		rc = mafh_backend_stat(*b, str(in, "path"), &st, err);
		cJSON_AddBoolToObject(out, "exists", st.exists);
		cJSON_AddNumberToObject(out, "size", (double)st.size);
		cJSON_AddStringToObject(out, "type", file_type[st.type]);
		return rc;
	}
	if (strcmp(op, "mkdtemp") == 0) {
		char *t = strdup(str(in, "template") ? str(in, "template") : "");

		if (!t)
			return BAD_LINE;
		rc = mafh_backend_docker_mkdtemp(docker_of(*b), t, err);
		cJSON_AddStringToObject(out, "path", t);
		free(t);
		return rc;
	}
	if (strcmp(op, "tasks") == 0)
		return do_tasks(*b, in, out);
	if (strcmp(op, "streams") == 0)
		return do_streams(*b, in, out);
	if (strcmp(op, "flood") == 0)
		return do_flood(*b, in, out);
	if (strcmp(op, "threads") == 0)
		return do_threads(*b, in, out);
	if (strcmp(op, "requests") == 0) {
		cJSON_AddNumberToObject(out, "requests",
					(double)mafh_backend_docker_requests(docker_of(*b)));
		return 0;
	}
	return BAD_LINE;
}

int main(void)
{
	struct mafh_backend *b = NULL;
	char *line = malloc(LINE_MAX_BYTES);

	if (!line)
		return 1;
	while (fgets(line, LINE_MAX_BYTES, stdin)) {
		struct mafh_error err = {0};
		cJSON *in = cJSON_Parse(line), *out = cJSON_CreateObject();
		char *text;
		int rc;

		if (!in || !out) {
			fprintf(stderr, "docker_ops: a line that is not JSON: %s", line);
			return 1;
		}
		rc = perform(&b, in, out, &err);
		if (rc == BAD_LINE) {
			fprintf(stderr, "docker_ops: a line it cannot perform: %s", line);
			return 1;
		}
		cJSON_AddNumberToObject(out, "rc", rc);
		cJSON_AddStringToObject(out, "message", err.message);
		text = cJSON_PrintUnformatted(out);
		if (!text)
			return 1;
		printf("%s\n", text);
		fflush(stdout);
		free(text);
		cJSON_Delete(in);
		cJSON_Delete(out);
	}
	backend_free(&b);
	free(line);
	return 0;
}
