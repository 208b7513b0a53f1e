/* libFuzzer target: mafl_channel_parse_call, the supervisor's reader of the call lines a program
 * writes on its channel connection. Oracle: an accepted line has an id (a string of at most
 * MAFL_CHANNEL_ID_MAX bytes, or a number) and is either raw (a request of exactly
 * request_len bytes, no name, no arguments) or a tool call (a valid tool name and an object
 * for arguments); a refused one has a sentence; the tree is always released. A raw request
 * that mafp_utf8_valid passes also goes through the way a raw answer carries a
 * response, a JSON string printed by cJSON, and must read back as the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "protocol.h"

static void round_trip(const char *text, size_t len)
{
	cJSON *o = cJSON_CreateObject(), *back;
	const cJSON *s;
	char *line;

	if (!o)
		return;
	if (!cJSON_AddItemToObject(o, "response", cJSON_CreateStringReference(text))) {
		cJSON_Delete(o);
		return;
	}
	line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!line)
		return;
	back = mafp_json_parse(line, strlen(line), strlen(line));
	s = cJSON_GetObjectItemCaseSensitive(back, "response");
	if (!cJSON_IsString(s) || strlen(s->valuestring) != len ||
	    memcmp(s->valuestring, text, len) != 0)
		abort();
	cJSON_Delete(back);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct channel_call call;
	char why[256];
	cJSON *root;
	char *buf = malloc(size ? size : 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	why[0] = '\0';
	if (mafl_channel_parse_call(buf, size, &root, &call, why, sizeof(why)) != 0) {
		if (!why[0])
			abort();
		if (call.id && !(cJSON_IsString(call.id) || cJSON_IsNumber(call.id)))
			abort();
	} else {
		const cJSON *id = call.id;

		if (!id || !(cJSON_IsNumber(id) ||
			     (cJSON_IsString(id) && strlen(id->valuestring) <= MAFL_CHANNEL_ID_MAX)))
			abort();
		if (call.request) {
			if (call.name || call.arguments ||
			    strlen(call.request) != call.request_len)
				abort();
			if (mafp_utf8_valid(call.request, call.request_len))
				round_trip(call.request, call.request_len);
		} else if (!call.name || !mafp_tool_name_valid(call.name) ||
			   !cJSON_IsObject(call.arguments)) {
			abort();
		}
	}
	cJSON_Delete(root);
	free(buf);
	return 0;
}
