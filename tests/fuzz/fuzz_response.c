/* libFuzzer target: mafp_response_decode, the launcher's reader of NNNN.response.json (a
 * file anything in the sandbox can write, possibly torn). Oracle: exactly one of value and
 * refusal is set on success, none on failure, and the response re-encodes and decodes to the
 * same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "fuzz_tree.h"

#define FUZZ_MAX 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mafp_response resp, again;
	char *buf, *enc;

	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (mafp_response_decode(buf, size, FUZZ_MAX, &resp) != 0) {
		free(buf);
		if (resp.value || resp.refusal)
			abort();
		return 0;
	}
	free(buf);
	if (!resp.value == !resp.refusal)
		abort();
	enc = resp.value ? mafp_response_encode_value(resp.value)
			 : mafp_response_encode_refusal(resp.refusal);
	if (enc) {
		if (mafp_response_decode(enc, strlen(enc), (size_t)-1, &again) != 0)
			abort();
		if (resp.value ? !fuzz_same_tree(resp.value, again.value)
			       : (!again.refusal || strcmp(resp.refusal, again.refusal)))
			abort();
		mafp_response_clear(&again);
		free(enc);
	}
	mafp_response_clear(&resp);
	return 0;
}
