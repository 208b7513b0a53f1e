/* libFuzzer target: channel_parse_call, the supervisor's reader of the call lines a program
 * writes on its channel connection. Oracle: an accepted line has an id (a string of at most
 * MAFL_CHANNEL_ID_MAX bytes, or a number), a valid tool name and an object for arguments; a
 * refused one has a sentence; the tree is always released. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const cJSON *id, *args;
	const char *name;
	char why[256];
	cJSON *root;
	char *buf = malloc(size ? size : 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	why[0] = '\0';
	if (channel_parse_call(buf, size, &root, &id, &name, &args, why, sizeof(why)) != 0) {
		if (!why[0])
			abort();
		if (id && !(cJSON_IsString(id) || cJSON_IsNumber(id)))
			abort();
	} else {
		if (!id || !(cJSON_IsNumber(id) ||
			     (cJSON_IsString(id) && strlen(id->valuestring) <= MAFL_CHANNEL_ID_MAX)))
			abort();
		if (!mafp_tool_name_valid(name) || !cJSON_IsObject(args))
			abort();
	}
	cJSON_Delete(root);
	free(buf);
	return 0;
}
