/* The Docker backend's stream: an exec started over a connection the engine then hands
 * over to the exec's stdio (an HTTP upgrade, "hijacking"), so that what is written on the
 * connection reaches the command's stdin and its stdout and stderr come back framed as an
 * exec's output always is. libcurl can take over a connection after an upgrade only for
 * WebSocket, so this one request is written here, and its answer's head parsed by
 * mafh__docker_upgrade_head (docker_parse.c, fuzzed). Everything else goes through libcurl
 * (docker_http.c).
 *
 * Nothing here blocks: the connection is opened (a non-blocking connect, the request sent,
 * the answer's head read) and then used by steps that do what the socket allows now, and
 * say what they wait on. Its bytes cross in conn_recv and conn_send alone, over one of two
 * channels: a unix socket of its own, or, for an engine over TCP (with TLS or without) or
 * ssh, a connection libcurl makes and hands over (a CONNECT_ONLY request of docker_http.c,
 * then curl_easy_recv and curl_easy_send). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "docker.h"
#include "internal.h"

#define HEAD_MAX 8192
#define STDERR_KEEP 4096
/* The opening (connect, request, the answer's head) within this, where the caller names no
 * time of its own. */
#define OPEN_MS 10000
/* A connect the engine's full backlog refused is tried again after this. */
#define RETRY_MS 5
/* What one recv takes. */
#define CHUNK 16384
/* A stream write whose op says no timeout. */
#define WRITE_TIMEOUT_MS 30000
/* What a close gives the command to end once its stdin has: the stream's end is waited
 * for that long at most. */
#define CLOSE_GRACE_MS 1000
/* What a write or a close reads at most in one step. */
#define STEP_READ 65536

enum opening {
	HJ_CONNECT,
	HJ_SEND,
	HJ_HEAD,
	HJ_OPEN,
};

struct docker_hijack {
	int fd;                    /* the unix socket's, or -1 over libcurl's connection */
	struct docker_http *http;
	struct docker_xfer *x;     /* over libcurl: the connection's request */
	struct docker_request creq;
	struct docker_reply crep;
	/* Over libcurl, what one curl_easy_recv gave past what was asked: whole TLS records are
	 * taken (CHUNK holds the largest), so none is left half-read where no poll sees it. */
	char *cbuf;
	size_t coff, clen;
	enum opening st;
	int64_t deadline;          /* of the opening */
	int64_t retry_at;          /* HJ_CONNECT: when to try again, 0 at once */
	int connecting;            /* HJ_CONNECT: a connect in progress, awaiting POLLOUT */
	struct sockaddr_un sa;
	char *req;
	size_t req_len, sent;
	char head[HEAD_MAX + 1];
	size_t have;
	struct docker_demux demux;
	docker_sink_fn sink;
	void *ud;
	int ended;                 /* the engine ended the connection */
	char name[64];
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/* ---- the channel ---------------------------------------------------------------------- */

/* Up to n bytes of the connection into buf: their count, 0 at its end, -EAGAIN when none is
 * there now, or -errno. */
static long conn_recv(struct docker_hijack *h, void *buf, size_t n)
{
	if (h->x) {
		size_t k;

		if (h->coff == h->clen) {
			long r = mafh__docker_xfer_recv(h->x, h->cbuf, CHUNK);

			if (r <= 0)
				return r;
			h->coff = 0;
			h->clen = (size_t)r;
		}
		k = h->clen - h->coff < n ? h->clen - h->coff : n;
		memcpy(buf, h->cbuf + h->coff, k);
		h->coff += k;
		return (long)k;
	}
	for (;;) {
		ssize_t r = recv(h->fd, buf, n, 0);

		if (r >= 0)
			return (long)r;
		if (errno != EINTR)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	}
}

/* What the connection takes now of buf[0..n): the count, -EAGAIN when none, or -errno. */
static long conn_send(struct docker_hijack *h, const void *buf, size_t n)
{
	/* A record at a time: a TLS write that would block is retried with the same bytes,
	 * and one of a few MiB would hold them all back from the engine until it is done. */
	if (h->x)
		return mafh__docker_xfer_send(h->x, buf, n < CHUNK ? n : CHUNK);
	for (;;) {
		ssize_t r = send(h->fd, buf, n, MSG_NOSIGNAL);

		if (r >= 0)
			return (long)r;
		if (errno != EINTR)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	}
}

/* ---- the opening ---------------------------------------------------------------------- */

int mafh__docker_hijack_start(struct docker_http *http, const char *target, const char *body,
			      const char *name, int64_t now_ms, int64_t open_ms,
			      docker_sink_fn sink, void *ud, struct docker_hijack **out,
			      struct mafh_error *err)
{
	const struct docker_endpoint *ep = mafh__docker_http_endpoint(http);
	const char *socket_path = ep->via == DOCKER_VIA_UNIX ? ep->socket : ep->where;
	struct docker_hijack *h;
	int n;

	*out = NULL;
	if (ep->via == DOCKER_VIA_UNIX && strlen(socket_path) >= sizeof(h->sa.sun_path))
		return mafh__error_set(err, MAFH_EINVAL, "the Docker engine's socket path is too "
				       "long: %s", socket_path);
	h = calloc(1, sizeof(*h));
	if (!h)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	h->fd = -1;
	h->http = http;
	h->sink = sink;
	h->ud = ud;
	if (open_ms <= 0)
		open_ms = OPEN_MS;
	h->deadline = now_ms + open_ms;
	snprintf(h->name, sizeof(h->name), "%s", name);
	snprintf(h->socket, sizeof(h->socket), "%s", socket_path);
	mafh__docker_demux_init(&h->demux);
	n = asprintf(&h->req, "POST " DOCKER_API "%s HTTP/1.1\r\nHost: docker\r\n"
		     "Content-Type: application/json\r\nContent-Length: %zu\r\n"
		     "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n%s", target, strlen(body), body);
	if (n < 0) {
		free(h);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	h->req_len = (size_t)n;
	if (ep->via != DOCKER_VIA_UNIX) {
		int rc;

		h->creq = (struct docker_request){.method = "GET", .target = "/_ping",
						  .timeout_ms = open_ms, .connect_only = 1};
		if (!(h->cbuf = malloc(CHUNK))) {
			mafh__docker_hijack_free(h);
			return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
		}
		rc = mafh__docker_xfer_start(http, &h->creq, &h->crep, now_ms, &h->x, err);
		if (rc < 0) {
			mafh__docker_hijack_free(h);
			return rc;
		}
		*out = h;
		return 0;
	}
	h->sa.sun_family = AF_UNIX;
	memcpy(h->sa.sun_path, socket_path, strlen(socket_path) + 1);
	h->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (h->fd < 0) {
		int e = errno;

		mafh__docker_hijack_free(h);
		return mafh__error_set(err, -e, "cannot reach the Docker engine at %s: %s",
				       socket_path, strerror(e));
	}
	*out = h;
	return 0;
}

/* The answer's head is in, with a status that is not a handover: what its body says. */
static int refused(struct docker_hijack *h, long hl, long status, struct mafh_error *err)
{
	char line[200];
	long r;

	/* An error's body follows its head: a little of it says why. */
	if (hl > 0 && h->have < HEAD_MAX) {
		r = conn_recv(h, h->head + h->have, HEAD_MAX - h->have);
		if (r > 0)
			h->have += (size_t)r;
	}
	mafh__docker_message(hl > 0 ? h->head + hl : "", hl > 0 ? h->have - (size_t)hl : 0,
			     line, sizeof(line));
	return mafh__error_set(err, status == 404 ? MAFH_ENOENT : MAFH_EIO,
			       "the Docker engine did not start %s on a stream (%s%ld)%s%s",
			       h->name, hl <= 0 ? "no answer, status " : "status ", status,
			       line[0] ? ": " : "", line);
}

/* Connects (0), or waits for the connection (1), or fails. */
static int connect_step(struct docker_hijack *h, int64_t now, struct mafh_error *err)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (h->x) {
		int rc = mafh__docker_xfer_step(h->x, now, err);

		if (rc != 0)
			return rc;
		if (h->crep.timed_out)
			return mafh__error_set(err, MAFH_ETIMEDOUT, "cannot reach the Docker engine "
					       "at %s: %s", h->socket, strerror(ETIMEDOUT));
		return mafh__docker_xfer_fd(h->x) < 0
		       ? mafh__error_set(err, MAFH_EIO, "cannot reach the Docker engine at %s: "
					 "the connection was not kept", h->socket) : 0;
	}
	if (h->connecting) {
		struct pollfd pf = {.fd = h->fd, .events = POLLOUT};

		if (poll(&pf, 1, 0) <= 0)
			return 1;
		if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
			e = errno;
		h->connecting = 0;
		if (!e)
			return 0;
	} else {
		if (now < h->retry_at)
			return 1;
		if (connect(h->fd, (struct sockaddr *)&h->sa, sizeof(h->sa)) == 0)
			return 0;
		e = errno;
		if (e == EINPROGRESS || e == EINTR) {
			h->connecting = 1;
			return 1;
		}
	}
	/* A unix socket's connect fails with EAGAIN while the listener's backlog is full. */
	if (e == EAGAIN) {
		h->retry_at = now + RETRY_MS;
		return 1;
	}
	return mafh__error_set(err, -e, "cannot reach the Docker engine at %s: %s", h->socket,
			       strerror(e));
}

int mafh__docker_hijack_opening(struct docker_hijack *h, int64_t now_ms,
				struct mafh_error *err)
{
	long n, hl, status = 0;
	int rc;

	for (;;) {
		switch (h->st) {
		case HJ_CONNECT:
			rc = connect_step(h, now_ms, err);
			if (rc < 0)
				return rc;
			if (rc == 1)
				goto wait;
			h->st = HJ_SEND;
			continue;
		case HJ_SEND:
			n = conn_send(h, h->req + h->sent, h->req_len - h->sent);
			if (n == -EAGAIN)
				goto wait;
			if (n < 0)
				return mafh__error_set(err, (int)n, "cannot start %s through the "
						       "Docker engine: %s", h->name,
						       strerror((int)-n));
			h->sent += (size_t)n;
			if (h->sent == h->req_len)
				h->st = HJ_HEAD;
			continue;
		case HJ_HEAD:
			n = conn_recv(h, h->head + h->have, HEAD_MAX - h->have);
			if (n == -EAGAIN)
				goto wait;
			if (n <= 0)
				return refused(h, 0, 0, err);
			h->have += (size_t)n;
			h->head[h->have] = '\0';
			hl = mafh__docker_upgrade_head(h->head, h->have, &status);
			if (hl < 0 || (hl == 0 && h->have == HEAD_MAX))
				return refused(h, 0, 0, err);
			if (hl == 0)
				continue;
			/* 101 from an engine that upgrades; older ones answer 200 and go on. */
			if (status != 101 && status != 200)
				return refused(h, hl, status, err);
			h->st = HJ_OPEN;
			/* What came after the head is the stream's already. */
			rc = (size_t)hl < h->have
			     ? mafh__docker_demux_feed(&h->demux, h->head + hl,
						       h->have - (size_t)hl, h->sink, h->ud) : 0;
			if (rc == -2)
				return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading "
						       "the stream of %s", h->name);
			if (rc < 0)
				return mafh__error_set(err, MAFH_EPROTO, "the stream of %s is "
						       "not framed as an exec's output",
						       h->name);
			return 0;
		case HJ_OPEN:
			return 0;
		}
	}
wait:
	if (now_ms < h->deadline)
		return 1;
	if (h->st == HJ_CONNECT)
		return mafh__error_set(err, MAFH_ETIMEDOUT, "cannot reach the Docker engine at "
				       "%s: %s", h->socket, strerror(ETIMEDOUT));
	if (h->st == HJ_SEND)
		return mafh__error_set(err, MAFH_ETIMEDOUT, "cannot start %s through the Docker "
				       "engine: %s", h->name, strerror(ETIMEDOUT));
	return refused(h, 0, 0, err);
}

int mafh__docker_hijack_opening_want(const struct docker_hijack *h, struct mafh_pollfd *fd,
				     int64_t *until_ms)
{
	*until_ms = h->deadline;
	if (h->x && h->st == HJ_CONNECT) {
		int64_t at;
		int n = mafh__docker_xfer_want(h->x, fd, &at);

		if (at < *until_ms)
			*until_ms = at;
		return n;
	}
	if (h->x && h->coff < h->clen) {
		*until_ms = 0;
		return 0;
	}
	/* Before a connect tried again, the socket is watched for nothing: unconnected, it
	 * would be reported hung up at once. */
	if (h->st == HJ_CONNECT && !h->connecting) {
		if (h->retry_at < h->deadline)
			*until_ms = h->retry_at;
		return 0;
	}
	fd->fd = mafh__docker_hijack_fd(h);
	fd->events = h->st == HJ_HEAD ? POLLIN : POLLOUT;
	return 1;
}

int mafh__docker_hijack_fd(const struct docker_hijack *h)
{
	return h->x ? mafh__docker_xfer_fd(h->x) : h->fd;
}

int mafh__docker_hijack_want(const struct docker_hijack *h, short events,
			     struct mafh_pollfd *fd, int64_t *until_ms)
{
	/* Bytes already taken from the connection are there now, whatever a poll says; so is
	 * an end already read with the last of them (over TLS the engine ends its writing with
	 * close_notify and keeps the connection open: no poll would see that end again). */
	if ((h->ended || (h->x && h->coff < h->clen)) && (events & POLLIN))
		*until_ms = 0;
	fd->fd = mafh__docker_hijack_fd(h);
	fd->events = events;
	return 1;
}

/* ---- once open ------------------------------------------------------------------------ */

int mafh__docker_hijack_pull(struct docker_hijack *h, size_t budget, struct mafh_error *err)
{
	char buf[CHUNK];
	size_t got = 0;
	int rc;

	if (h->ended)
		return MAFH_EPIPE;
	while (got < budget) {
		long n = conn_recv(h, buf, sizeof(buf));

		if (n == -EAGAIN)
			break;
		if (n == 0 || n == -ECONNRESET) {
			h->ended = 1;
			return got ? 1 : MAFH_EPIPE;
		}
		if (n < 0)
			return mafh__error_set(err, (int)n, "cannot read the stream of %s: %s",
					       h->name, strerror((int)-n));
		got += (size_t)n;
		rc = mafh__docker_demux_feed(&h->demux, buf, (size_t)n, h->sink, h->ud);
		if (rc == -2)
			return MAFH_ECANCELED;
		if (rc < 0)
			return mafh__error_set(err, MAFH_EPROTO, "the stream of %s is not framed "
					       "as an exec's output", h->name);
	}
	return got ? 1 : 0;
}

long mafh__docker_hijack_push(struct docker_hijack *h, const void *data, size_t len)
{
	long n = conn_send(h, data, len);

	if (n == -EAGAIN)
		return 0;
	if (n == -EPIPE || n == -ECONNRESET)
		return MAFH_EPIPE;
	return n;
}

void mafh__docker_hijack_shut_write(struct docker_hijack *h)
{
	int fd = mafh__docker_hijack_fd(h);

	/* Over TLS too: the engine's reader sees the end of its stdin at a record's boundary,
	 * and what it writes back still comes. */
	if (fd >= 0)
		shutdown(fd, SHUT_WR);
}

int mafh__docker_hijack_whole(const struct docker_hijack *h)
{
	return mafh__docker_demux_whole(&h->demux);
}

void mafh__docker_hijack_free(struct docker_hijack *h)
{
	if (!h)
		return;
	if (h->fd >= 0)
		close(h->fd);
	mafh__docker_xfer_free(h->x);
	mafh__docker_reply_clear(&h->crep);
	free(h->cbuf);
	free(h->req);
	free(h);
}

/* ---- a stream's state ----------------------------------------------------------------- */

struct docker_stdio {
	struct docker_hijack *conn;    /* NULL once closed */
	char name[64];
	char *out;                     /* stdout: out[off..len) read and not taken yet */
	size_t off, len, size;
	size_t handed;                 /* what the last READ handed out, taken at the next op */
	int discard;                   /* a CLOSE: stdout is no one's */
	int over, nomem;               /* why the sink stopped */
	int broken;                    /* 0, or why every op fails from now on (MAFH_EPIPE:
					* its end) */
	char why[sizeof(((struct mafh_error *)0)->message)];
	char errbuf[STDERR_KEEP + 1];  /* the first bytes of stderr, for sentences */
	size_t errlen;
};

int mafh__docker_stdio_new(const char *name, struct docker_stdio **out)
{
	struct docker_stdio *s = calloc(1, sizeof(*s));

	*out = s;
	if (!s)
		return MAFH_ENOMEM;
	snprintf(s->name, sizeof(s->name), "%s", name);
	return 0;
}

void mafh__docker_stdio_attach(struct docker_stdio *s, struct docker_hijack *h)
{
	s->conn = h;
}

void mafh__docker_stdio_free(struct docker_stdio *s)
{
	if (!s)
		return;
	mafh__docker_hijack_free(s->conn);
	free(s->out);
	free(s);
}

int mafh__docker_stdio_sink(void *ud, enum docker_stream stream, const char *p, size_t n)
{
	struct docker_stdio *s = ud;

	if (stream != DOCKER_STDOUT) {
		size_t k = n < STDERR_KEEP - s->errlen ? n : STDERR_KEEP - s->errlen;

		memcpy(s->errbuf + s->errlen, p, k);
		s->errlen += k;
		s->errbuf[s->errlen] = '\0';
		return 0;
	}
	if (s->discard)
		return 0;
	/* Held between reads: a command that prints faster than its stdout is taken, while
	 * a write to it waits, breaks its stream rather than the host's memory. */
	if (s->len - s->off + n > DOCKER_STDIO_MAX) {
		s->over = 1;
		return -1;
	}
	if (s->off && s->len + n > s->size) {
		memmove(s->out, s->out + s->off, s->len - s->off);
		s->len -= s->off;
		s->off = 0;
	}
	if (mafh__append(&s->out, &s->len, &s->size, SIZE_MAX, p, n) < 0) {
		s->nomem = 1;
		return -1;
	}
	return 0;
}

/* The stream breaks: code and the sentence every op gets from now on. What stdout held is
 * dropped, but for its end (MAFH_EPIPE), which comes after what was read. */
static void stdio_break(struct docker_stdio *s, int code, const char *why)
{
	if (s->broken)
		return;
	s->broken = code;
	snprintf(s->why, sizeof(s->why), "%.*s", (int)sizeof(s->why) - 1, why);
	if (code != MAFH_EPIPE) {
		free(s->out);
		s->out = NULL;
		s->off = s->len = s->size = s->handed = 0;
	}
}

/* Reads what the connection has now (budget bytes at most) into s. 1 when bytes came, 0
 * when none; a break is recorded in s. */
static int stdio_pull(struct docker_stdio *s, size_t budget)
{
	struct mafh_error e = {0};
	char why[512], line[200];
	int rc;

	if (s->broken || !s->conn)
		return 0;
	rc = mafh__docker_hijack_pull(s->conn, budget, &e);
	if (rc >= 0)
		return rc;
	if (rc == MAFH_EPIPE) {
		/* The first line of stderr that is the command's: not the one Podman adds when
		 * the exec's attach socket closes under it. */
		const char *at = s->errbuf;

		while (*at) {
			size_t n = strcspn(at, "\n");

			if (at[n] != '\n' || mafh__docker_libpod_stderr_len(at, n + 1) == n + 1)
				break;
			at += n + 1;
		}
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(at, "\n"), at);
		snprintf(why, sizeof(why), "the stream of %s has ended%s%s", s->name,
			 line[0] ? ": " : "", line);
		stdio_break(s, MAFH_EPIPE, why);
	} else if (rc == MAFH_ECANCELED && s->over) {
		snprintf(why, sizeof(why), "the stream of %s is broken: its command printed more "
			 "than %u MiB that were not read", s->name, DOCKER_STDIO_MAX >> 20);
		stdio_break(s, MAFH_E2BIG, why);
	} else if (rc == MAFH_ECANCELED) {
		snprintf(why, sizeof(why), "out of memory reading the stream of %s", s->name);
		stdio_break(s, MAFH_ENOMEM, why);
	} else {
		stdio_break(s, rc, e.message);
	}
	return 0;
}

void mafh__docker_stdio_op_start(struct docker_stdio *s, const struct mafh_op *op,
				 int64_t now_ms, struct docker_stdio_op *o)
{
	s->off += s->handed;
	s->handed = 0;
	if (s->off == s->len)
		s->off = s->len = 0;
	memset(o, 0, sizeof(*o));
	o->s = s;
	o->op = op;
	switch (op->kind) {
	case MAFH_OP_STREAM_READ:
		o->until = op->until_ms;
		break;
	case MAFH_OP_STREAM_WRITE:
		o->until = now_ms + (op->timeout_ms > 0 ? op->timeout_ms : WRITE_TIMEOUT_MS);
		break;
	default:  /* CLOSE: the end of its stdin, then a moment for its end */
		o->until = now_ms + CLOSE_GRACE_MS;
		s->discard = 1;
		if (s->conn)
			mafh__docker_hijack_shut_write(s->conn);
		break;
	}
}

static int stdio_read(struct docker_stdio_op *o, int64_t now, struct mafh_op_result *res)
{
	struct docker_stdio *s = o->s;
	size_t avail = s->len - s->off;

	if (!avail) {
		stdio_pull(s, o->op->cap);
		avail = s->len - s->off;
	}
	if (avail) {
		res->stream_data = s->out + s->off;
		res->stream_len = avail < o->op->cap ? avail : o->op->cap;
		s->handed = res->stream_len;
		return 0;
	}
	if (s->broken) {
		res->stream_ended = 1;
		if (s->broken != MAFH_EPIPE)
			res->error = s->broken;
		mafh__error_set(&res->detail, s->broken, "%s", s->why);
		return 0;
	}
	return now < o->until;
}

static int stdio_write(struct docker_stdio_op *o, int64_t now, struct mafh_op_result *res)
{
	struct docker_stdio *s = o->s;
	const struct mafh_op *op = o->op;
	long n = 0;

	if (s->broken && s->broken != MAFH_EPIPE) {
		res->error = mafh__error_set(&res->detail, s->broken, "%s", s->why);
		return 0;
	}
	if (o->done < op->len)
		n = mafh__docker_hijack_push(s->conn, (const char *)op->data + o->done,
					     op->len - o->done);
	if (n == MAFH_EPIPE || (n >= 0 && s->broken)) {
		res->error = mafh__error_set(&res->detail, MAFH_EPIPE, "the stream of %s has "
					     "ended", s->name);
		return 0;
	}
	if (n < 0) {
		res->error = mafh__error_set(&res->detail, (int)n, "cannot write to the stream of "
					     "%s: %s", s->name, strerror((int)-n));
		return 0;
	}
	o->done += (size_t)n;
	if (o->done == op->len)
		return 0;
	/* The command may print before it takes more input: what it prints is read while the
	 * write waits (up to the stream's bound), so that neither side waits for the other. */
	stdio_pull(s, STEP_READ);
	if (s->broken && s->broken != MAFH_EPIPE) {
		res->error = mafh__error_set(&res->detail, s->broken, "%s", s->why);
		return 0;
	}
	if (now >= o->until) {
		res->error = mafh__error_set(&res->detail, MAFH_ETIMEDOUT, "cannot write to the "
					     "stream of %s: %s", s->name, strerror(ETIMEDOUT));
		return 0;
	}
	return 1;
}

static int stdio_close(struct docker_stdio_op *o, int64_t now)
{
	struct docker_stdio *s = o->s;

	/* Its end, or the grace's: what comes meanwhile is read and dropped. */
	if (s->conn && !s->broken && now < o->until) {
		stdio_pull(s, STEP_READ);
		if (!s->broken)
			return 1;
	}
	mafh__docker_hijack_free(s->conn);
	s->conn = NULL;
	return 0;
}

int mafh__docker_stdio_op_step(struct docker_stdio_op *o, int64_t now_ms,
			       struct mafh_op_result *res)
{
	switch (o->op->kind) {
	case MAFH_OP_STREAM_READ:
		return stdio_read(o, now_ms, res);
	case MAFH_OP_STREAM_WRITE:
		return stdio_write(o, now_ms, res);
	default:
		return stdio_close(o, now_ms);
	}
}

int mafh__docker_stdio_op_want(const struct docker_stdio_op *o, struct mafh_pollfd *fd,
			       int64_t *until_ms)
{
	*until_ms = o->until;
	if (!o->s->conn)
		return 0;
	return mafh__docker_hijack_want(o->s->conn, o->op->kind == MAFH_OP_STREAM_WRITE
					? POLLIN | POLLOUT : POLLIN, fd, until_ms);
}
