/* An op of the Docker backend, as the files that make it share it (mafh__docker_ names;
 * docker.h has the engine's requests, stdio, tars and parsing). Not installed.
 *   docker.c        the context, the nb table (internal.h) that begins, steps, watches and
 *                   frees an op and hands each step's end to its op's file, creation
 *   docker_exec.c   EXEC, with or without an input, and STREAM_OPEN: the exec's state
 *                   machine over engine requests and a connection handed over
 *   docker_files.c  write_file, read_file and stat over the archive endpoint, and mkdtemp
 * Each op is a struct docker_task at one step at a time; a step waits on one thing (a
 * request, the connection handed over, a pause), and its file's next() takes it on. */
#ifndef MAFHOST_DOCKER_OP_H
#define MAFHOST_DOCKER_OP_H

#include <stddef.h>
#include <stdint.h>

#include "docker.h"
#include "internal.h"

/* What an exec keeps of stderr (stdout's cap is the caller's), of the engine's own errors
 * in the stream, and of stdout's first bytes for the engine's word when the command did not
 * start. The rest is read and dropped. */
#define DOCKER_ERR_CAP (64u << 10)
#define DOCKER_SYSERR_CAP 1024
#define DOCKER_OUT_HEAD 512

/* The backend's context: read-only once made (the pool in docker_http.c is locked), so ops
 * go on at once, from any threads. */
struct docker {
	struct docker_http *http;
	int64_t request_timeout_ms; /* each request but an exec's stream */
	char *name;                /* the container as given, for sentences */
	char id[129];              /* its full id, as the engine says */
	char *launcher;
};

/* Where an exec's stream goes: stdout up to the caller's cap, its first bytes apart,
 * stderr and the engine's own errors up to theirs. */
struct docker_exec_sinks {
	struct docker_demux demux;
	char *out, *err;
	size_t out_len, out_size, out_cap;
	size_t err_len, err_size;
	char head[DOCKER_OUT_HEAD];
	size_t head_len;
	char syserr[DOCKER_SYSERR_CAP];
	size_t syserr_len;
	int nomem, unframed;
};

/* What a read learns before the tar, and the tar as it comes. */
struct docker_read_state {
	size_t cap, limit;
	struct docker_path_stat ps;
	int decided;               /* the header settled it: NOT_REGULAR or TOO_BIG */
	int bad_header;
	char *tar;
	size_t len, size;
	int truncated, nomem;
};

/* Where an op stands. */
enum docker_step {
	EX_CREATE,     /* EXEC: POST /containers/{id}/exec */
	EX_START,      /* POST /exec/{eid}/start, its answer the output's stream */
	EX_ATTACH,     /* with an input: the start on a connection handed over */
	EX_FEED,       /* the input written on it, the output read meanwhile */
	EX_DRAIN,      /* the output read to its end */
	EX_INSPECT,    /* GET /exec/{eid}/json */
	EX_PAUSE,      /* between two inspections */
	PUT_FILE,      /* WRITE: PUT /containers/{id}/archive?path=/ */
	GET_FILE,      /* READ: GET /containers/{id}/archive?path=FILE */
	HEAD_FILE,     /* STAT: HEAD of the same */
	STAT_PROBE,    /* after a 404: GET /containers/{id}/json */
	STAT_MESSAGE,  /* after another status: a GET of the path, for its message */
	OPEN_CREATE,   /* STREAM_OPEN: POST /containers/{id}/exec, stdin attached */
	OPEN_ATTACH,   /* its start on a connection handed over */
	STDIO,         /* STREAM_READ, STREAM_WRITE, STREAM_CLOSE (docker_hijack.c) */
	SLEEP,         /* WAIT_UNTIL: the engine tells of no change, so a sleep */
};

/* A next()'s word for an exec whose deadline passed: timed_out, with what came. */
#define DOCKER_TIMED_OUT 2

struct docker_task {
	struct docker *d;
	const struct mafh_op *op;
	void **state;
	enum docker_step step;
	int64_t deadline;          /* the exec's; 0: none */
	char what[DOCKER_PATH_MAX + 200];
	/* The request under way, and what it borrows. */
	struct docker_xfer *x;
	struct docker_request req;
	struct docker_reply r;
	char *target;
	char *body;
	size_t body_len;
	/* EXEC */
	struct docker_exec_sinks sinks;
	char eid[129];
	struct docker_exec_state es;
	int64_t pause, wake_at;
	struct docker_hijack *conn;
	size_t fed;
	/* READ */
	struct docker_read_state rs;
	/* STAT */
	int was_404;
	/* STREAM_OPEN: the state made for the connection; the other stream ops. */
	struct docker_stdio *stdio;
	struct docker_stdio_op sop;
};

/* ---- docker.c ------------------------------------------------------------------------- */

/* The error of an answer that is not the one asked for: the engine's message, or its HTTP
 * status, after what (which says what was being done). "No such container" is said as
 * such, whatever was being done. Returns the code set in err. */
int mafh__docker_engine_error(struct docker *d, const struct docker_reply *r, const char *what,
			      struct mafh_error *err);
/* A request that got no answer within ms: MAFH_ETIMEDOUT, its sentence in err. */
int mafh__docker_timed_out(struct docker *d, const char *what, int64_t ms,
			   struct mafh_error *err);
/* Starts a request of t (t->req filled but for what is set here), as step; target is
 * malloc'd (owned by t from now on; NULL is out of memory). 1, or a negative code. */
int mafh__docker_request(struct docker_task *t, int64_t now, const char *method, char *target,
			 enum docker_step step, struct mafh_error *err);
/* fmt with s, malloc'd, or NULL. */
char *mafh__docker_text_of(const char *fmt, const char *s);
/* The backend's context when b is a Docker backend, else NULL. */
struct docker *mafh__docker_of(const struct mafh_backend *b);

/* ---- docker_exec.c -------------------------------------------------------------------- */

/* An EXEC or STREAM_OPEN begun: 1, or a negative code (its sentence in err). */
int mafh__docker_exec_begin(struct docker_task *t, int64_t now, struct mafh_error *err);
/* What an exec step other than a request waits on (EX_ATTACH, OPEN_ATTACH, EX_FEED,
 * EX_DRAIN, EX_PAUSE), taken further: 1 while it waits, 0 once it is through, or an error
 * (in err). */
int mafh__docker_exec_io(struct docker_task *t, int64_t now, struct mafh_error *err);
/* The same steps' descriptors (in fds, their count returned) and time (in *until). */
int mafh__docker_exec_want(const struct docker_task *t, struct mafh_pollfd *fds,
			   int64_t *until);
/* Every transition of an EXEC or STREAM_OPEN: the step t is at is through; the next is begun
 * (1), or the op is over (0, res filled), or failed (a negative code, its sentence in
 * res->detail), or an exec timed out (DOCKER_TIMED_OUT). */
int mafh__docker_exec_next(struct docker_task *t, int64_t now, struct mafh_op_result *res);

/* ---- docker_files.c ------------------------------------------------------------------- */

/* A WRITE, READ or STAT begun: 1, or a negative code (its sentence in err). */
int mafh__docker_file_begin(struct docker_task *t, int64_t now, struct mafh_error *err);
/* The request of a WRITE, READ or STAT is in: the op is over (0, res filled), failed (a
 * negative code, its sentence in res->detail), or the next request is begun (1). */
int mafh__docker_file_next(struct docker_task *t, int64_t now, struct mafh_op_result *res);

#endif
