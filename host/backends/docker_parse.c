/* The Docker backend's parsers of the engine's bytes: the exec stream's frames, the
 * path-stat header, and the JSON replies it reads (messages, ids, inspections). No I/O, no
 * libcurl or libarchive: unit tests and fuzz targets link this file alone. Every byte here
 * may have been chosen by a process in the container (an exec's output, a file's name or
 * link target), so each parser is bounded and checks what it takes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cJSON.h"
#include "docker.h"
#include "protocol.h"

/* ---- the exec stream ------------------------------------------------------------------- */

void mafh__docker_demux_init(struct docker_demux *d)
{
	memset(d, 0, sizeof(*d));
}

int mafh__docker_demux_feed(struct docker_demux *d, const void *data, size_t len,
			    docker_sink_fn sink, void *ud)
{
	const unsigned char *p = data;

	while (len > 0) {
		size_t n;

		if (d->left == 0) {
			/* A header, possibly split across feeds. */
			n = sizeof(d->head) - d->head_len;
			if (n > len)
				n = len;
			memcpy(d->head + d->head_len, p, n);
			d->head_len += n;
			p += n;
			len -= n;
			if (d->head_len < sizeof(d->head))
				return 0;
			d->head_len = 0;
			if (d->head[0] > DOCKER_SYSTEMERR || d->head[1] || d->head[2] || d->head[3])
				return -1;
			d->stream = (enum docker_stream)d->head[0];
			d->left = (uint32_t)d->head[4] << 24 | (uint32_t)d->head[5] << 16 |
				  (uint32_t)d->head[6] << 8 | (uint32_t)d->head[7];
			continue;
		}
		n = len < d->left ? len : d->left;
		if (sink(ud, d->stream == DOCKER_STDIN ? DOCKER_STDOUT : d->stream,
			 (const char *)p, n) < 0)
			return -2;
		d->left -= (uint32_t)n;
		p += n;
		len -= n;
	}
	return 0;
}

int mafh__docker_demux_whole(const struct docker_demux *d)
{
	return d->left == 0 && d->head_len == 0;
}

/* ---- the path-stat header -------------------------------------------------------------- */

int mafh__docker_base64_decode(const char *in, size_t len, unsigned char *out, size_t *out_len)
{
	long n = mafp_base64_decode(in, len, out);

	if (n < 0)
		return -1;
	*out_len = (size_t)n;
	return 0;
}

/* Go's os.FileMode type bits. */
#define GO_MODE_DIR (1u << 31)
#define GO_MODE_SYMLINK (1u << 27)
#define GO_MODE_OTHER ((1u << 26) | (1u << 25) | (1u << 24) | (1u << 21) | (1u << 19))

/* A JSON number that is an integer in [0, max]. */
static int integer_in(const cJSON *n, double max, double *out)
{
	if (!cJSON_IsNumber(n) || !(n->valuedouble >= 0) || n->valuedouble > max ||
	    floor(n->valuedouble) != n->valuedouble)
		return -1;
	*out = n->valuedouble;
	return 0;
}

int mafh__docker_path_stat_decode(const char *b64, size_t len, struct docker_path_stat *out)
{
	unsigned char json[DOCKER_PATH_STAT_MAX / 4 * 3 + 1];
	size_t n;
	cJSON *root;
	double size, mode;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	/* A header's value may carry white space around it. */
	while (len > 0 && (b64[len - 1] == ' ' || b64[len - 1] == '\t' || b64[len - 1] == '\r' ||
			   b64[len - 1] == '\n'))
		len--;
	while (len > 0 && (*b64 == ' ' || *b64 == '\t')) {
		b64++;
		len--;
	}
	if (len == 0 || len > DOCKER_PATH_STAT_MAX ||
	    mafh__docker_base64_decode(b64, len, json, &n) < 0)
		return -1;
	root = mafp_json_parse((const char *)json, n, sizeof(json));
	if (!cJSON_IsObject(root))
		goto out;
	/* Sizes up to 2^53 are exact in a double; the mode is a uint32. */
	if (integer_in(cJSON_GetObjectItemCaseSensitive(root, "size"), 9007199254740992.0,
		       &size) < 0 ||
	    integer_in(cJSON_GetObjectItemCaseSensitive(root, "mode"), 4294967295.0, &mode) < 0)
		goto out;
	out->size = (int64_t)size;
	out->mode = (uint32_t)mode;
	out->type = out->mode & GO_MODE_DIR ? MAFH_FILE_DIR
		    : out->mode & GO_MODE_SYMLINK ? MAFH_FILE_SYMLINK
		    : out->mode & GO_MODE_OTHER ? MAFH_FILE_OTHER : MAFH_FILE_REGULAR;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* ---- JSON replies ---------------------------------------------------------------------- */

void mafh__docker_message(const char *body, size_t len, char *buf, size_t size)
{
	cJSON *root = body ? mafp_json_parse(body, len, DOCKER_ERROR_BODY_MAX) : NULL;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "message");
	const unsigned char *s;
	size_t o = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	if (!cJSON_IsString(m)) {
		cJSON_Delete(root);
		return;
	}
	s = (const unsigned char *)m->valuestring;
	while (*s && o + 1 < size) {
		size_t n = 1;

		/* Keep a UTF-8 sequence whole or not at all; control bytes become '?'. */
		if (*s >= 0xc0)
			while ((s[n] & 0xc0) == 0x80 && n < 4)
				n++;
		if (o + n >= size)
			break;
		if (*s < 0x20 || *s == 0x7f) {
			buf[o++] = '?';
		} else {
			memcpy(buf + o, s, n);
			o += n;
		}
		s += n;
	}
	/* Sentences are ours to end: no trailing newline or period of the engine's. */
	while (o > 0 && (buf[o - 1] == '?' || buf[o - 1] == ' ' || buf[o - 1] == '.'))
		o--;
	buf[o] = '\0';
	cJSON_Delete(root);
}

int mafh__docker_id_ok(const char *id)
{
	size_t i;

	for (i = 0; id[i]; i++)
		if (i == 128 || !((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z') ||
				  (id[i] >= 'A' && id[i] <= 'Z')))
			return 0;
	return i > 0;
}

/* The string member name of object root, when it is an id: copied into id. */
static int take_id(const cJSON *root, const char *name, char *id, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (!cJSON_IsString(v) || !mafh__docker_id_ok(v->valuestring) ||
	    strlen(v->valuestring) >= size)
		return -1;
	memcpy(id, v->valuestring, strlen(v->valuestring) + 1);
	return 0;
}

int mafh__docker_exec_id_parse(const char *body, size_t len, char *id, size_t size)
{
	cJSON *root = mafp_json_parse(body, len, DOCKER_REPLY_MAX);
	int rc = cJSON_IsObject(root) ? take_id(root, "Id", id, size) : -1;

	cJSON_Delete(root);
	return rc;
}

int mafh__docker_exec_state_parse(const char *body, size_t len, struct docker_exec_state *st)
{
	cJSON *root = mafp_json_parse(body, len, DOCKER_REPLY_MAX);
	const cJSON *running, *code, *pid;
	double v;
	int rc = -1;

	memset(st, 0, sizeof(*st));
	if (!cJSON_IsObject(root))
		goto out;
	running = cJSON_GetObjectItemCaseSensitive(root, "Running");
	code = cJSON_GetObjectItemCaseSensitive(root, "ExitCode");
	pid = cJSON_GetObjectItemCaseSensitive(root, "Pid");
	if (!cJSON_IsBool(running))
		goto out;
	st->running = cJSON_IsTrue(running);
	/* ExitCode is null while the exec runs; an exit code is 0..255 (the engine's 126 and
	 * 127 included), anything else is not one. */
	if (code && !cJSON_IsNull(code)) {
		if (integer_in(code, 255, &v) < 0)
			goto out;
		st->has_exit_code = 1;
		st->exit_code = (int)v;
	}
	if (pid && !cJSON_IsNull(pid)) {
		if (integer_in(pid, 4294967295.0, &v) < 0)
			goto out;
		st->pid = (int64_t)v;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

int mafh__docker_container_parse(const char *body, size_t len, char *id, size_t size,
				 int *running, char *status, size_t status_size)
{
	cJSON *root = mafp_json_parse(body, len, DOCKER_REPLY_MAX);
	const cJSON *state, *r, *s;
	int rc = -1;

	*running = 0;
	if (status_size)
		status[0] = '\0';
	if (!cJSON_IsObject(root) || take_id(root, "Id", id, size) < 0)
		goto out;
	state = cJSON_GetObjectItemCaseSensitive(root, "State");
	r = cJSON_GetObjectItemCaseSensitive(state, "Running");
	s = cJSON_GetObjectItemCaseSensitive(state, "Status");
	if (!cJSON_IsObject(state) || !cJSON_IsBool(r))
		goto out;
	*running = cJSON_IsTrue(r);
	/* The state's word is shown in a sentence: a short word of letters only. */
	if (cJSON_IsString(s) && status_size && strlen(s->valuestring) < status_size &&
	    strspn(s->valuestring, "abcdefghijklmnopqrstuvwxyz") == strlen(s->valuestring))
		memcpy(status, s->valuestring, strlen(s->valuestring) + 1);
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* 1 when s[0..n) ends with suffix. */
static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

int mafh__docker_no_such_container(const char *message)
{
	if (strncmp(message, "No such container", 17) == 0)
		return 1;
	/* Podman's may come after words of its own ("the container doesn't exists: "). */
	return strstr(message, "no container with name or ID ") &&
	       ends_with(message, strlen(message), ": no such container");
}

int mafh__docker_not_running(const char *message)
{
	if (strncmp(message, "Container ", 10) == 0 &&
	    ends_with(message, strlen(message), " is not running"))
		return 1;
	return strncmp(message, "can only create exec sessions on running containers", 51) == 0;
}

const char *mafh__docker_libpod_start_error(const char *err, size_t len)
{
	const char *nl = len ? memchr(err, '\n', len) : NULL;
	size_t line = nl ? (size_t)(nl - err) : len;

	if (line < 7 || memcmp(err, "Error: ", 7) != 0)
		return NULL;
	return ends_with(err + 7, line - 7, "OCI runtime attempted to invoke a command that was "
			 "not found") || ends_with(err + 7, line - 7, "OCI permission denied")
		       ? err + 7 : NULL;
}

/* len less the last line of err[0..len) when that line is head, digits, tail; else len. */
static size_t trailer_len(const char *err, size_t len, const char *head, const char *tail)
{
	size_t hl = strlen(head), tl = strlen(tail), start, i;

	if (len < hl + 1 + tl || err[len - 1] != '\n')
		return len;
	/* The last line's start. */
	for (start = len - 1; start > 0 && err[start - 1] != '\n'; start--)
		;
	if (len - start < hl + 1 + tl || memcmp(err + start, head, hl) != 0 ||
	    !ends_with(err, len, tail))
		return len;
	for (i = start + hl; i < len - tl; i++)
		if (err[i] < '0' || err[i] > '9')
			return len;
	return start;
}

size_t mafh__docker_libpod_stderr_len(const char *err, size_t len)
{
	static const char *const heads[] = {"Error: read unixpacket @->/proc/self/fd/",
					    "Error: write unixpacket @->/proc/self/fd/"};
	static const char *const tails[] = {"/attach: read: connection reset by peer\n",
					    "/attach: write: connection reset by peer\n"};
	size_t k;

	for (k = 0; k < 2; k++) {
		size_t l = trailer_len(err, len, heads[k], tails[k]);

		if (l != len)
			return l;
	}
	return len;
}

/* Podman's (its archive is buildah's copier, chrooted into the container): the message
 * ends "... on \"PATH\" to TIMES|MODE: no such file or directory", PATH quoted as Go's %q
 * does (a path it would escape is never matched), setting the times or the mode bits the
 * owner's change reset. The owner's and the mode's own carry the os error ("lchown PATH:
 * ..."), which the loop below takes. */
static const char gone[] = ": no such file or directory";

static int libpod_written_then_gone(const char *message, const char *path, size_t plen)
{
	static const char *const ops[] = {"setting access and modify timestamps on \"",
					  "setting additional permissions on \""};
	size_t mlen = strlen(message), i;
	const char *at, *rest;

	if (!ends_with(message, mlen, gone))
		return 0;
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i]);

		for (at = strstr(message, ops[i]); at; at = strstr(at + 1, ops[i])) {
			if (at != message && at[-1] != ' ')
				continue;
			rest = at + n;
			if (strncmp(rest, path, plen) != 0 || strncmp(rest + plen, "\" to ", 5) != 0)
				continue;
			/* TIMES or MODE, then the end: no other quoted name. */
			rest += plen + 5;
			if (!memchr(rest, '"', (size_t)(message + mlen - rest)))
				return 1;
		}
	}
	return 0;
}

int mafh__docker_written_then_gone(const char *message, const char *path)
{
	static const char *const ops[] = {"lchown ", "chmod ", "chtimes "};
	size_t plen = strlen(path), i;
	const char *at;

	if (plen == 0 || path[0] != '/')
		return 0;
	if (!strpbrk(path, "\"\\") && libpod_written_then_gone(message, path, plen))
		return 1;
	for (at = strstr(message, path); at; at = strstr(at + 1, path)) {
		const char *tok;

		if (strncmp(at + plen, gone, sizeof(gone) - 1) != 0)
			continue;
		/* The path's token: from the last space before it; it may carry the container's
		 * root on the host before path, never anything else. */
		for (tok = at; tok > message && tok[-1] != ' '; tok--)
			;
		if (tok != at && (tok[0] != '/' || memchr(tok, ':', (size_t)(at - tok))))
			continue;
		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
			size_t n = strlen(ops[i]);

			if ((size_t)(tok - message) >= n && memcmp(tok - n, ops[i], n) == 0 &&
			    (tok - n == message || tok[-(ptrdiff_t)n - 1] == ' '))
				return 1;
		}
	}
	return 0;
}

long mafh__docker_upgrade_head(const char *buf, size_t len, long *status)
{
	const char *end;
	long code = 0;
	size_t i;

	*status = 0;
	/* "HTTP/1.x DDD": checked as the bytes come, so garbage is known at once. */
	for (i = 0; i < len && i < 12; i++) {
		static const char want[] = "HTTP/1.";
		char c = buf[i];

		if (i < 7 ? c != want[i] : i == 7 ? (c != '0' && c != '1') : i == 8 ? c != ' '
		    : (c < '0' || c > '9'))
			return -1;
		if (i >= 9)
			code = code * 10 + (c - '0');
	}
	if (len < 12)
		return 0;
	if (len > 12 && buf[12] != ' ' && buf[12] != '\r')
		return -1;
	end = NULL;
	for (i = 3; i < len; i++) {
		if (buf[i - 3] == '\r' && buf[i - 2] == '\n' && buf[i - 1] == '\r' &&
		    buf[i] == '\n') {
			end = buf + i + 1;
			break;
		}
	}
	if (!end)
		return 0;
	*status = code;
	return (long)(end - buf);
}
