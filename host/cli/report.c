/* maf-host run's report: one JSON object (--json), or a human summary (--summary). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Length of the valid UTF-8 sequence at s[0..len), or 0 if it is not one (overlongs,
 * surrogates and code points past U+10FFFF are not). */
static size_t utf8_seq(const unsigned char *s, size_t len)
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

void cli_json_string(FILE *f, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	fputc('"', f);
	while (i < len) {
		unsigned char ch = s[i];
		size_t n;

		switch (ch) {
		case '"':
			fputs("\\\"", f);
			i++;
			continue;
		case '\\':
			fputs("\\\\", f);
			i++;
			continue;
		case '\n':
			fputs("\\n", f);
			i++;
			continue;
		case '\r':
			fputs("\\r", f);
			i++;
			continue;
		case '\t':
			fputs("\\t", f);
			i++;
			continue;
		default:
			break;
		}
		if (ch < 0x20 || ch == 0x7f) {
			fprintf(f, "\\u%04x", ch);
			i++;
			continue;
		}
		n = utf8_seq(s + i, len - i);
		if (n == 0) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		fwrite(s + i, 1, n, f);
		i += n;
	}
	fputc('"', f);
}

static void json_cstr(FILE *f, const char *s)
{
	if (s)
		cli_json_string(f, s, strlen(s));
	else
		fputs("null", f);
}

static long long ops_total(const struct mafh_op_counts *o)
{
	return (long long)(o->exec + o->read + o->write + o->stat);
}

/* The run error to report: ours (the tools server), else the library's. */
static const char *run_error(const struct cli_report *r)
{
	if (r->res->error.message[0])
		return r->res->error.message;
	if (r->res->status == MAFH_RUN_ERROR)
		return mafh_strerror(r->res->error.code);
	return r->error;
}

void cli_report_json(FILE *f, const struct cli_report *r)
{
	const struct mafh_run_result *res = r->res;
	const struct mafh_exit_record *rec = &res->record;
	long long total = ops_total(&res->ops);

	fprintf(f, "{\"exit_code\": %d, \"status\": ", res->exit_code);
	json_cstr(f, mafh_run_status_name(res->status));
	fprintf(f, ", \"host_exit_code\": %d", r->exit_code);
	fputs(", \"output\": ", f);
	cli_json_string(f, res->output ? res->output : "", res->output ? res->output_len : 0);
	fprintf(f, ", \"output_truncated\": %s", res->output_truncated ? "true" : "false");
	fprintf(f, ", \"calls\": %lld, \"refusals\": %lld", (long long)res->calls,
		(long long)res->refusals);
	fprintf(f, ", \"ops\": {\"exec\": %lld, \"read\": %lld, \"write\": %lld, "
		   "\"stat\": %lld, \"wait\": %lld}",
		(long long)res->ops.exec, (long long)res->ops.read, (long long)res->ops.write,
		(long long)res->ops.stat, (long long)res->ops.wait);
	fprintf(f, ", \"ops_total\": %lld", total);
	if (res->calls > 0)
		fprintf(f, ", \"ops_per_call\": %.4f", (double)total / (double)res->calls);
	else
		fputs(", \"ops_per_call\": null", f);
	fprintf(f, ", \"wall_ms\": %lld", (long long)res->wall_ms);
	fputs(", \"error\": ", f);
	json_cstr(f, run_error(r));
	fputs(", \"tools_server_error\": ", f);
	json_cstr(f, r->error);
	fputs(", \"backend\": ", f);
	json_cstr(f, r->backend);
	fputs(", \"transport\": ", f);
	json_cstr(f, r->transport);
	fprintf(f, ", \"simulated_latency_ms\": %lld", r->latency_ms);
	fprintf(f, ", \"pid\": %lld, \"supervisor_pid\": %lld, \"session\": %s",
		(long long)res->pid, (long long)res->supervisor_pid,
		res->session ? "true" : "false");
	fputs(", \"run_dir\": ", f);
	json_cstr(f, r->run_dir);
	fputs(", \"record\": ", f);
	if (rec->have_record) {
		fputs("{\"status\": ", f);
		json_cstr(f, rec->status);
		fprintf(f, ", \"exit_code\": %d, \"signal\": %d, \"wall_ms\": %lld, "
			   "\"cpu_ms\": %lld, \"peak_rss_kb\": %lld, \"output_bytes\": %lld, "
			   "\"output_truncated\": %s, \"calls\": %lld, \"seccomp\": ",
			rec->exit_code, rec->signal, (long long)rec->wall_ms, (long long)rec->cpu_ms,
			(long long)rec->peak_rss_kb, (long long)rec->output_bytes,
			rec->output_truncated ? "true" : "false", (long long)rec->calls);
		json_cstr(f, rec->seccomp);
		fputs(", \"landlock\": ", f);
		json_cstr(f, rec->landlock);
		fputs(", \"error\": ", f);
		json_cstr(f, rec->error);
		fputs("}", f);
	} else {
		fputs("null", f);
	}
	fputs("}\n", f);
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
	fprintf(f, "calls           %lld served, %lld of them refused\n", (long long)res->calls,
		(long long)res->refusals);
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
	fprintf(f, "wall time       %lld ms", (long long)res->wall_ms);
	if (res->calls > 0)
		fprintf(f, " (%.1f ms per call)", (double)res->wall_ms / (double)res->calls);
	fputc('\n', f);
	if (e)
		fprintf(f, "error           %s\n", e);
}
