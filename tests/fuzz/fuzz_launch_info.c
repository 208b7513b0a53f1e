/* libFuzzer target: mafp_launch_info_decode, the host's reader of the launcher's first line.
 * Oracle: accepted pids are in range, and the line re-encodes and decodes to the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mafp_launch_info info, again;
	const char *why = NULL;
	char *buf, *enc;

	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (mafp_launch_info_decode(buf, size, &info, &why) != 0) {
		free(buf);
		if (!why)
			abort();
		return 0;
	}
	free(buf);
	if (size > MAFP_LAUNCH_LINE_MAX || info.pid < 1 || info.pid > INT32_MAX ||
	    info.supervisor_pid < 1 || info.supervisor_pid > INT32_MAX || info.session < 0 ||
	    info.session > INT32_MAX)
		abort();
	enc = mafp_launch_info_encode(&info);
	if (!enc)
		return 0;
	if (mafp_launch_info_decode(enc, strlen(enc), &again, &why) != 0 ||
	    memcmp(&info, &again, sizeof(info)) != 0)
		abort();
	free(enc);
	return 0;
}
