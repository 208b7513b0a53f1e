/* maf-host run's command line: one table of options, both the parser and the help. Only
 * what the CLI alone knows is checked here (numbers, seconds, the --tool and --param
 * syntax); the words and limits libmafhost takes are handed to it as given, and judged when
 * the registry and the run are made (run.c). */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_run.h"

#define DEFAULT_TIMEOUT_MS 60000
#define DEFAULT_TOOL_TIMEOUT_MS 30000
#define SECONDS_MAX_MS (86400000LL * 365)
#define LATENCY_MAX_MS 600000

/* Parses seconds ("30", "0.5") into ms in (0, max_ms]. */
static int parse_seconds(const char *s, long long max_ms, long long *out)
{
	char *end;
	double v;

	/* strtod also takes hex, "inf" and "nan": none is a number of seconds here. */
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

/* Parses a decimal count: digits only (strtoull would take a sign and spaces). */
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

static struct run_tool *find_tool(struct run_args *a, const char *name)
{
	size_t i;

	for (i = 0; i < a->n_tools; i++)
		if (strcmp(a->tools[i].name, name) == 0)
			return &a->tools[i];
	return NULL;
}

/* --tool NAME=COMMAND or --tool NAME. */
static void set_tool(void *ctx, const struct cli_option *opt, const char *spec)
{
	struct run_args *a = ctx;
	const char *eq = strchr(spec, '=');
	struct mafh_tool probe = {.size = sizeof(probe)};
	struct mafh_error err = {0};
	struct run_tool *t, *grown;
	char *name;
	int rc;

	(void)opt;
	name = strndup(spec, eq ? (size_t)(eq - spec) : strlen(spec));
	if (!name)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	probe.name = name;
	rc = mafh_registry_add(a->names, &probe, &err);
	if (rc == MAFH_EEXIST)
		cli_usage_error("the tool '%s' is given twice", name);
	if (rc == MAFH_ENOMEM)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	if (rc < 0)
		cli_usage_error("bad tool name '%s' in --tool: %s", name, cli_sentence(&err, rc));
	if (eq && !eq[1])
		cli_usage_error("--tool %s= has an empty COMMAND", name);
	grown = realloc(a->tools, (a->n_tools + 1) * sizeof(*a->tools));
	if (!grown)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	a->tools = grown;
	t = &a->tools[a->n_tools++];
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->command = eq ? eq + 1 : NULL;
}

/* The JSON type names the library takes, for a sentence: "string, number, ...". */
static const char *type_names(char *buf, size_t size)
{
	enum mafh_json_type t;
	size_t n = 0;

	buf[0] = '\0';
	for (t = MAFH_JSON_STRING; t <= MAFH_JSON_NULL && n < size; t++)
		n += (size_t)snprintf(buf + n, size - n, "%s, ", mafh_json_type_name(t));
	if (n < size)
		snprintf(buf + n, size - n, "%s", mafh_json_type_name(MAFH_JSON_ANY));
	return buf;
}

/* --param TOOL:NAME:TYPE[?] */
static void set_param(void *ctx, const struct cli_option *opt, const char *spec)
{
	struct run_args *a = ctx;
	char *copy = strdup(spec), *tool, *name, *type, names[128];
	struct run_tool *t;
	struct mafh_param *p;
	size_t len;

	(void)opt;
	if (!copy)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	tool = copy;
	name = strchr(tool, ':');
	type = name ? strrchr(name + 1, ':') : NULL;
	if (!name || !type)
		cli_usage_error("--param takes TOOL:NAME:TYPE, not '%s'", spec);
	*name++ = '\0';
	*type++ = '\0';
	t = find_tool(a, tool);
	if (!t)
		cli_usage_error("--param %s: no --tool %s before it", spec, tool);
	if (t->n_params == RUN_PARAMS_MAX)
		cli_usage_error("--param %s: more than %d parameters for %s", spec,
				RUN_PARAMS_MAX, tool);
	p = &t->params[t->n_params];
	len = strlen(type);
	p->required = !(len > 0 && type[len - 1] == '?');
	if (!p->required)
		type[len - 1] = '\0';
	if (mafh_json_type_from_name(type, &p->type) < 0)
		cli_usage_error("--param %s: unknown type '%s' (%s)", spec, type,
				type_names(names, sizeof(names)));
	t->param_names[t->n_params] = strdup(name);
	if (!t->param_names[t->n_params])
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	p->name = t->param_names[t->n_params++];
	free(copy);
}

static void set_tools_server(void *ctx, const struct cli_option *opt, const char *v)
{
	struct run_args *a = ctx;

	(void)opt;
	if (a->server_command)
		cli_usage_error("--tools-server is given twice");
	if (!*v)
		cli_usage_error("--tools-server has an empty COMMAND");
	a->server_command = v;
}

/* Seconds, into the long long at opt->offset. */
static void set_seconds(void *ctx, const struct cli_option *opt, const char *v)
{
	if (parse_seconds(v, SECONDS_MAX_MS, (long long *)((char *)ctx + opt->offset)) < 0)
		cli_usage_error("%s takes a positive number of seconds, not '%s'", opt->name, v);
}

/* A limit, into the struct run_limit at opt->offset: any count here, its range the
 * library's to judge. */
static void set_limit(void *ctx, const struct cli_option *opt, const char *v)
{
	struct run_limit *l = (struct run_limit *)((char *)ctx + opt->offset);

	if (parse_count(v, UINT64_MAX, &l->value) < 0)
		cli_usage_error("%s takes a count, not '%s'", opt->name, v);
	l->text = v;
}

/* A word, kept as given in the const char * at opt->offset. */
static void set_word(void *ctx, const struct cli_option *opt, const char *v)
{
	*(const char **)((char *)ctx + opt->offset) = v;
}

static void set_flag(void *ctx, const struct cli_option *opt, const char *v)
{
	(void)v;
	*(int *)((char *)ctx + opt->offset) = 1;
}

/* --backend local, docker:CONTAINER or enter:PID; the container is the engine's to know,
 * the process the library's to find. */
static void set_backend(void *ctx, const struct cli_option *opt, const char *v)
{
	struct run_args *a = ctx;
	unsigned long long pid;

	(void)opt;
	a->container = NULL;
	a->enter_pid = 0;
	if (strcmp(v, "local") == 0) {
		/* this machine */
	} else if (strncmp(v, "docker:", 7) == 0 && v[7]) {
		a->container = v + 7;
	} else if (strncmp(v, "enter:", 6) == 0) {
		if (parse_count(v + 6, INT_MAX, &pid) < 0 || pid == 0)
			cli_usage_error("--backend enter:PID takes a process id (a positive "
					"number), not '%s'", v + 6);
		a->enter_pid = (int)pid;
	} else {
		cli_usage_error("unknown --backend '%s' (this build has: local, docker:CONTAINER, "
				"enter:PID)", v);
	}
	a->backend = v;
}

/* A path, kept as given: not empty. */
static void set_path(void *ctx, const struct cli_option *opt, const char *v)
{
	if (!*v)
		cli_usage_error("%s takes a path, not an empty string", opt->name);
	*(const char **)((char *)ctx + opt->offset) = v;
}

static void set_latency(void *ctx, const struct cli_option *opt, const char *v)
{
	(void)opt;
	if (parse_count(v, LATENCY_MAX_MS, &((struct run_args *)ctx)->latency_ms) < 0)
		cli_usage_error("--simulate-latency-ms takes milliseconds from 0 to %d, not '%s'",
				LATENCY_MAX_MS, v);
}

/* The name is the library's to know; which transports a run can use it says when the run
 * is made. */
static void set_transport(void *ctx, const struct cli_option *opt, const char *v)
{
	struct run_args *a = ctx;

	(void)opt;
	if (mafh_transport_from_name(v, &a->transport_value) < 0)
		cli_usage_error("unknown --transport '%s'", v);
	a->transport = v;
}

/* --max-memory BYTES with K, M or G, as the launcher takes it; 0 is none. */
static void set_memory(void *ctx, const struct cli_option *opt, const char *v)
{
	struct run_args *a = ctx;
	unsigned long long n;
	char *end;

	(void)opt;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (end == v || errno || *v == '-' ||
	    (*end && (end[1] || !strchr("KkMmGg", *end))) || n > (1ull << 40))
		cli_usage_error("--max-memory takes a byte count with an optional K, M or G, not "
				"'%s'", v);
	n <<= *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 :
	      *end == 'G' || *end == 'g' ? 30 : 0;
	a->max_memory = v;
	a->max_memory_value = (long long)n;
}

static void set_writable(void *ctx, const struct cli_option *opt, const char *v)
{
	struct run_args *a = ctx;

	(void)opt;
	if (a->n_writable == sizeof(a->writable) / sizeof(a->writable[0]) - 1)
		cli_usage_error("--writable is given more than %zu times",
				sizeof(a->writable) / sizeof(a->writable[0]) - 1);
	a->writable[a->n_writable++] = v;
}

#define AT(field) offsetof(struct run_args, field)

const struct cli_option cli_run_options[] = {
	{NULL, NULL, NULL, 0, "The program:"},
	{"--guest-program", "PATH", set_path, AT(guest_program),
	 "run PATH, a program already in the sandbox (any language), with the ARGs after it, "
	 "instead of uploading PROGRAM.py: nothing is written into the run directory before "
	 "the launch, no shim either; the program calls host tools with `maf-launch call TOOL "
	 "JSON` (or the channel, or the legacy files: shared/PROTOCOL.md)"},

	{NULL, NULL, NULL, 0, "Tools (all run on this host, through sh -c):"},
	{"--tool", "NAME=COMMAND", set_tool, 0,
	 "serve NAME by running COMMAND once per call: the call's arguments (a JSON object) on "
	 "its stdin, its stdout one JSON value; a non-zero exit is a refusal carrying the "
	 "first line of its stderr; output that is not JSON is a refusal (--verbose shows what "
	 "the tool printed)"},
	{"--tools-server", "COMMAND", set_tools_server, 0,
	 "start COMMAND once; it serves every --tool NAME given without '=' over "
	 "newline-delimited JSON on its stdin and stdout: {\"id\": N, \"name\": ..., "
	 "\"arguments\": {...}} in, {\"id\": N, \"value\": ...} or {\"id\": N, \"refusal\": "
	 "\"...\"} out; a server that ends, answers garbage, a wrong id or too long a line is "
	 "stopped: its calls are refused and the run reports the error"},
	/* The other form of --tool, for the help: parsing finds the row above. */
	{"--tool", "NAME", set_tool, 0, "a tool served by the --tools-server"},
	{"--param", "TOOL:NAME:TYPE[?]", set_param, 0,
	 "declare a parameter of TOOL (TYPE: string, number, integer, boolean, object, array, "
	 "null, any; a trailing '?' makes it optional); calls with missing, mistyped or "
	 "undeclared arguments are refused before the tool runs. A tool with no --param takes "
	 "any arguments"},
	{"--tool-timeout", "S", set_seconds, AT(tool_timeout_ms),
	 "time limit of one tool call in seconds (default: 30; never past the run's deadline)"},

	{NULL, NULL, NULL, 0, "Limits:"},
	{"--timeout", "S", set_seconds, AT(timeout_ms),
	 "one deadline for the whole run, in seconds (fractions allowed; default: 60); then "
	 "the run is stopped, status timeout, exit code 124"},
	{"--max-calls", "N", set_limit, AT(max_calls),
	 "calls served per run, refusals included (default: 16); past it every call is "
	 "refused"},
	{"--max-output-bytes", "N", set_limit, AT(max_output_bytes),
	 "program output read back (default: 1048576)"},
	{"--max-response-bytes", "N", set_limit, AT(max_response_bytes),
	 "bytes of one tool answer (default: 8388608)"},

	{NULL, NULL, NULL, 0, "Backend and transport:"},
	{"--backend", "local|docker:CONTAINER|enter:PID", set_backend, 0,
	 "where the program runs: local, this machine (default); or docker:CONTAINER, a running "
	 "container (name or id) of the Docker engine at $DOCKER_HOST (unix:///PATH only) or "
	 "/var/run/docker.sock, driven through the engine's exec and archive API alone (no "
	 "shell needed in the image); the run directory is a fresh /tmp/maf-host-XXXXXX in the "
	 "container, made by the engine; or enter:PID, inside the sandbox process PID is in (a "
	 "bubblewrap sandbox, whose own exec cannot hold a run), as an engine's exec enters a "
	 "container: each command joins PID's cgroup and namespaces with no capability and "
	 "no_new_privs, files are reached below PID's root, never leaving it (needs root here); "
	 "the run directory is a fresh /tmp/maf-host-XXXXXX in that sandbox"},
	{"--launcher", "PATH", set_path, AT(launcher),
	 "maf-launch as the backend's exec finds it (default: local, $MAF_LAUNCH or "
	 "maf-launch next to maf-host; docker, /usr/local/bin/maf-launch, where this project's "
	 "images put it; enter, local's path, in the sandbox: one that binds this machine's / "
	 "sees it there)"},
	{"--exec-timeout", "S", set_seconds, AT(exec_timeout_ms),
	 "time limit in seconds of each of the launcher's short commands, run, stop and "
	 "reclaim (these two within their share of --ending-timeout), of a stream's opening, "
	 "and of a wait's or relay's exec past its slice (default: 30; never past the run's "
	 "deadline by more than 5 s), for an engine slow to start execs"},
	{"--ending-timeout", "S", set_seconds, AT(ending_ms),
	 "the run is over S seconds after the program ends, or after --timeout if that comes "
	 "first, whatever the launcher does: stop, the exit record, the output and the reclaim "
	 "share it, stop all but 4/15 of it (6 to 3600, default: 15); raise it with "
	 "--exec-timeout where the engine's execs are slow, since a stop cut short loses the "
	 "output"},
	{"--simulate-latency-ms", "N", set_latency, 0,
	 "add N ms before every backend operation, one at a time, to simulate a remote backend "
	 "(default: 0)"},
	{"--transport", "auto|files|wait|relay|stream", set_transport, 0,
	 "how requests are found: files (read-if-present with adaptive polling), wait "
	 "(long-poll with maf-launch wait), relay (one exec a call: maf-launch relay writes "
	 "the answer and waits for the next request), stream (maf-launch serve on one exec "
	 "that stays open: no exec a call), auto (the best the backend offers) "
	 "(default: auto)"},
	{"--egress", "closed|open", set_word, AT(egress),
	 "the program's network (default: closed)"},
	{"--seccomp", "default|off", set_word, AT(seccomp),
	 "the launcher's seccomp filter (default: default)"},
	{"--landlock", "auto|off", set_word, AT(landlock),
	 "Landlock where the kernel has it (default: auto)"},
	{"--user", "UID[:GID]", set_word, AT(user),
	 "the program's identity (default, when the launcher is root: one of the run's own, "
	 "1048576 + the supervisor's pid, or 268435456 + it from 1048576 on; 0 keeps root, for a program trusted more than the "
	 "sandbox)"},
	{"--max-procs", "N", set_limit, AT(max_procs),
	 "processes and threads of the run's own identity (default: 256; 0: none)"},
	{"--max-memory", "BYTES", set_memory, 0,
	 "address space of each process of the run, with K, M or G (default: 4G; 0: none)"},
	{"--writable", "PATH", set_writable, 0,
	 "a path outside the run the program may also write (repeatable)"},
	{"--keep-run-dir", NULL, set_flag, AT(keep_run_dir),
	 "keep the run directory (a fresh directory under $TMPDIR or /tmp, or under /tmp in "
	 "the container) and print its path on stderr"},

	{NULL, NULL, NULL, 0, "Output:"},
	{"--json", NULL, set_flag, AT(json),
	 "print one JSON object instead of the program's output: exit_code, status, output, "
	 "output_truncated, calls, refusals, undelivered (answers the program never received), "
	 "ops {exec, read, write, stat, wait}, ops_total, ops_per_call, wall_ms, error, errors "
	 "(every error of the run, a sentence each), record (the launcher's account), ..."},
	{"--summary", NULL, set_flag, AT(summary),
	 "after the output, print a run summary on stderr (calls, backend operations by kind, "
	 "wall time)"},
	{"--verbose", NULL, set_flag, AT(verbose),
	 "print what happens on stderr as it happens, a line each: the program started, each "
	 "call served, refused (what the tool printed indented below) or never delivered, each "
	 "error, the end"},
	{"--help", NULL, NULL, 0, "print this help"},
	{NULL, NULL, NULL, 0, NULL},
};

void cli_run_args_parse(struct run_args *a, int argc, char **argv)
{
	size_t i;
	int first;

	memset(a, 0, sizeof(*a));
	a->tool_timeout_ms = DEFAULT_TOOL_TIMEOUT_MS;
	a->timeout_ms = DEFAULT_TIMEOUT_MS;
	a->backend = "local";
	a->transport_value = MAFH_TRANSPORT_AUTO;
	if (mafh_registry_new(&a->names) < 0)
		cli_die(CLI_EXIT_FAILURE, "out of memory");

	first = cli_parse_options(argc, argv, &cli_command_run, a);
	if (!a->guest_program) {
		if (first >= argc)
			cli_usage_error("no PROGRAM.py to run (or --guest-program PATH)");
		a->program_path = argv[first++];
	}
	if (first < argc && strcmp(argv[first], "--") == 0)
		first++;
	a->program_args = argv + first;
	a->n_program_args = (size_t)(argc - first);

	for (i = 0; i < a->n_tools; i++)
		if (!a->tools[i].command && !a->server_command)
			cli_usage_error("--tool %s has no =COMMAND, and there is no --tools-server "
					"to serve it", a->tools[i].name);
	if (a->server_command) {
		for (i = 0; i < a->n_tools && a->tools[i].command; i++)
			;
		if (i == a->n_tools)
			cli_usage_error("--tools-server serves the --tool NAME given without "
					"'=', and there is none");
	}
	mafh_registry_free(a->names);
	a->names = NULL;
}

void cli_run_args_free(struct run_args *a)
{
	size_t i, j;

	for (i = 0; i < a->n_tools; i++) {
		for (j = 0; j < a->tools[i].n_params; j++)
			free(a->tools[i].param_names[j]);
		free(a->tools[i].name);
	}
	free(a->tools);
	mafh_registry_free(a->names);
	memset(a, 0, sizeof(*a));
}
