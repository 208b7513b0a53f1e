/* libFuzzer target: the head of the Docker engine's answer to an upgrade request
 * (mafh__docker_upgrade_head, host/backends/docker_parse.c), read a byte at a time by the
 * stream's hijack. Oracle: fed every prefix in turn, as the hijack does, it says "need more"
 * until it says a length or -1, and then keeps saying the same; a length ends with a blank
 * line and a status of three digits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	long first = 0, r, status;
	size_t i;

	if (!buf)
		abort();
	memcpy(buf, data, size);
	for (i = 1; i <= size; i++) {
		r = mafh__docker_upgrade_head(buf, i, &status);
		if (first == 0) {
			first = r;
			if (r > 0 && (r != (long)i || r < 16 || memcmp(buf + r - 4, "\r\n\r\n", 4) ||
				      status < 0 || status > 999))
				abort();
		} else if (first < 0 && r >= 0) {
			abort();
		} else if (first > 0 && r != first) {
			abort();
		}
	}
	free(buf);
	return 0;
}
