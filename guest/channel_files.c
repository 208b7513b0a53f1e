/* The call channel's file bridge (channel_impl.h): a call line is checked, then made a claim
 * and a request file in the legacy format; its response file, once an event or the timer
 * says so, is read, relayed to the caller and its file kept for a later request. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel_impl.h"
#include "protocol.h"
#include "util.h"

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
	int err;

	if (c->calls_dir >= 0)
		return 0;
	if (mkdirat(c->host_tools, MAFP_DIR_CALLS, 0777) < 0 && errno != EEXIST)
		return -1;
	c->calls_dir = openat(c->host_tools, MAFP_DIR_CALLS,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->calls_dir < 0)
		return -1;
	if (mafl__channel_watch(c) == 0)
		return 0;
	err = errno;
	close(c->calls_dir);
	c->calls_dir = -1;
	errno = err;
	return -1;
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

/* What the launcher refuses alone, without a round trip: a spent --max-calls budget, a tool
 * not in --tool, no free slot, a run whose session was killed. Returns the call's slot, or
 * NULL with the sentence in why. */
static struct call *admit(struct channel *c, const struct channel_call *call, char *why,
			  size_t size)
{
	size_t j;

	if (c->opts.max_calls && c->accepted >= c->opts.max_calls) {
		snprintf(why, size, "the run's budget of %llu host-tool calls is spent",
			 c->opts.max_calls);
		return NULL;
	}
	/* As upstream counts dispatches: refusals spend the budget too. */
	c->accepted++;
	/* A raw call names its tool where only the host reads it: the host judges it. */
	if (!call->request && !tool_allowed(c, call->name)) {
		snprintf(why, size, "unknown tool '%s'", call->name);
		return NULL;
	}
	for (j = 0; j < MAFL_CHANNEL_MAX_INFLIGHT; j++)
		if (!c->calls[j].n)
			break;
	if (j == MAFL_CHANNEL_MAX_INFLIGHT) {
		snprintf(why, size, "too many calls in flight (at most %d)",
			 MAFL_CHANNEL_MAX_INFLIGHT);
		return NULL;
	}
	if (!witness_alive(c)) {
		snprintf(why, size, "the run is ending: its session was killed");
		return NULL;
	}
	return &c->calls[j];
}

/* Publishes call n's request file: the raw call's bytes, or the request encoded from the tool
 * call. Returns 0, or -1 with the sentence in why and the request published abandoned, so
 * the host steps over the hole, as the upstream shim does. */
static int publish_request(struct channel *c, long n, const struct channel_call *call,
			   char *why, size_t size)
{
	char fname[48], *req = NULL, *ab;
	const char *body;
	size_t body_len;

	mafp_call_file_name(fname, sizeof(fname), n, MAFP_SUFFIX_REQUEST);
	if (call->request) {
		body = call->request;
		body_len = call->request_len;
	} else {
		body = req = mafp_request_encode(n, call->name, call->arguments);
		body_len = req ? strlen(req) : 0;
	}
	if (body && (reuse_spare(c, fname, body, body_len) == 0 ||
		     mafl_publish_at(c->calls_dir, fname, body, body_len, 0) == 0)) {
		free(req);
		return 0;
	}
	snprintf(why, size, "cannot publish the request: %s",
		 body ? strerror(errno) : "out of memory");
	ab = mafp_request_encode_abandoned(n);
	if (ab)
		mafl_publish_at(c->calls_dir, fname, ab, strlen(ab), 0);
	free(ab);
	free(req);
	return -1;
}

void mafl__channel_call(struct channel *c, int i, const char *line, size_t len)
{
	char why[256];
	struct channel_call call;
	cJSON *root;
	struct call *slot;
	long n;

	if (mafl_channel_parse_call(line, len, &root, &call, why, sizeof(why)) < 0) {
		mafl__channel_refuse(c, i, call.id, why);
		goto out;
	}
	slot = admit(c, &call, why, sizeof(why));
	if (!slot) {
		mafl__channel_refuse(c, i, call.id, why);
		goto out;
	}
	n = ensure_calls_dir(c) < 0 ? -1 : claim_number(c);
	if (n < 0) {
		snprintf(why, sizeof(why), "cannot claim a call number: %s", strerror(errno));
		mafl__channel_refuse(c, i, call.id, why);
		goto out;
	}
	if (publish_request(c, n, &call, why, sizeof(why)) < 0) {
		mafl__channel_refuse(c, i, call.id, why);
		goto out;
	}
	memset(slot, 0, sizeof(*slot));
	slot->n = n;
	slot->conn = i;
	slot->id = cJSON_Duplicate(call.id, 1);
	slot->raw = call.request != NULL;
	/* No look for the response now: the watch predates the request, so the host's answer
	 * is an event still to come (and a response the program planted before the request is
	 * not taken for it). The events our own .part and rename just queued are taken now,
	 * in one read, rather than by a poll that would return at once for them. Without
	 * inotify, the looks begin again at their shortest. */
	if (c->ino_fd >= 0)
		mafl__channel_inotify_read(c, 0);
	else
		mafl__channel_look_soon(c);
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

/* The answer line to call k from its response file's len bytes in buf (NUL-terminated):
 * decoded, or for a raw call as the bytes it holds. Returns 0 with *line (NULL on ENOMEM),
 * or -1 when the response does not parse: not finished yet. */
static int answer_of(const struct call *k, const char *buf, size_t len, char **line)
{
	struct mafp_response resp;

	if (k->raw) {
		cJSON *whole = mafp_json_parse(buf, len, MAFL_CHANNEL_RESPONSE_MAX);

		if (!whole)
			return -1;
		cJSON_Delete(whole);
		/* Relayed as a JSON string, which holds text: bytes that are not UTF-8 would
		 * reach the caller changed, or not as JSON at all. */
		if (mafp_utf8_valid(buf, len))
			*line = mafl__channel_answer_line(k->id, NULL, NULL, buf);
		else
			*line = mafl__channel_answer_line(k->id, NULL,
							  "the host's response is not UTF-8", NULL);
		return 0;
	}
	if (mafp_response_decode(buf, len, MAFL_CHANNEL_RESPONSE_MAX, &resp) < 0)
		return -1;
	*line = mafl__channel_answer_line(k->id, resp.value, resp.refusal, NULL);
	mafp_response_clear(&resp);
	return 0;
}

/* Reads NNNN.response.json if it is there and whole, and relays it: decoded, or for a raw
 * call as the bytes it holds. A response that does not parse yet is left for the next event:
 * a backend's write_file may land in pieces. A look that found the file and could not take
 * it is remembered (the file as it was) and sets when the next read of such a response may
 * come (mafl__channel_serve_due). Returns the bytes read. */
static size_t look(struct channel *c, struct call *k)
{
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
		if (mafl__channel_refuse(c, k->conn, k->id, why) < 0)
			mafl__channel_lost(c, k->n);
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
	if (answer_of(k, buf, (size_t)got, &line) < 0)
		goto failed;	/* a response that does not decode: not finished */
	/* The host answered; the call is served only if its caller is still there to read it
	 * (the exit record names the others, so the host does not count them). */
	if (mafl__channel_send(c, k->conn, line) == 0)
		c->answered++;
	else
		mafl__channel_lost(c, k->n);
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
void mafl__channel_serve_due(struct channel *c)
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
void mafl__channel_all_due(struct channel *c)
{
	int i;

	for (i = 0; i < MAFL_CHANNEL_MAX_INFLIGHT; i++) {
		if (c->calls[i].n) {
			c->calls[i].due = 1;
			c->calls[i].renamed = 0;
		}
	}
}
