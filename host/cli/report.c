/* maf-host run's report: one JSON object (--json), or a human summary (--summary). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cJSON.h"
#include "cli.h"

size_t cli_utf8_seq(const unsigned char *s, size_t len)
{
	size_t n, i;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* s[0..len) as valid UTF-8, each byte that is not part of a valid sequence replaced by
 * U+FFFD; NUL bytes kept. NUL-terminated and malloc'd, *out_len its length, or NULL. */
static char *utf8_sanitise(const char *str, size_t len, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)str;
	char *d = malloc(len * 3 + 1);
	size_t i = 0, o = 0;

	if (!d)
		return NULL;
	while (i < len) {
		size_t n = cli_utf8_seq(s + i, len - i);

		if (n == 0) {
			memcpy(d + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(d + o, s + i, n);
		o += n;
		i += n;
	}
	d[o] = '\0';
	*out_len = o;
	return d;
}

/* cJSON takes a string up to its first NUL, and a program's output may hold NUL bytes: such
 * a string is printed by cJSON a piece at a time, the pieces between the NULs, and they are
 * joined with \u0000 into a raw value, so that every escape is still cJSON's. s is valid
 * UTF-8 with s[len] == '\0'. */
static cJSON *string_with_nuls(const char *s, size_t len)
{
	/* A byte takes at most 6 as an escape (\u00XX); cJSON asks 5 spare for its own. */
	size_t cap = len * 6 + 16, at = 0, off = 0;
	char *joined = malloc(cap), *piece_text = malloc(cap);
	cJSON *piece = cJSON_CreateStringReference(""), *raw = NULL;

	/* cJSON takes the buffer's length as an int. */
	if (!joined || !piece_text || !piece || len > (INT_MAX - 16) / 6)
		goto out;
	joined[at++] = '"';
	for (;;) {
		size_t n = strlen(s + off), printed;

		piece->valuestring = (char *)(s + off);
		if (!cJSON_PrintPreallocated(piece, piece_text, (int)(n * 6 + 16), 0))
			goto out;
		/* Without its quotes. */
		printed = strlen(piece_text) - 2;
		memcpy(joined + at, piece_text + 1, printed);
		at += printed;
		off += n;
		if (off >= len)
			break;
		memcpy(joined + at, "\\u0000", 6);
		at += 6;
		off++;
	}
	joined[at++] = '"';
	joined[at] = '\0';
	raw = cJSON_CreateRaw(joined);
out:
	cJSON_Delete(piece);
	free(piece_text);
	free(joined);
	return raw;
}

/* A JSON string of s[0..len): invalid UTF-8 as U+FFFD, NUL bytes as \u0000. NULL when out of
 * memory. */
static cJSON *text(const char *s, size_t len)
{
	size_t clean_len;
	char *clean = utf8_sanitise(s, len, &clean_len);
	cJSON *item;

	if (!clean)
		return NULL;
	item = memchr(clean, '\0', clean_len) ? string_with_nuls(clean, clean_len)
					      : cJSON_CreateString(clean);
	free(clean);
	return item;
}

/* s as a JSON string, or null for NULL. */
static cJSON *text_or_null(const char *s)
{
	return s ? text(s, strlen(s)) : cJSON_CreateNull();
}

static cJSON *number(long long v)
{
	return cJSON_CreateNumber((double)v);
}

/* Adds item (taken; NULL when making it ran out of memory) to object as key. The first
 * failure is kept in *failed, so that an object is filled in one straight run. */
static void put(cJSON *object, const char *key, cJSON *item, int *failed)
{
	if (!item || !cJSON_AddItemToObject(object, key, item)) {
		cJSON_Delete(item);
		*failed = 1;
	}
}

/* The library's errors, one sentence a line, as an array of strings. */
static cJSON *errors_list(const char *errors)
{
	cJSON *list = cJSON_CreateArray();

	while (list && errors && *errors) {
		size_t n = strcspn(errors, "\n");
		cJSON *item = n ? text(errors, n) : NULL;

		if (n && (!item || !cJSON_AddItemToArray(list, item))) {
			cJSON_Delete(item);
			cJSON_Delete(list);
			return NULL;
		}
		errors += n + (errors[n] == '\n');
	}
	return list;
}

static long long ops_total(const struct mafh_op_counts *o)
{
	return (long long)(o->exec + o->read + o->write + o->stat);
}

/* The run error to report: the library's, else ours (the tools server). */
static const char *run_error(const struct cli_report *r)
{
	if (r->res->error.message[0])
		return r->res->error.message;
	if (r->res->status == MAFH_RUN_ERROR)
		return mafh_strerror(r->res->error.code);
	return r->error;
}

static cJSON *ops_object(const struct mafh_op_counts *ops, int *failed)
{
	cJSON *o = cJSON_CreateObject();

	put(o, "exec", number(ops->exec), failed);
	put(o, "read", number(ops->read), failed);
	put(o, "write", number(ops->write), failed);
	put(o, "stat", number(ops->stat), failed);
	put(o, "wait", number(ops->wait), failed);
	return o;
}

static cJSON *ops_per_call(const struct mafh_run_result *res)
{
	char per_call[32];

	if (res->calls <= 0)
		return cJSON_CreateNull();
	/* Printed as it always was, so that it stays a JSON float: cJSON prints 2.0 as 2. */
	snprintf(per_call, sizeof(per_call), "%.4f",
		 (double)ops_total(&res->ops) / (double)res->calls);
	return cJSON_CreateRaw(per_call);
}

static cJSON *record_object(const struct mafh_exit_record *rec, int *failed)
{
	cJSON *r;

	if (!rec->have_record)
		return cJSON_CreateNull();
	r = cJSON_CreateObject();
	put(r, "status", text_or_null(rec->status), failed);
	put(r, "exit_code", number(rec->exit_code), failed);
	put(r, "signal", number(rec->signal), failed);
	put(r, "wall_ms", number(rec->wall_ms), failed);
	put(r, "cpu_ms", number(rec->cpu_ms), failed);
	put(r, "peak_rss_kb", number(rec->peak_rss_kb), failed);
	put(r, "output_bytes", number(rec->output_bytes), failed);
	put(r, "output_truncated", cJSON_CreateBool(rec->output_truncated), failed);
	put(r, "calls", number(rec->calls), failed);
	put(r, "undelivered", number(rec->undelivered), failed);
	put(r, "seccomp", text_or_null(rec->seccomp), failed);
	put(r, "landlock", text_or_null(rec->landlock), failed);
	put(r, "error", text_or_null(rec->error), failed);
	return r;
}

int cli_report_json(FILE *f, const struct cli_report *r)
{
	const struct mafh_run_result *res = r->res;
	cJSON *o = cJSON_CreateObject();
	char *printed;
	int failed = 0;

	put(o, "exit_code", number(res->exit_code), &failed);
	put(o, "status", text_or_null(mafh_run_status_name(res->status)), &failed);
	put(o, "host_exit_code", number(r->exit_code), &failed);
	put(o, "output", text(res->output ? res->output : "", res->output ? res->output_len : 0),
	    &failed);
	put(o, "output_truncated", cJSON_CreateBool(res->output_truncated), &failed);
	put(o, "calls", number(res->calls), &failed);
	put(o, "refusals", number(res->refusals), &failed);
	put(o, "undelivered", number(res->undelivered), &failed);
	put(o, "ops", ops_object(&res->ops, &failed), &failed);
	put(o, "ops_total", number(ops_total(&res->ops)), &failed);
	put(o, "ops_per_call", ops_per_call(res), &failed);
	put(o, "wall_ms", number(res->wall_ms), &failed);
	put(o, "error", text_or_null(run_error(r)), &failed);
	put(o, "errors", errors_list(res->errors), &failed);
	put(o, "tools_server_error", text_or_null(r->error), &failed);
	put(o, "backend", text_or_null(r->backend), &failed);
	put(o, "transport", text_or_null(r->transport), &failed);
	put(o, "simulated_latency_ms", number(r->latency_ms), &failed);
	put(o, "engine_requests", r->engine_requests >= 0 ? number(r->engine_requests)
							   : cJSON_CreateNull(), &failed);
	put(o, "pid", number(res->pid), &failed);
	put(o, "supervisor_pid", number(res->supervisor_pid), &failed);
	put(o, "session", cJSON_CreateBool(res->session), &failed);
	/* What contained the program, as the launcher said over its stdout. */
	put(o, "identity", text_or_null(res->identity[0] ? res->identity : NULL), &failed);
	put(o, "uid", res->identity[0] ? number(res->uid) : cJSON_CreateNull(), &failed);
	put(o, "landlock", text_or_null(res->landlock[0] ? res->landlock : NULL), &failed);
	put(o, "verified", cJSON_CreateBool(res->verified), &failed);
	put(o, "run_dir", text_or_null(r->run_dir), &failed);
	put(o, "record", record_object(&res->record, &failed), &failed);
	printed = failed ? NULL : cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!printed)
		return -1;
	fputs(printed, f);
	fputc('\n', f);
	free(printed);
	return 0;
}

void cli_report_summary(FILE *f, const struct cli_report *r)
{
	const struct mafh_run_result *res = r->res;
	long long total = ops_total(&res->ops);
	const char *e = run_error(r);

	fprintf(f, "---- run summary ----\n");
	fprintf(f, "status          %s, exit code %d", mafh_run_status_name(res->status),
		res->exit_code);
	if (res->record.have_record)
		fprintf(f, " (seccomp %s, landlock %s)", res->record.seccomp, res->record.landlock);
	fputc('\n', f);
	if (res->identity[0])
		fprintf(f, "contained       %s identity (uid %lld), landlock %s%s\n",
			res->identity, (long long)res->uid, res->landlock,
			res->verified ? "" : ": unverified");
	fprintf(f, "calls           %lld served, %lld of them refused", (long long)res->calls,
		(long long)res->refusals);
	if (res->undelivered)
		fprintf(f, "; %lld answers never delivered", (long long)res->undelivered);
	fputc('\n', f);
	fprintf(f, "backend ops     %lld exec, %lld read, %lld write, %lld stat: %lld in all",
		(long long)res->ops.exec, (long long)res->ops.read, (long long)res->ops.write,
		(long long)res->ops.stat, total);
	if (res->calls > 0)
		fprintf(f, ", %.2f per call", (double)total / (double)res->calls);
	fputc('\n', f);
	fprintf(f, "backend         %s", r->backend);
	if (r->latency_ms > 0)
		fprintf(f, " (+%lld ms simulated per operation)", r->latency_ms);
	fprintf(f, ", transport %s\n", r->transport);
	if (r->engine_requests >= 0)
		fprintf(f, "engine requests %lld to the Docker engine\n", r->engine_requests);
	fprintf(f, "wall time       %lld ms", (long long)res->wall_ms);
	if (res->calls > 0)
		fprintf(f, " (%.1f ms per call)", (double)res->wall_ms / (double)res->calls);
	fputc('\n', f);
	if (e)
		fprintf(f, "error           %s\n", e);
}
