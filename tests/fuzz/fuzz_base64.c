/* libFuzzer target: mafp_base64_decode, under the Docker backend's reader of the engine's
 * X-Docker-Container-Path-Stat header (bytes a container's files choose).
 * Oracle: a text it accepts is canonical (encoding the bytes gives the text back), and what
 * it writes stays within len / 4 * 3 bytes of an exact-size buffer; bytes the encoder made
 * always decode back to themselves. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1), *again;
	unsigned char *out = malloc(size / 4 * 3 + 1);
	long n;

	if (!text || !out)
		abort();
	memcpy(text, data, size);
	n = mafp_base64_decode(text, size, out);
	if (n >= 0) {
		if ((size_t)n > size / 4 * 3)
			abort();
		again = malloc(MAFP_BASE64_LEN((size_t)n) + 1);
		if (!again || mafp_base64_encode(out, (size_t)n, again) != size ||
		    memcmp(again, text, size) != 0)
			abort();
		free(again);
	} else if (n != -1) {
		abort();
	}
	/* The input as bytes: encoded, then decoded. */
	again = malloc(MAFP_BASE64_LEN(size) + 1);
	free(out);
	out = malloc(size + 1);
	if (!again || !out)
		abort();
	if (mafp_base64_encode(data, size, again) != MAFP_BASE64_LEN(size) ||
	    mafp_base64_decode(again, MAFP_BASE64_LEN(size), out) != (long)size ||
	    memcmp(out, data, size) != 0)
		abort();
	free(again);
	free(out);
	free(text);
	return 0;
}
