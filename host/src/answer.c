/* A request judged before any tool runs, and a tool's answer turned into a response: the
 * registry's semantics (upstream's), as pure functions over bytes. Sentences here go to the
 * program as refusals. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

void mafh__request_judge(const struct mafh_registry *reg, const struct mafh_limits *lim,
			 int64_t answered, const char *buf, size_t len, long expect_id,
			 struct mafh__judged *j)
{
	struct mafp_request req;
	struct mafh_error e = {0};

	memset(j, 0, sizeof(*j));
	if (mafp_request_decode(buf, len, lim->max_request_bytes, expect_id, &req, j->sentence,
				sizeof(j->sentence)) != 0) {
		j->verdict = MAFH__REQ_UNREAD;
		return;
	}
	memcpy(j->tool, req.name, sizeof(j->tool));
	if (req.abandoned) {
		mafp_request_clear(&req);
		j->verdict = MAFH__REQ_STEP_OVER;
		return;
	}
	j->verdict = MAFH__REQ_REFUSE;
	if (answered >= lim->max_calls) {
		snprintf(j->sentence, sizeof(j->sentence), "the budget of %lld host-tool calls for "
			 "this run is spent", (long long)lim->max_calls);
	} else if (mafh__registry_check_tree(reg, req.name, req.arguments, &e) != 0) {
		snprintf(j->sentence, sizeof(j->sentence), "%s", e.message);
	} else {
		j->verdict = MAFH__REQ_CALL;
		j->t = mafh__registry_find(reg, req.name);
		j->args = req.arguments;
		req.arguments = NULL;
	}
	mafp_request_clear(&req);
}

void mafh__sentence_clean(char *s)
{
	size_t left = strlen(s);

	while (left) {
		size_t n = mafp_utf8_seq_len(s, left);

		if (n == 0 || (n == 1 && ((unsigned char)*s < 0x20 || *s == 0x7f)))
			*s = '?', n = 1;
		s += n;
		left -= n;
	}
}

static char *refusal(int *refused, char *sentence, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static char *refusal(int *refused, char *sentence, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sentence, size, fmt, ap);
	va_end(ap);
	/* A tool's words (or one cut mid-sequence by the size) reach a program that decodes
	 * the response as UTF-8 JSON: what would make it undecodable becomes '?'. */
	mafh__sentence_clean(sentence);
	*refused = 1;
	return mafp_response_encode_refusal(sentence);
}

char *mafh__answer_encode(const struct mafh_op_result *res, const char *tool,
			  const struct mafh_limits *lim, uint64_t total_so_far, int *refused,
			  char *sentence, size_t sentence_size)
{
	cJSON *value;
	char *text;
	size_t n;

	*refused = 0;
	sentence[0] = '\0';
	if (res->error)
		return refusal(refused, sentence, sentence_size, "the host tool '%s' failed: %s%s%s",
			       tool, mafh_strerror(res->error), res->detail.message[0] ? ": " : "",
			       res->detail.message);
	if (!res->value) {
		if (res->refusal && res->refusal[0])
			return refusal(refused, sentence, sentence_size, "%s", res->refusal);
		if (res->refusal)
			return refusal(refused, sentence, sentence_size,
				       "the host refused the call");
		return refusal(refused, sentence, sentence_size,
			       "the host tool '%s' gave no answer", tool);
	}
	if (res->value_len > lim->max_response_bytes)
		return refusal(refused, sentence, sentence_size, "the response of host tool '%s' "
			       "is %zu bytes, more than the cap of %llu bytes", tool,
			       res->value_len, (unsigned long long)lim->max_response_bytes);
	value = mafp_json_parse(res->value, res->value_len, res->value_len);
	if (!value)
		return refusal(refused, sentence, sentence_size, "the host tool '%s' answered with "
			       "something that is not one JSON value", tool);
	text = mafp_response_encode_value(value);
	cJSON_Delete(value);
	if (!text)
		return NULL;
	n = strlen(text);
	if (n > lim->max_response_bytes) {
		free(text);
		return refusal(refused, sentence, sentence_size, "the response of host tool '%s' "
			       "is %zu bytes, more than the cap of %llu bytes", tool, n,
			       (unsigned long long)lim->max_response_bytes);
	}
	if (total_so_far + n > lim->max_total_response_bytes) {
		free(text);
		return refusal(refused, sentence, sentence_size, "the responses of this run would "
			       "exceed the total cap of %llu bytes",
			       (unsigned long long)lim->max_total_response_bytes);
	}
	return text;
}
