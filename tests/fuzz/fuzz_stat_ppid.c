/* libFuzzer target: mafl_parse_stat_ppid, the launcher's reader of /proc/PID/stat, whose
 * command name the program chooses (prctl(PR_SET_NAME) or its file name). Oracle: an
 * accepted line has, after its last ')', " S " then the decimal ppid (at most INT_MAX)
 * ending the text or followed by a space. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pid_t ppid = -7;
	const uint8_t *close = NULL;
	char *buf;
	long long v = 0;
	size_t i;
	int rc;

	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	rc = mafl_parse_stat_ppid(buf, size, &ppid);
	free(buf);
	if (rc != 0) {
		if (rc != -1 || ppid != -7)
			abort();
		return 0;
	}
	for (i = size; i > 0; i--) {
		if (data[i - 1] == ')') {
			close = data + i;
			break;
		}
	}
	if (!close || ppid < 0)
		abort();
	i = (size_t)(close - data);
	if (size - i < 4 || data[i] != ' ' || data[i + 2] != ' ')
		abort();
	for (i += 3; i < size && data[i] >= '0' && data[i] <= '9'; i++)
		v = v * 10 + (data[i] - '0');
	if (v != ppid || v > INT_MAX || (i < size && data[i] != ' '))
		abort();
	return 0;
}
