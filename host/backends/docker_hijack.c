/* The Docker backend's stream: an exec started over a connection the engine then hands
 * over to the exec's stdio (an HTTP upgrade, "hijacking"), so that what is written on the
 * connection reaches the command's stdin and its stdout and stderr come back framed as an
 * exec's output always is. libcurl can take over a connection after an upgrade only for
 * WebSocket, so this one request is written here, on a unix socket of its own, and its
 * answer's head parsed by mafh__docker_upgrade_head (docker_parse.c, fuzzed). Everything
 * else goes through libcurl (docker_http.c). */
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
#define HIJACK_CONNECT_MS 10000

struct docker_hijack {
	int fd;
	struct docker_demux demux;
	char *out;                     /* stdout bytes read and not handed out yet */
	size_t out_len, out_size;
	char errbuf[STDERR_KEEP + 1];  /* the first bytes of stderr, for sentences */
	size_t errlen;
	int nomem;
	char name[64];
};

static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pf = {.fd = fd, .events = events};
	int64_t left = deadline - mafh__now_ms();

	if (left <= 0)
		return 0;
	if (poll(&pf, 1, left > 60000 ? 60000 : (int)left) < 0 && errno != EINTR)
		return -1;
	return 1;
}

static int send_all(int fd, const char *p, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			int w = wait_fd(fd, POLLOUT, deadline);

			if (w <= 0) {
				errno = w == 0 ? ETIMEDOUT : errno;
				return -1;
			}
		} else {
			return -1;
		}
	}
	return 0;
}

static int sink(void *ud, enum docker_stream stream, const char *p, size_t n)
{
	struct docker_hijack *h = ud;

	if (stream == DOCKER_STDOUT) {
		if (mafh__append(&h->out, &h->out_len, &h->out_size, SIZE_MAX, p, n) < 0) {
			h->nomem = 1;
			return -1;
		}
	} else if (h->errlen < STDERR_KEEP) {
		size_t k = n < STDERR_KEEP - h->errlen ? n : STDERR_KEEP - h->errlen;

		memcpy(h->errbuf + h->errlen, p, k);
		h->errlen += k;
		h->errbuf[h->errlen] = '\0';
	}
	return 0;
}

int mafh__docker_hijack_start(const char *socket_path, const char *target, const char *body,
			      const char *name, struct docker_hijack **out,
			      struct mafh_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int64_t deadline = mafh__now_ms() + HIJACK_CONNECT_MS;
	char req[512], head[HEAD_MAX + 1], line[200];
	size_t have = 0;
	long status = 0, hl = 0;
	struct docker_hijack *h;
	int n, e;

	*out = NULL;
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return mafh__error_set(err, MAFH_EINVAL, "the Docker engine's socket path is too "
				       "long: %s", socket_path);
	h = calloc(1, sizeof(*h));
	if (!h)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	snprintf(h->name, sizeof(h->name), "%s", name);
	mafh__docker_demux_init(&h->demux);
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	h->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0 || connect(h->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		mafh__docker_hijack_close(h);
		return mafh__error_set(err, -e, "cannot reach the Docker engine at %s: %s",
				       socket_path, strerror(e));
	}
	fcntl(h->fd, F_SETFL, O_NONBLOCK);
	n = snprintf(req, sizeof(req), "POST " DOCKER_API "%s HTTP/1.1\r\nHost: docker\r\n"
		     "Content-Type: application/json\r\nContent-Length: %zu\r\n"
		     "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n%s", target, strlen(body), body);
	if (n < 0 || (size_t)n >= sizeof(req) || send_all(h->fd, req, (size_t)n, deadline) < 0) {
		e = n < 0 || (size_t)n >= sizeof(req) ? EINVAL : errno;
		mafh__docker_hijack_close(h);
		return mafh__error_set(err, -e, "cannot start %s through the Docker engine: %s",
				       name, strerror(e));
	}
	/* The answer's head, byte by byte up to its blank line: what follows it is the
	 * stream's, and must not be read here. */
	while (hl == 0) {
		ssize_t r = recv(h->fd, head + have, 1, 0);

		if (r == 1) {
			have++;
			head[have] = '\0';
			hl = mafh__docker_upgrade_head(head, have, &status);
			if (hl < 0 || (hl == 0 && have == HEAD_MAX))
				break;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR) &&
		    wait_fd(h->fd, POLLIN, deadline) > 0)
			continue;
		break;
	}
	if (hl <= 0 || (status != 101 && status != 200)) {
		/* An error's body follows its head: a little of it says why. */
		ssize_t r = hl > 0 ? recv(h->fd, head + have, HEAD_MAX - have, 0) : 0;

		if (r > 0)
			have += (size_t)r;
		mafh__docker_message(hl > 0 ? head + hl : "", hl > 0 ? have - (size_t)hl : 0,
				     line, sizeof(line));
		mafh__docker_hijack_close(h);
		return mafh__error_set(err, status == 404 ? MAFH_ENOENT : MAFH_EIO,
				       "the Docker engine did not start %s on a stream (%s%ld)%s%s",
				       name, hl <= 0 ? "no answer, status " : "status ", status,
				       line[0] ? ": " : "", line);
	}
	*out = h;
	return 0;
}

int mafh__docker_hijack_write(struct docker_hijack *h, const void *data, size_t len,
			      int64_t timeout_ms, struct mafh_error *err)
{
	if (send_all(h->fd, data, len, mafh__now_ms() + timeout_ms) < 0) {
		int e = errno;

		if (e == EPIPE || e == ECONNRESET)
			return mafh__error_set(err, MAFH_EPIPE, "the stream of %s has ended", h->name);
		return mafh__error_set(err, -e, "cannot write to the stream of %s: %s", h->name,
				       strerror(e));
	}
	return 0;
}

int mafh__docker_hijack_read(struct docker_hijack *h, void *buf, size_t cap, int64_t timeout_ms,
			     struct mafh_error *err)
{
	int64_t deadline = mafh__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);

	for (;;) {
		char tmp[65536];
		ssize_t r;
		int rc;

		if (h->out_len) {
			size_t n = h->out_len < cap ? h->out_len : cap;

			memcpy(buf, h->out, n);
			memmove(h->out, h->out + n, h->out_len - n);
			h->out_len -= n;
			return (int)n;
		}
		r = recv(h->fd, tmp, sizeof(tmp), 0);
		if (r == 0 || (r < 0 && errno == ECONNRESET)) {
			char line[200];

			snprintf(line, sizeof(line), "%.*s", (int)strcspn(h->errbuf, "\n"), h->errbuf);
			return mafh__error_set(err, MAFH_EPIPE, "the stream of %s has ended%s%s",
					       h->name, line[0] ? ": " : "", line);
		}
		if (r < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return mafh__error_set(err, -errno, "cannot read the stream of %s: %s",
						       h->name, strerror(errno));
			if (mafh__now_ms() >= deadline)
				return 0;
			if (wait_fd(h->fd, POLLIN, deadline) < 0)
				return mafh__error_set(err, -errno, "cannot wait for the stream of %s: "
						       "%s", h->name, strerror(errno));
			continue;
		}
		rc = mafh__docker_demux_feed(&h->demux, tmp, (size_t)r, sink, h);
		if (h->nomem)
			return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading the stream "
					       "of %s", h->name);
		if (rc < 0)
			return mafh__error_set(err, MAFH_EPROTO, "the stream of %s is not framed as "
					       "an exec's output", h->name);
	}
}

void mafh__docker_hijack_close(struct docker_hijack *h)
{
	if (!h)
		return;
	if (h->fd >= 0) {
		/* The end of the command's stdin, then of the connection. */
		shutdown(h->fd, SHUT_WR);
		close(h->fd);
	}
	free(h->out);
	free(h);
}
