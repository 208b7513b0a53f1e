/* maf-host run --verbose: each event of the run as a line on stderr, as it happens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_run.h"

#define DETAIL_INDENT "    "
#define DETAIL_LINES 64          /* lines of a detail shown */
#define DETAIL_BYTES (16u << 10) /* bytes of a detail shown */
#define SENTENCE_BYTES 2048      /* bytes of a sentence shown */

/* Writes s[0..len) on f with what a terminal would act on made visible: control bytes (a
 * newline too, unless newlines is set), C1 controls and bytes that are not UTF-8, as \xNN.
 * After each newline, DETAIL_INDENT. */
static void put_visible(FILE *f, const char *str, size_t len, int newlines)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, n;

	while (i < len) {
		if (s[i] == '\n' && newlines) {
			fputs("\n" DETAIL_INDENT, f);
			i++;
			continue;
		}
		n = cli_utf8_seq(s + i, len - i);
		/* U+0080..U+009F (C2 80..C2 9F) are controls too: CSI among them. */
		if (n == 0 || s[i] < 0x20 || s[i] == 0x7f || (s[i] == 0xc2 && s[i + 1] < 0xa0)) {
			fprintf(f, "\\x%02x", s[i]);
			i++;
			continue;
		}
		fwrite(s + i, 1, n, f);
		i += n;
	}
}

/* The detail below its event: indented lines, at most DETAIL_LINES and DETAIL_BYTES. */
static void put_detail(FILE *f, const char *s, size_t len)
{
	size_t shown = 0, lines = 0;

	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r'))
		len--;
	while (shown < len && shown < DETAIL_BYTES && lines < DETAIL_LINES) {
		const char *nl = memchr(s + shown, '\n', len - shown);
		size_t end = nl ? (size_t)(nl - s) : len;

		if (end - shown > DETAIL_BYTES - shown)
			end = DETAIL_BYTES;
		fputs("\n" DETAIL_INDENT, f);
		put_visible(f, s + shown, end - shown, 0);
		shown = nl && end == (size_t)(nl - s) ? end + 1 : end;
		lines++;
	}
	if (shown < len)
		fprintf(f, "\n" DETAIL_INDENT "(%zu more bytes not shown)", len - shown);
}

static void put_sentence(FILE *f, const char *s)
{
	size_t len = s ? strnlen(s, SENTENCE_BYTES) : 0;

	put_visible(f, s ? s : "", len, 1);
}

static const char *plural(long long n)
{
	return n == 1 ? "" : "s";
}

void cli_run_events_print(const struct mafh_event *ev, void *ud)
{
	const struct run_events *e = ud;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	long long calls;

	/* The whole event is written at once: a tools server's stderr is ours too. */
	if (!f)
		return;
	fprintf(f, "%s: ", cli_prog);
	switch (ev->kind) {
	case MAFH_EVENT_RUN_STARTED:
		fprintf(f, "started (pid %lld, supervisor %lld)", (long long)ev->pid,
			(long long)ev->supervisor_pid);
		break;
	case MAFH_EVENT_CALL_SERVED:
	case MAFH_EVENT_CALL_REFUSED:
		fprintf(f, "call %lld ", (long long)ev->call_id);
		/* The name the program asked for, which need not be a tool's. */
		if (ev->tool) {
			put_visible(f, ev->tool, strnlen(ev->tool, SENTENCE_BYTES), 0);
			fputc(' ', f);
		}
		fprintf(f, "%s in %lld ms",
			ev->kind == MAFH_EVENT_CALL_SERVED ? "served" : "refused",
			(long long)ev->duration_ms);
		if (ev->kind == MAFH_EVENT_CALL_SERVED)
			break;
		fputs(": ", f);
		put_sentence(f, ev->message);
		if (ev->detail && ev->detail_len)
			put_detail(f, ev->detail, ev->detail_len);
		break;
	case MAFH_EVENT_CALL_UNDELIVERED:
		fprintf(f, "call %lld undelivered: the program ended before its answer reached it",
			(long long)ev->call_id);
		break;
	case MAFH_EVENT_ERROR:
		fputs("error: ", f);
		put_sentence(f, ev->message && ev->message[0] ? ev->message
							      : mafh_strerror(ev->code));
		break;
	case MAFH_EVENT_RUN_ENDED:
		calls = e && e->res ? (long long)e->res->calls : 0;
		fprintf(f, "ended: %s", mafh_run_status_name(ev->status));
		if (ev->exit_code >= 0)
			fprintf(f, ", exit code %d", ev->exit_code);
		fprintf(f, ", %lld call%s", calls, plural(calls));
		if (e && e->res && e->res->undelivered)
			fprintf(f, ", %lld undelivered", (long long)e->res->undelivered);
		break;
	default:
		fprintf(f, "%s", mafh_event_kind_name(ev->kind));
		break;
	}
	fputc('\n', f);
	if (fclose(f) == 0)
		fwrite(text, 1, len, stderr);
	free(text);
}
