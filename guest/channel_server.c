/* The call channel's socket server (channel_impl.h): the connections, through the socket pair
 * the program inherits or the listening socket at R/host_tools/channel.sock, their call
 * lines and answers; the channel's life, and its turn of the supervisor's loop. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "channel_impl.h"
#include "protocol.h"
#include "tree.h"
#include "util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77		/* Linux 6.5 */
#endif

static void conn_close(struct channel *c, int i)
{
	struct conn *k = &c->conns[i];
	size_t j;

	close(k->fd);
	free(k->in);
	free(k->out);
	memset(k, 0, sizeof(*k));
	k->fd = -1;
	for (j = 0; j < MAFL_CHANNEL_MAX_INFLIGHT; j++)
		if (c->calls[j].n && c->calls[j].conn == i)
			c->calls[j].conn = -1;
}

/* Sends what the connection is owed without ever blocking the supervisor. */
static void conn_flush(struct channel *c, int i)
{
	struct conn *k = &c->conns[i];

	while (k->out_off < k->out_len) {
		ssize_t n = send(k->fd, k->out + k->out_off, k->out_len - k->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			conn_close(c, i);	/* the program closed it: its loss */
			return;
		}
		k->out_off += (size_t)n;
	}
	k->out_off = k->out_len = 0;
}

/* Queues one answer line for connection i; a connection that lets answers pile up past
 * MAFL_CHANNEL_OUTBUF_MAX is dropped. Consumes line. Returns 0 once queued, -1 when the
 * answer reached no connection. */
int mafl__channel_send(struct channel *c, int i, char *line)
{
	struct conn *k;
	size_t len;

	if (i < 0 || c->conns[i].fd < 0 || !line) {
		free(line);
		return -1;
	}
	k = &c->conns[i];
	len = strlen(line);
	if (k->out_len - k->out_off + len + 1 > MAFL_CHANNEL_OUTBUF_MAX) {
		free(line);
		conn_close(c, i);
		return -1;
	}
	if (k->out_off > 0) {
		memmove(k->out, k->out + k->out_off, k->out_len - k->out_off);
		k->out_len -= k->out_off;
		k->out_off = 0;
	}
	{
		char *nb = realloc(k->out, k->out_len + len + 1);

		if (!nb) {
			free(line);
			conn_close(c, i);
			return -1;
		}
		k->out = nb;
	}
	memcpy(k->out + k->out_len, line, len);
	k->out[k->out_len + len] = '\n';
	k->out_len += len + 1;
	free(line);
	conn_flush(c, i);
	return 0;
}

/* {"id": ID, "refusal": S} when refusal is set, else {"id": ID, "response": TEXT} when
 * response is (the NUL-terminated bytes of a raw call's response, UTF-8, as a JSON string),
 * else {"id": ID, "value": V}. id, value and response are borrowed. */
char *mafl__channel_answer_line(const cJSON *id, const cJSON *value, const char *refusal,
				const char *response)
{
	cJSON *o = cJSON_CreateObject(), *idc, *v;
	char *out = NULL;

	if (!o)
		return NULL;
	idc = id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull();
	if (!idc || !cJSON_AddItemToObject(o, "id", idc)) {
		cJSON_Delete(idc);
		goto out;
	}
	if (refusal) {
		if (!cJSON_AddStringToObject(o, "refusal", refusal))
			goto out;
	} else if (response) {
		/* A reference: the response may be 9 MiB, and is printed once, not copied. */
		v = cJSON_CreateStringReference(response);
		if (!v || !cJSON_AddItemToObject(o, "response", v)) {
			cJSON_Delete(v);
			goto out;
		}
	} else {
		v = value ? cJSON_Duplicate(value, 1) : cJSON_CreateNull();
		if (!v || !cJSON_AddItemToObject(o, "value", v)) {
			cJSON_Delete(v);
			goto out;
		}
	}
	out = cJSON_PrintUnformatted(o);
out:
	cJSON_Delete(o);
	return out;
}

int mafl__channel_refuse(struct channel *c, int i, const cJSON *id, const char *sentence)
{
	if (mafl__channel_send(c, i, mafl__channel_answer_line(id, NULL, sentence, NULL)) < 0)
		return -1;
	c->answered++;
	return 0;
}

void mafl__channel_lost(struct channel *c, long n)
{
	if (c->nlost < MAFP_UNDELIVERED_MAX)
		c->lost[c->nlost++] = n;
}

void mafl_channel_set_witness(struct channel *c, pid_t witness)
{
	if (c)
		c->witness = witness;
}

/* Takes fd as a connection, or closes it when MAFL_CHANNEL_MAX_CONNS are open (the caller
 * reads EOF). */
static void conn_add(struct channel *c, int fd)
{
	size_t i;

	for (i = 0; i < MAFL_CHANNEL_MAX_CONNS; i++) {
		if (c->conns[i].fd < 0) {
			fcntl(fd, F_SETFL, O_NONBLOCK);
			c->conns[i].fd = fd;
			return;
		}
	}
	close(fd);
}

static int conns_full(const struct channel *c)
{
	size_t i;

	for (i = 0; i < MAFL_CHANNEL_MAX_CONNS; i++)
		if (c->conns[i].fd < 0)
			return 0;
	return 1;
}

/* Whether the peer of the connection fd is a process of the run: a descendant of the
 * supervisor, which is the run's child subreaper, so that a process whose parent has
 * exited (a daemon that double-forked) is still found under it. The pid is the peer's at
 * connect(); a pidfd of the peer, still running once the walk is done, proves no other
 * process has taken the pid meanwhile. */
static int peer_in_run(const struct channel *c, int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int pidfd = -1, in;

	if (c->proc_fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return 0;
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
		if (errno != ENOPROTOOPT)
			return 0;	/* the peer is gone already */
		pidfd = -1;		/* a kernel before 6.5: the pid alone */
	}
	in = mafl_tree_descends(c->proc_fd, cr.pid, getpid());
	if (pidfd >= 0) {
		struct pollfd pf = {.fd = pidfd, .events = POLLIN};

		/* A pidfd polls readable once its process has exited. */
		if (poll(&pf, 1, 0) != 0)
			in = 0;
		close(pidfd);
	}
	return in;
}

/* A connection to R/host_tools/channel.sock. Any process that can reach the path can
 * connect (root always can, and so may other runs' programs), so the peer must be one of
 * the run's, or the connection is closed at once. */
static void accept_stream(struct channel *c)
{
	int fd = accept4(c->sock_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (conns_full(c) || !peer_in_run(c, fd)) {
		close(fd);
		return;
	}
	conn_add(c, fd);
}

static void accept_conn(struct channel *c)
{
	char data[16];
	char ctl[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {.iov_base = data, .iov_len = sizeof(data)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(c->listen_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 0)
		return;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		int nfd, k, fds[4];

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(cm), (size_t)nfd * sizeof(int));
		for (k = 0; k < nfd; k++) {
			if (fd < 0)
				fd = fds[k];
			else
				close(fds[k]);
		}
	}
	if (fd < 0)
		return;
	{
		struct stat st;

		/* Only a socket is a connection; anything else would block or mislead us. */
		if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
			close(fd);
			return;
		}
	}
	/* No peer check here, unlike accept_stream: only the run's processes hold the end
	 * this came through (the program's process inherited it, and its descendants from it).
	 * An outside process holding it was given it by the run, which could as well have
	 * made the calls for it. */
	conn_add(c, fd);
}

/* Stops reading a connection for good. Closing a socket with bytes still queued to it makes
 * the kernel report a reset to the peer (ECONNRESET) where it should read the end of the
 * conversation after our last answer: so take nothing more (SHUT_RD, which also ends the
 * peer's sending) and drop what is queued already, and the close that follows is clean. */
static void conn_stop_reading(struct conn *k)
{
	char sink[4096];

	shutdown(k->fd, SHUT_RD);
	while (recv(k->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
	k->eof = 1;
}

/* Handles the calls a connection sent, CONN_CALLS_PER_WAKE at most, and takes in at most
 * one more buffer of them (one recv a wake). */
static void conn_read(struct channel *c, int i)
{
	struct conn *k = &c->conns[i];
	int calls = 0, received = 0;

	for (;;) {
		char *nl = NULL;
		ssize_t n;

		/* Only the bytes not scanned yet can hold the first newline: a long line costs
		 * one scan. */
		if (k->in_scan < k->in_len)
			nl = memchr(k->in + k->in_scan, '\n', k->in_len - k->in_scan);
		if (nl) {
			if (calls++ == CONN_CALLS_PER_WAKE) {
				k->more = 1;
				return;
			}
			mafl__channel_call(c, i, k->in + k->in_off,
					   (size_t)(nl - (k->in + k->in_off)));
			if (k->fd < 0)
				return;
			k->in_off = k->in_scan = (size_t)(nl - k->in) + 1;
			continue;
		}
		k->in_scan = k->in_len;
		k->more = 0;
		if (k->in_off > 0) {
			memmove(k->in, k->in + k->in_off, k->in_len - k->in_off);
			k->in_len -= k->in_off;
			k->in_scan = k->in_len;
			k->in_off = 0;
		}
		if (k->in_len == MAFL_CHANNEL_LINE_MAX) {
			char why[96];

			snprintf(why, sizeof(why), "the call line is longer than %u bytes",
				 MAFL_CHANNEL_LINE_MAX);
			mafl__channel_refuse(c, i, NULL, why);
			if (k->fd < 0)
				return;
			k->in_len = k->in_scan = 0;
			conn_stop_reading(k);	/* no way to find the next line */
			return;
		}
		/* One recv a wake: poll says when more is there. */
		if (received || k->eof)
			return;
		if (k->in_len == k->in_cap) {
			/* Kept for the connection's life: a call costs no allocation of its own. */
			size_t cap = k->in_cap ? k->in_cap * 2 : 4096;
			char *nb;

			if (cap > MAFL_CHANNEL_LINE_MAX)
				cap = MAFL_CHANNEL_LINE_MAX;
			nb = realloc(k->in, cap);
			if (!nb) {
				conn_close(c, i);
				return;
			}
			k->in = nb;
			k->in_cap = cap;
		}
		n = recv(k->fd, k->in + k->in_len, k->in_cap - k->in_len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				k->eof = 1;
			return;
		}
		if (n == 0) {
			k->eof = 1;
			return;
		}
		k->in_len += (size_t)n;
		received = 1;
	}
}

/* Takes the listening socket the launcher made at R/host_tools/channel.sock, noting which
 * file it is so that the end removes that one and no other. */
static int take_listener(struct channel *c, int fd)
{
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstatat(c->host_tools, MAFP_FILE_CHANNEL_SOCKET, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISSOCK(st.st_mode)) {
		c->sock_dev = (uint64_t)st.st_dev;
		c->sock_ino = (uint64_t)st.st_ino;
	}
	return fd;
}

int mafl_channel_open(struct channel **out, int host_tools_fd, int listener,
		      const struct channel_opts *opts, int *program_fd)
{
	struct channel *c = mafl_arena_calloc(1, sizeof(*c));
	int sv[2] = {-1, -1}, err, i;

	if (!c)
		return -ENOMEM;
	c->calls_dir = c->listen_fd = c->sock_fd = c->proc_fd = c->ino_fd = -1;
	for (i = 0; i < MAFL_CHANNEL_MAX_CONNS; i++)
		c->conns[i].fd = -1;
	c->opts = *opts;
	c->next_n = 1;
	c->host_tools = host_tools_fd;
	if (mafl__channel_inotify_open(c) < 0)
		goto fail;
	/* SOCK_SEQPACKET: each connection request is one message carrying one descriptor, so
	 * threads and forked processes sharing the inherited end never interleave. */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		goto fail;
	c->listen_fd = sv[0];
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	/* The second way in only: without it (R/host_tools read-only, a directory an earlier
	 * run's program left at the name) the inherited socket still serves, and a caller that
	 * needs the path learns why when its connect fails. */
	c->sock_fd = take_listener(c, listener);
	/* Without /proc no peer can be checked: the socket then serves none. */
	if (c->sock_fd >= 0)
		c->proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	*program_fd = sv[1];
	*out = c;
	return 0;
fail:
	err = errno;
	if (sv[0] >= 0)
		close(sv[0]);
	mafl_channel_free(c);
	return -err;
}

int mafl_channel_pollfds(struct channel *c, struct pollfd *pf, int *timeout_ms)
{
	int n = 3, i, more = 0, poll_inotify;

	for (i = 0; i < MAFL_CHANNEL_MAX_CONNS; i++) {
		struct conn *k = &c->conns[i];
		short ev = 0;

		if (k->fd >= 0) {
			ev = k->eof ? 0 : POLLIN;
			if (k->out_len > k->out_off)
				ev |= POLLOUT;
			more |= k->more;
		}
		pf[n++] = (struct pollfd){.fd = k->fd >= 0 ? k->fd : -1, .events = ev};
	}
	*timeout_ms = mafl__channel_wait_ms(c, more ? 0 : -1, &poll_inotify);
	pf[0] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
	pf[1] = (struct pollfd){.fd = poll_inotify ? c->ino_fd : -1, .events = POLLIN};
	pf[2] = (struct pollfd){.fd = c->sock_fd, .events = POLLIN};
	return n;
}

void mafl_channel_handle(struct channel *c, const struct pollfd *pf, int n)
{
	int i;

	if (n < MAFL_CHANNEL_POLLFDS)
		return;
	if (pf[1].revents)
		mafl__channel_inotify_read(c, 1);
	for (i = 0; i < MAFL_CHANNEL_MAX_CONNS; i++) {
		const struct pollfd *p = &pf[3 + i];

		if (p->fd < 0 || c->conns[i].fd != p->fd || !(p->revents || c->conns[i].more))
			continue;
		if (p->revents & POLLOUT)
			conn_flush(c, i);
		if (c->conns[i].fd >= 0 &&
		    ((p->revents & (POLLIN | POLLHUP | POLLERR)) || c->conns[i].more))
			conn_read(c, i);
		/* A connection whose peer left is closed once it is owed nothing more. */
		if (c->conns[i].fd >= 0 && c->conns[i].eof && !c->conns[i].more &&
		    c->conns[i].out_len == c->conns[i].out_off) {
			size_t j, owed = 0;

			for (j = 0; j < MAFL_CHANNEL_MAX_INFLIGHT; j++)
				owed += c->calls[j].n && c->calls[j].conn == i;
			if (!owed || (p->revents & (POLLHUP | POLLERR)))
				conn_close(c, i);
		}
	}
	if (pf[0].revents)
		accept_conn(c);
	if (pf[2].revents)
		accept_stream(c);
	mafl__channel_look_on_timer(c);
	mafl__channel_serve_due(c);
}

long long mafl_channel_calls(const struct channel *c)
{
	return c->answered;
}

int mafl_channel_undelivered(const struct channel *c, long *ids, int max)
{
	int n = 0, i;

	for (i = 0; i < c->nlost && n < max; i++)
		ids[n++] = c->lost[i];
	for (i = 0; i < MAFL_CHANNEL_MAX_INFLIGHT && n < max; i++)
		if (c->calls[i].n)
			ids[n++] = c->calls[i].n;
	/* At most 64: an insertion sort, rather than link qsort into the launcher. */
	for (i = 1; i < n; i++) {
		long v = ids[i];
		int j = i;

		for (; j > 0 && ids[j - 1] > v; j--)
			ids[j] = ids[j - 1];
		ids[j] = v;
	}
	return n;
}

void mafl_channel_free(struct channel *c)
{
	int i;

	if (!c)
		return;
	for (i = 0; i < MAFL_CHANNEL_MAX_CONNS; i++)
		if (c->conns[i].fd >= 0)
			conn_close(c, i);
	for (i = 0; i < MAFL_CHANNEL_MAX_INFLIGHT; i++)
		cJSON_Delete(c->calls[i].id);
	if (c->calls_dir >= 0)
		close(c->calls_dir);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->sock_fd >= 0) {
		struct stat st;

		/* The program may have put something else there meanwhile: that stays. */
		if (fstatat(c->host_tools, MAFP_FILE_CHANNEL_SOCKET, &st,
			    AT_SYMLINK_NOFOLLOW) == 0 &&
		    (uint64_t)st.st_dev == c->sock_dev && (uint64_t)st.st_ino == c->sock_ino)
			unlinkat(c->host_tools, MAFP_FILE_CHANNEL_SOCKET, 0);
		close(c->sock_fd);
	}
	if (c->proc_fd >= 0)
		close(c->proc_fd);
	if (c->ino_fd >= 0)
		close(c->ino_fd);
	mafl_arena_free(c);
}
