/* libFuzzer target: mafp_json_parse, the gate of every guest-written JSON document.
 * Oracle: an accepted document has no NUL byte, raw or escaped as \u0000 in a string (cJSON
 * would cut the string there), fits the cap, nests at most MAFP_JSON_DEPTH_MAX deep, and
 * prints to JSON that parses back to an equal tree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "fuzz_tree.h"

#define FUZZ_MAX 65536

static int depth(const cJSON *j)
{
	int d = 0;
	const cJSON *c;

	if (!cJSON_IsArray(j) && !cJSON_IsObject(j))
		return 0;
	for (c = j->child; c; c = c->next) {
		int cd = depth(c);

		if (cd > d)
			d = cd;
	}
	return d + 1;
}

static int has_escaped_nul(const uint8_t *d, size_t n)
{
	int in_string = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!in_string) {
			in_string = d[i] == '"';
		} else if (d[i] == '"') {
			in_string = 0;
		} else if (d[i] == '\\') {
			if (i + 5 < n && d[i + 1] == 'u' && memcmp(d + i + 2, "0000", 4) == 0)
				return 1;
			i++;
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *printed;
	cJSON *j, *again;

	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	j = mafp_json_parse(buf, size, FUZZ_MAX);
	free(buf);
	if (!j)
		return 0;
	if (size == 0 || size > FUZZ_MAX || memchr(data, '\0', size) ||
	    has_escaped_nul(data, size))
		abort();
	if (depth(j) > MAFP_JSON_DEPTH_MAX)
		abort();
	printed = cJSON_PrintUnformatted(j);
	if (printed) {
		again = mafp_json_parse(printed, strlen(printed), (size_t)-1);
		if (!again || !fuzz_same_tree(j, again))
			abort();
		cJSON_Delete(again);
		free(printed);
	}
	cJSON_Delete(j);
	return 0;
}
