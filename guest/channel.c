#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol.h"
#include "tree.h"
#include "util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77		/* Linux 6.5 */
#endif

/* Calls taken from one connection per wake: the rest of what it sent waits, in its buffer
 * or in the socket, for the next turn of the supervisor's loop (mafl_channel_pollfds asks for one
 * at once), so a connection that streams calls holds up neither the timer nor the others. */
#define CONN_CALLS_PER_WAKE 16

/* After a read of a response that failed, the next such read waits at least this many times
 * as long as that one took (and at least MAFL_CHANNEL_RETRY_MS): see serve_due. */
#define RETRY_COST_FACTOR 10

/* Reads of inotify events in a row that named no response awaiting its first look, after
 * which each such read is followed by a pause without one: see handle_inotify. */
#define INOTIFY_IDLE_READS 32
#define INOTIFY_QUIET_MS 5

/* Without inotify (out of instances or watches: per-user limits, 128 instances by default,
 * which a host running that many runs at once as one user reaches), the responses awaited
 * are looked for on a timer: LOOK_MIN_MS after a request, then twice as long each time up to
 * LOOK_MAX_MS, from LOOK_MIN_MS again at the next request. */
#define LOOK_MIN_MS 1
#define LOOK_MAX_MS 32

struct conn {
	int fd;                 /* -1: slot free */
	char *in;
	size_t in_len, in_cap;  /* the line buffer grows from 4 KiB to MAFL_CHANNEL_LINE_MAX */
	size_t in_off;          /* in[in_off..in_len) is not handled yet */
	size_t in_scan;         /* in[in_off..in_scan) holds no newline */
	int more;               /* a whole line is buffered, left for the next wake */
	char *out;
	size_t out_len, out_off;
	int eof;                /* the peer closed its side: close once nothing is owed */
};

struct call {
	long n;                 /* the call file number; 0: slot free */
	int conn;               /* the connection to answer, -1 when it went away */
	cJSON *id;              /* the caller's id, owned */
	int raw;                /* published verbatim: the response is relayed verbatim too */
	int due;                /* an event named the response since the last look */
	int renamed;            /* the last event naming it was a rename into place */
	int failed;             /* a look found the file and could not take it, as seen: */
	struct channel_file_state seen;
};

/* A call file done with, which a later request reuses (reuse_spare): call n's request or
 * its response (suffix). */
struct spare {
	long n;
	const char *suffix;
	uint64_t dev, ino;
};

#define SPARES 8

struct channel {
	int host_tools;         /* R/host_tools, borrowed */
	int calls_dir;          /* R/host_tools/host_tool_calls, once a call needed it */
	int listen_fd;          /* our end of the socketpair the program inherits */
	int sock_fd;            /* listening at R/host_tools/channel.sock */
	uint64_t sock_dev, sock_ino;  /* that socket's file, removed at the end if still ours */
	int proc_fd;            /* /proc, for the peer check; -1: none, the socket serves none */
	int ino_fd;             /* -1: no inotify, the timer below instead */
	long long look_at;      /* without inotify: the next look for responses (ms); 0: none */
	int look_step;
	struct conn conns[MAFL_CHANNEL_MAX_CONNS];
	struct call calls[MAFL_CHANNEL_MAX_INFLIGHT];
	long next_n;            /* no claim below this one is ours to take */
	long claim_src;         /* our last claim made as a file, linked to by the next; 0: none */
	struct spare spares[SPARES];
	int nspares;
	long long retry_at;     /* no response that failed is read again before (ms) */
	pid_t witness;          /* the run's witness; 0: none */
	int next_due;           /* where the next look for due calls starts: each gets a turn */
	int idle_reads;         /* inotify reads in a row that named nothing new */
	long long quiet_until;  /* no inotify read before (ms); 0: none pending */
	unsigned long long accepted;
	long long answered;     /* answers relayed to their caller's connection */
	long lost[MAFP_UNDELIVERED_MAX];  /* calls whose answer found no caller */
	int nlost;
	struct channel_opts opts;
};

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
static int conn_send(struct channel *c, int i, char *line)
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
static char *answer_line(const cJSON *id, const cJSON *value, const char *refusal,
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

/* Answers a call with a refusal; counted when it reaches the caller. Returns as conn_send. */
static int refuse(struct channel *c, int i, const cJSON *id, const char *sentence)
{
	if (conn_send(c, i, answer_line(id, NULL, sentence, NULL)) < 0)
		return -1;
	c->answered++;
	return 0;
}

/* A published call whose answer reached no caller, for the exit record. */
static void lost(struct channel *c, long n)
{
	if (c->nlost < MAFP_UNDELIVERED_MAX)
		c->lost[c->nlost++] = n;
}

int mafl_channel_parse_call(const char *line, size_t len, cJSON **root, struct channel_call *call,
			    char *why, size_t why_size)
{
	cJSON *o, *nm, *args, *rq;
	const cJSON *id;

	*root = NULL;
	memset(call, 0, sizeof(*call));
	o = mafp_json_parse(line, len, MAFL_CHANNEL_LINE_MAX);
	if (!o || !cJSON_IsObject(o)) {
		cJSON_Delete(o);
		snprintf(why, why_size, "the call is not a JSON object");
		return -1;
	}
	*root = o;
	id = cJSON_GetObjectItemCaseSensitive(o, "id");
	if (!id || !((cJSON_IsString(id) && strlen(id->valuestring) <= MAFL_CHANNEL_ID_MAX) ||
		     cJSON_IsNumber(id))) {
		snprintf(why, why_size, "the call has no \"id\" (a string of at most %d bytes or "
			 "a number)", MAFL_CHANNEL_ID_MAX);
		return -1;
	}
	call->id = id;
	/* Raw: the host judges the request, so nothing in it is ours to check. Its length is
	 * the string's: mafp_json_parse refuses a NUL byte and \u0000, so none is inside. */
	rq = cJSON_GetObjectItemCaseSensitive(o, "request");
	if (rq) {
		if (!cJSON_IsString(rq)) {
			snprintf(why, why_size, "the call's \"request\" is not a JSON string");
			return -1;
		}
		call->request = rq->valuestring;
		call->request_len = strlen(rq->valuestring);
		return 0;
	}
	nm = cJSON_GetObjectItemCaseSensitive(o, "name");
	if (!cJSON_IsString(nm) || !mafp_tool_name_valid(nm->valuestring)) {
		snprintf(why, why_size, "the call has no valid tool \"name\"");
		return -1;
	}
	args = cJSON_GetObjectItemCaseSensitive(o, "arguments");
	if (!args) {
		args = cJSON_AddObjectToObject(o, "arguments");
		if (!args) {
			snprintf(why, why_size, "out of memory");
			return -1;
		}
	} else if (!cJSON_IsObject(args)) {
		snprintf(why, why_size, "the call's \"arguments\" is not a JSON object");
		return -1;
	}
	call->name = nm->valuestring;
	call->arguments = args;
	return 0;
}


static int tool_allowed(const struct channel *c, const char *name)
{
	char **t;

	if (!c->opts.tools)
		return 1;
	for (t = c->opts.tools; *t; t++)
		if (strcmp(*t, name) == 0)
			return 1;
	return 0;
}

/* Opens (creating it if needed) the calls directory and watches it, before the first
 * request is published, so no response can go unseen. Upstream's shell launcher leaves the
 * directory to the first call, and so do we. Returns 0 or -1 with errno set. */
static int ensure_calls_dir(struct channel *c)
{
	char path[64];

	if (c->calls_dir >= 0)
		return 0;
	if (mkdirat(c->host_tools, MAFP_DIR_CALLS, 0777) < 0 && errno != EEXIST)
		return -1;
	c->calls_dir = openat(c->host_tools, MAFP_DIR_CALLS,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->calls_dir < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", c->calls_dir);
	if (c->ino_fd >= 0 &&
	    inotify_add_watch(c->ino_fd, path, IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR) < 0) {
		int err = errno;

		if (err == ENOSPC) {	/* out of watches: the timer instead */
			close(c->ino_fd);
			c->ino_fd = -1;
			return 0;
		}
		close(c->calls_dir);
		c->calls_dir = -1;
		errno = err;
		return -1;
	}
	return 0;
}

/* Takes the lowest free call number, as the upstream shim does: the filesystem arbitrates
 * between us and any program writing legacy call files itself. A claim is an empty file
 * that nobody reads, so after our first one each is made as a hard link to our previous
 * claim: created exclusively all the same (EEXIST), and no new inode per call. A file
 * system where the link cannot be made (the previous claim gone or replaced, too many links)
 * gets a fresh file, which the next claims link to. */
static long claim_number(struct channel *c)
{
	char fname[32], src[32];
	long n;

	for (n = c->next_n; n <= MAFP_CALL_ID_MAX; n++) {
		int fd;

		mafp_call_file_name(fname, sizeof(fname), n, MAFP_SUFFIX_CLAIM);
		if (c->claim_src) {
			mafp_call_file_name(src, sizeof(src), c->claim_src, MAFP_SUFFIX_CLAIM);
			if (linkat(c->calls_dir, src, c->calls_dir, fname, 0) == 0) {
				c->next_n = n + 1;
				return n;
			}
			if (errno == EEXIST)
				continue;
			c->claim_src = 0;
		}
		fd = openat(c->calls_dir, fname,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0) {
			close(fd);
			c->next_n = n + 1;
			c->claim_src = n;
			return n;
		}
		if (errno != EEXIST)
			return -1;
	}
	errno = ENOSPC;
	return -1;
}

/* Publishes a request in the file of a call already answered (mafp_call_file_hand_over),
 * so the call makes no new inode. A new file can cost far more than the few system calls
 * this takes: on an ext4 without a journal, the inode allocator steps over every inode
 * freed in the last minute or so (the README's benchmark section has the figures).
 * Nobody reads a call's files once its answer is relayed (the number is ours alone, by the
 * claim). The file must still be the one seen (same inode, regular, one link), else it is
 * left alone. Returns 0, or -1 when no spare took the request (the caller then makes a file
 * as before). */
static int reuse_spare(struct channel *c, const char *fname, const char *req, size_t len)
{
	while (c->nspares > 0) {
		struct spare s = c->spares[--c->nspares];
		char old[48];

		mafp_call_file_name(old, sizeof(old), s.n, s.suffix);
		if (mafp_call_file_hand_over(c->calls_dir, old, fname, s.dev, s.ino, req,
					     len) == 0)
			return 0;
	}
	return -1;
}

static void handle_inotify(struct channel *c, int paced);

void mafl_channel_set_witness(struct channel *c, pid_t witness)
{
	if (c)
		c->witness = witness;
}

/* 0 once the witness has ended (it may not have been reaped yet), else 1. */
static int witness_alive(const struct channel *c)
{
	siginfo_t si;

	if (c->witness <= 0)
		return 1;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)c->witness, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0)
		return errno != ECHILD;
	return si.si_pid == 0;
}

static void handle_call(struct channel *c, int i, const char *line, size_t len)
{
	char why[256], fname[48];
	struct channel_call call;
	const cJSON *id;
	cJSON *root;
	struct call *slot = NULL;
	const char *body;
	char *req = NULL;
	size_t j, body_len;
	long n;

	if (mafl_channel_parse_call(line, len, &root, &call, why, sizeof(why)) < 0) {
		refuse(c, i, call.id, why);
		goto out;
	}
	id = call.id;
	if (c->opts.max_calls && c->accepted >= c->opts.max_calls) {
		snprintf(why, sizeof(why), "the run's budget of %llu host-tool calls is spent",
			 c->opts.max_calls);
		refuse(c, i, id, why);
		goto out;
	}
	/* As upstream counts dispatches: refusals spend the budget too. */
	c->accepted++;
	/* A raw call names its tool where only the host reads it: the host judges it. */
	if (!call.request && !tool_allowed(c, call.name)) {
		snprintf(why, sizeof(why), "unknown tool '%s'", call.name);
		refuse(c, i, id, why);
		goto out;
	}
	for (j = 0; j < MAFL_CHANNEL_MAX_INFLIGHT && !slot; j++)
		if (!c->calls[j].n)
			slot = &c->calls[j];
	if (!slot) {
		snprintf(why, sizeof(why), "too many calls in flight (at most %d)",
			 MAFL_CHANNEL_MAX_INFLIGHT);
		refuse(c, i, id, why);
		goto out;
	}
	if (!witness_alive(c)) {
		refuse(c, i, id, "the run is ending: its session was killed");
		goto out;
	}
	n = ensure_calls_dir(c) < 0 ? -1 : claim_number(c);
	if (n < 0) {
		snprintf(why, sizeof(why), "cannot claim a call number: %s", strerror(errno));
		refuse(c, i, id, why);
		goto out;
	}
	mafp_call_file_name(fname, sizeof(fname), n, MAFP_SUFFIX_REQUEST);
	if (call.request) {
		body = call.request;
		body_len = call.request_len;
	} else {
		body = req = mafp_request_encode(n, call.name, call.arguments);
		body_len = req ? strlen(req) : 0;
	}
	if (!body || (reuse_spare(c, fname, body, body_len) < 0 &&
		      mafl_publish_at(c->calls_dir, fname, body, body_len, 0) < 0)) {
		char *ab = mafp_request_encode_abandoned(n);

		snprintf(why, sizeof(why), "cannot publish the request: %s",
			 body ? strerror(errno) : "out of memory");
		/* Let the host step over the hole, as the upstream shim does. */
		if (ab)
			mafl_publish_at(c->calls_dir, fname, ab, strlen(ab), 0);
		free(ab);
		free(req);
		refuse(c, i, id, why);
		goto out;
	}
	free(req);
	memset(slot, 0, sizeof(*slot));
	slot->n = n;
	slot->conn = i;
	slot->id = cJSON_Duplicate(id, 1);
	slot->raw = call.request != NULL;
	/* No look for the response now: the watch predates the request, so the host's answer
	 * is an event still to come (and a response the program planted before the request is
	 * not taken for it). The events our own .part and rename just queued are taken now,
	 * in one read, rather than by a poll that would return at once for them. Without
	 * inotify, the looks begin again at their shortest. */
	if (c->ino_fd >= 0) {
		handle_inotify(c, 0);
	} else {
		c->look_step = LOOK_MIN_MS;
		c->look_at = mafl_now_ms() + LOOK_MIN_MS;
	}
out:
	cJSON_Delete(root);
}

void mafl_channel_file_state_of(struct channel_file_state *fs, const struct stat *st)
{
	memset(fs, 0, sizeof(*fs));
	fs->dev = (uint64_t)st->st_dev;
	fs->ino = (uint64_t)st->st_ino;
	fs->size = (int64_t)st->st_size;
	fs->mtime_sec = (int64_t)st->st_mtim.tv_sec;
	fs->mtime_nsec = (int64_t)st->st_mtim.tv_nsec;
	fs->ctime_sec = (int64_t)st->st_ctim.tv_sec;
	fs->ctime_nsec = (int64_t)st->st_ctim.tv_nsec;
}

/* The file is the same as far as a stat can tell. Any write moves the ctime on: since
 * Linux 6.13 to a later value even within the clock's tick, once a stat has read it (the
 * multigrain timestamps of ext4, xfs, btrfs and tmpfs), as ours just did. */
static int file_state_same(const struct channel_file_state *a,
			   const struct channel_file_state *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec &&
	       a->ctime_sec == b->ctime_sec && a->ctime_nsec == b->ctime_nsec;
}

enum channel_look mafl_channel_look_decide(const struct channel_file_state *failed,
					   const struct channel_file_state *cur, long long now_ms,
					   long long retry_at_ms)
{
	if (!failed)
		return CHANNEL_LOOK_NOW;
	if (now_ms < retry_at_ms)
		return CHANNEL_LOOK_LATER;
	return cur && file_state_same(failed, cur) ? CHANNEL_LOOK_SKIP : CHANNEL_LOOK_NOW;
}

/* Keeps a file of call k, whose response (as st shows it) was just relayed, for a later
 * request to reuse. The response itself only when it was renamed into place: a host that
 * wrote it in place may not be done with it after its close (the engine's archive API, as
 * `docker cp` uses it, sets the owner, mode and times after closing the file, and fails if
 * the name is gone by then), while a rename is a writer's last step. Otherwise the request,
 * which the host read before it answered, if it is still the file we made (regular, one
 * link, ours). */
static void keep_spare(struct channel *c, const struct call *k, const struct stat *st)
{
	struct stat rq;
	char name[48];

	if (c->nspares >= SPARES)
		return;
	if (k->renamed && st->st_nlink == 1) {
		c->spares[c->nspares++] = (struct spare){.n = k->n, .suffix = MAFP_SUFFIX_RESPONSE,
							 .dev = (uint64_t)st->st_dev,
							 .ino = (uint64_t)st->st_ino};
		return;
	}
	mafp_call_file_name(name, sizeof(name), k->n, MAFP_SUFFIX_REQUEST);
	if (fstatat(c->calls_dir, name, &rq, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(rq.st_mode) &&
	    rq.st_nlink == 1 && rq.st_uid == geteuid())
		c->spares[c->nspares++] = (struct spare){.n = k->n, .suffix = MAFP_SUFFIX_REQUEST,
							 .dev = (uint64_t)rq.st_dev,
							 .ino = (uint64_t)rq.st_ino};
}

/* Reads NNNN.response.json if it is there and whole, and relays it: decoded, or for a raw
 * call as the bytes it holds. A response that does not parse yet is left for the next event:
 * a backend's write_file may land in pieces. A look that found the file and could not take
 * it is remembered (the file as it was) and sets when the next read of such a response may
 * come (serve_due). Returns the bytes read. */
static size_t look(struct channel *c, struct call *k)
{
	struct mafp_response resp;
	char fname[48], *buf = NULL, *line;
	struct stat st;
	ssize_t got = 0;
	long long start = mafl_now_ms(), cost;
	int fd;

	mafp_call_file_name(fname, sizeof(fname), k->n, MAFP_SUFFIX_RESPONSE);
	fd = openat(c->calls_dir, fname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		goto failed;
	if (st.st_size > (off_t)MAFL_CHANNEL_RESPONSE_MAX) {
		char why[128];

		snprintf(why, sizeof(why), "the host's response is larger than %u bytes",
			 MAFL_CHANNEL_RESPONSE_MAX);
		if (refuse(c, k->conn, k->id, why) < 0)
			lost(c, k->n);
		goto done;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		goto failed;
	/* One read for the size fstat gave, and one byte more: a file still growing fills it
	 * (not finished yet). A read that returns exactly the size is the whole file as it is
	 * now, with no second read to learn of its end; anything shorter reads on to the end. */
	got = read(fd, buf, (size_t)st.st_size + 1);
	if (got < 0 && errno == EINTR)
		got = 0;
	if (got >= 0 && got < st.st_size) {
		ssize_t more = mafl_read_full(fd, buf + got, (size_t)(st.st_size + 1 - got));

		got = more < 0 ? -1 : got + more;
	}
	if (got <= 0 || got > st.st_size)
		goto failed;	/* grew while we read: not finished yet */
	buf[got] = '\0';
	if (k->raw) {
		cJSON *whole = mafp_json_parse(buf, (size_t)got, MAFL_CHANNEL_RESPONSE_MAX);

		if (!whole)
			goto failed;	/* as a response that does not decode: not finished */
		cJSON_Delete(whole);
		/* Relayed as a JSON string, which holds text: bytes that are not UTF-8 would
		 * reach the caller changed, or not as JSON at all. */
		if (mafp_utf8_valid(buf, (size_t)got))
			line = answer_line(k->id, NULL, NULL, buf);
		else
			line = answer_line(k->id, NULL, "the host's response is not UTF-8", NULL);
	} else {
		if (mafp_response_decode(buf, (size_t)got, MAFL_CHANNEL_RESPONSE_MAX, &resp) < 0)
			goto failed;
		line = answer_line(k->id, resp.value, resp.refusal, NULL);
		mafp_response_clear(&resp);
	}
	/* The host answered; the call is served only if its caller is still there to read it
	 * (the exit record names the others, so the host does not count them). */
	if (conn_send(c, k->conn, line) == 0)
		c->answered++;
	else
		lost(c, k->n);
	keep_spare(c, k, &st);
done:
	cJSON_Delete(k->id);
	memset(k, 0, sizeof(*k));
	goto out;
failed:
	k->failed = 1;
	mafl_channel_file_state_of(&k->seen, &st);
	if (got != 0) {
		long long end = mafl_now_ms();

		cost = (end - start) * RETRY_COST_FACTOR;
		c->retry_at = end + (cost > MAFL_CHANNEL_RETRY_MS ? cost : MAFL_CHANNEL_RETRY_MS);
	}
out:
	free(buf);
	close(fd);
	return got > 0 ? (size_t)got : 0;
}

/* Looks at the responses events have named since, in turns starting after the last call
 * whose failed response was looked at again. What a program can make the supervisor do
 * again and again is look at a response that failed: it may write one that never parses
 * and touch it for ever. Such a response is looked at again (a stat) only after retry_at,
 * and read only if its file has changed. A read that fails sets retry_at RETRY_COST_FACTOR
 * times as long as it took ahead, or MAFL_CHANNEL_RETRY_MS if longer; a stat that finds the
 * file unchanged, MAFL_CHANNEL_RETRY_MS ahead. So those reads take at most about a tenth of
 * the supervisor's time, and those stats come one per MAFL_CHANNEL_RETRY_MS, whatever the
 * program does. A call's first look is never held back (one per call, at the host's pace),
 * but the reads of one wake stop once MAFL_CHANNEL_RESPONSE_MAX bytes are read: the rest
 * waits for the next (mafl_channel_pollfds asks for it at once). */
static void serve_due(struct channel *c)
{
	long long now = -1;
	size_t spent = 0;
	int j;

	for (j = 0; j < MAFL_CHANNEL_MAX_INFLIGHT && spent < MAFL_CHANNEL_RESPONSE_MAX; j++) {
		int at = (c->next_due + j) % MAFL_CHANNEL_MAX_INFLIGHT;
		struct call *k = &c->calls[at];
		enum channel_look what = CHANNEL_LOOK_NOW;

		if (!k->n || !k->due)
			continue;
		if (k->failed) {
			struct channel_file_state cur;
			char fname[48];
			struct stat st;
			int have;

			if (now < 0)
				now = mafl_now_ms();
			if (now < c->retry_at)
				continue;	/* not even a stat until then */
			mafp_call_file_name(fname, sizeof(fname), k->n, MAFP_SUFFIX_RESPONSE);
			have = fstatat(c->calls_dir, fname, &st, AT_SYMLINK_NOFOLLOW) == 0;
			if (have)
				mafl_channel_file_state_of(&cur, &st);
			what = mafl_channel_look_decide(&k->seen, have ? &cur : NULL, now,
							c->retry_at);
			c->next_due = (at + 1) % MAFL_CHANNEL_MAX_INFLIGHT;
			if (what == CHANNEL_LOOK_SKIP)
				c->retry_at = now + MAFL_CHANNEL_RETRY_MS;
		}
		k->due = 0;
		if (what == CHANNEL_LOOK_NOW)
			spent += look(c, k);
	}
}

/* Every call waiting is due for a look, where no event says which (the inotify queue
 * overflowed, or there is no inotify): whether a response was renamed into place is then
 * unknown, so none is reused. */
static void all_due(struct channel *c)
{
	int i;

	for (i = 0; i < MAFL_CHANNEL_MAX_INFLIGHT; i++) {
		if (c->calls[i].n) {
			c->calls[i].due = 1;
			c->calls[i].renamed = 0;
		}
	}
}

/* One read of the queued events a wake, however many more are queued: a program can queue
 * them as fast as it closes files, and the timer and signals must get their turn. Such a
 * program would still keep the supervisor reading (a read and a poll for every few events,
 * at its pace) and doing nothing else. The host's traffic does not look like that: its
 * writes name responses awaited. So once INOTIFY_IDLE_READS reads in a row (paced: not
 * handle_call's reads of its own events) have named no call awaiting its first look, each
 * such read is followed by INOTIFY_QUIET_MS without one, until a read names one. The queue
 * then fills, and may overflow (IN_Q_OVERFLOW makes every call due): a response awaited
 * meanwhile is found when the reads reach it, and only the flooding run's calls wait. */
static void handle_inotify(struct channel *c, int paced)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = read(c->ino_fd, buf, sizeof(buf));
	int awaited = 0;
	char *p;
	size_t j;

	for (p = buf; n > 0 && p < buf + n;) {
		struct inotify_event *ev = (struct inotify_event *)p;
		long id;
		size_t nl = ev->len ? strlen(ev->name) : 0;
		size_t sl = strlen(MAFP_SUFFIX_RESPONSE);

		p += sizeof(*ev) + ev->len;
		if (ev->mask & IN_Q_OVERFLOW) {
			all_due(c);
			awaited = 1;
			continue;
		}
		if (nl <= sl || strcmp(ev->name + nl - sl, MAFP_SUFFIX_RESPONSE) != 0 ||
		    mafp_marker_parse(ev->name, nl - sl, 1, MAFP_CALL_ID_MAX, &id) < 0)
			continue;
		for (j = 0; j < MAFL_CHANNEL_MAX_INFLIGHT; j++) {
			if (c->calls[j].n == id) {
				c->calls[j].due = 1;
				c->calls[j].renamed = (ev->mask & IN_MOVED_TO) != 0;
				awaited |= !c->calls[j].failed;
			}
		}
	}
	if (!paced)
		return;
	if (awaited) {
		c->idle_reads = 0;
	} else if (++c->idle_reads >= INOTIFY_IDLE_READS) {
		c->idle_reads = INOTIFY_IDLE_READS;
		c->quiet_until = mafl_now_ms() + INOTIFY_QUIET_MS;
	}
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
			handle_call(c, i, k->in + k->in_off, (size_t)(nl - (k->in + k->in_off)));
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
			refuse(c, i, NULL, why);
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
	c->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (c->ino_fd < 0 && errno != EMFILE && errno != ENFILE && errno != ENOMEM &&
	    errno != ENOSYS)
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

/* Whether a call still waits for its response to be looked at. */
static int awaiting(const struct channel *c)
{
	int i;

	for (i = 0; i < MAFL_CHANNEL_MAX_INFLIGHT; i++)
		if (c->calls[i].n && !c->calls[i].due)
			return 1;
	return 0;
}

/* Without inotify: when the timer is due, every call waiting is due for a look. */
static void look_on_timer(struct channel *c)
{
	long long now;

	if (c->ino_fd >= 0 || !c->look_at || (now = mafl_now_ms()) < c->look_at)
		return;
	all_due(c);
	c->look_step = c->look_step * 2 > LOOK_MAX_MS ? LOOK_MAX_MS : c->look_step * 2;
	c->look_at = now + c->look_step;
}

int mafl_channel_pollfds(struct channel *c, struct pollfd *pf, int *timeout_ms)
{
	long long now = -1;
	int n = 0, i;

	*timeout_ms = -1;
	if (c->quiet_until) {
		now = mafl_now_ms();
		if (now < c->quiet_until)
			*timeout_ms = (int)(c->quiet_until - now);
		else
			c->quiet_until = 0;
	}
	pf[n++] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
	pf[n++] = (struct pollfd){.fd = c->quiet_until ? -1 : c->ino_fd, .events = POLLIN};
	pf[n++] = (struct pollfd){.fd = c->sock_fd, .events = POLLIN};
	for (i = 0; i < MAFL_CHANNEL_MAX_CONNS; i++) {
		struct conn *k = &c->conns[i];
		short ev = 0;

		if (k->fd >= 0) {
			ev = k->eof ? 0 : POLLIN;
			if (k->out_len > k->out_off)
				ev |= POLLOUT;
			if (k->more)
				*timeout_ms = 0;
		}
		pf[n++] = (struct pollfd){.fd = k->fd >= 0 ? k->fd : -1, .events = ev};
	}
	if (c->ino_fd < 0 && c->look_at && *timeout_ms != 0 && awaiting(c)) {
		long long wait;

		if (now < 0)
			now = mafl_now_ms();
		wait = c->look_at > now ? c->look_at - now : 0;
		if (*timeout_ms < 0 || wait < *timeout_ms)
			*timeout_ms = (int)wait;
	}
	for (i = 0; i < MAFL_CHANNEL_MAX_INFLIGHT && *timeout_ms != 0; i++) {
		const struct call *k = &c->calls[i];
		long long wait;

		if (!k->n || !k->due)
			continue;
		if (!k->failed) {
			*timeout_ms = 0;
			break;
		}
		if (now < 0)
			now = mafl_now_ms();
		wait = c->retry_at > now ? c->retry_at - now : 0;
		if (*timeout_ms < 0 || wait < *timeout_ms)
			*timeout_ms = (int)wait;
	}
	return n;
}

void mafl_channel_handle(struct channel *c, const struct pollfd *pf, int n)
{
	int i;

	if (n < MAFL_CHANNEL_POLLFDS)
		return;
	if (pf[1].revents)
		handle_inotify(c, 1);
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
	look_on_timer(c);
	serve_due(c);
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

int mafl_channel_connect(int chan_fd)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	char data[] = "connect";
	struct iovec iov = {.iov_base = data, .iov_len = sizeof(data) - 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	int sv[2], err;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	memset(ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &sv[1], sizeof(int));
	while (sendmsg(chan_fd, &mh, MSG_NOSIGNAL) < 0) {
		if (errno == EINTR)
			continue;
		err = errno;
		close(sv[0]);
		close(sv[1]);
		errno = err;
		return -1;
	}
	close(sv[1]);
	return sv[0];
}

int mafl_channel_connect_path(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *slash = strrchr(path, '/');
	int fd, dir = -1, err, n;

	if (strlen(path) < sizeof(sa.sun_path)) {
		memcpy(sa.sun_path, path, strlen(path) + 1);
	} else {
		/* Too long for a socket address: through the directory, open as DIR, for
		 * /proc/self/fd/DIR/NAME names the same file. */
		char *d = slash ? strndup(path, (size_t)(slash - path) + 1) : NULL;

		if (!d) {
			errno = slash ? ENOMEM : ENAMETOOLONG;
			return -1;
		}
		dir = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
		err = errno;
		free(d);
		if (dir < 0) {
			errno = err;
			return -1;
		}
		n = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d%s", dir, slash);
		if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
			close(dir);
			errno = ENAMETOOLONG;
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	while (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		err = errno;
		close(fd);
		errno = err;
		fd = -1;
	}
	if (dir >= 0) {
		err = errno;
		close(dir);
		errno = err;
	}
	return fd;
}
