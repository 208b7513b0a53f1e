/* libFuzzer target: what the host reads from the launcher's stdout (host/src/
 * launcher_output.c): the output of `maf-launch run` (launch line, session line) and the
 * events of `maf-launch wait`, whose body is the bytes of a guest-written file. The first
 * input byte picks the parser. Oracle: what is accepted is in range and borrows only from the
 * input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mafp_launch_info info;
	struct mafh__wait_event ev;
	const char *why = NULL;
	char *buf, line[64];
	int session = -1;

	if (size < 1)
		return 0;
	buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	if (data[0] & 1) {
		if (mafh__launch_output_parse(buf, size - 1, &info, &session, &why) == 0) {
			if (info.pid < 1 || info.supervisor_pid < 1 || (session != 0 && session != 1))
				abort();
		} else if (!why) {
			abort();
		}
	} else if (mafh__wait_event_parse(buf, size - 1, &ev) == 0) {
		if (ev.body < buf || ev.body + ev.body_len != buf + size - 1 ||
		    (ev.kind == MAFH__WAIT_REQUEST && ev.id != -1 &&
		     (ev.id < 1 || ev.id > MAFP_CALL_ID_MAX)))
			abort();
		if (mafh__wait_event_whole(&ev) && ev.size != (double)ev.body_len)
			abort();
	} else if (ev.kind != MAFH__WAIT_BAD) {
		abort();
	}
	mafh__first_line(line, sizeof(line), buf, size - 1);
	for (size_t i = 0; line[i]; i++)
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] >= 0x7f)
			abort();
	free(buf);
	return 0;
}
