/* maf-launch call: one host-tool call through the run's channel, for any program in any
 * image (a static C program in a FROM scratch image included). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "commands.h"
#include "protocol.h"
#include "util.h"

#define CALL_EXIT_REFUSED 1

/* Reads all of stdin, at most MAFL_CHANNEL_LINE_MAX bytes. */
static char *read_stdin(size_t *len)
{
	char *buf = malloc(MAFL_CHANNEL_LINE_MAX + 1);
	ssize_t n;

	if (!buf)
		mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
	n = mafl_read_full(0, buf, MAFL_CHANNEL_LINE_MAX + 1);
	if (n < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot read the arguments from stdin");
	if (n > (ssize_t)MAFL_CHANNEL_LINE_MAX)
		mafl_die(MAFP_EXIT_USAGE, "the arguments are larger than %u bytes",
			 MAFL_CHANNEL_LINE_MAX);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* A private connection to the run's channel: through the inherited descriptor
 * (MAF_HOST_TOOLS_FD), or, when it is not there (closed by a parent that closes what it
 * does not know, such as Python's subprocess), through the listening socket
 * (MAF_HOST_TOOLS_SOCKET). Dies naming both when neither works. */
static int channel_open_conn(void)
{
	const char *v = getenv(MAFL_CHANNEL_FD_ENV), *path = getenv(MAFL_CHANNEL_SOCKET_ENV);
	char why[160];
	unsigned long long fd;
	int conn, type = 0, domain = 0;
	socklen_t len = sizeof(int);

	if (!v) {
		snprintf(why, sizeof(why), "%s is not set", MAFL_CHANNEL_FD_ENV);
	} else if (mafl_parse_u64(v, 1 << 20, &fd) < 0) {
		snprintf(why, sizeof(why), "%s is not a descriptor number: '%.64s'",
			 MAFL_CHANNEL_FD_ENV, v);
	} else if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
		   getsockopt((int)fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
		   type != SOCK_SEQPACKET || domain != AF_UNIX) {
		/* Its number may have been reused for another socket: only the channel's kind of
		 * socket is told of a connection. */
		snprintf(why, sizeof(why), "descriptor %llu (%s) is not the run's channel socket",
			 fd, MAFL_CHANNEL_FD_ENV);
	} else {
		conn = mafl_channel_connect((int)fd);
		if (conn >= 0)
			return conn;
		snprintf(why, sizeof(why), "cannot connect through descriptor %llu (%s): %s", fd,
			 MAFL_CHANNEL_FD_ENV, strerror(errno));
	}
	if (!path)
		mafl_die(MAFP_EXIT_LAUNCHER, "%s, and %s is not set: this program was not "
			 "started by 'maf-launch run'", why, MAFL_CHANNEL_SOCKET_ENV);
	conn = mafl_channel_connect_path(path);
	if (conn < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "%s, and cannot connect to %s (%s)", why,
			       MAFL_CHANNEL_SOCKET_ENV, path);
	return conn;
}

/* Reads one answer line into a malloc'd buffer. Dies on EOF, error or timeout. */
static char *read_answer(int fd, long long timeout_ms, size_t *len)
{
	size_t cap = 65536, got = 0;
	char *buf = malloc(cap), *nl;
	long long deadline = timeout_ms > 0 ? mafl_now_ms() + timeout_ms : 0;

	if (!buf)
		mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		int wait = -1;
		ssize_t n;

		if (deadline) {
			long long left = deadline - mafl_now_ms();

			if (left <= 0)
				mafl_die(MAFP_EXIT_LAUNCHER, "no answer within the timeout");
			wait = (int)left;
		}
		if (poll(&pf, 1, wait) < 0) {
			if (errno == EINTR)
				continue;
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot wait for the answer");
		}
		if (!pf.revents)
			continue;
		if (got == cap) {
			if (cap >= MAFL_CHANNEL_RESPONSE_MAX + 4096)
				mafl_die(MAFP_EXIT_LAUNCHER, "the answer is too large");
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
		}
		n = read(fd, buf + got, cap - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "the channel failed");
		}
		if (n == 0)
			mafl_die(MAFP_EXIT_LAUNCHER, "the channel closed without an answer "
				 "(the run is ending, too many connections are open, or this "
				 "process is not one of the run's)");
		got += (size_t)n;
		nl = memchr(buf, '\n', got);
		if (nl) {
			*len = (size_t)(nl - buf);
			return buf;
		}
	}
}

int mafl_cmd_call(int argc, char **argv)
{
	long long timeout_ms = 0;
	const char *tool, *args_text = "{}";
	char *stdin_buf = NULL, *line, *answer;
	size_t args_len, alen;
	cJSON *args, *req, *ans, *val, *ref;
	struct mafl_args a;
	const char *v;
	int i, fd, rc;

	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_CALL], argc, argv);
	while (mafl_opt_next(&a, &v) != MAFL_OPT_END) {
		/* --timeout, its one option but --help */
		if (mafl_parse_seconds_ms(v, 86400000LL, &timeout_ms) < 0 || !timeout_ms)
			mafl_die(MAFP_EXIT_USAGE, "--timeout takes a positive number of seconds");
	}
	i = a.i;
	if (i >= argc)
		mafl_die(MAFP_EXIT_USAGE, "no TOOL given (try 'maf-launch call --help')");
	if (argc - i > 2)
		mafl_die(MAFP_EXIT_USAGE, "too many arguments: give TOOL and one JSON object");
	tool = argv[i];
	if (!mafp_tool_name_valid(tool))
		mafl_die(MAFP_EXIT_USAGE, "'%s' is not a valid tool name", tool);
	if (i + 1 < argc)
		args_text = argv[i + 1];
	if (strcmp(args_text, "-") == 0)
		args_text = stdin_buf = read_stdin(&args_len);
	args_len = strlen(args_text);
	args = mafp_json_parse(args_text, args_len, MAFL_CHANNEL_LINE_MAX);
	if (!args || !cJSON_IsObject(args))
		mafl_die(MAFP_EXIT_USAGE, "ARGUMENTS must be a JSON object, e.g. '{\"x\": 1}'");
	free(stdin_buf);

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddNumberToObject(req, "id", 1) ||
	    !cJSON_AddStringToObject(req, "name", tool) ||
	    !cJSON_AddItemToObject(req, "arguments", args))
		mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
	line = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!line)
		mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
	fd = channel_open_conn();
	if (mafl_write_all(fd, line, strlen(line)) < 0 || mafl_write_all(fd, "\n", 1) < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot send the call");
	free(line);
	answer = read_answer(fd, timeout_ms, &alen);
	close(fd);
	ans = mafp_json_parse(answer, alen, MAFL_CHANNEL_RESPONSE_MAX + 4096);
	free(answer);
	if (!ans || !cJSON_IsObject(ans))
		mafl_die(MAFP_EXIT_LAUNCHER, "the channel sent an answer that is not a JSON "
			 "object");
	val = cJSON_GetObjectItemCaseSensitive(ans, "value");
	ref = cJSON_GetObjectItemCaseSensitive(ans, "refusal");
	if (cJSON_IsString(ref)) {
		dprintf(2, "%s: refused: %s\n", mafl_prog, ref->valuestring);
		rc = CALL_EXIT_REFUSED;
	} else if (val) {
		char *out = cJSON_PrintUnformatted(val);

		if (!out)
			mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
		if (mafl_write_all(1, out, strlen(out)) < 0 || mafl_write_all(1, "\n", 1) < 0)
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot write the value");
		free(out);
		rc = 0;
	} else {
		mafl_die(MAFP_EXIT_LAUNCHER, "the channel's answer has neither a value nor a "
			 "refusal");
	}
	cJSON_Delete(ans);
	return rc;
}
