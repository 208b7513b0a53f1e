/* maf-host run: build the registry from --tool/--tools-server, make a fresh run directory,
 * drive the run over the local backend, print the program's output (or one JSON object) and
 * exit with the program's exit code. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mafhost.h"
#include "protocol.h"
#include "tools.h"

#define PROGRAM_MAX (16u << 20)         /* bytes of PROGRAM.py we upload */
#define DEFAULT_TIMEOUT_MS 60000
#define DEFAULT_TOOL_TIMEOUT_MS 30000
#define SERVER_LINE_SLACK 4096          /* an answer line's bytes beyond the value's cap */

void cmd_run_usage(FILE *f)
{
	fprintf(f,
		"usage: maf-host run [OPTION]... PROGRAM.py [--] [ARG]...\n"
		"\n"
		"Runs PROGRAM.py with python3 through maf-launch (contained: seccomp, Landlock,\n"
		"egress closed by default) in a fresh run directory, serves its host-tool calls\n"
		"with the tools given below, then prints the program's output and exits with the\n"
		"program's exit code. In the program, `from maf_host_tools import call,\n"
		"HostToolError`; call(\"NAME\", key=value, ...) returns the tool's JSON value or\n"
		"raises HostToolError with the refusal.\n"
		"\n"
		"Tools (all run on this host, through sh -c):\n"
		"  --tool NAME=COMMAND     serve NAME by running COMMAND once per call: the call's\n"
		"                          arguments (a JSON object) on its stdin, its stdout one\n"
		"                          JSON value; a non-zero exit is a refusal carrying the\n"
		"                          first line of its stderr; output that is not JSON is a\n"
		"                          refusal\n"
		"  --tools-server COMMAND  start COMMAND once; it serves every --tool NAME given\n"
		"                          without '=' over newline-delimited JSON on its stdin and\n"
		"                          stdout: {\"id\": N, \"name\": ..., \"arguments\": {...}}\n"
		"                          in, {\"id\": N, \"value\": ...} or {\"id\": N, \"refusal\":\n"
		"                          \"...\"} out; a server that ends, answers garbage, a\n"
		"                          wrong id or too long a line is stopped: its calls are\n"
		"                          refused and the run reports the error\n"
		"  --tool NAME             a tool served by the --tools-server\n"
		"  --param TOOL:NAME:TYPE[?]\n"
		"                          declare a parameter of TOOL (TYPE: string, number,\n"
		"                          integer, boolean, object, array, null, any; a trailing\n"
		"                          '?' makes it optional); calls with missing, mistyped\n"
		"                          or undeclared arguments are refused before the tool\n"
		"                          runs. A tool with no --param takes any arguments\n"
		"  --tool-timeout S        time limit of one tool call in seconds (default: 30;\n"
		"                          never past the run's deadline)\n"
		"\n"
		"Limits:\n"
		"  --timeout S             one deadline for the whole run, in seconds (fractions\n"
		"                          allowed; default: 60); then the run is stopped, status\n"
		"                          timeout, exit code 124\n"
		"  --max-calls N           calls served per run, refusals included (default: 16);\n"
		"                          past it every call is refused\n"
		"  --max-output-bytes N    program output read back (default: 1048576)\n"
		"  --max-response-bytes N  bytes of one tool answer (default: 8388608)\n"
		"\n"
		"Backend and transport:\n"
		"  --backend local         the only backend of this build: this machine, with the\n"
		"                          launcher $MAF_LAUNCH or maf-launch next to maf-host\n"
		"  --simulate-latency-ms N add N ms before every backend operation, one at a\n"
		"                          time, to simulate a remote backend (default: 0)\n"
		"  --transport auto|files|wait\n"
		"                          how requests are found: files (read-if-present with\n"
		"                          adaptive polling), wait (long-poll with maf-launch\n"
		"                          wait), auto (the best the backend offers) (default: auto)\n"
		"  --egress closed|open    the program's network (default: closed)\n"
		"  --seccomp default|off   the launcher's seccomp filter (default: default)\n"
		"  --landlock auto|off     Landlock where the kernel has it (default: auto)\n"
		"  --keep-run-dir          keep the run directory (a fresh directory under $TMPDIR\n"
		"                          or /tmp) and print its path on stderr\n"
		"\n"
		"Output:\n"
		"  --json                  print one JSON object instead of the program's output:\n"
		"                          exit_code, status, output, output_truncated, calls,\n"
		"                          refusals, ops {exec, read, write, stat, wait},\n"
		"                          ops_total, ops_per_call, wall_ms, error, ...\n"
		"  --summary               after the output, print a run summary on stderr (calls,\n"
		"                          backend operations by kind, wall time)\n"
		"  --help                  print this help\n"
		"\n"
		"Exit codes: the program's exit code (128+N when killed by signal N); 124 the run\n"
		"timed out; 125 maf-host, the backend or the launcher failed; 126/127 the program\n"
		"could not be executed / was not found; 2 usage.\n");
}

/* One --tool. */
struct cli_tool {
	char *name;
	const char *command;          /* NULL: served by the tools server */
	struct mafh_param params[64];
	char *param_names[64];
	size_t n_params;
	struct cli_run *run;
};

struct cli_run {
	struct cli_tool *tools;
	size_t n_tools;
	const char *server_command;
	struct tools_server *server;
	long long tool_timeout_ms;
	long long deadline_ms;        /* monotonic; tools never run past it */
	size_t response_max;
	char server_error[600];
};

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Parses seconds ("30", "0.5") into ms in (0, max_ms]. */
static int parse_seconds(const char *s, long long max_ms, long long *out)
{
	char *end;
	double v;

	if (!*s || strchr(s, 'x') || strchr(s, 'X') || strchr(s, 'n') || strchr(s, 'N'))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v > 0) || v * 1000.0 > (double)max_ms)
		return -1;
	*out = (long long)(v * 1000.0 + 0.5);
	if (*out == 0)
		*out = 1;
	return 0;
}

static int parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i], *eq = strchr(a, '=');

	if (a[0] == '-' && a[1] == '-' && eq && (size_t)(eq - a) == strlen(name))
		return eq + 1;
	if (*i + 1 >= argc)
		cli_usage_error("%s needs a value", name);
	return argv[++*i];
}

static struct cli_tool *find_tool(struct cli_tool *tools, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(tools[i].name, name) == 0)
			return &tools[i];
	return NULL;
}

/* --tool NAME=COMMAND or --tool NAME. */
static void add_tool(struct cli_run *c, const char *spec)
{
	const char *eq = strchr(spec, '=');
	size_t n = eq ? (size_t)(eq - spec) : strlen(spec);
	struct cli_tool *t, *grown;

	grown = realloc(c->tools, (c->n_tools + 1) * sizeof(*c->tools));
	if (!grown)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	c->tools = grown;
	t = &c->tools[c->n_tools];
	memset(t, 0, sizeof(*t));
	t->name = strndup(spec, n);
	if (!t->name)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	if (!mafp_tool_name_valid(t->name))
		cli_usage_error("bad tool name '%s' in --tool: 1 to %d printable ASCII characters "
				"without space, '/', '\\' or '\"'", t->name, MAFP_TOOL_NAME_MAX);
	if (find_tool(c->tools, c->n_tools, t->name))
		cli_usage_error("the tool '%s' is given twice", t->name);
	if (eq) {
		t->command = eq + 1;
		if (!*t->command)
			cli_usage_error("--tool %s= has an empty COMMAND", t->name);
	}
	t->run = c;
	c->n_tools++;
}

/* --param TOOL:NAME:TYPE[?] */
static void add_param(struct cli_run *c, const char *spec)
{
	char *copy = strdup(spec), *tool, *name, *type;
	struct cli_tool *t;
	struct mafh_param *p;
	size_t len;
	int optional = 0;

	if (!copy)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	tool = copy;
	name = strchr(tool, ':');
	type = name ? strrchr(name + 1, ':') : NULL;
	if (!name || !type)
		cli_usage_error("--param takes TOOL:NAME:TYPE, not '%s'", spec);
	*name++ = '\0';
	*type++ = '\0';
	t = find_tool(c->tools, c->n_tools, tool);
	if (!t)
		cli_usage_error("--param %s: no --tool %s before it", spec, tool);
	if (!*name)
		cli_usage_error("--param %s: the parameter name is empty", spec);
	len = strlen(type);
	if (len > 0 && type[len - 1] == '?') {
		optional = 1;
		type[len - 1] = '\0';
	}
	if (t->n_params == sizeof(t->params) / sizeof(t->params[0]))
		cli_usage_error("--param %s: too many parameters for %s", spec, tool);
	p = &t->params[t->n_params];
	if (mafh_json_type_from_name(type, &p->type) < 0)
		cli_usage_error("--param %s: unknown type '%s' (string, number, integer, boolean, "
				"object, array, null, any)", spec, type);
	t->param_names[t->n_params] = strdup(name);
	if (!t->param_names[t->n_params])
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	p->name = t->param_names[t->n_params];
	p->required = !optional;
	t->n_params++;
	free(copy);
}

static int call_timeout(struct cli_tool *t, char *refusal, size_t refusal_size, long long *ms)
{
	long long left = t->run->deadline_ms - mono_ms();

	if (left <= 0) {
		snprintf(refusal, refusal_size, "the tool %s was not run: the run's deadline has "
			 "passed", t->name);
		return -1;
	}
	*ms = t->run->tool_timeout_ms < left ? t->run->tool_timeout_ms : left;
	return 0;
}

static int answer(struct tool_answer *a, struct mafh_reply *reply)
{
	char *text;
	int rc;

	if (a->refusal) {
		rc = mafh_reply_refuse(reply, a->refusal);
		tool_answer_clear(a);
		return rc;
	}
	text = cJSON_PrintUnformatted(a->value);
	tool_answer_clear(a);
	if (!text)
		return MAFH_ENOMEM;
	rc = mafh_reply_value(reply, text, strlen(text));
	free(text);
	return rc;
}

/* The callback of every --tool: the command, or the tools server. */
static int tool_fn(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	struct cli_tool *t = ud;
	struct tool_answer a;
	char refusal[256];
	long long ms;
	int rc;

	if (call_timeout(t, refusal, sizeof(refusal), &ms) < 0)
		return mafh_reply_refuse(reply, refusal);
	if (!t->command) {
		struct cli_run *c = t->run;
		cJSON *args = cJSON_ParseWithLength(call->arguments, call->arguments_len);

		if (!args)
			return MAFH_ENOMEM;
		rc = tools_server_call(c->server, t->name, args, ms, &a);
		cJSON_Delete(args);
		if (rc < 0)
			return MAFH_ENOMEM;
		if (tools_server_error(c->server) && !c->server_error[0] && !tools_cancel)
			snprintf(c->server_error, sizeof(c->server_error), "%s",
				 tools_server_error(c->server));
		return answer(&a, reply);
	}
	if (tool_command_call(t->name, t->command, call->arguments, t->run->response_max, ms,
			      &a) < 0)
		return MAFH_ENOMEM;
	return answer(&a, reply);
}

/* The launcher: $MAF_LAUNCH, else maf-launch next to this executable, else next to argv0. */
static char *find_launcher(const char *argv0)
{
	const char *env = getenv("MAF_LAUNCH");
	char self[PATH_MAX], *slash, *path;
	ssize_t n;

	if (env && *env)
		return strdup(env);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
	} else {
		snprintf(self, sizeof(self), "%s", argv0);
	}
	slash = strrchr(self, '/');
	if (!slash)
		return strdup("maf-launch");
	*slash = '\0';
	if (asprintf(&path, "%s/maf-launch", self[0] ? self : "/") < 0)
		return NULL;
	return path;
}

/* A fresh run directory under $TMPDIR (made absolute) or /tmp. */
static char *make_run_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	char base[PATH_MAX], *dir, *r;
	const char *why;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (!realpath(tmp, base))
		cli_die(CLI_EXIT_FAILURE, "cannot use the temporary directory %s: %s", tmp,
			strerror(errno));
	if (asprintf(&dir, "%s/maf-host-XXXXXX", strcmp(base, "/") ? base : "") < 0)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	if (mafp_run_dir_check(dir, &why) < 0)
		cli_die(CLI_EXIT_FAILURE, "cannot make a run directory under %s: %s (set TMPDIR)",
			base, why);
	r = mkdtemp(dir);
	if (!r)
		cli_die(CLI_EXIT_FAILURE, "cannot create a run directory under %s: %s", base,
			strerror(errno));
	return dir;
}

static char *read_program(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	size_t off = 0;

	if (fd < 0)
		cli_die(CLI_EXIT_USAGE, "cannot open the program %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		cli_die(CLI_EXIT_USAGE, "the program %s is not a regular file", path);
	if ((unsigned long long)st.st_size > PROGRAM_MAX)
		cli_die(CLI_EXIT_USAGE, "the program %s is larger than %u bytes", path,
			PROGRAM_MAX);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	for (;;) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			cli_die(CLI_EXIT_USAGE, "cannot read the program %s: %s", path,
				strerror(errno));
		if (n == 0 || (off += (size_t)n) == (size_t)st.st_size)
			break;
	}
	close(fd);
	buf[off] = '\0';
	*len = off;
	return buf;
}

/* SIGINT, SIGTERM and SIGHUP stop the run cleanly: a handler may only write to a pipe, so a
 * thread waits on it and asks the run to stop (the one call that is safe from another
 * thread). */
static int stop_pipe[2] = {-1, -1};

static void on_stop_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	tools_cancel = 1;

	if (write(stop_pipe[1], &c, 1) < 0) {
		/* Nothing to do: the pipe is full or gone, the run is already stopping. */
	}
	errno = saved;
}

static void *stop_watcher(void *arg)
{
	struct mafh_run *run = arg;
	char c = 0;

	for (;;) {
		ssize_t n = read(stop_pipe[0], &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 1 && c != 0)
			mafh_run_stop(run);
		return NULL;
	}
}

static int host_exit_code(const struct mafh_run_result *res)
{
	switch (res->status) {
	case MAFH_RUN_EXITED:
	case MAFH_RUN_SIGNALED:
		return res->exit_code >= 0 && res->exit_code <= 255 ? res->exit_code
								    : CLI_EXIT_FAILURE;
	case MAFH_RUN_TIMEOUT:
		return CLI_EXIT_TIMEOUT;
	case MAFH_RUN_LAUNCH_FAILED:
		return res->exit_code == 126 || res->exit_code == 127 ? res->exit_code
								      : CLI_EXIT_FAILURE;
	case MAFH_RUN_STOPPED:
		return res->exit_code > 0 && res->exit_code <= 255 ? res->exit_code
								   : CLI_EXIT_FAILURE;
	default:
		return CLI_EXIT_FAILURE;
	}
}

int cmd_run(int argc, char **argv)
{
	struct cli_run c;
	struct mafh_registry *reg = NULL;
	struct mafh_backend *backend = NULL;
	struct mafh_run *run = NULL;
	struct mafh_run_options opts;
	struct mafh_limits lim;
	struct mafh_error err;
	struct cli_report rep;
	const struct mafh_run_result *res;
	const char *program_path = NULL, *transport = "auto", *backend_name = "local";
	const char **prog_argv = NULL;
	char *program, *launcher, *run_dir, *prog_file;
	size_t program_len, i, n_args = 0;
	unsigned long long latency_ms = 0, max_calls = MAFP_DEFAULT_MAX_CALLS;
	unsigned long long max_output = 0, max_response = 0;
	long long timeout_ms = DEFAULT_TIMEOUT_MS;
	int json = 0, summary = 0, keep = 0, rc, code, ai;
	pthread_t watcher;
	int have_watcher = 0;

	memset(&c, 0, sizeof(c));
	c.tool_timeout_ms = DEFAULT_TOOL_TIMEOUT_MS;
	mafh_run_options_init(&opts);

	for (ai = 1; ai < argc; ai++) {
		const char *a = argv[ai], *val;
		char name[32];
		size_t n;

		if (strcmp(a, "--") == 0) {
			ai++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			cmd_run_usage(stdout);
			exit(0);
		}
		n = strcspn(a, "=");
		if (n >= sizeof(name))
			cli_usage_error("unknown option '%s'", a);
		memcpy(name, a, n);
		name[n] = '\0';
		if (strcmp(name, "--json") == 0 && !a[n]) {
			json = 1;
		} else if (strcmp(name, "--summary") == 0 && !a[n]) {
			summary = 1;
		} else if (strcmp(name, "--keep-run-dir") == 0 && !a[n]) {
			keep = 1;
		} else if (strcmp(name, "--tool") == 0) {
			add_tool(&c, opt_value(argc, argv, &ai, name));
		} else if (strcmp(name, "--tools-server") == 0) {
			val = opt_value(argc, argv, &ai, name);
			if (c.server_command)
				cli_usage_error("--tools-server is given twice");
			if (!*val)
				cli_usage_error("--tools-server has an empty COMMAND");
			c.server_command = val;
		} else if (strcmp(name, "--param") == 0) {
			add_param(&c, opt_value(argc, argv, &ai, name));
		} else if (strcmp(name, "--tool-timeout") == 0) {
			val = opt_value(argc, argv, &ai, name);
			if (parse_seconds(val, 86400000LL, &c.tool_timeout_ms) < 0)
				cli_usage_error("--tool-timeout takes a positive number of seconds, "
						"not '%s'", val);
		} else if (strcmp(name, "--timeout") == 0) {
			val = opt_value(argc, argv, &ai, name);
			if (parse_seconds(val, 86400000LL * 365, &timeout_ms) < 0)
				cli_usage_error("--timeout takes a positive number of seconds, not "
						"'%s'", val);
		} else if (strcmp(name, "--max-calls") == 0) {
			val = opt_value(argc, argv, &ai, name);
			if (parse_count(val, MAFP_CALL_ID_MAX, &max_calls) < 0)
				cli_usage_error("--max-calls takes a count from 0 to %d, not '%s'",
						MAFP_CALL_ID_MAX, val);
		} else if (strcmp(name, "--max-output-bytes") == 0) {
			val = opt_value(argc, argv, &ai, name);
			if (parse_count(val, 1ull << 40, &max_output) < 0 || max_output == 0)
				cli_usage_error("--max-output-bytes takes a positive byte count, not "
						"'%s'", val);
		} else if (strcmp(name, "--max-response-bytes") == 0) {
			val = opt_value(argc, argv, &ai, name);
			if (parse_count(val, 1ull << 30, &max_response) < 0 || max_response == 0)
				cli_usage_error("--max-response-bytes takes a positive byte count up "
						"to 1 GiB, not '%s'", val);
		} else if (strcmp(name, "--simulate-latency-ms") == 0) {
			val = opt_value(argc, argv, &ai, name);
			if (parse_count(val, 600000, &latency_ms) < 0)
				cli_usage_error("--simulate-latency-ms takes milliseconds from 0 to "
						"600000, not '%s'", val);
		} else if (strcmp(name, "--backend") == 0) {
			backend_name = opt_value(argc, argv, &ai, name);
			if (strcmp(backend_name, "local") != 0)
				cli_usage_error("unknown --backend '%s' (this build has: local)",
						backend_name);
		} else if (strcmp(name, "--transport") == 0) {
			enum mafh_transport t;

			transport = opt_value(argc, argv, &ai, name);
			if (mafh_transport_from_name(transport, &t) < 0 ||
			    (t != MAFH_TRANSPORT_AUTO && t != MAFH_TRANSPORT_FILES &&
			     t != MAFH_TRANSPORT_WAIT))
				cli_usage_error("--transport takes auto, files or wait, not '%s'",
						transport);
			opts.transport = t;
		} else if (strcmp(name, "--egress") == 0) {
			opts.egress = opt_value(argc, argv, &ai, name);
			if (strcmp(opts.egress, "closed") && strcmp(opts.egress, "open"))
				cli_usage_error("--egress takes closed or open, not '%s'",
						opts.egress);
		} else if (strcmp(name, "--seccomp") == 0) {
			opts.seccomp = opt_value(argc, argv, &ai, name);
			if (strcmp(opts.seccomp, "default") && strcmp(opts.seccomp, "off"))
				cli_usage_error("--seccomp takes default or off, not '%s'",
						opts.seccomp);
		} else if (strcmp(name, "--landlock") == 0) {
			opts.landlock = opt_value(argc, argv, &ai, name);
			if (strcmp(opts.landlock, "auto") && strcmp(opts.landlock, "off"))
				cli_usage_error("--landlock takes auto or off, not '%s'",
						opts.landlock);
		} else {
			cli_usage_error("unknown option '%s'", a);
		}
	}
	if (ai >= argc)
		cli_usage_error("no PROGRAM.py to run");
	program_path = argv[ai++];
	if (ai < argc && strcmp(argv[ai], "--") == 0)
		ai++;
	for (i = 0; i < c.n_tools; i++)
		if (!c.tools[i].command && !c.server_command)
			cli_usage_error("--tool %s has no =COMMAND, and there is no --tools-server "
					"to serve it", c.tools[i].name);
	if (c.server_command) {
		for (i = 0; i < c.n_tools && c.tools[i].command; i++)
			;
		if (i == c.n_tools)
			cli_usage_error("--tools-server serves the --tool NAME given without "
					"'=', and there is none");
	}
	program = read_program(program_path, &program_len);

	/* The registry: the tools, their parameters, the limits. */
	if (mafh_registry_new(&reg) < 0)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	mafh_limits_init(&lim);
	mafh_registry_get_limits(reg, &lim);
	lim.max_calls = (int64_t)max_calls;
	if (max_output)
		lim.max_output_bytes = max_output;
	if (max_response)
		lim.max_response_bytes = max_response;
	if (lim.max_total_response_bytes < lim.max_response_bytes)
		lim.max_total_response_bytes = lim.max_response_bytes;
	memset(&err, 0, sizeof(err));
	if (mafh_registry_set_limits(reg, &lim, &err) < 0)
		cli_usage_error("%s", err.message[0] ? err.message : mafh_strerror(err.code));
	c.response_max = (size_t)lim.max_response_bytes;
	for (i = 0; i < c.n_tools; i++) {
		struct mafh_tool tool;

		memset(&tool, 0, sizeof(tool));
		tool.size = sizeof(tool);
		tool.name = c.tools[i].name;
		tool.description = c.tools[i].command ? c.tools[i].command : "served by the "
									      "tools server";
		tool.params = c.tools[i].params;
		tool.n_params = c.tools[i].n_params;
		tool.fn = tool_fn;
		tool.ud = &c.tools[i];
		memset(&err, 0, sizeof(err));
		if (mafh_registry_add(reg, &tool, &err) < 0)
			cli_usage_error("--tool %s: %s", c.tools[i].name,
					err.message[0] ? err.message : mafh_strerror(err.code));
	}

	/* The backend. */
	launcher = find_launcher(cli_argv0);
	if (!launcher)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	if (strchr(launcher, '/') && access(launcher, X_OK) < 0)
		cli_die(CLI_EXIT_FAILURE, "cannot use the launcher %s: %s (build it, or set "
			"MAF_LAUNCH)", launcher, strerror(errno));
	rc = mafh_backend_local_new(launcher, &backend);
	if (rc < 0)
		cli_die(CLI_EXIT_FAILURE, "cannot make the local backend: %s", mafh_strerror(rc));
	if (latency_ms > 0) {
		rc = mafh_backend_latency_new(backend, (int64_t)latency_ms, &backend);
		if (rc < 0)
			cli_die(CLI_EXIT_FAILURE, "cannot make the latency wrapper: %s",
				mafh_strerror(rc));
	}

	/* The run: python3 R/host_tools/program.py ARGS... */
	run_dir = make_run_dir();
	if (asprintf(&prog_file, "%s/%s/%s", run_dir, MAFP_DIR_HOST_TOOLS, MAFP_FILE_PROGRAM) < 0)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	n_args = (size_t)(argc - ai);
	prog_argv = calloc(n_args + 3, sizeof(*prog_argv));
	if (!prog_argv)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	prog_argv[0] = "python3";
	prog_argv[1] = prog_file;
	for (i = 0; i < n_args; i++)
		prog_argv[2 + i] = argv[ai + (int)i];
	opts.run_dir = run_dir;
	opts.program = program;
	opts.program_len = program_len;
	opts.argv = prog_argv;
	opts.timeout_ms = timeout_ms;
	opts.keep_run_dir = keep;
	opts.write_shim = 1;

	memset(&err, 0, sizeof(err));
	rc = mafh_run_new(reg, backend, &opts, &run, &err);
	if (rc < 0) {
		rmdir(run_dir);
		cli_die(CLI_EXIT_FAILURE, "cannot start the run: %s",
			err.message[0] ? err.message : mafh_strerror(rc));
	}

	/* Tools run on the host's clock, never past the run's deadline. */
	c.deadline_ms = mono_ms() + timeout_ms;
	if (c.server_command) {
		char why[256];

		c.server = tools_server_start(c.server_command,
					      c.response_max + SERVER_LINE_SLACK, why, sizeof(why));
		if (!c.server) {
			mafh_run_free(run);
			rmdir(run_dir);
			cli_die(CLI_EXIT_FAILURE, "%s", why);
		}
	}

	if (pipe2(stop_pipe, O_CLOEXEC) == 0 &&
	    pthread_create(&watcher, NULL, stop_watcher, run) == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		have_watcher = 1;
	}

	memset(&err, 0, sizeof(err));
	rc = mafh_run_wait(run, &err);

	if (have_watcher) {
		char zero = 0;

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		if (write(stop_pipe[1], &zero, 1) == 1)
			pthread_join(watcher, NULL);
	}
	if (c.server) {
		if (tools_server_error(c.server) && !c.server_error[0] && !tools_cancel)
			snprintf(c.server_error, sizeof(c.server_error), "%s",
				 tools_server_error(c.server));
		tools_server_free(c.server);
		c.server = NULL;
	}

	res = mafh_run_result(run);
	code = host_exit_code(res);
	if (rc < 0 && res->status == MAFH_RUN_RUNNING)
		code = CLI_EXIT_FAILURE;
	/* The library reclaims the tree below R; R itself is ours (mkdtemp). */
	if (!keep)
		rmdir(run_dir);

	memset(&rep, 0, sizeof(rep));
	rep.res = res;
	rep.backend = backend_name;
	rep.transport = transport;
	rep.latency_ms = (long long)latency_ms;
	rep.run_dir = keep ? run_dir : NULL;
	rep.error = c.server_error[0] ? c.server_error : NULL;
	rep.exit_code = code;

	if (json) {
		if (cli_report_json(stdout, &rep) < 0) {
			cli_warn("out of memory writing the report");
			code = CLI_EXIT_FAILURE;
		}
	} else if (res->output_len > 0) {
		fwrite(res->output, 1, res->output_len, stdout);
	}
	fflush(stdout);

	if (rc < 0)
		cli_warn("the run could not be driven: %s",
			 err.message[0] ? err.message : mafh_strerror(rc));
	switch (res->status) {
	case MAFH_RUN_TIMEOUT:
		cli_warn("the run timed out after %.3g s and was stopped", timeout_ms / 1000.0);
		break;
	case MAFH_RUN_STOPPED:
		cli_warn("the run was stopped");
		break;
	case MAFH_RUN_LAUNCH_FAILED:
		cli_warn("the program could not be started: %s",
			 res->error.message[0] ? res->error.message
					       : (res->record.error[0] ? res->record.error
								       : "the launcher failed"));
		break;
	case MAFH_RUN_ERROR:
		cli_warn("the run failed: %s", res->error.message[0] ? res->error.message
								    : mafh_strerror(res->error.code));
		break;
	default:
		if (res->error.message[0])
			cli_warn("%s", res->error.message);
		break;
	}
	if (c.server_error[0])
		cli_warn("tools server error: %s", c.server_error);
	if (res->output_truncated && !json)
		cli_warn("the program's output was truncated");
	if (keep)
		cli_warn("run directory kept: %s", run_dir);
	if (summary)
		cli_report_summary(stderr, &rep);

	mafh_run_free(run);
	mafh_backend_free(backend);
	mafh_registry_free(reg);
	for (i = 0; i < c.n_tools; i++) {
		size_t j;

		for (j = 0; j < c.tools[i].n_params; j++)
			free(c.tools[i].param_names[j]);
		free(c.tools[i].name);
	}
	free(c.tools);
	free(prog_argv);
	free(prog_file);
	free(run_dir);
	free(launcher);
	free(program);
	return code;
}
