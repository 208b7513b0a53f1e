/* Unit tests for the Docker backend's pure parts: the exec stream's demultiplexer, base64 and
 * the path-stat header, the engine's JSON replies, the written-then-gone message
 * (host/backends/docker_parse.c), and the one-entry tars (host/backends/docker_tar.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>
#include <cmocka.h>

#include "docker.h"

/* ---- the demultiplexer ---------------------------------------------------------------- */

struct got {
	char out[256], err[256], sys[256];
	size_t out_len, err_len, sys_len;
	int calls, stop_after;
};

static int sink(void *ud, enum docker_stream stream, const char *p, size_t n)
{
	struct got *g = ud;
	char *buf = stream == DOCKER_STDOUT ? g->out : stream == DOCKER_STDERR ? g->err : g->sys;
	size_t *len = stream == DOCKER_STDOUT ? &g->out_len
		      : stream == DOCKER_STDERR ? &g->err_len : &g->sys_len;

	assert_true(stream == DOCKER_STDOUT || stream == DOCKER_STDERR ||
		    stream == DOCKER_SYSTEMERR);
	assert_true(*len + n < sizeof(g->out));
	memcpy(buf + *len, p, n);
	*len += n;
	g->calls++;
	return g->stop_after && g->calls >= g->stop_after ? -1 : 0;
}

/* A frame: header and payload appended to buf at *len. */
static void frame(unsigned char *buf, size_t *len, int stream, const char *payload)
{
	size_t n = strlen(payload);

	buf[(*len)++] = (unsigned char)stream;
	buf[(*len)++] = 0;
	buf[(*len)++] = 0;
	buf[(*len)++] = 0;
	buf[(*len)++] = (unsigned char)(n >> 24);
	buf[(*len)++] = (unsigned char)(n >> 16);
	buf[(*len)++] = (unsigned char)(n >> 8);
	buf[(*len)++] = (unsigned char)n;
	memcpy(buf + *len, payload, n);
	*len += n;
}

static void test_demux_frames_whole_and_in_pieces(void **state)
{
	unsigned char buf[256];
	size_t len = 0, piece, i;

	(void)state;
	frame(buf, &len, 1, "hello ");
	frame(buf, &len, 2, "oops\n");
	frame(buf, &len, 1, "");
	frame(buf, &len, 0, "world\n");
	frame(buf, &len, 3, "engine");
	/* Fed whole, and in every piece size down to one byte: the same streams. */
	for (piece = len; piece >= 1; piece--) {
		struct docker_demux d;
		struct got g = {0};

		mafh__docker_demux_init(&d);
		for (i = 0; i < len; i += piece)
			assert_int_equal(mafh__docker_demux_feed(&d, buf + i, i + piece > len ?
								 len - i : piece, sink, &g), 0);
		assert_true(mafh__docker_demux_whole(&d));
		assert_int_equal(g.out_len, 12);
		assert_memory_equal(g.out, "hello world\n", 12);
		assert_int_equal(g.err_len, 5);
		assert_memory_equal(g.err, "oops\n", 5);
		assert_int_equal(g.sys_len, 6);
		assert_memory_equal(g.sys, "engine", 6);
	}
}

static void test_demux_ends_inside_a_frame(void **state)
{
	unsigned char buf[64];
	size_t len = 0;
	struct docker_demux d;
	struct got g = {0};

	(void)state;
	frame(buf, &len, 1, "abcdef");
	mafh__docker_demux_init(&d);
	/* Cut in the payload, then in the next header. */
	assert_int_equal(mafh__docker_demux_feed(&d, buf, len - 2, sink, &g), 0);
	assert_false(mafh__docker_demux_whole(&d));
	assert_int_equal(mafh__docker_demux_feed(&d, buf + len - 2, 2, sink, &g), 0);
	assert_true(mafh__docker_demux_whole(&d));
	assert_int_equal(mafh__docker_demux_feed(&d, buf, 3, sink, &g), 0);
	assert_false(mafh__docker_demux_whole(&d));
}

static void test_demux_refuses_what_is_not_a_header(void **state)
{
	static const unsigned char stream4[] = {4, 0, 0, 0, 0, 0, 0, 1, 'x'};
	static const unsigned char padding[] = {1, 0, 1, 0, 0, 0, 0, 1, 'x'};
	static const unsigned char text[] = "OCI runtime exec failed";
	struct docker_demux d;
	struct got g = {0};

	(void)state;
	mafh__docker_demux_init(&d);
	assert_int_equal(mafh__docker_demux_feed(&d, stream4, sizeof(stream4), sink, &g), -1);
	mafh__docker_demux_init(&d);
	assert_int_equal(mafh__docker_demux_feed(&d, padding, sizeof(padding), sink, &g), -1);
	mafh__docker_demux_init(&d);
	assert_int_equal(mafh__docker_demux_feed(&d, text, sizeof(text) - 1, sink, &g), -1);
	assert_int_equal(g.calls, 0);
}

static void test_demux_sink_stops_the_feed(void **state)
{
	unsigned char buf[64];
	size_t len = 0;
	struct docker_demux d;
	struct got g = {.stop_after = 1};

	(void)state;
	frame(buf, &len, 1, "one");
	frame(buf, &len, 2, "two");
	mafh__docker_demux_init(&d);
	assert_int_equal(mafh__docker_demux_feed(&d, buf, len, sink, &g), -2);
	assert_int_equal(g.calls, 1);
	assert_int_equal(g.err_len, 0);
}

static void test_demux_large_frame_length(void **state)
{
	static const unsigned char head[] = {2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'a', 'b'};
	struct docker_demux d;
	struct got g = {0};

	(void)state;
	mafh__docker_demux_init(&d);
	assert_int_equal(mafh__docker_demux_feed(&d, head, sizeof(head), sink, &g), 0);
	assert_int_equal(g.err_len, 2);
	assert_int_equal(d.left, 0xffffffffu - 2);
	assert_false(mafh__docker_demux_whole(&d));
}

/* ---- base64 and the path-stat header -------------------------------------------------- */

static void test_base64(void **state)
{
	unsigned char out[64];
	size_t n;

	(void)state;
	assert_int_equal(mafh__docker_base64_decode("", 0, out, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(mafh__docker_base64_decode("TWFu", 4, out, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(out, "Man", 3);
	assert_int_equal(mafh__docker_base64_decode("TWE=", 4, out, &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(out, "Ma", 2);
	assert_int_equal(mafh__docker_base64_decode("TQ==", 4, out, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(mafh__docker_base64_decode("+/+/", 4, out, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(out, "\xfb\xff\xbf", 3);
	/* Not base64: a length not a multiple of 4, a bad byte, padding inside, too much
	 * padding, leftover bits set, URL-safe letters. */
	assert_int_equal(mafh__docker_base64_decode("TWF", 3, out, &n), -1);
	assert_int_equal(mafh__docker_base64_decode("TW!u", 4, out, &n), -1);
	assert_int_equal(mafh__docker_base64_decode("TQ==TWFu", 8, out, &n), -1);
	assert_int_equal(mafh__docker_base64_decode("T===", 4, out, &n), -1);
	assert_int_equal(mafh__docker_base64_decode("TR==", 4, out, &n), -1);
	assert_int_equal(mafh__docker_base64_decode("TWF=", 4, out, &n), -1);
	assert_int_equal(mafh__docker_base64_decode("-_-_", 4, out, &n), -1);
	assert_int_equal(mafh__docker_base64_decode("TW\0u", 4, out, &n), -1);
}

/* The header's value for json, as the engine makes it. */
static char *encode(const char *json)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(json), i, o = 0;
	char *out = malloc(n / 3 * 4 + 8);
	const unsigned char *s = (const unsigned char *)json;

	assert_non_null(out);
	for (i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) |
			     (i + 2 < n ? s[i + 2] : 0);

		out[o++] = a[w >> 18 & 63];
		out[o++] = a[w >> 12 & 63];
		out[o++] = i + 1 < n ? a[w >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? a[w & 63] : '=';
	}
	out[o] = '\0';
	return out;
}

static int decode_json(const char *json, struct docker_path_stat *ps)
{
	char *b64 = encode(json);
	int rc = mafh__docker_path_stat_decode(b64, strlen(b64), ps);

	free(b64);
	return rc;
}

static void test_path_stat_types(void **state)
{
	struct docker_path_stat ps;
	static const char real[] = "eyJuYW1lIjoibCIsInNpemUiOjEsIm1vZGUiOjEzNDIxODIzOSwibXRpbWUiOiIy"
				   "MDI2LTEyLTAxVDEzOjQ0OjU4WiIsImxpbmtUYXJnZXQiOiIvYS9iL2YifQ==";
	char header[256];

	(void)state;
	/* What the engine sent for a symlink, with the white space a header may carry. */
	snprintf(header, sizeof(header), " %s\r\n", real);
	assert_int_equal(mafh__docker_path_stat_decode(header, strlen(header), &ps), 0);
	assert_int_equal(ps.type, MAFH_FILE_SYMLINK);
	assert_int_equal(ps.size, 1);
	assert_int_equal(decode_json("{\"name\":\"f\",\"size\":3,\"mode\":420}", &ps), 0);
	assert_int_equal(ps.type, MAFH_FILE_REGULAR);
	assert_int_equal(ps.size, 3);
	assert_int_equal(ps.mode, 0644);
	assert_int_equal(decode_json("{\"size\":4096,\"mode\":2147484141}", &ps), 0);
	assert_int_equal(ps.type, MAFH_FILE_DIR);
	/* FIFO, socket, device, character device, irregular; setuid and sticky bits alone
	 * leave a regular file. */
	assert_int_equal(decode_json("{\"size\":0,\"mode\":33554852}", &ps), 0);
	assert_int_equal(ps.type, MAFH_FILE_OTHER);
	assert_int_equal(decode_json("{\"size\":0,\"mode\":16777636}", &ps), 0);
	assert_int_equal(ps.type, MAFH_FILE_OTHER);
	assert_int_equal(decode_json("{\"size\":0,\"mode\":69206436}", &ps), 0);
	assert_int_equal(ps.type, MAFH_FILE_OTHER);
	assert_int_equal(decode_json("{\"size\":0,\"mode\":524708}", &ps), 0);
	assert_int_equal(ps.type, MAFH_FILE_OTHER);
	assert_int_equal(decode_json("{\"size\":5,\"mode\":9437677}", &ps), 0);
	assert_int_equal(ps.type, MAFH_FILE_REGULAR);
	assert_int_equal(decode_json("{\"size\":9007199254740992,\"mode\":420}", &ps), 0);
	assert_int_equal(ps.size, 9007199254740992LL);
}

static void test_path_stat_refusals(void **state)
{
	struct docker_path_stat ps;
	char *big;

	(void)state;
	assert_int_equal(decode_json("{\"mode\":420}", &ps), -1);
	assert_int_equal(decode_json("{\"size\":3}", &ps), -1);
	assert_int_equal(decode_json("{\"size\":-1,\"mode\":420}", &ps), -1);
	assert_int_equal(decode_json("{\"size\":1.5,\"mode\":420}", &ps), -1);
	assert_int_equal(decode_json("{\"size\":\"3\",\"mode\":420}", &ps), -1);
	assert_int_equal(decode_json("{\"size\":3,\"mode\":4294967296}", &ps), -1);
	assert_int_equal(decode_json("{\"size\":1e300,\"mode\":420}", &ps), -1);
	assert_int_equal(decode_json("[3, 420]", &ps), -1);
	assert_int_equal(decode_json("{\"size\":3,\"mode\":420} x", &ps), -1);
	assert_int_equal(mafh__docker_path_stat_decode("not base64!", 11, &ps), -1);
	assert_int_equal(mafh__docker_path_stat_decode("", 0, &ps), -1);
	big = malloc(DOCKER_PATH_STAT_MAX + 5);
	assert_non_null(big);
	memset(big, 'A', DOCKER_PATH_STAT_MAX + 4);
	assert_int_equal(mafh__docker_path_stat_decode(big, DOCKER_PATH_STAT_MAX + 4, &ps), -1);
	free(big);
}

/* ---- JSON replies --------------------------------------------------------------------- */

static void test_message(void **state)
{
	static const char body[] = "{\"message\":\"No such container: x\"}\n";
	static const char ctl[] = "{\"message\":\"a\\u0001b\\nc.\\n\"}";
	static const char utf8[] = "{\"message\":\"\xc3\xa9\xc3\xa9\"}";
	char buf[64], small[4];

	(void)state;
	mafh__docker_message(body, strlen(body), buf, sizeof(buf));
	assert_string_equal(buf, "No such container: x");
	mafh__docker_message(ctl, strlen(ctl), buf, sizeof(buf));
	assert_string_equal(buf, "a?b?c");
	/* Cut at a UTF-8 sequence's boundary, never inside one. */
	mafh__docker_message(utf8, strlen(utf8), small, sizeof(small));
	assert_string_equal(small, "\xc3\xa9");
	mafh__docker_message("not json", 8, buf, sizeof(buf));
	assert_string_equal(buf, "");
	mafh__docker_message("{\"message\":3}", 13, buf, sizeof(buf));
	assert_string_equal(buf, "");
	mafh__docker_message(NULL, 0, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

static void test_ids_and_states(void **state)
{
	static const char created[] = "{\"Id\":\"083f18d25529d5d881bf\"}";
	static const char failed[] = "{\"ID\":\"083f\",\"Running\":false,\"ExitCode\":126,\"Pid\":0}";
	static const char running[] = "{\"Running\":true,\"ExitCode\":null,\"Pid\":30321}";
	static const char ended[] = "{\"Running\":false,\"ExitCode\":3,\"Pid\":30321}";
	static const char exited[] = "{\"Id\":\"a51fe230\",\"State\":{\"Status\":\"exited\","
				     "\"Running\":false}}";
	static const char odd[] = "{\"Id\":\"a51fe230\",\"State\":{\"Status\":\"ex ited\\n\","
				  "\"Running\":true}}";
	struct docker_exec_state st;
	char id[129], status[32];
	int run;

	(void)state;
	assert_true(mafh__docker_id_ok("abcDEF0123"));
	assert_false(mafh__docker_id_ok(""));
	assert_false(mafh__docker_id_ok("../x"));
	assert_false(mafh__docker_id_ok("a b"));
	assert_int_equal(mafh__docker_exec_id_parse(created, strlen(created), id, sizeof(id)), 0);
	assert_string_equal(id, "083f18d25529d5d881bf");
	assert_int_equal(mafh__docker_exec_id_parse("{\"Id\":\"a/b\"}", 12, id, sizeof(id)), -1);
	assert_int_equal(mafh__docker_exec_id_parse(created, strlen(created), id, 8), -1);

	assert_int_equal(mafh__docker_exec_state_parse(failed, strlen(failed), &st), 0);
	assert_false(st.running);
	assert_true(st.has_exit_code);
	assert_int_equal(st.exit_code, 126);
	assert_int_equal(st.pid, 0);
	assert_int_equal(mafh__docker_exec_state_parse(running, strlen(running), &st), 0);
	assert_true(st.running);
	assert_false(st.has_exit_code);
	assert_int_equal(st.pid, 30321);
	assert_int_equal(mafh__docker_exec_state_parse(ended, strlen(ended), &st), 0);
	assert_int_equal(st.exit_code, 3);
	assert_int_equal(mafh__docker_exec_state_parse("{\"Running\":false,\"ExitCode\":256}",
						       32, &st), -1);
	assert_int_equal(mafh__docker_exec_state_parse("{\"ExitCode\":0}", 14, &st), -1);

	assert_int_equal(mafh__docker_container_parse(exited, strlen(exited), id, sizeof(id), &run,
						      status, sizeof(status)), 0);
	assert_string_equal(id, "a51fe230");
	assert_false(run);
	assert_string_equal(status, "exited");
	/* A state's word that is not a plain word is not shown. */
	assert_int_equal(mafh__docker_container_parse(odd, strlen(odd), id, sizeof(id), &run,
						      status, sizeof(status)), 0);
	assert_true(run);
	assert_string_equal(status, "");
	assert_int_equal(mafh__docker_container_parse("{\"Id\":\"a\"}", 10, id, sizeof(id), &run,
						      status, sizeof(status)), -1);
}

static void test_written_then_gone(void **state)
{
	(void)state;
	/* What the engine says when the guest renamed the file right after its close. */
	assert_true(mafh__docker_written_then_gone("Error processing tar file(exit status 1): "
						   "lchown /w/f104: no such file or directory",
						   "/w/f104"));
	assert_true(mafh__docker_written_then_gone("chmod /var/lib/docker/overlay2/abc/merged"
						   "/r/0001.response.json: no such file or "
						   "directory", "/r/0001.response.json"));
	assert_true(mafh__docker_written_then_gone("x: chtimes /a: no such file or directory",
						   "/a"));
	/* Failures before the data landed, or of another file, or another error. */
	assert_false(mafh__docker_written_then_gone("Error processing tar file(exit status 1): "
						    "open /w/f104: no such file or directory",
						    "/w/f104"));
	assert_false(mafh__docker_written_then_gone("lchown /w/f104: permission denied",
						    "/w/f104"));
	assert_false(mafh__docker_written_then_gone("lchown /w/f1045: no such file or directory",
						    "/w/f104"));
	assert_false(mafh__docker_written_then_gone("lchown x/w/f104: no such file or directory",
						    "/w/f104"));
	assert_false(mafh__docker_written_then_gone("mkdir: lchown /w/f104: no such file or "
						    "directory", "w/f104"));
	assert_false(mafh__docker_written_then_gone("", "/w/f104"));
	/* Podman's: the times, or the mode bits, of the path it wrote. */
	assert_true(mafh__docker_written_then_gone("setting access and modify timestamps on "
						   "\"/w/f33\" to 2026-12-04 02:31:14 +0000 UTC "
						   "and 2026-12-04 02:31:14 +0000 UTC: no such file "
						   "or directory", "/w/f33"));
	assert_true(mafh__docker_written_then_gone("error setting access and modify timestamps "
						   "on \"/w/f33\" to a and b: no such file or "
						   "directory", "/w/f33"));
	assert_true(mafh__docker_written_then_gone("error setting additional permissions on "
						   "\"/w/f33\" to 0644: no such file or directory",
						   "/w/f33"));
	assert_true(mafh__docker_written_then_gone("copier: put: error setting ownership of "
						   "\"/w/f33\" to 0:0: lchown /w/f33: no such file "
						   "or directory", "/w/f33"));
	/* Another path, another error, something after it, another quoted name, a path Go
	 * would escape, or a prefix not a word of its own. */
	assert_false(mafh__docker_written_then_gone("setting access and modify timestamps on "
						    "\"/w/f330\" to a and b: no such file or "
						    "directory", "/w/f33"));
	assert_false(mafh__docker_written_then_gone("setting access and modify timestamps on "
						    "\"/w/f33\" to a and b: permission denied",
						    "/w/f33"));
	assert_false(mafh__docker_written_then_gone("setting access and modify timestamps on "
						    "\"/w/f33\" to a: no such file or directory; "
						    "and more", "/w/f33"));
	assert_false(mafh__docker_written_then_gone("setting access and modify timestamps on "
						    "\"/w/f33\" to \"/x\": no such file or "
						    "directory", "/w/f33"));
	assert_false(mafh__docker_written_then_gone("setting access and modify timestamps on "
						    "\"/w/a\"b\" to a: no such file or directory",
						    "/w/a\"b"));
	assert_false(mafh__docker_written_then_gone("xsetting access and modify timestamps on "
						    "\"/w/f33\" to a: no such file or directory",
						    "/w/f33"));
	assert_false(mafh__docker_written_then_gone("creating \"/w/f33\" to a: no such file "
						    "or directory", "/w/f33"));
}

/* Podman's words, told apart from dockerd's and from a program's own. */
static void test_podman_messages(void **state)
{
	static const char start[] = "Error: runc: exec failed: unable to start container "
				    "process: exec: \"/x\": stat /x: no such file or directory: OCI "
				    "runtime attempted to invoke a command that was not found\n"
				    "Error: read unixpacket @->/proc/self/fd/14/attach: read: "
				    "connection reset by peer\n";
	static const char trailer[] = "Error: write unixpacket @->/proc/self/fd/16/attach: "
				      "write: connection reset by peer\n";
	static const char oci[] = "Error: x: OCI permission denied";
	char both[300];

	(void)state;
	assert_true(mafh__docker_no_such_container("No such container: c1"));
	assert_true(mafh__docker_no_such_container("no container with name or ID \"c1\" found: "
						   "no such container"));
	assert_true(mafh__docker_no_such_container("the container doesn't exists: no container "
						   "with name or ID \"c1\" found: no such "
						   "container"));
	assert_false(mafh__docker_no_such_container("no such container"));
	assert_false(mafh__docker_no_such_container("no container with name or ID \"c1\" found"));
	assert_false(mafh__docker_no_such_container(""));
	assert_true(mafh__docker_not_running("Container 0123abc is not running"));
	assert_true(mafh__docker_not_running("can only create exec sessions on running "
					     "containers: container state improper"));
	assert_false(mafh__docker_not_running("Container 0123abc is paused"));
	assert_false(mafh__docker_not_running("is not running"));

	/* The reason starts after "Error: "; its first line is Podman's. */
	assert_ptr_equal(mafh__docker_libpod_start_error(start, strlen(start)), start + 7);
	assert_true(strncmp(start + 7, "runc: exec failed: ", 19) == 0);
	/* A program's own stderr, however like it, is not the engine's. */
	assert_null(mafh__docker_libpod_start_error("Error: my own failure\n", 22));
	assert_null(mafh__docker_libpod_start_error("runc: x: OCI permission denied", 30));
	/* The reason on a later line is not the first line's. */
	assert_null(mafh__docker_libpod_start_error("Error: mine\nError: x: OCI permission "
						    "denied", 41));
	assert_null(mafh__docker_libpod_start_error("", 0));
	assert_ptr_equal(mafh__docker_libpod_start_error(oci, strlen(oci)), oci + 7);

	/* Podman's last line goes; the program's lines stay. */
	snprintf(both, sizeof(both), "hello from stderr\n%s", trailer);
	assert_int_equal(mafh__docker_libpod_stderr_len(both, strlen(both)), 18);
	assert_int_equal(mafh__docker_libpod_stderr_len(trailer, strlen(trailer)), 0);
	assert_int_equal(mafh__docker_libpod_stderr_len(start, strlen(start)),
			 strchr(start, '\n') + 1 - start);
	/* Not a whole line, not its digits, not last: kept. */
	assert_int_equal(mafh__docker_libpod_stderr_len(trailer, strlen(trailer) - 1),
			 strlen(trailer) - 1);
	snprintf(both, sizeof(both), "%sand then mine\n", trailer);
	assert_int_equal(mafh__docker_libpod_stderr_len(both, strlen(both)), strlen(both));
	snprintf(both, sizeof(both), "Error: read unixpacket @->/proc/self/fd/1x/attach: read: "
		 "connection reset by peer\n");
	assert_int_equal(mafh__docker_libpod_stderr_len(both, strlen(both)), strlen(both));
	assert_int_equal(mafh__docker_libpod_stderr_len("", 0), 0);
}

/* ---- tars ----------------------------------------------------------------------------- */

static void test_tar_round_trip(void **state)
{
	static const char data[] = "a\0b\xff";
	char name[300];
	struct mafh_read_result res;
	char *tar;
	size_t len;

	(void)state;
	assert_int_equal(mafh__docker_tar_one("tmp/r/host_tools/f", 0, 0644, data, 4, &tar, &len,
					      NULL), 0);
	/* Blocks of 512 bytes: a header, the data, two end blocks; no 10 KiB padding. */
	assert_int_equal(len, 512 * 4);
	assert_int_equal(mafh__docker_tar_first(tar, len, 0, 4, &res, NULL), 0);
	assert_int_equal(res.status, MAFH_READ_OK);
	assert_int_equal(res.len, 4);
	assert_memory_equal(res.data, data, 4);
	mafh_read_result_clear(&res);
	assert_int_equal(mafh__docker_tar_first(tar, len, 0, 3, &res, NULL), 0);
	assert_int_equal(res.status, MAFH_READ_TOO_BIG);
	assert_int_equal(res.size, 4);
	assert_null(res.data);
	free(tar);

	/* An empty file; a name past ustar's 100 bytes (a pax header). */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	name[100] = '/';
	assert_int_equal(mafh__docker_tar_one(name, 0, 0644, "", 0, &tar, &len, NULL), 0);
	assert_int_equal(mafh__docker_tar_first(tar, len, 0, 0, &res, NULL), 0);
	assert_int_equal(res.status, MAFH_READ_OK);
	assert_int_equal(res.len, 0);
	mafh_read_result_clear(&res);
	free(tar);

	assert_int_equal(mafh__docker_tar_one("tmp/maf-host-abcdef", 1, 0700, NULL, 0, &tar, &len,
					      NULL), 0);
	assert_int_equal(mafh__docker_tar_first(tar, len, 0, 100, &res, NULL), 0);
	assert_int_equal(res.status, MAFH_READ_NOT_REGULAR);
	free(tar);
}

static void test_tar_cut_short_and_garbage(void **state)
{
	static char data[2000];
	struct mafh_read_result res;
	struct mafh_error err = {0};
	char *tar;
	size_t len;

	(void)state;
	memset(data, 'x', sizeof(data));
	assert_int_equal(mafh__docker_tar_one("f", 0, 0644, data, sizeof(data), &tar, &len, NULL),
			 0);
	/* Cut inside the data: the file is not returned. */
	assert_int_equal(mafh__docker_tar_first(tar, 1024, 1, sizeof(data), &res, &err),
			 MAFH_EPROTO);
	assert_non_null(strstr(err.message, "cut off"));
	assert_null(res.data);
	/* Cut inside the header. */
	assert_int_equal(mafh__docker_tar_first(tar, 100, 1, sizeof(data), &res, &err),
			 MAFH_EPROTO);
	/* Cut short, but what is there says the file is past the cap: too big. */
	assert_int_equal(mafh__docker_tar_first(tar, 1024, 1, 10, &res, NULL), 0);
	assert_int_equal(res.status, MAFH_READ_TOO_BIG);
	assert_int_equal(res.size, (int64_t)sizeof(data));
	free(tar);
	assert_int_equal(mafh__docker_tar_first("garbage", 7, 0, 10, &res, &err), MAFH_EPROTO);
	assert_int_equal(mafh__docker_tar_first("", 0, 0, 10, &res, &err), MAFH_EPROTO);
}

/* A tar of one entry made here: a symlink or a hard link, as the engine sends for such a
 * path. */
static size_t link_tar(char *buf, size_t size, int hard)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	size_t used = 0;

	assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_memory(a, buf, size, &used), ARCHIVE_OK);
	archive_entry_set_pathname(e, "l");
	if (hard) {
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_hardlink(e, "f");
	} else {
		archive_entry_set_filetype(e, AE_IFLNK);
		archive_entry_set_symlink(e, "/etc/shadow");
	}
	archive_entry_set_perm(e, 0777);
	assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_entry_free(e);
	archive_write_free(a);
	return used;
}

static void test_tar_links_are_not_regular(void **state)
{
	static char buf[16384];
	struct mafh_read_result res;
	size_t len;

	(void)state;
	len = link_tar(buf, sizeof(buf), 0);
	assert_int_equal(mafh__docker_tar_first(buf, len, 0, 100, &res, NULL), 0);
	assert_int_equal(res.status, MAFH_READ_NOT_REGULAR);
	len = link_tar(buf, sizeof(buf), 1);
	assert_int_equal(mafh__docker_tar_first(buf, len, 0, 100, &res, NULL), 0);
	assert_int_equal(res.status, MAFH_READ_NOT_REGULAR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demux_frames_whole_and_in_pieces),
		cmocka_unit_test(test_demux_ends_inside_a_frame),
		cmocka_unit_test(test_demux_refuses_what_is_not_a_header),
		cmocka_unit_test(test_demux_sink_stops_the_feed),
		cmocka_unit_test(test_demux_large_frame_length),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_path_stat_types),
		cmocka_unit_test(test_path_stat_refusals),
		cmocka_unit_test(test_message),
		cmocka_unit_test(test_ids_and_states),
		cmocka_unit_test(test_written_then_gone),
		cmocka_unit_test(test_podman_messages),
		cmocka_unit_test(test_tar_round_trip),
		cmocka_unit_test(test_tar_cut_short_and_garbage),
		cmocka_unit_test(test_tar_links_are_not_regular),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
