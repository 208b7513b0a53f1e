#include "protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int mafp_run_dir_check(const char *run_dir, const char **why)
{
	size_t len;
	const char *p;

	if (!run_dir || !*run_dir) {
		*why = "the run directory is empty";
		return -1;
	}
	len = strlen(run_dir);
	if (run_dir[0] != '/') {
		*why = "the run directory must be an absolute path";
		return -1;
	}
	if (len > MAFP_RUN_DIR_MAX) {
		*why = "the run directory path is too long";
		return -1;
	}
	if (strpbrk(run_dir, ":\\")) {
		*why = "the run directory must not contain ':' or '\\'";
		return -1;
	}
	if (strspn(run_dir, "/") == len) {
		*why = "the run directory must not be the root directory";
		return -1;
	}
	/* A "." or ".." component would make "outside R" checks on paths meaningless. */
	for (p = run_dir; *p; ) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			*why = "the run directory must not contain '.' or '..' components";
			return -1;
		}
		p += n;
	}
	return 0;
}

int mafp_host_tools_path(char *buf, size_t size, const char *run_dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s/%s", run_dir, MAFP_DIR_HOST_TOOLS, name);

	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

int mafp_call_file_name(char *buf, size_t size, long id, const char *suffix)
{
	int n;

	if (id < 1 || id > MAFP_CALL_ID_MAX)
		return -1;
	n = snprintf(buf, size, "%0*ld%s", MAFP_CALL_ID_WIDTH, id, suffix);
	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

int mafp_call_file_hand_over(int dirfd, const char *from, const char *to, uint64_t dev,
			     uint64_t ino, const void *data, size_t len)
{
	const char *p = data;
	struct stat st;
	size_t done = 0;
	int fd, err;

	fd = openat(dirfd, from, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino) {
		close(fd);
		errno = EEXIST;
		return -1;
	}
	while (done < len) {
		ssize_t n = pwrite(fd, p + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			goto fail;
		}
		done += (size_t)n;
	}
	if ((st.st_size > (off_t)len && ftruncate(fd, (off_t)len) < 0) ||
	    renameat(dirfd, from, dirfd, to) < 0) {
		err = errno;
		goto fail;
	}
	return close(fd);
fail:
	close(fd);
	errno = err;
	return -1;
}

int mafp_marker_parse(const char *buf, size_t len, long min, long max, long *out)
{
	unsigned long v = 0, lim;
	size_t i = 0;
	long r;
	int neg = 0;

	if (len == 0 || len > MAFP_MARKER_MAX || min > max)
		return -1;
	if (buf[0] == '-') {
		if (min >= 0)
			return -1;
		neg = 1;
		i = 1;
	}
	if (i == len)
		return -1;
	/* The magnitude is accumulated unsigned against the bound on its side, so neither
	 * LONG_MIN nor LONG_MAX can overflow. */
	if (neg)
		lim = (unsigned long)(-(min + 1)) + 1;
	else if (max < 0)
		return -1;
	else
		lim = (unsigned long)max;
	for (; i < len; i++) {
		unsigned long d;

		if (buf[i] < '0' || buf[i] > '9')
			return -1;
		d = (unsigned long)(buf[i] - '0');
		if (d > lim || v > (lim - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	r = neg ? (v == 0 ? 0 : -(long)(v - 1) - 1) : (long)v;
	if (r < min || r > max)
		return -1;
	*out = r;
	return 0;
}

int mafp_exit_code_from_wait_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 255;
}

static const char *const status_names[] = {
	[MAFP_STATUS_EXITED] = "exited",
	[MAFP_STATUS_SIGNALED] = "signaled",
	[MAFP_STATUS_TIMEOUT] = "timeout",
	[MAFP_STATUS_STOPPED] = "stopped",
	[MAFP_STATUS_LAUNCH_FAILED] = "launch_failed",
};

const char *mafp_status_name(enum mafp_status status)
{
	if ((unsigned)status >= sizeof(status_names) / sizeof(status_names[0]))
		return "unknown";
	return status_names[status];
}

int mafp_status_from_name(const char *name, enum mafp_status *out)
{
	size_t i;

	for (i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++) {
		if (strcmp(name, status_names[i]) == 0) {
			*out = (enum mafp_status)i;
			return 0;
		}
	}
	return -1;
}

/* cJSON's own nesting limit is a compile-time constant of 1000; guest-written JSON gets a
 * much smaller one, checked before parsing so a deep document costs no allocation. An
 * escaped NUL (\u0000) is refused too: cJSON would cut the string there, so a C reader
 * would see "ab" where Python's json (upstream) sees "ab\0/../x". */
static int json_precheck(const char *buf, size_t len)
{
	int depth = 0, in_string = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		char c = buf[i];

		if (in_string) {
			if (c == '\\') {
				if (i + 5 < len && buf[i + 1] == 'u' && memcmp(buf + i + 2, "0000", 4) == 0)
					return 0;
				i++;
			} else if (c == '"')
				in_string = 0;
			continue;
		}
		if (c == '"') {
			in_string = 1;
		} else if (c == '{' || c == '[') {
			if (++depth > MAFP_JSON_DEPTH_MAX)
				return 0;
		} else if (c == '}' || c == ']') {
			depth--;
		}
	}
	return 1;
}

cJSON *mafp_json_parse(const char *buf, size_t len, size_t max_len)
{
	const char *end = NULL;
	cJSON *root;

	if (!buf || len == 0 || len > max_len)
		return NULL;
	if (memchr(buf, '\0', len))
		return NULL;
	if (!json_precheck(buf, len))
		return NULL;
	root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (!root)
		return NULL;
	while (end && end < buf + len &&
	       (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t'))
		end++;
	if (!end || end != buf + len) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

static int add_int(cJSON *obj, const char *key, int64_t v)
{
	return cJSON_AddNumberToObject(obj, key, (double)v) ? 0 : -1;
}

char *mafp_exit_record_encode(const struct mafp_exit_record *rec)
{
	cJSON *o = cJSON_CreateObject();
	char *out = NULL;
	int bad = 0;

	if (!o)
		return NULL;
	bad |= !cJSON_AddStringToObject(o, "status", mafp_status_name(rec->status));
	bad |= add_int(o, "exit_code", rec->exit_code);
	bad |= add_int(o, "signal", rec->signal);
	bad |= add_int(o, "wall_ms", rec->wall_ms);
	bad |= add_int(o, "cpu_ms", rec->cpu_ms);
	bad |= add_int(o, "peak_rss_kb", rec->peak_rss_kb);
	bad |= add_int(o, "output_bytes", rec->output_bytes);
	bad |= !cJSON_AddBoolToObject(o, "output_truncated", rec->output_truncated);
	bad |= add_int(o, "calls", rec->calls);
	if (rec->n_undelivered > 0) {
		cJSON *ids = cJSON_AddArrayToObject(o, "undelivered");
		int i;

		bad |= !ids;
		for (i = 0; ids && i < rec->n_undelivered && i < MAFP_UNDELIVERED_MAX; i++) {
			cJSON *id = cJSON_CreateNumber((double)rec->undelivered[i]);

			bad |= !id || !cJSON_AddItemToArray(ids, id);
		}
	}
	bad |= !cJSON_AddStringToObject(o, "seccomp", rec->seccomp);
	bad |= !cJSON_AddStringToObject(o, "landlock", rec->landlock);
	if (rec->error[0])
		bad |= !cJSON_AddStringToObject(o, "error", rec->error);
	if (!bad)
		out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return out;
}

/* Reads an integer member in [min, max]; absent leaves *out alone. */
static int get_int(const cJSON *o, const char *key, int64_t min, int64_t max, int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	double d;

	if (!v)
		return 0;
	if (!cJSON_IsNumber(v))
		return -1;
	d = v->valuedouble;
	if (!(d >= (double)min && d <= (double)max) || d != (double)(int64_t)d)
		return -1;
	*out = (int64_t)d;
	return 0;
}

static int get_str(const cJSON *o, const char *key, char *buf, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v)
		return 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
		return -1;
	memcpy(buf, v->valuestring, strlen(v->valuestring) + 1);
	return 0;
}

#define INT64_LIMIT ((int64_t)1 << 53)

/* Reads an array of at most MAFP_UNDELIVERED_MAX call ids; absent leaves *n at 0. */
static int get_ids(const cJSON *o, const char *key, long *ids, int *n)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key), *e;

	*n = 0;
	if (!v)
		return 0;
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > MAFP_UNDELIVERED_MAX)
		return -1;
	cJSON_ArrayForEach(e, v) {
		double d = cJSON_IsNumber(e) ? e->valuedouble : 0;

		if (!(d >= 1 && d <= MAFP_CALL_ID_MAX) || d != (double)(long)d)
			return -1;
		ids[(*n)++] = (long)d;
	}
	return 0;
}

int mafp_exit_record_decode(const char *buf, size_t len, struct mafp_exit_record *rec,
			    const char **why)
{
	cJSON *o = mafp_json_parse(buf, len, MAFP_EXIT_RECORD_MAX);
	const cJSON *st, *tr;
	int64_t code = 0, sig = 0;
	int rc = -1;

	memset(rec, 0, sizeof(*rec));
	if (!o || !cJSON_IsObject(o)) {
		*why = "the exit record is not a JSON object of at most 4096 bytes";
		goto out;
	}
	st = cJSON_GetObjectItemCaseSensitive(o, "status");
	if (!cJSON_IsString(st) || mafp_status_from_name(st->valuestring, &rec->status) != 0) {
		*why = "the exit record has no known status";
		goto out;
	}
	if (get_int(o, "exit_code", 0, 255, &code) || get_int(o, "signal", 0, 64, &sig) ||
	    get_int(o, "wall_ms", 0, INT64_LIMIT, &rec->wall_ms) ||
	    get_int(o, "cpu_ms", 0, INT64_LIMIT, &rec->cpu_ms) ||
	    get_int(o, "peak_rss_kb", 0, INT64_LIMIT, &rec->peak_rss_kb) ||
	    get_int(o, "output_bytes", 0, INT64_LIMIT, &rec->output_bytes) ||
	    get_int(o, "calls", 0, INT64_LIMIT, &rec->calls)) {
		*why = "the exit record has a number of the wrong type or out of range";
		goto out;
	}
	if (get_str(o, "seccomp", rec->seccomp, sizeof(rec->seccomp)) ||
	    get_str(o, "landlock", rec->landlock, sizeof(rec->landlock)) ||
	    get_str(o, "error", rec->error, sizeof(rec->error))) {
		*why = "the exit record has a string of the wrong type or too long";
		goto out;
	}
	if (get_ids(o, "undelivered", rec->undelivered, &rec->n_undelivered)) {
		*why = "the exit record's undelivered is not a list of at most 64 call ids";
		goto out;
	}
	tr = cJSON_GetObjectItemCaseSensitive(o, "output_truncated");
	if (tr && !cJSON_IsBool(tr)) {
		*why = "the exit record's output_truncated is not a boolean";
		goto out;
	}
	rec->output_truncated = cJSON_IsTrue(tr);
	rec->exit_code = (int)code;
	rec->signal = (int)sig;
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

char *mafp_launch_info_encode(const struct mafp_launch_info *info)
{
	cJSON *o = cJSON_CreateObject();
	char *out = NULL;

	if (!o)
		return NULL;
	if (!add_int(o, "pid", info->pid) && !add_int(o, "supervisor_pid", info->supervisor_pid) &&
	    !add_int(o, "session", info->session) &&
	    (!info->identity[0] ||
	     (!add_int(o, "uid", info->uid) && !add_int(o, "gid", info->gid) &&
	      cJSON_AddStringToObject(o, "identity", info->identity) &&
	      cJSON_AddStringToObject(o, "landlock", info->landlock))))
		out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return out;
}

/* A word of letters, digits and '-', that JSON needs no escape for. */
static int plain_word(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return 0;
	return 1;
}

int mafp_launch_info_format(const struct mafp_launch_info *info, char *buf, size_t size)
{
	int n;

	if (info->pid < 0 || info->pid > INT32_MAX || info->supervisor_pid < 0 ||
	    info->supervisor_pid > INT32_MAX || info->session < 0 || info->session > INT32_MAX)
		return -1;
	/* cJSON_PrintUnformatted's output for the same object (test_protocol_json checks it).
	 * The strings are the launcher's own words, never escaped. */
	if (!info->identity[0]) {
		n = snprintf(buf, size, "{\"pid\":%d,\"supervisor_pid\":%d,\"session\":%d}",
			     (int)info->pid, (int)info->supervisor_pid, (int)info->session);
	} else {
		if (info->uid < 0 || info->uid > UINT32_MAX || info->gid < 0 ||
		    info->gid > UINT32_MAX || !plain_word(info->identity) ||
		    !plain_word(info->landlock))
			return -1;
		n = snprintf(buf, size, "{\"pid\":%d,\"supervisor_pid\":%d,\"session\":%d,"
			     "\"uid\":%lld,\"gid\":%lld,\"identity\":\"%s\",\"landlock\":\"%s\"}",
			     (int)info->pid, (int)info->supervisor_pid, (int)info->session,
			     (long long)info->uid, (long long)info->gid, info->identity,
			     info->landlock);
	}
	return n < 0 || (size_t)n >= size ? -1 : n;
}

int mafp_launch_info_decode(const char *buf, size_t len, struct mafp_launch_info *info,
			    const char **why)
{
	cJSON *o = mafp_json_parse(buf, len, MAFP_LAUNCH_LINE_MAX);
	int rc = -1;

	memset(info, 0, sizeof(*info));
	if (!o || !cJSON_IsObject(o)) {
		*why = "the launch line is not a JSON object";
		goto out;
	}
	if (!cJSON_GetObjectItemCaseSensitive(o, "pid") ||
	    !cJSON_GetObjectItemCaseSensitive(o, "supervisor_pid") ||
	    get_int(o, "pid", 1, INT32_MAX, &info->pid) ||
	    get_int(o, "supervisor_pid", 1, INT32_MAX, &info->supervisor_pid) ||
	    get_int(o, "session", 0, INT32_MAX, &info->session)) {
		*why = "the launch line lacks a valid pid or supervisor_pid";
		goto out;
	}
	if (get_str(o, "identity", info->identity, sizeof(info->identity)) ||
	    get_str(o, "landlock", info->landlock, sizeof(info->landlock)) ||
	    get_int(o, "uid", 0, UINT32_MAX, &info->uid) ||
	    get_int(o, "gid", 0, UINT32_MAX, &info->gid)) {
		*why = "the launch line has a containment field of the wrong type";
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

int mafp_tool_name_valid(const char *name)
{
	size_t i, n = strlen(name);

	if (n == 0 || n > MAFP_TOOL_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c <= ' ' || c >= 0x7f || c == '/' || c == '\\' || c == '"')
			return 0;
	}
	return 1;
}

size_t mafp_utf8_seq_len(const char *text, size_t left)
{
	const unsigned char *p = (const unsigned char *)text;
	unsigned char b;
	size_t n, i;
	uint32_t cp;

	if (left == 0)
		return 0;
	b = p[0];
	if (b < 0x80)
		return 1;
	if (b >= 0xc2 && b <= 0xdf) {
		n = 2;
		cp = b & 0x1f;
	} else if (b >= 0xe0 && b <= 0xef) {
		n = 3;
		cp = b & 0x0f;
	} else if (b >= 0xf0 && b <= 0xf4) {
		n = 4;
		cp = b & 0x07;
	} else {
		return 0;	/* a continuation byte, an overlong lead, or past U+10FFFF */
	}
	if (left < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates (which strict decoders refuse, Python's among
	 * them) and past U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

int mafp_utf8_valid(const char *text, size_t len)
{
	size_t off = 0, n;

	while (off < len) {
		n = mafp_utf8_seq_len(text + off, len - off);
		if (n == 0)
			return 0;
		off += n;
	}
	return 1;
}

static void set_why(char *why, size_t size, const char *msg)
{
	snprintf(why, size, "%s", msg);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int mafp_json_has_duplicate_key(const cJSON *j)
{
	const cJSON *c;
	size_t n = 0, i;
	const char **names;
	int dup = 0;

	if (!j)
		return 0;
	for (c = j->child; c; c = c->next) {
		if (mafp_json_has_duplicate_key(c) != 0)
			return 1;
		n++;
	}
	if (!cJSON_IsObject(j) || n < 2)
		return 0;
	names = malloc(n * sizeof(*names));
	if (!names)
		return -1;
	for (i = 0, c = j->child; c; c = c->next)
		names[i++] = c->string ? c->string : "";
	qsort(names, n, sizeof(*names), name_cmp);
	for (i = 1; i < n && !dup; i++)
		dup = strcmp(names[i - 1], names[i]) == 0;
	free(names);
	return dup;
}

int mafp_request_decode(const char *buf, size_t len, size_t max_len, long expect_id,
			struct mafp_request *req, char *why, size_t why_size)
{
	cJSON *o;
	const cJSON *id, *name, *args, *ab;
	long idv;

	memset(req, 0, sizeof(*req));
	if (len > max_len) {
		snprintf(why, why_size, "the request is larger than %zu bytes", max_len);
		return -1;
	}
	/* Refused before any tool sees it: a JSON parser that takes bytes would hand the tool
	 * a string the program never wrote (Python's decoder refuses it outright). */
	if (!mafp_utf8_valid(buf, len)) {
		set_why(why, why_size, "the request is not valid UTF-8");
		return -1;
	}
	o = mafp_json_parse(buf, len, max_len);
	if (!o || !cJSON_IsObject(o)) {
		set_why(why, why_size, "the request is not a JSON object");
		cJSON_Delete(o);
		return -1;
	}
	/* A parser that takes the last of two same keys (Python's) would give a tool other
	 * arguments than the ones checked here, which take the first. */
	if (mafp_json_has_duplicate_key(o) != 0) {
		set_why(why, why_size, "the request has a key twice in one object");
		goto bad;
	}
	id = cJSON_GetObjectItemCaseSensitive(o, "id");
	if (!cJSON_IsString(id) ||
	    mafp_marker_parse(id->valuestring, strlen(id->valuestring), 1, MAFP_CALL_ID_MAX, &idv) ||
	    strlen(id->valuestring) < MAFP_CALL_ID_WIDTH) {
		set_why(why, why_size, "the request has no valid \"id\"");
		goto bad;
	}
	if (idv != expect_id) {
		snprintf(why, why_size, "the request's id %ld does not match its file name (%ld)",
			 idv, expect_id);
		goto bad;
	}
	req->id = idv;
	ab = cJSON_GetObjectItemCaseSensitive(o, "abandoned");
	if (cJSON_IsTrue(ab)) {
		req->abandoned = 1;
		cJSON_Delete(o);
		return 0;
	}
	name = cJSON_GetObjectItemCaseSensitive(o, "name");
	if (!cJSON_IsString(name) || !mafp_tool_name_valid(name->valuestring)) {
		set_why(why, why_size, "the request has no valid tool \"name\"");
		goto bad;
	}
	memcpy(req->name, name->valuestring, strlen(name->valuestring) + 1);
	args = cJSON_GetObjectItemCaseSensitive(o, "arguments");
	if (args && !cJSON_IsObject(args)) {
		set_why(why, why_size, "the request's \"arguments\" is not a JSON object");
		goto bad;
	}
	if (args)
		req->arguments = cJSON_DetachItemViaPointer(o, (cJSON *)args);
	else
		req->arguments = cJSON_CreateObject();
	cJSON_Delete(o);
	if (!req->arguments) {
		set_why(why, why_size, "out of memory");
		return -1;
	}
	return 0;
bad:
	cJSON_Delete(o);
	return -1;
}

void mafp_request_clear(struct mafp_request *req)
{
	cJSON_Delete(req->arguments);
	req->arguments = NULL;
}

static char *print_object(cJSON *o)
{
	char *out = o ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	return out;
}

static cJSON *id_object(long id)
{
	char idbuf[16];
	cJSON *o;

	if (mafp_call_file_name(idbuf, sizeof(idbuf), id, "") != 0)
		return NULL;
	o = cJSON_CreateObject();
	if (o && !cJSON_AddStringToObject(o, "id", idbuf)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

char *mafp_request_encode(long id, const char *name, const cJSON *arguments)
{
	cJSON *o = id_object(id), *a;

	if (!o)
		return NULL;
	a = arguments ? cJSON_Duplicate(arguments, 1) : cJSON_CreateObject();
	if (!cJSON_AddStringToObject(o, "name", name) || !a ||
	    !cJSON_AddItemToObject(o, "arguments", a)) {
		cJSON_Delete(a);
		cJSON_Delete(o);
		return NULL;
	}
	return print_object(o);
}

char *mafp_request_encode_abandoned(long id)
{
	cJSON *o = id_object(id);

	if (o && !cJSON_AddTrueToObject(o, "abandoned")) {
		cJSON_Delete(o);
		return NULL;
	}
	return print_object(o);
}

char *mafp_response_encode_value(const cJSON *value)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *v = value ? cJSON_Duplicate(value, 1) : cJSON_CreateNull();

	if (!o || !v || !cJSON_AddItemToObject(o, "value", v)) {
		cJSON_Delete(v);
		cJSON_Delete(o);
		return NULL;
	}
	return print_object(o);
}

char *mafp_response_encode_refusal(const char *sentence)
{
	cJSON *o = cJSON_CreateObject();

	if (o && !cJSON_AddStringToObject(o, "refusal", sentence)) {
		cJSON_Delete(o);
		return NULL;
	}
	return print_object(o);
}

int mafp_response_decode(const char *buf, size_t len, size_t max_len, struct mafp_response *resp)
{
	cJSON *o = mafp_json_parse(buf, len, max_len);
	cJSON *v, *r;

	memset(resp, 0, sizeof(*resp));
	if (!o || !cJSON_IsObject(o))
		goto bad;
	v = cJSON_GetObjectItemCaseSensitive(o, "value");
	r = cJSON_GetObjectItemCaseSensitive(o, "refusal");
	if (v && !r) {
		resp->value = cJSON_DetachItemViaPointer(o, v);
	} else if (r && !v && cJSON_IsString(r)) {
		resp->refusal = strdup(r->valuestring);
		if (!resp->refusal)
			goto bad;
	} else {
		goto bad;
	}
	cJSON_Delete(o);
	return 0;
bad:
	cJSON_Delete(o);
	return -1;
}

void mafp_response_clear(struct mafp_response *resp)
{
	cJSON_Delete(resp->value);
	free(resp->refusal);
	resp->value = NULL;
	resp->refusal = NULL;
}

/* ---- base64 --------------------------------------------------------------------------- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t mafp_base64_encode(const void *data, size_t len, char *out)
{
	const unsigned char *p = data;
	size_t i, o = 0;

	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = b64_alphabet[(v >> 6) & 63];
		out[o++] = b64_alphabet[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);

		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long mafp_base64_decode(const char *text, size_t len, void *out)
{
	unsigned char *o = out;
	size_t i, n = 0;

	if (len % 4 != 0 || len / 4 * 3 > (size_t)LONG_MAX)
		return -1;
	for (i = 0; i < len; i += 4) {
		int a = b64_value((unsigned char)text[i]), b = b64_value((unsigned char)text[i + 1]);
		int c = b64_value((unsigned char)text[i + 2]), d = b64_value((unsigned char)text[i + 3]);
		int last = i + 4 == len;

		if (a < 0 || b < 0)
			return -1;
		if (last && text[i + 3] == '=') {
			if (text[i + 2] == '=') {
				if (b & 15)
					return -1;    /* bits that encode nothing must be zero */
				o[n++] = (unsigned char)(a << 2 | b >> 4);
				return (long)n;
			}
			if (c < 0 || (c & 3))
				return -1;
			o[n++] = (unsigned char)(a << 2 | b >> 4);
			o[n++] = (unsigned char)((b & 15) << 4 | c >> 2);
			return (long)n;
		}
		if (c < 0 || d < 0)
			return -1;
		o[n++] = (unsigned char)(a << 2 | b >> 4);
		o[n++] = (unsigned char)((b & 15) << 4 | c >> 2);
		o[n++] = (unsigned char)((c & 3) << 6 | d);
	}
	return (long)n;
}
