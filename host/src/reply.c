/* A tool's answer: what a callback sets through mafh_reply_* (held until the run takes it). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NOTE_MAX (64u << 10)

static char *copy_text(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (!d)
		return NULL;
	if (len)
		memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

void mafh__reply_clear(struct mafh_reply *r)
{
	free(r->value);
	free(r->refusal);
	free(r->note);
	memset(r, 0, sizeof(*r));
}

int mafh_reply_value(struct mafh_reply *reply, const char *json, size_t len)
{
	char *v;

	if (!reply || (!json && len))
		return MAFH_EINVAL;
	v = copy_text(json ? json : "", len);
	if (!v)
		return MAFH_ENOMEM;
	free(reply->value);
	free(reply->refusal);
	reply->refusal = NULL;
	reply->value = v;
	reply->value_len = len;
	return 0;
}

int mafh_reply_refuse(struct mafh_reply *reply, const char *sentence)
{
	char *r;

	if (!reply)
		return MAFH_EINVAL;
	if (!sentence)
		sentence = "";
	r = copy_text(sentence, strlen(sentence));
	if (!r)
		return MAFH_ENOMEM;
	free(reply->value);
	free(reply->refusal);
	reply->value = NULL;
	reply->value_len = 0;
	reply->refusal = r;
	return 0;
}

int mafh_reply_note(struct mafh_reply *reply, const char *text, size_t len)
{
	char *n;

	if (!reply || (!text && len))
		return MAFH_EINVAL;
	if (len > NOTE_MAX)
		len = NOTE_MAX;
	n = copy_text(text ? text : "", len);
	if (!n)
		return MAFH_ENOMEM;
	free(reply->note);
	reply->note = n;
	reply->note_len = len;
	return 0;
}

int mafh_reply_raw(struct mafh_reply *reply, enum mafh_raw_answer how, const char *bytes,
		   size_t len)
{
	char *v = NULL;

	if (!reply || (unsigned)how > MAFH_RAW_HOLD || (!bytes && len))
		return MAFH_EINVAL;
	if (how == MAFH_RAW_RESPOND && !(v = copy_text(bytes ? bytes : "", len)))
		return MAFH_ENOMEM;
	free(reply->value);
	free(reply->refusal);
	reply->refusal = NULL;
	reply->value = v;
	reply->value_len = v ? len : 0;
	reply->raw_answer = how;
	return 0;
}
