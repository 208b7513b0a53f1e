/* The Docker backend: a container reached through the Docker Engine API on its unix socket.
 *   exec:       POST /containers/{id}/exec (argv as Cmd, stdout and stderr attached, no
 *               tty), POST /exec/{eid}/start (the multiplexed stream, split by
 *               docker_parse.c), then GET /exec/{eid}/json until it has ended (ExitCode).
 *   write_file: PUT /containers/{id}/archive?path=/ with a tar of the one file at its path
 *               below / (the engine makes missing parents, and replaces a file or symlink
 *               at the path without following it; noOverwriteDirNonDir keeps a directory).
 *   read_file:  GET /containers/{id}/archive?path=FILE, its first entry (docker_tar.c),
 *               stopped at the path-stat header when that says it is no regular file or
 *               past the cap.
 *   stat:       HEAD of the same: the X-Docker-Container-Path-Stat header.
 * Every operation takes the backend's lock, so calls from several threads take turns on its
 * one connection. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cJSON.h"
#include "docker.h"
#include "internal.h"

/* A request other than an exec's stream that takes longer has met a stuck engine. */
#define REQUEST_TIMEOUT_MS 120000
/* What an exec keeps of stderr (stdout's cap is the caller's), of the engine's own errors
 * in the stream, and of stdout's first bytes for the engine's word when the command did not
 * start. The rest is read and dropped. */
#define ERR_CAP (64u << 10)
#define SYSERR_CAP 1024
#define OUT_HEAD 512
/* A read keeps at most the cap and this much of the tar around it: headers (pax records
 * of a long name or link target included), padding and the end blocks. */
#define TAR_SLACK (64u << 10)
/* Looks at an exec's state once its stream has ended, until its exit code is in: the first
 * after 1 ms, then twice as long each time, up to 50 ms. */
#define INSPECT_FIRST_MS 1
#define INSPECT_MAX_MS 50
#define MKDTEMP_TRIES 16

struct docker {
	struct docker_http *http;
	pthread_mutex_t lock;
	char *name;                /* the container as given, for sentences */
	char id[129];              /* its full id, as the engine says */
	char *launcher;
};

static void docker_destroy(void *ctx);

/* ---- shared pieces -------------------------------------------------------------------- */

static int64_t left_ms(int64_t deadline)
{
	int64_t left;

	if (!deadline)
		return REQUEST_TIMEOUT_MS;
	left = deadline - mafh__now_ms();
	return left > 0 ? left : 1;
}

/* text[0..len) as one printable line: up to the first line end, control bytes as '?'. */
static void printable(char *buf, size_t size, const char *text, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < len && o + 1 < size && text[i] != '\r' && text[i] != '\n'; i++)
		buf[o++] = (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? '?' : text[i];
	buf[o] = '\0';
}

/* The error of an answer that is not the one asked for: the engine's message, or its HTTP
 * status, after what (which says what was being done). "No such container" is said as
 * such, whatever was being done. */
static int engine_error(struct docker *d, const struct docker_reply *r, const char *what,
			struct mafh_error *err)
{
	char msg[200];
	int code;

	mafh__docker_message(r->body, r->body_len, msg, sizeof(msg));
	if (r->status == 404 && strncmp(msg, "No such container", 17) == 0)
		return mafh__error_set(err, MAFH_ENOENT, "there is no container '%s' on the "
				       "Docker engine at %s", d->name,
				       mafh__docker_http_socket(d->http));
	code = r->status == 400 ? MAFH_EINVAL
	       : r->status == 401 || r->status == 403 ? -EACCES
	       : r->status == 404 ? MAFH_ENOENT : MAFH_EIO;
	if (msg[0])
		return mafh__error_set(err, code, "%s failed: %s", what, msg);
	return mafh__error_set(err, code, "%s failed: the Docker engine answered HTTP %ld",
			       what, r->status);
}

static int timed_out(struct docker *d, const char *what, int64_t ms, struct mafh_error *err)
{
	return mafh__error_set(err, MAFH_ETIMEDOUT, "%s failed: the Docker engine at %s did not "
			       "answer within %lld ms", what, mafh__docker_http_socket(d->http),
			       (long long)ms);
}

/* A container path the engine is asked about: absolute, no "..", no empty name at its end,
 * and short enough. */
static int path_ok(const char *path, struct mafh_error *err)
{
	const char *p;

	if (!path || path[0] != '/' || strlen(path) >= DOCKER_PATH_MAX || !path[1] ||
	    path[strlen(path) - 1] == '/')
		return mafh__error_set(err, MAFH_EINVAL, "the container path '%s' is not an "
				       "absolute path to a file", path ? path : "(none)");
	for (p = path; (p = strstr(p, "/..")); p += 3)
		if (p[3] == '/' || p[3] == '\0')
			return mafh__error_set(err, MAFH_EINVAL, "the container path '%s' holds a "
					       "'..'", path);
	return 0;
}

/* "/containers/ID/archive?path=ESCAPED[extra]", malloc'd, or NULL. */
static char *archive_target(struct docker *d, const char *path, const char *extra)
{
	char *esc = mafh__docker_escape(d->http, path), *t = NULL;

	if (esc && asprintf(&t, "/containers/%s/archive?path=%s%s", d->id, esc, extra) < 0)
		t = NULL;
	free(esc);
	return t;
}

/* ---- exec ----------------------------------------------------------------------------- */

/* Where an exec's stream goes: stdout up to the caller's cap, its first bytes apart,
 * stderr and the engine's own errors up to theirs. */
struct exec_sinks {
	struct docker_demux demux;
	char *out, *err;
	size_t out_len, out_size, out_cap;
	size_t err_len, err_size;
	char head[OUT_HEAD];
	size_t head_len;
	char syserr[SYSERR_CAP];
	size_t syserr_len;
	int nomem, unframed;
};

static int exec_sink(void *ud, enum docker_stream stream, const char *p, size_t n)
{
	struct exec_sinks *s = ud;
	size_t k;

	switch (stream) {
	case DOCKER_STDERR:
		if (mafh__append(&s->err, &s->err_len, &s->err_size, ERR_CAP, p, n) < 0)
			goto nomem;
		return 0;
	case DOCKER_SYSTEMERR:
		k = n < sizeof(s->syserr) - 1 - s->syserr_len ? n
							    : sizeof(s->syserr) - 1 - s->syserr_len;
		memcpy(s->syserr + s->syserr_len, p, k);
		s->syserr_len += k;
		return 0;
	default:
		k = n < sizeof(s->head) - s->head_len ? n : sizeof(s->head) - s->head_len;
		memcpy(s->head + s->head_len, p, k);
		s->head_len += k;
		if (mafh__append(&s->out, &s->out_len, &s->out_size, s->out_cap, p, n) < 0)
			goto nomem;
		return 0;
	}
nomem:
	s->nomem = 1;
	return -1;
}

static int stream_sink(void *ud, const char *p, size_t n)
{
	struct exec_sinks *s = ud;
	int rc = mafh__docker_demux_feed(&s->demux, p, n, exec_sink, s);

	if (rc == -1)
		s->unframed = 1;
	return rc < 0 ? -1 : 0;
}

/* POST /containers/{id}/exec: the exec's id in eid. 0, 1 when the deadline passed, or an
 * error. */
static int exec_create(struct docker *d, const char *const *argv, int with_stdin,
		       int64_t deadline, char *eid, size_t eid_size, const char *what,
		       struct mafh_error *err)
{
	struct docker_request req = {.method = "POST", .content_type = "application/json",
				     .reply_cap = DOCKER_REPLY_MAX};
	struct docker_reply r;
	cJSON *body = cJSON_CreateObject();
	char *text = NULL, target[200];
	int n = 0, rc;

	while (argv[n])
		n++;
	if (!body || !cJSON_AddItemToObject(body, "Cmd", cJSON_CreateStringArray(argv, n)) ||
	    !cJSON_AddBoolToObject(body, "AttachStdin", with_stdin) ||
	    !cJSON_AddTrueToObject(body, "AttachStdout") ||
	    !cJSON_AddTrueToObject(body, "AttachStderr") || !cJSON_AddFalseToObject(body, "Tty") ||
	    !(text = cJSON_PrintUnformatted(body))) {
		cJSON_Delete(body);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory making an exec");
	}
	cJSON_Delete(body);
	snprintf(target, sizeof(target), "/containers/%s/exec", d->id);
	req.target = target;
	req.body = text;
	req.body_len = strlen(text);
	req.timeout_ms = left_ms(deadline);
	rc = mafh__docker_http_do(d->http, &req, &r, err);
	free(text);
	if (rc < 0)
		return rc;
	if (r.timed_out) {
		rc = deadline ? 1 : timed_out(d, what, req.timeout_ms, err);
	} else if (r.status != 201) {
		rc = engine_error(d, &r, what, err);
	} else if (mafh__docker_exec_id_parse(r.body, r.body_len, eid, eid_size) < 0) {
		rc = mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's answer "
				     "holds no exec id", what);
	}
	mafh__docker_reply_clear(&r);
	return rc;
}

/* GET /exec/{eid}/json until the exec has ended. 0 and *st, 1 when the deadline passed, or
 * an error. */
static int exec_wait(struct docker *d, const char *eid, int64_t deadline,
		     struct docker_exec_state *st, const char *what, struct mafh_error *err)
{
	struct docker_request req = {.method = "GET", .reply_cap = DOCKER_REPLY_MAX};
	int64_t pause = INSPECT_FIRST_MS;
	char target[200];
	int rc;

	snprintf(target, sizeof(target), "/exec/%s/json", eid);
	req.target = target;
	for (;;) {
		struct docker_reply r;

		req.timeout_ms = left_ms(deadline);
		rc = mafh__docker_http_do(d->http, &req, &r, err);
		if (rc < 0)
			return rc;
		if (r.timed_out)
			rc = deadline ? 1 : timed_out(d, what, req.timeout_ms, err);
		else if (r.status != 200)
			rc = engine_error(d, &r, what, err);
		else if (mafh__docker_exec_state_parse(r.body, r.body_len, st) < 0)
			rc = mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's "
					     "account of the exec cannot be read", what);
		mafh__docker_reply_clear(&r);
		if (rc != 0)
			return rc;
		/* The stream ends with the process's output; its exit comes to the engine
		 * apart, and may come a moment later. */
		if (!st->running && st->has_exit_code)
			return 0;
		if (deadline && mafh__now_ms() + pause >= deadline)
			return 1;
		mafh__sleep_until_ms(mafh__now_ms() + pause);
		pause = pause * 2 > INSPECT_MAX_MS ? INSPECT_MAX_MS : pause * 2;
	}
}

static int docker_exec(void *ctx, const char *const *argv, int64_t timeout_ms, size_t out_cap,
		       struct mafh_exec_result *res, struct mafh_error *err)
{
	static const char start_body[] = "{\"Detach\":false,\"Tty\":false}";
	struct docker *d = ctx;
	struct docker_request req = {.method = "POST", .content_type = "application/json",
				     .body = start_body, .body_len = sizeof(start_body) - 1,
				     .sink = stream_sink};
	struct docker_reply r = {0};
	struct docker_exec_state st;
	struct exec_sinks s;
	int64_t deadline = timeout_ms > 0 ? mafh__now_ms() + timeout_ms : 0;
	char eid[129], target[200], what[300], msg[200];
	int rc;

	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	mafh__docker_demux_init(&s.demux);
	s.out_cap = out_cap;
	res->exit_code = -1;
	snprintf(what, sizeof(what), "running %s in the container '%s'", argv[0], d->name);
	pthread_mutex_lock(&d->lock);
	rc = exec_create(d, argv, 0, deadline, eid, sizeof(eid), what, err);
	if (rc != 0)
		goto out;
	snprintf(target, sizeof(target), "/exec/%s/start", eid);
	req.target = target;
	/* The stream lasts as long as the command's output: only the caller's timeout bounds
	 * it. */
	req.timeout_ms = deadline ? left_ms(deadline) : 0;
	req.ud = &s;
	rc = mafh__docker_http_do(d->http, &req, &r, err);
	if (rc < 0)
		goto out;
	if (s.nomem) {
		rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory reading the output of %s",
				     argv[0]);
		goto out;
	}
	if (r.timed_out) {
		rc = 1;
		goto out;
	}
	if (r.status != 200) {
		rc = engine_error(d, &r, what, err);
		goto out;
	}
	if (s.unframed || !mafh__docker_demux_whole(&s.demux)) {
		rc = mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's stream %s",
				     what, s.unframed ? "is not framed as an exec's output"
						      : "ended inside a frame");
		goto out;
	}
	rc = exec_wait(d, eid, deadline, &st, what, err);
	if (rc != 0)
		goto out;
	if (s.syserr_len) {
		printable(msg, sizeof(msg), s.syserr, s.syserr_len);
		rc = mafh__error_set(err, MAFH_EIO, "%s failed: %s", what, msg);
		goto out;
	}
	/* A command the engine could not start never had a process; the engine's reason is
	 * the one line it wrote into the stream. */
	if (st.pid == 0 && (st.exit_code == 126 || st.exit_code == 127)) {
		printable(msg, sizeof(msg), s.head, s.head_len);
		rc = mafh__error_set(err, MAFH_EIO, "the Docker engine could not start %s in the "
				     "container '%s': %s", argv[0], d->name,
				     msg[0] ? msg : "it gave no reason");
		goto out;
	}
	res->exit_code = st.exit_code;
out:
	mafh__docker_reply_clear(&r);
	pthread_mutex_unlock(&d->lock);
	if (rc == 1) {
		/* The deadline passed: what came so far is kept. The engine cannot end an exec,
		 * so the command may still be running in the container. */
		res->timed_out = 1;
		res->exit_code = -1;
		rc = 0;
	}
	if (rc < 0) {
		free(s.out);
		free(s.err);
		res->exit_code = -1;
		return rc;
	}
	res->out = s.out;
	res->out_len = s.out_len;
	res->err = s.err;
	res->err_len = s.err_len;
	return 0;
}

/* ---- stream ---------------------------------------------------------------------------- */

/* An exec whose stdin and stdout stay attached: created here through libcurl, started on a
 * connection of its own that the engine hands over (docker_hijack.c). */
static int docker_stream_open(void *ctx, const char *const *argv, void **stream,
			      struct mafh_error *err)
{
	static const char start_body[] = "{\"Detach\":false,\"Tty\":false}";
	struct docker *d = ctx;
	struct docker_hijack *h = NULL;
	char eid[129], target[200], what[300];
	int rc;

	*stream = NULL;
	snprintf(what, sizeof(what), "starting %s in the container '%s'", argv[0], d->name);
	pthread_mutex_lock(&d->lock);
	rc = exec_create(d, argv, 1, mafh__now_ms() + REQUEST_TIMEOUT_MS, eid, sizeof(eid), what,
			 err);
	pthread_mutex_unlock(&d->lock);
	if (rc == 1)
		rc = mafh__error_set(err, MAFH_ETIMEDOUT, "%s: the Docker engine did not answer",
				     what);
	if (rc != 0)
		return rc;
	snprintf(target, sizeof(target), "/exec/%s/start", eid);
	rc = mafh__docker_hijack_start(mafh__docker_http_socket(d->http), target, start_body,
				       argv[0], &h, err);
	if (rc == 0)
		*stream = h;
	return rc;
}

static int docker_stream_write(void *ctx, void *stream, const void *data, size_t len,
			       int64_t timeout_ms, struct mafh_error *err)
{
	(void)ctx;
	return mafh__docker_hijack_write(stream, data, len, timeout_ms, err);
}

static int docker_stream_read(void *ctx, void *stream, void *buf, size_t cap,
			      int64_t timeout_ms, struct mafh_error *err)
{
	(void)ctx;
	return mafh__docker_hijack_read(stream, buf, cap, timeout_ms, err);
}

static void docker_stream_close(void *ctx, void *stream)
{
	(void)ctx;
	mafh__docker_hijack_close(stream);
}

/* ---- files ---------------------------------------------------------------------------- */

static int docker_write_file(void *ctx, const char *path, const void *data, size_t len,
			     const char *replaces, struct mafh_error *err)
{
	struct docker *d = ctx;
	struct docker_request req = {.method = "PUT", .content_type = "application/x-tar",
				     .timeout_ms = REQUEST_TIMEOUT_MS};
	struct docker_reply r = {0};
	char *tar = NULL, *target = NULL, what[DOCKER_PATH_MAX + 200], *msg = NULL;
	size_t tar_len;
	int rc;

	/* Each write makes the file afresh: there is nothing to gain from a file the run is
	 * done with. */
	(void)replaces;
	if ((rc = path_ok(path, err)) < 0)
		return rc;
	snprintf(what, sizeof(what), "writing %s into the container '%s'", path, d->name);
	rc = mafh__docker_tar_one(path + 1, 0, 0644, data, len, &tar, &tar_len, err);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&d->lock);
	target = archive_target(d, "/", "&noOverwriteDirNonDir=true");
	if (!target) {
		rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory writing %s", path);
		goto out;
	}
	req.target = target;
	req.body = tar;
	req.body_len = tar_len;
	rc = mafh__docker_http_do(d->http, &req, &r, err);
	if (rc < 0)
		goto out;
	if (r.timed_out) {
		rc = timed_out(d, what, req.timeout_ms, err);
	} else if (r.status != 200) {
		/* The whole message: the path it names may be long. */
		msg = malloc(DOCKER_ERROR_BODY_MAX + 1);
		if (msg)
			mafh__docker_message(r.body, r.body_len, msg, DOCKER_ERROR_BODY_MAX + 1);
		rc = msg && mafh__docker_written_then_gone(msg, path) ? 0
								       : engine_error(d, &r, what, err);
	}
out:
	pthread_mutex_unlock(&d->lock);
	mafh__docker_reply_clear(&r);
	free(msg);
	free(target);
	free(tar);
	return rc;
}

/* What a read learns before the tar, and the tar as it comes. */
struct read_state {
	size_t cap, limit;
	struct docker_path_stat ps;
	int decided;               /* the header settled it: NOT_REGULAR or TOO_BIG */
	int bad_header;
	char *tar;
	size_t len, size;
	int truncated, nomem;
};

static int read_headers(void *ud, long status, const char *ps, size_t ps_len)
{
	struct read_state *s = ud;

	if (status != 200 || !ps)
		return 0;
	if (mafh__docker_path_stat_decode(ps, ps_len, &s->ps) < 0) {
		s->bad_header = 1;
		return -1;
	}
	/* The tar is the file as the engine read it a moment later, and has the last word;
	 * what is surely no regular file, or too big, is not fetched. */
	if (s->ps.type != MAFH_FILE_REGULAR || (uint64_t)s->ps.size > s->cap) {
		s->decided = 1;
		return -1;
	}
	return 0;
}

static int read_sink(void *ud, const char *p, size_t n)
{
	struct read_state *s = ud;

	if (s->len + n > s->limit) {
		s->truncated = 1;
		n = s->limit - s->len;
	}
	if (mafh__append(&s->tar, &s->len, &s->size, s->limit, p, n) < 0) {
		s->nomem = 1;
		return -1;
	}
	return s->truncated ? -1 : 0;
}

static int docker_read_file(void *ctx, const char *path, size_t cap,
			    struct mafh_read_result *res, struct mafh_error *err)
{
	struct docker *d = ctx;
	struct read_state s = {.cap = cap};
	struct docker_request req = {.method = "GET", .timeout_ms = REQUEST_TIMEOUT_MS,
				     .sink = read_sink, .headers_done = read_headers, .ud = &s};
	struct docker_reply r = {0};
	char *target = NULL, what[DOCKER_PATH_MAX + 200], msg[200];
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = path_ok(path, err)) < 0)
		return rc;
	s.limit = cap > SIZE_MAX - TAR_SLACK - 1024 ? SIZE_MAX - 1 : cap + TAR_SLACK + 1024;
	snprintf(what, sizeof(what), "reading %s in the container '%s'", path, d->name);
	pthread_mutex_lock(&d->lock);
	target = archive_target(d, path, "");
	if (!target) {
		rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory reading %s", path);
		goto out;
	}
	req.target = target;
	rc = mafh__docker_http_do(d->http, &req, &r, err);
	if (rc < 0)
		goto out;
	if (s.nomem) {
		rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory reading %s", path);
	} else if (r.timed_out) {
		rc = timed_out(d, what, req.timeout_ms, err);
	} else if (r.status == 404) {
		mafh__docker_message(r.body, r.body_len, msg, sizeof(msg));
		if (strncmp(msg, "No such container", 17) == 0)
			rc = engine_error(d, &r, what, err);
		else
			res->status = MAFH_READ_ABSENT;
	} else if (r.status != 200) {
		rc = engine_error(d, &r, what, err);
	} else if (s.bad_header) {
		rc = mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's path-stat "
				     "header cannot be read", what);
	} else if (s.decided) {
		res->status = s.ps.type != MAFH_FILE_REGULAR ? MAFH_READ_NOT_REGULAR
							     : MAFH_READ_TOO_BIG;
		res->size = res->status == MAFH_READ_TOO_BIG ? s.ps.size : 0;
	} else {
		rc = mafh__docker_tar_first(s.tar ? s.tar : "", s.len, s.truncated, cap, res, err);
	}
out:
	pthread_mutex_unlock(&d->lock);
	mafh__docker_reply_clear(&r);
	free(target);
	free(s.tar);
	return rc;
}

/* A 2xx answer to a GET made only for the message of an error: stopped at its headers. */
static int stop_at_success(void *ud, long status, const char *ps, size_t ps_len)
{
	(void)ud;
	(void)ps;
	(void)ps_len;
	return status >= 200 && status <= 299 ? -1 : 0;
}

/* Called with the lock held. 0 and *st; absence is st->exists = 0. */
static int stat_locked(struct docker *d, const char *path, struct mafh_stat *st,
		       struct mafh_error *err)
{
	struct docker_request req = {.method = "HEAD", .timeout_ms = REQUEST_TIMEOUT_MS};
	struct docker_reply r = {0};
	struct docker_path_stat ps;
	char *target, what[DOCKER_PATH_MAX + 200], probe[200];
	int rc;

	memset(st, 0, sizeof(*st));
	snprintf(what, sizeof(what), "looking at %s in the container '%s'", path, d->name);
	target = archive_target(d, path, "");
	if (!target)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory looking at %s", path);
	req.target = target;
	rc = mafh__docker_http_do(d->http, &req, &r, err);
	if (rc < 0)
		goto out;
	if (r.timed_out) {
		rc = timed_out(d, what, req.timeout_ms, err);
	} else if (r.status == 200) {
		if (!r.has_path_stat ||
		    mafh__docker_path_stat_decode(r.path_stat, r.path_stat_len, &ps) < 0) {
			rc = mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's "
					     "path-stat header is missing or cannot be read", what);
		} else {
			st->exists = 1;
			st->size = ps.size;
			st->type = ps.type;
		}
	} else {
		/* A HEAD answer has no body, so no message: an absent path and an absent
		 * container are both 404. The container's inspection tells them apart, and a
		 * GET of the path gives the message of any other error. */
		int was_404 = r.status == 404;

		mafh__docker_reply_clear(&r);
		req.method = "GET";
		req.headers_done = stop_at_success;
		if (was_404) {
			free(target);
			snprintf(probe, sizeof(probe), "/containers/%s/json", d->id);
			target = strdup(probe);
			if (!target) {
				rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory looking at %s",
						     path);
				goto out;
			}
			req.target = target;
			req.reply_cap = DOCKER_REPLY_MAX;
			req.headers_done = NULL;
		}
		rc = mafh__docker_http_do(d->http, &req, &r, err);
		if (rc < 0)
			goto out;
		if (r.timed_out)
			rc = timed_out(d, what, req.timeout_ms, err);
		else if (was_404 && r.status == 200)
			rc = 0;
		else if (r.status < 200 || r.status > 299)
			rc = engine_error(d, &r, what, err);
		else
			rc = mafh__error_set(err, MAFH_EIO, "%s failed: the Docker engine answered "
					     "HTTP %ld", what, r.status);
	}
out:
	mafh__docker_reply_clear(&r);
	free(target);
	return rc;
}

static int docker_stat(void *ctx, const char *path, struct mafh_stat *st,
		       struct mafh_error *err)
{
	struct docker *d = ctx;
	int rc;

	memset(st, 0, sizeof(*st));
	if ((rc = path_ok(path, err)) < 0)
		return rc;
	pthread_mutex_lock(&d->lock);
	rc = stat_locked(d, path, st, err);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* ---- the backend ---------------------------------------------------------------------- */

static void docker_destroy(void *ctx)
{
	struct docker *d = ctx;

	if (!d)
		return;
	mafh__docker_http_free(d->http);
	pthread_mutex_destroy(&d->lock);
	free(d->name);
	free(d->launcher);
	free(d);
}

void mafh_docker_options_init(struct mafh_docker_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
}

/* The engine's socket: the option, else DOCKER_HOST's unix:// path, else the default. */
static int socket_of(const struct mafh_docker_options *o, const char **out,
		     struct mafh_error *err)
{
	const char *env = getenv("DOCKER_HOST");

	if (o->socket_path) {
		*out = o->socket_path;
	} else if (env && *env) {
		if (strncmp(env, "unix://", 7) != 0 || env[7] != '/')
			return mafh__error_set(err, MAFH_EINVAL, "DOCKER_HOST is '%s': the Docker "
					       "backend reaches the engine through a unix socket "
					       "only (unix:///PATH)", env);
		*out = env + 7;
	} else {
		*out = MAFH_DOCKER_SOCKET;
	}
	if ((*out)[0] != '/')
		return mafh__error_set(err, MAFH_EINVAL, "the Docker engine's socket '%s' is not "
				       "an absolute path", *out);
	return 0;
}

/* Asks the engine about the container: its full id, and whether it runs. */
static int inspect_container(struct docker *d, struct mafh_error *err)
{
	struct docker_request req = {.method = "GET", .timeout_ms = REQUEST_TIMEOUT_MS,
				     .reply_cap = DOCKER_REPLY_MAX};
	struct docker_reply r = {0};
	char *esc = mafh__docker_escape(d->http, d->name), *target = NULL, what[300];
	char status[32];
	int rc, running;

	if (!esc || asprintf(&target, "/containers/%s/json", esc) < 0) {
		free(esc);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	free(esc);
	snprintf(what, sizeof(what), "looking up the container '%s'", d->name);
	req.target = target;
	rc = mafh__docker_http_do(d->http, &req, &r, err);
	if (rc < 0)
		goto out;
	if (r.timed_out)
		rc = timed_out(d, what, req.timeout_ms, err);
	else if (r.status == 404)
		rc = mafh__error_set(err, MAFH_ENOENT, "there is no container '%s' on the Docker "
				     "engine at %s", d->name, mafh__docker_http_socket(d->http));
	else if (r.status != 200)
		rc = engine_error(d, &r, what, err);
	else if (mafh__docker_container_parse(r.body, r.body_len, d->id, sizeof(d->id),
					      &running, status, sizeof(status)) < 0)
		rc = mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's account "
				     "of it cannot be read", what);
	else if (!running)
		rc = mafh__error_set(err, MAFH_EIO, "the container '%s' is not running (%s)",
				     d->name, status[0] ? status : "its state is not said");
out:
	mafh__docker_reply_clear(&r);
	free(target);
	return rc;
}

int mafh_backend_docker_new(const char *container, const char *launcher_path,
			    const struct mafh_docker_options *opts_in, struct mafh_backend **out,
			    struct mafh_error *err)
{
	struct mafh_docker_options o;
	struct mafh_backend_ops ops;
	const char *socket = NULL;
	struct docker *d;
	int rc;

	*out = NULL;
	mafh_docker_options_init(&o);
	if (opts_in) {
		if (opts_in->size < sizeof(size_t))
			return mafh__error_set(err, MAFH_EINVAL, "the Docker options' size field is "
					       "not set");
		mafh__copy_versioned(&o, sizeof(o), opts_in, opts_in->size);
		o.size = sizeof(o);
	}
	if (!container || !*container || strlen(container) > 256)
		return mafh__error_set(err, MAFH_EINVAL, "the Docker backend needs a container's "
				       "name or id (at most 256 bytes)");
	if ((rc = socket_of(&o, &socket, err)) < 0)
		return rc;
	d = calloc(1, sizeof(*d));
	if (!d)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	pthread_mutex_init(&d->lock, NULL);
	d->name = strdup(container);
	d->launcher = strdup(launcher_path ? launcher_path : MAFH_DOCKER_LAUNCHER);
	if (!d->name || !d->launcher) {
		docker_destroy(d);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	rc = mafh__docker_http_new(socket, &d->http, err);
	if (rc == 0)
		rc = inspect_container(d, err);
	if (rc < 0) {
		docker_destroy(d);
		return rc;
	}
	memset(&ops, 0, sizeof(ops));
	ops.size = sizeof(ops);
	/* An exec may block as long as its command runs: `maf-launch wait` serves calls in
	 * one exec each. The engine offers no notification of a file. */
	ops.caps = MAFH_CAP_EXEC | MAFH_CAP_FILES_IN | MAFH_CAP_FILES_OUT |
		   MAFH_CAP_DETACHED_EXEC | MAFH_CAP_BLOCKING_EXEC | MAFH_CAP_STREAM;
	ops.ctx = d;
	ops.launcher_path = d->launcher;
	ops.exec = docker_exec;
	ops.write_file = docker_write_file;
	ops.read_file = docker_read_file;
	ops.stat = docker_stat;
	ops.destroy = docker_destroy;
	ops.stream_open = docker_stream_open;
	ops.stream_write = docker_stream_write;
	ops.stream_read = docker_stream_read;
	ops.stream_close = docker_stream_close;
	return mafh_backend_new(&ops, out, err);
}

/* The backend's context when b is a Docker backend, else NULL. */
static struct docker *docker_of(const struct mafh_backend *b)
{
	return b && b->ops.destroy == docker_destroy ? b->ops.ctx : NULL;
}

int64_t mafh_backend_docker_requests(const struct mafh_backend *b)
{
	struct docker *d = docker_of(b);
	int64_t n;

	if (!d)
		return -1;
	pthread_mutex_lock(&d->lock);
	n = mafh__docker_http_requests(d->http);
	pthread_mutex_unlock(&d->lock);
	return n;
}

int mafh_backend_docker_mkdtemp(struct mafh_backend *b, char *tmpl, struct mafh_error *err)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	struct docker *d = docker_of(b);
	size_t len = tmpl ? strlen(tmpl) : 0, i;
	int rc = 0, tries;

	if (!d)
		return mafh__error_set(err, MAFH_EINVAL, "mafh_backend_docker_mkdtemp takes a "
				       "Docker backend");
	if (len < 7 || strcmp(tmpl + len - 6, "XXXXXX") != 0 || path_ok(tmpl, NULL) < 0)
		return mafh__error_set(err, MAFH_EINVAL, "the directory template '%s' is not an "
				       "absolute path ending in XXXXXX", tmpl ? tmpl : "(none)");
	pthread_mutex_lock(&d->lock);
	for (tries = 0; tries < MKDTEMP_TRIES; tries++) {
		struct docker_request req = {.method = "PUT", .content_type = "application/x-tar",
					     .timeout_ms = REQUEST_TIMEOUT_MS};
		struct docker_reply r = {0};
		unsigned char rnd[6];
		struct mafh_stat st;
		char *tar = NULL, *target = NULL, what[DOCKER_PATH_MAX + 200];
		size_t tar_len;

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			rc = mafh__error_set(err, -errno, "no random bytes for a directory name: %s",
					     strerror(errno));
			break;
		}
		for (i = 0; i < 6; i++)
			tmpl[len - 6 + i] = letters[rnd[i] % (sizeof(letters) - 1)];
		/* A directory entry over an existing directory would take it over (its mode
		 * and owner set anew): only a name nobody has is used. */
		rc = stat_locked(d, tmpl, &st, err);
		if (rc < 0)
			break;
		if (st.exists)
			continue;
		snprintf(what, sizeof(what), "making the directory %s in the container '%s'",
			 tmpl, d->name);
		rc = mafh__docker_tar_one(tmpl + 1, 1, 0700, NULL, 0, &tar, &tar_len, err);
		if (rc == 0 && !(target = archive_target(d, "/", "&noOverwriteDirNonDir=true")))
			rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory making %s", tmpl);
		if (rc == 0) {
			req.target = target;
			req.body = tar;
			req.body_len = tar_len;
			rc = mafh__docker_http_do(d->http, &req, &r, err);
			if (rc == 0 && r.timed_out)
				rc = timed_out(d, what, req.timeout_ms, err);
			else if (rc == 0 && r.status != 200)
				rc = engine_error(d, &r, what, err);
		}
		mafh__docker_reply_clear(&r);
		free(target);
		free(tar);
		break;
	}
	if (tries == MKDTEMP_TRIES)
		rc = mafh__error_set(err, MAFH_EEXIST, "no free name for %s after %d tries", tmpl,
				     MKDTEMP_TRIES);
	pthread_mutex_unlock(&d->lock);
	return rc;
}
