/* libFuzzer target: mafp_request_decode, the host's reader of NNNN.request.json (written by
 * the program itself, or by anything in the sandbox). The first byte picks the id the file
 * name says (1..16), the rest is the file. Oracle: an accepted request has that id, a valid
 * tool name and an object for arguments (or is abandoned with none), and re-encodes to a
 * request that decodes to the same name and arguments. A refusal always has a sentence. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "fuzz_tree.h"

#define FUZZ_MAX 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mafp_request req, again;
	char why[256], *buf, *enc;
	long id;

	if (size < 1)
		return 0;
	id = 1 + data[0] % 16;
	buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	why[0] = '\0';
	if (mafp_request_decode(buf, size - 1, FUZZ_MAX, id, &req, why, sizeof(why)) != 0) {
		free(buf);
		if (!why[0] || req.arguments)
			abort();
		return 0;
	}
	free(buf);
	if (req.id != id)
		abort();
	if (req.abandoned) {
		if (req.arguments)
			abort();
		mafp_request_clear(&req);
		return 0;
	}
	if (!mafp_tool_name_valid(req.name) || !cJSON_IsObject(req.arguments))
		abort();
	enc = mafp_request_encode(id, req.name, req.arguments);
	if (enc) {
		if (mafp_request_decode(enc, strlen(enc), (size_t)-1, id, &again, why,
					sizeof(why)) != 0)
			abort();
		if (strcmp(again.name, req.name) || again.abandoned ||
		    !fuzz_same_tree(req.arguments, again.arguments))
			abort();
		mafp_request_clear(&again);
		free(enc);
	}
	mafp_request_clear(&req);
	return 0;
}
