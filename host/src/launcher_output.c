/* What the launcher prints, parsed: the launch line of `maf-launch run`, the events of
 * `maf-launch wait`, and their framing on the stream of `maf-launch serve` (where an answer's
 * accepted line comes too). Guest-written bytes: capped before parsing, never trusted for a
 * path. */
#include <string.h>

#include "core.h"

/* The header line of a wait event is small; the file's bytes follow it. */
#define WAIT_HEAD_MAX 256

void mafh__first_line(char *dst, size_t size, const char *src, size_t len)
{
	size_t i, n = 0;

	if (!size)
		return;
	for (i = 0; src && i < len && src[i] != '\n' && n + 1 < size; i++)
		dst[n++] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[n] = '\0';
}

int mafh__launch_output_parse(const char *out, size_t len, struct mafp_launch_info *info,
			      int *session, const char **why)
{
	const char *p, *end, *e = NULL;
	size_t sl = strlen(MAFP_SESSION_LINE);
	int got = 0;

	*session = 0;
	for (p = out; out && p < out + len; p = end + 1) {
		end = memchr(p, '\n', (size_t)(out + len - p));
		if (!end)
			end = out + len;
		if (!got && p < end && *p == '{') {
			got = mafp_launch_info_decode(p, (size_t)(end - p), info, &e) == 0;
		} else if ((size_t)(end - p) == sl && memcmp(p, MAFP_SESSION_LINE, sl) == 0) {
			/* A session exists only if the launcher itself printed this line, never
			 * because a file says so. */
			*session = 1;
		}
	}
	if (got)
		return 0;
	*why = e ? e : "none found";
	return -1;
}

int mafh__wait_event_parse(const char *out, size_t len, struct mafh__wait_event *ev)
{
	const char *nl = out ? memchr(out, '\n', len) : NULL;
	const cJSON *name, *size, *id;
	cJSON *head;

	memset(ev, 0, sizeof(*ev));
	ev->kind = MAFH__WAIT_BAD;
	ev->id = -1;
	ev->size = -1;
	head = nl ? mafp_json_parse(out, (size_t)(nl - out), WAIT_HEAD_MAX) : NULL;
	name = cJSON_GetObjectItemCaseSensitive(head, "event");
	if (!cJSON_IsObject(head) || !cJSON_IsString(name)) {
		cJSON_Delete(head);
		return -1;
	}
	if (strcmp(name->valuestring, "timeout") == 0)
		ev->kind = MAFH__WAIT_TIMEOUT;
	else if (strcmp(name->valuestring, "exit") == 0)
		ev->kind = MAFH__WAIT_EXIT;
	else if (strcmp(name->valuestring, "request") == 0)
		ev->kind = MAFH__WAIT_REQUEST;
	else if (strcmp(name->valuestring, "lost") == 0)
		ev->kind = MAFH__WAIT_LOST;
	else if (strcmp(name->valuestring, "accepted") == 0)
		ev->kind = MAFH__WAIT_ACCEPTED;
	else
		ev->kind = MAFH__WAIT_OTHER;
	size = cJSON_GetObjectItemCaseSensitive(head, "size");
	id = cJSON_GetObjectItemCaseSensitive(head, "id");
	ev->size = cJSON_IsNumber(size) ? size->valuedouble : -1;
	if (cJSON_IsNumber(id) && id->valuedouble >= 1 && id->valuedouble <= MAFP_CALL_ID_MAX &&
	    id->valuedouble == (double)(long)id->valuedouble)
		ev->id = (long)id->valuedouble;
	ev->unreadable = cJSON_GetObjectItemCaseSensitive(head, "error") != NULL;
	ev->oversized = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(head, "oversized"));
	ev->body = nl + 1;
	ev->body_len = len - (size_t)(ev->body - out);
	cJSON_Delete(head);
	return 0;
}

int mafh__wait_event_whole(const struct mafh__wait_event *ev)
{
	return !ev->unreadable && !ev->oversized && ev->size == (double)ev->body_len;
}

long mafh__stream_event_len(const char *buf, size_t len, uint64_t max_body,
			    struct mafh__wait_event *ev)
{
	const char *nl = memchr(buf, '\n', len < WAIT_HEAD_MAX + 1 ? len : WAIT_HEAD_MAX + 1);
	size_t head, body = 0;

	if (!nl)
		return len > WAIT_HEAD_MAX ? -1 : 0;
	head = (size_t)(nl - buf) + 1;
	if (mafh__wait_event_parse(buf, head, ev) != 0)
		return -1;
	/* Bytes follow only an event that names a file it read (never an accepted line). */
	if ((ev->kind == MAFH__WAIT_REQUEST || ev->kind == MAFH__WAIT_EXIT) && !ev->unreadable &&
	    !ev->oversized) {
		if (ev->size < 0 || ev->size > (double)max_body ||
		    ev->size != (double)(uint64_t)ev->size)
			return -1;
		if (len - head < (uint64_t)ev->size)
			return 0;
		body = (size_t)ev->size;
	}
	ev->body_len = body;
	return (long)(head + body);
}
