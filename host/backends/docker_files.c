/* The Docker backend's file ops over the archive endpoint (docker_op.h), and mkdtemp:
 *   write_file: PUT /containers/{id}/archive?path=/ with a tar of the one file at its path
 *               below / (the engine makes missing parents, and replaces a file or symlink
 *               at the path without following it; noOverwriteDirNonDir keeps a directory).
 *   read_file:  GET /containers/{id}/archive?path=FILE, its first entry (docker_tar.c),
 *               stopped at the path-stat header when that says it is no regular file or
 *               past the cap.
 *   stat:       HEAD of the same: the X-Docker-Container-Path-Stat header.
 * Each is one request (a failed stat one more, to tell what failed). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "docker_op.h"

/* A read keeps at most the cap and this much of the tar around it: headers (pax records
 * of a long name or link target included), padding and the end blocks. */
#define TAR_SLACK (64u << 10)
#define MKDTEMP_TRIES 16


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
	char *esc = mafh__docker_escape(path), *t = NULL;

	if (esc && asprintf(&t, "/containers/%s/archive?path=%s%s", d->id, esc, extra) < 0)
		t = NULL;
	free(esc);
	return t;
}

/* ---- what the engine sends as a request goes -------------------------------------- */

static int read_headers(void *ud, long status, const char *ps, size_t ps_len)
{
	struct docker_read_state *s = ud;

	/* Podman answers 404 for a symbolic link whose target is absent, with the link's
	 * path-stat: the link is there, and is no regular file. */
	if (status == 404 && ps && mafh__docker_path_stat_decode(ps, ps_len, &s->ps) == 0 &&
	    s->ps.type == MAFH_FILE_SYMLINK) {
		s->decided = 1;
		return -1;
	}
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
	struct docker_read_state *s = ud;

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

/* A 2xx answer to a GET made only for the message of an error: stopped at its headers. */
static int stop_at_success(void *ud, long status, const char *ps, size_t ps_len)
{
	(void)ud;
	(void)ps;
	(void)ps_len;
	return status >= 200 && status <= 299 ? -1 : 0;
}

/* ---- the answers ------------------------------------------------------------------- */

/* An answer a file op waits for, with its error when the engine said no. */
static int put_done(struct docker_task *t, struct mafh_error *err)
{
	char *msg;
	int rc;

	if (t->r.timed_out)
		return mafh__docker_timed_out(t->d, t->what, t->req.timeout_ms, err);
	if (t->r.status == 200)
		return 0;
	/* The whole message: the path it names may be long. */
	msg = malloc(DOCKER_ERROR_BODY_MAX + 1);
	if (msg)
		mafh__docker_message(t->r.body, t->r.body_len, msg, DOCKER_ERROR_BODY_MAX + 1);
	rc = msg && mafh__docker_written_then_gone(msg, t->op->path)
		     ? 0 : mafh__docker_engine_error(t->d, &t->r, t->what, err);
	free(msg);
	return rc;
}

static int get_done(struct docker_task *t, struct mafh_op_result *res)
{
	struct docker_read_state *s = &t->rs;
	struct mafh_error *err = &res->detail;
	char msg[200];

	if (s->nomem)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading %s", t->op->path);
	if (t->r.timed_out)
		return mafh__docker_timed_out(t->d, t->what, t->req.timeout_ms, err);
	if (t->r.status == 404 && !s->decided) {
		mafh__docker_message(t->r.body, t->r.body_len, msg, sizeof(msg));
		if (mafh__docker_no_such_container(msg))
			return mafh__docker_engine_error(t->d, &t->r, t->what, err);
		res->read.status = MAFH_READ_ABSENT;
		return 0;
	}
	if (t->r.status != 200 && !s->decided)
		return mafh__docker_engine_error(t->d, &t->r, t->what, err);
	if (s->bad_header)
		return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's path-stat "
				       "header cannot be read", t->what);
	if (s->decided) {
		res->read.status = s->ps.type != MAFH_FILE_REGULAR ? MAFH_READ_NOT_REGULAR
								   : MAFH_READ_TOO_BIG;
		res->read.size = res->read.status == MAFH_READ_TOO_BIG ? s->ps.size : 0;
		return 0;
	}
	return mafh__docker_tar_first(s->tar ? s->tar : "", s->len, s->truncated, s->cap,
				      &res->read, err);
}

/* A STAT's HEAD is in: the result, or the request that tells what a failure was. */
static int head_done(struct docker_task *t, int64_t now, struct mafh_op_result *res)
{
	struct mafh_error *err = &res->detail;
	struct docker_path_stat ps;

	if (t->r.timed_out)
		return mafh__docker_timed_out(t->d, t->what, t->req.timeout_ms, err);
	/* Podman answers 404 for a symbolic link whose target is absent, with the link's
	 * path-stat (Docker never sends one with a 404). */
	if (t->r.status == 404 && t->r.has_path_stat &&
	    mafh__docker_path_stat_decode(t->r.path_stat, t->r.path_stat_len, &ps) == 0 &&
	    ps.type == MAFH_FILE_SYMLINK) {
		res->stat.exists = 1;
		res->stat.size = ps.size;
		res->stat.type = ps.type;
		return 0;
	}
	if (t->r.status == 200) {
		if (!t->r.has_path_stat ||
		    mafh__docker_path_stat_decode(t->r.path_stat, t->r.path_stat_len, &ps) < 0)
			return mafh__error_set(err, MAFH_EPROTO, "%s failed: the Docker engine's "
					       "path-stat header is missing or cannot be read",
					       t->what);
		res->stat.exists = 1;
		res->stat.size = ps.size;
		res->stat.type = ps.type;
		return 0;
	}
	/* A HEAD answer has no body, so no message: an absent path and an absent container
	 * are both 404. The container's inspection tells them apart, and a GET of the path
	 * gives the message of any other error. */
	t->was_404 = t->r.status == 404;
	if (t->was_404) {
		t->req.reply_cap = DOCKER_REPLY_MAX;
		return mafh__docker_request(t, now, "GET",
					    mafh__docker_text_of("/containers/%s/json", t->d->id),
					    STAT_PROBE, err);
	}
	t->req.headers_done = stop_at_success;
	return mafh__docker_request(t, now, "GET", archive_target(t->d, t->op->path, ""),
				    STAT_MESSAGE, err);
}

static int probe_done(struct docker_task *t, struct mafh_error *err)
{
	if (t->r.timed_out)
		return mafh__docker_timed_out(t->d, t->what, t->req.timeout_ms, err);
	if (t->was_404 && t->r.status == 200)
		return 0;
	if (t->r.status < 200 || t->r.status > 299)
		return mafh__docker_engine_error(t->d, &t->r, t->what, err);
	return mafh__error_set(err, MAFH_EIO, "%s failed: the Docker engine answered HTTP %ld",
			       t->what, t->r.status);
}

int mafh__docker_file_next(struct docker_task *t, int64_t now, struct mafh_op_result *res)
{
	switch (t->step) {
	case PUT_FILE:
		return put_done(t, &res->detail);
	case GET_FILE:
		return get_done(t, res);
	case HEAD_FILE:
		return head_done(t, now, res);
	default:  /* STAT_PROBE, STAT_MESSAGE */
		return probe_done(t, &res->detail);
	}
}

int mafh__docker_file_begin(struct docker_task *t, int64_t now, struct mafh_error *err)
{
	const struct mafh_op *op = t->op;
	struct docker *d = t->d;
	int rc;

	if ((rc = path_ok(op->path, err)) < 0)
		return rc;
	switch (op->kind) {
	case MAFH_OP_WRITE:
		/* Each write makes the file afresh (replaces is ignored): there is nothing to
		 * gain from a file the run is done with. */
		snprintf(t->what, sizeof(t->what), "writing %s into the container '%s'", op->path,
			 d->name);
		rc = mafh__docker_tar_one(op->path + 1, 0, 0644, op->data, op->len, &t->body,
					  &t->body_len, err);
		if (rc < 0)
			return rc;
		t->req.content_type = "application/x-tar";
		t->req.body = t->body;
		t->req.body_len = t->body_len;
		t->req.timeout_ms = d->request_timeout_ms;
		return mafh__docker_request(t, now, "PUT", archive_target(d, "/",
					    "&noOverwriteDirNonDir=true"), PUT_FILE, err);
	case MAFH_OP_READ:
		snprintf(t->what, sizeof(t->what), "reading %s in the container '%s'", op->path,
			 d->name);
		t->rs.cap = op->cap;
		t->rs.limit = op->cap > SIZE_MAX - TAR_SLACK - 1024 ? SIZE_MAX - 1
								   : op->cap + TAR_SLACK + 1024;
		t->req.timeout_ms = d->request_timeout_ms;
		t->req.sink = read_sink;
		t->req.headers_done = read_headers;
		t->req.ud = &t->rs;
		return mafh__docker_request(t, now, "GET", archive_target(d, op->path, ""),
					    GET_FILE, err);
	default:  /* STAT */
		snprintf(t->what, sizeof(t->what), "looking at %s in the container '%s'", op->path,
			 d->name);
		t->req.timeout_ms = d->request_timeout_ms;
		return mafh__docker_request(t, now, "HEAD", archive_target(d, op->path, ""),
					    HEAD_FILE, err);
	}
}


/* ---- mkdtemp ----------------------------------------------------------------------- */

int mafh_backend_docker_mkdtemp(struct mafh_backend *b, char *tmpl, struct mafh_error *err)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	struct docker *d = mafh__docker_of(b);
	size_t len = tmpl ? strlen(tmpl) : 0, i;
	int rc = 0, tries;

	if (!d)
		return mafh__error_set(err, MAFH_EINVAL, "mafh_backend_docker_mkdtemp takes a "
				       "Docker backend");
	if (len < 7 || strcmp(tmpl + len - 6, "XXXXXX") != 0 || path_ok(tmpl, NULL) < 0)
		return mafh__error_set(err, MAFH_EINVAL, "the directory template '%s' is not an "
				       "absolute path ending in XXXXXX", tmpl ? tmpl : "(none)");
	for (tries = 0; tries < MKDTEMP_TRIES; tries++) {
		struct docker_request req = {.method = "PUT", .content_type = "application/x-tar",
					     .timeout_ms = d->request_timeout_ms};
		struct docker_reply r = {0};
		unsigned char rnd[6];
		struct mafh_op op = {.size = sizeof(op), .kind = MAFH_OP_STAT, .path = tmpl};
		struct mafh_op_result st;
		void *state = NULL;
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
		mafh__backend_perform(b, &state, &op, &st);
		if (st.error) {
			if (err) {
				*err = st.detail;
				err->code = st.error;
			}
			rc = st.error;
			break;
		}
		if (st.stat.exists)
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
				rc = mafh__docker_timed_out(d, what, req.timeout_ms, err);
			else if (rc == 0 && r.status != 200)
				rc = mafh__docker_engine_error(d, &r, what, err);
		}
		mafh__docker_reply_clear(&r);
		free(target);
		free(tar);
		break;
	}
	if (tries == MKDTEMP_TRIES)
		rc = mafh__error_set(err, MAFH_EEXIST, "no free name for %s after %d tries", tmpl,
				     MKDTEMP_TRIES);
	return rc;
}
