/* libFuzzer target: what the Docker backend reads from the engine besides an exec's stream
 * (host/backends/docker_parse.c): the X-Docker-Container-Path-Stat header (base64 of JSON
 * whose name and link target a container's process chose), error messages, exec and
 * container inspections, the message that says a written file was taken at once, and
 * Podman's words: its errors' messages, and the lines it adds to an exec's stderr (which is
 * the guest's own otherwise). The first input byte picks the parser.
 * Oracle: what is accepted is in range; a message is printable, bounded and NUL-terminated;
 * base64 decodes to at most three bytes in four, and decodes again the same; what is cut
 * from a stderr is its last line, whole; Podman's reason starts after its "Error: ". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct docker_path_stat ps;
	struct docker_exec_state st;
	char *buf, msg[200], id[129], status[32];
	size_t len, i;
	int running;

	if (size < 1)
		return 0;
	len = size - 1;
	/* An exact-size heap copy: reading past len is an ASan error. NUL-terminated only for
	 * the parsers of C strings, which get the copy with its NUL. */
	buf = malloc(len + 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, len);
	buf[len] = '\0';
	switch (data[0] % 7) {
	case 0:
		if (mafh__docker_path_stat_decode(buf, len, &ps) == 0 &&
		    (ps.size < 0 || ps.size > 9007199254740992LL ||
		     (unsigned)ps.type > MAFH_FILE_OTHER || ps.type == MAFH_FILE_NONE))
			abort();
		break;
	case 1: {
		unsigned char *out = malloc(len / 4 * 3 + 1), *again = malloc(len / 4 * 3 + 1);
		size_t n, m;

		if (!out || !again)
			abort();
		if (mafh__docker_base64_decode(buf, len, out, &n) == 0) {
			if (len % 4 || n > len / 4 * 3 || n + 2 < len / 4 * 3)
				abort();
			if (mafh__docker_base64_decode(buf, len, again, &m) != 0 || m != n ||
			    memcmp(out, again, n) != 0)
				abort();
		}
		free(out);
		free(again);
		break;
	}
	case 2:
		mafh__docker_message(buf, len, msg, sizeof(msg));
		if (strlen(msg) >= sizeof(msg))
			abort();
		for (i = 0; msg[i]; i++)
			if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f)
				abort();
		break;
	case 3:
		if (mafh__docker_exec_id_parse(buf, len, id, sizeof(id)) == 0 &&
		    !mafh__docker_id_ok(id))
			abort();
		break;
	case 4:
		if (mafh__docker_exec_state_parse(buf, len, &st) == 0 &&
		    (st.exit_code < 0 || st.exit_code > 255 || st.pid < 0 ||
		     (st.running != 0 && st.running != 1)))
			abort();
		if (mafh__docker_container_parse(buf, len, id, sizeof(id), &running, status,
						 sizeof(status)) == 0 &&
		    (!mafh__docker_id_ok(id) || strspn(status, "abcdefghijklmnopqrstuvwxyz") !=
						    strlen(status)))
			abort();
		break;
	case 6: {
		size_t keep = mafh__docker_libpod_stderr_len(buf, len);
		const char *why = mafh__docker_libpod_start_error(buf, len);

		(void)mafh__docker_no_such_container(buf);
		(void)mafh__docker_not_running(buf);
		if (why && (len < 7 || memcmp(buf, "Error: ", 7) != 0 || why != buf + 7))
			abort();
		if (keep > len || (keep < len && ((keep > 0 && buf[keep - 1] != '\n') ||
						  buf[len - 1] != '\n' ||
						  memchr(buf + keep, '\n', len - keep - 1))))
			abort();
		break;
	}
	default: {
		/* The path is the input's first line, the message the rest. */
		char *nl = memchr(buf, '\n', len);

		if (nl) {
			*nl = '\0';
			if (mafh__docker_written_then_gone(nl + 1, buf) &&
			    (buf[0] != '/' || !strstr(nl + 1, buf)))
				abort();
		}
		break;
	}
	}
	free(buf);
	return 0;
}
