/* maf-host run, in steps: parse argv into options (run_args.c), build the registry, the
 * backend and the run options from them, run (a fresh run directory, the run driven over the
 * backend with the tools serving its calls), and report (the program's output or one JSON
 * object, messages on stderr) with the program's exit code. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mafhost.h"
#include "protocol.h"
#include "cli_run.h"
#include "cli_tools.h"

#define PROGRAM_MAX (16u << 20)         /* bytes of PROGRAM.py we upload */
#define SERVER_LINE_SLACK 4096          /* an answer line's bytes beyond the value's cap */

/* What a call of a tool needs while the run goes on. */
struct run_serve {
	struct tools_server *server;
	long long tool_timeout_ms;
	long long deadline_ms;        /* monotonic; tools never run past it */
	size_t response_max;
	char server_error[600];
};

/* A run command: what it builds, in that order. */
struct run_cmd {
	struct run_args args;
	struct run_serve serve;
	struct run_events events;
	struct mafh_registry *reg;
	struct mafh_backend *backend;
	struct mafh_backend *docker;  /* the Docker backend in backend (borrowed), or NULL */
	char *launcher;               /* local, enter: the launcher looked for; docker: NULL */
	char *where;                  /* docker, enter: "in the container C", "in the sandbox
				       * of process N"; local: NULL */
	struct mafh_run_options opts;
	char *program;
	size_t program_len;
	char *run_dir;
	char *prog_file;
	const char **prog_argv;
	struct mafh_run *run;
	int drive_rc;                 /* mafh_run_wait's */
	struct mafh_error drive_err;
};

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the tools ---------------------------------------------------------------------------- */

static int call_timeout(struct run_tool *t, char *refusal, size_t refusal_size, long long *ms)
{
	long long left = t->serve->deadline_ms - mono_ms();

	if (left <= 0) {
		snprintf(refusal, refusal_size, "the tool %s was not run: the run's deadline has "
			 "passed", t->name);
		return -1;
	}
	*ms = t->serve->tool_timeout_ms < left ? t->serve->tool_timeout_ms : left;
	return 0;
}

/* Hands a tool's answer to the library, and clears it. */
static int answer(struct tool_answer *a, struct mafh_reply *reply)
{
	char *text;
	int rc;

	/* The note is for the operator only: a note that cannot be kept is no failure. */
	if (a->note)
		mafh_reply_note(reply, a->note, a->note_len);
	if (a->refusal) {
		rc = mafh_reply_refuse(reply, a->refusal);
		cli_tool_answer_clear(a);
		return rc;
	}
	text = cJSON_PrintUnformatted(a->value);
	cli_tool_answer_clear(a);
	if (!text)
		return MAFH_ENOMEM;
	rc = mafh_reply_value(reply, text, strlen(text));
	free(text);
	return rc;
}

/* The callback of every --tool: the command, or the tools server. */
static int tool_fn(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	struct run_tool *t = ud;
	struct run_serve *s = t->serve;
	struct tool_answer a;
	char refusal[256];
	long long ms;
	int rc;

	if (call_timeout(t, refusal, sizeof(refusal), &ms) < 0)
		return mafh_reply_refuse(reply, refusal);
	if (!t->command) {
		cJSON *args = cJSON_ParseWithLength(call->arguments, call->arguments_len);

		if (!args)
			return MAFH_ENOMEM;
		rc = cli_tools_server_call(s->server, t->name, args, ms, &a);
		cJSON_Delete(args);
		if (rc < 0)
			return MAFH_ENOMEM;
		if (cli_tools_server_error(s->server) && !s->server_error[0] && !cli_tools_cancel)
			snprintf(s->server_error, sizeof(s->server_error), "%s",
				 cli_tools_server_error(s->server));
		return answer(&a, reply);
	}
	if (cli_tool_command_call(t->name, t->command, call->arguments, s->response_max, ms,
			      &a) < 0)
		return MAFH_ENOMEM;
	return answer(&a, reply);
}

/* ---- what the run stands on --------------------------------------------------------------- */

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

/* ---- build -------------------------------------------------------------------------------- */

/* Hands the limits to the library with one more of them set: its refusal names that one. */
static void apply_limits(struct mafh_registry *reg, const struct mafh_limits *lim,
			 const char *option, const struct run_limit *given)
{
	struct mafh_error err = {0};
	int rc = mafh_registry_set_limits(reg, lim, &err);

	if (rc == MAFH_ENOMEM)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	if (rc < 0)
		cli_usage_error("%s %s: %s", option, given->text, cli_sentence(&err, rc));
}

/* The registry: the limits given, and the tools with their parameters. */
static void build_registry(struct run_cmd *c)
{
	struct run_args *a = &c->args;
	struct mafh_limits lim;
	size_t i;

	if (mafh_registry_new(&c->reg) < 0)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	mafh_limits_init(&lim);
	mafh_registry_get_limits(c->reg, &lim);
	if (a->max_calls.text) {
		lim.max_calls = a->max_calls.value > INT64_MAX ? INT64_MAX
							       : (int64_t)a->max_calls.value;
		apply_limits(c->reg, &lim, "--max-calls", &a->max_calls);
	}
	if (a->max_output_bytes.text) {
		lim.max_output_bytes = a->max_output_bytes.value;
		apply_limits(c->reg, &lim, "--max-output-bytes", &a->max_output_bytes);
	}
	if (a->max_response_bytes.text) {
		lim.max_response_bytes = a->max_response_bytes.value;
		/* Whatever one response may hold, the run's responses together may too. */
		if (lim.max_total_response_bytes < lim.max_response_bytes)
			lim.max_total_response_bytes = lim.max_response_bytes;
		apply_limits(c->reg, &lim, "--max-response-bytes", &a->max_response_bytes);
	}
	c->serve.response_max = (size_t)lim.max_response_bytes;
	c->serve.tool_timeout_ms = a->tool_timeout_ms;

	for (i = 0; i < a->n_tools; i++) {
		struct run_tool *t = &a->tools[i];
		struct mafh_tool tool = {
			.size = sizeof(tool), .name = t->name,
			.description = t->command ? t->command : "served by the tools server",
			.params = t->params, .n_params = t->n_params, .fn = tool_fn, .ud = t,
		};
		struct mafh_error err = {0};
		int rc = mafh_registry_add(c->reg, &tool, &err);

		if (rc == MAFH_ENOMEM)
			cli_die(CLI_EXIT_FAILURE, "out of memory");
		if (rc < 0)
			cli_usage_error("--tool %s: %s", t->name, cli_sentence(&err, rc));
		t->serve = &c->serve;
	}
}

/* The local, the Docker or the entered backend, behind the latency wrapper when asked. The
 * local launcher is looked at when the run starts (run_start), after every usage error; the
 * Docker backend asks the engine about the container now, the entered one opens the
 * process's pidfd, root and cgroup now. */
static void build_backend(struct run_cmd *c)
{
	struct mafh_error err = {0};
	int rc;

	if (c->args.container) {
		rc = mafh_backend_docker_new(c->args.container, c->args.launcher, NULL,
					     &c->backend, &err);
		if (rc == MAFH_ENOMEM)
			cli_die(CLI_EXIT_FAILURE, "out of memory");
		if (rc < 0)
			cli_die(CLI_EXIT_FAILURE, "%s", cli_sentence(&err, rc));
		c->docker = c->backend;
		if (asprintf(&c->where, "in the container %s", c->args.container) < 0)
			cli_die(CLI_EXIT_FAILURE, "out of memory");
	} else {
		c->launcher = c->args.launcher ? strdup(c->args.launcher)
					       : find_launcher(cli_argv0);
		if (!c->launcher)
			cli_die(CLI_EXIT_FAILURE, "out of memory");
		if (c->args.enter_pid > 0) {
			rc = mafh_backend_local_enter_new(c->launcher, c->args.enter_pid,
							  &c->backend, &err);
			if (rc == MAFH_ENOMEM)
				cli_die(CLI_EXIT_FAILURE, "out of memory");
			if (rc < 0)
				cli_die(CLI_EXIT_FAILURE, "cannot enter the sandbox of process %d: %s",
					c->args.enter_pid, cli_sentence(&err, rc));
			if (asprintf(&c->where, "in the sandbox of process %d",
				     c->args.enter_pid) < 0)
				cli_die(CLI_EXIT_FAILURE, "out of memory");
		} else {
			rc = mafh_backend_local_new(c->launcher, &c->backend);
			if (rc < 0)
				cli_die(CLI_EXIT_FAILURE, "cannot make the local backend: %s",
					mafh_strerror(rc));
		}
	}
	if (c->args.latency_ms > 0) {
		rc = mafh_backend_latency_new(c->backend, (int64_t)c->args.latency_ms,
					      &c->backend);
		if (rc < 0)
			cli_die(CLI_EXIT_FAILURE, "cannot make the latency wrapper: %s",
				mafh_strerror(rc));
	}
}

/* Asks the library whether it takes the run options so far over this backend, before the
 * program is read or a directory made: a sans-I/O run (which does no I/O) is made over a
 * registry of its own and freed. The library alone knows the words it takes; asking as each
 * one is added ties its sentence to that option. */
static void judge(struct run_cmd *c, const char *option, const char *value)
{
	static const char *const argv[] = {"python3", NULL};
	struct mafh_run_options o = c->opts;
	const char *const *prog_argv = c->prog_argv ? c->prog_argv : argv;
	struct mafh_registry *reg;
	struct mafh_run *run;
	struct mafh_error err = {0};
	int rc;

	if (!value)
		return;
	if (mafh_registry_new(&reg) < 0)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	o.run_dir = "/maf-host";
	o.argv = prog_argv;
	o.program = NULL;
	o.on_event = NULL;
	rc = mafh_run_new_sansio(reg, mafh_backend_caps(c->backend), &o, &run, &err);
	mafh_run_free(run);
	mafh_registry_free(reg);
	if (rc == MAFH_ENOMEM)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	if (rc < 0 && !option)
		cli_usage_error("%s", cli_sentence(&err, rc));
	if (rc < 0)
		cli_usage_error("%s %s: %s", option, value, cli_sentence(&err, rc));
}

/* The run options, all but the program, its directory and its argv (run_start). */
static void build_run_options(struct run_cmd *c)
{
	struct run_args *a = &c->args;
	struct mafh_run_options *o = &c->opts;

	mafh_run_options_init(o);
	o->timeout_ms = a->timeout_ms;
	if (a->exec_timeout_ms > 0)
		o->exec_timeout_ms = a->exec_timeout_ms;
	if (a->ending_ms > 0) {
		char given[32];

		o->ending_ms = a->ending_ms;
		snprintf(given, sizeof(given), "%g", (double)a->ending_ms / 1000);
		judge(c, "--ending-timeout", given);
	}
	o->keep_run_dir = a->keep_run_dir;
	o->write_shim = 1;
	if (a->verbose) {
		o->on_event = cli_run_events_print;
		o->event_ud = &c->events;
	}
	o->egress = a->egress;
	judge(c, "--egress", a->egress);
	o->seccomp = a->seccomp;
	judge(c, "--seccomp", a->seccomp);
	o->landlock = a->landlock;
	judge(c, "--landlock", a->landlock);
	o->user = a->user;
	judge(c, "--user", a->user);
	if (a->max_procs.text)
		o->max_procs = (int64_t)a->max_procs.value;
	if (a->max_memory)
		o->max_memory = a->max_memory_value;
	judge(c, "--max-procs", a->max_procs.text);
	o->writable = a->n_writable ? a->writable : NULL;
	if (a->n_writable)
		judge(c, "--writable", a->writable[0]);
	o->transport = a->transport_value;
	judge(c, "--transport", a->transport);
}

/* ---- run ---------------------------------------------------------------------------------- */

/* SIGINT, SIGTERM and SIGHUP stop the run cleanly: a handler may only write to a pipe, so a
 * thread waits on it and asks the run to stop (the one call that is safe from another
 * thread). */
static int stop_pipe[2] = {-1, -1};

static void on_stop_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	cli_tools_cancel = 1;

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

/* The run directory: a fresh directory under $TMPDIR or /tmp here, or under /tmp in the
 * container, made by the engine. */
static char *make_docker_run_dir(struct run_cmd *c)
{
	struct mafh_error err = {0};
	char *dir = strdup("/tmp/maf-host-XXXXXX");
	int rc;

	if (!dir)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	rc = mafh_backend_docker_mkdtemp(c->docker, dir, &err);
	if (rc < 0) {
		if (c->serve.server)
			cli_tools_server_free(c->serve.server);
		cli_die(CLI_EXIT_FAILURE, "cannot make a run directory in the container %s: %s",
			c->args.container, cli_sentence(&err, rc));
	}
	return dir;
}

/* The run directory in an entered sandbox: a name under its /tmp that nothing there has,
 * made by the first file written into it (below its root, as every path is), the program;
 * with --guest-program, nothing else is written before the launch, so an empty file the
 * reclaim removes with the rest. Its mode is the launcher's to set, as for any R. */
static char *make_entered_run_dir(struct run_cmd *c)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	struct mafh_error err = {0};
	struct mafh_stat st;
	char *dir = strdup("/tmp/maf-host-XXXXXX"), *mark = NULL;
	size_t len = dir ? strlen(dir) : 0, i;
	int rc = 0, tries;

	if (!dir)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	for (tries = 0; tries < 16; tries++) {
		unsigned char rnd[6];

		if (getentropy(rnd, sizeof(rnd)) < 0)
			cli_die(CLI_EXIT_FAILURE, "no random bytes for a run directory's name: %s",
				strerror(errno));
		for (i = 0; i < 6; i++)
			dir[len - 6 + i] = letters[rnd[i] % (sizeof(letters) - 1)];
		rc = mafh_backend_stat(c->backend, dir, &st, &err);
		if (rc < 0 || !st.exists)
			break;
	}
	if (rc == 0 && tries == 16)
		rc = MAFH_EEXIST;
	if (rc == 0 && c->args.guest_program) {
		if (asprintf(&mark, "%s/.run", dir) < 0)
			cli_die(CLI_EXIT_FAILURE, "out of memory");
		rc = mafh_backend_write_file(c->backend, mark, "", 0, NULL, &err);
		free(mark);
	}
	if (rc < 0) {
		if (c->serve.server)
			cli_tools_server_free(c->serve.server);
		cli_die(CLI_EXIT_FAILURE, "cannot make a run directory %s: %s", c->where,
			cli_sentence(&err, rc));
	}
	return dir;
}

/* maf-launch in the container or the entered sandbox, when named by a path: looked for
 * before anything is made there, since without it the run directory could not be
 * reclaimed either. */
static void check_launcher_inside(struct run_cmd *c)
{
	const char *launcher = mafh_backend_launcher_path(c->backend);
	struct mafh_error err = {0};
	struct mafh_stat st;
	int rc;

	if (!strchr(launcher, '/'))
		return;
	rc = mafh_backend_stat(c->backend, launcher, &st, &err);
	if (rc < 0)
		cli_die(CLI_EXIT_FAILURE, "cannot look for the launcher %s %s: %s", launcher,
			c->where, cli_sentence(&err, rc));
	if (!st.exists || (st.type != MAFH_FILE_REGULAR && st.type != MAFH_FILE_SYMLINK))
		cli_die(CLI_EXIT_FAILURE, "there is no launcher %s %s (put maf-launch there, or "
			"name it with --launcher)", launcher, c->where);
}

/* Reads the program (none with --guest-program), makes the run's argv (python3
 * R/host_tools/program.py ARGS..., or the guest program and its ARGS), starts the tools
 * server, and makes the run directory and the run. Whatever the user may have got wrong is
 * refused before anything is made. */
static void run_start(struct run_cmd *c)
{
	struct run_args *a = &c->args;
	struct mafh_error err = {0};
	size_t i, first;
	int rc;

	if (a->program_path)
		c->program = read_program(a->program_path, &c->program_len);
	if (!c->where && strchr(c->launcher, '/') && access(c->launcher, X_OK) < 0)
		cli_die(CLI_EXIT_FAILURE, "cannot use the launcher %s: %s (build it, or set "
			"MAF_LAUNCH)", c->launcher, strerror(errno));
	if (c->where)
		check_launcher_inside(c);
	c->prog_argv = calloc(a->n_program_args + 3, sizeof(*c->prog_argv));
	if (!c->prog_argv)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	if (a->guest_program) {
		c->prog_argv[0] = a->guest_program;
		first = 1;
	} else {
		/* R is not known yet: its place is filled once R is made. */
		c->prog_argv[0] = "python3";
		c->prog_argv[1] = "/maf-host/program.py";
		first = 2;
	}
	for (i = 0; i < a->n_program_args; i++)
		c->prog_argv[first + i] = a->program_args[i];
	/* The program's arguments are the last thing the library judges. */
	judge(c, NULL, "");

	/* Tools run on the host's clock, never past the run's deadline. */
	if (a->server_command) {
		char why[256];

		c->serve.server = cli_tools_server_start(a->server_command,
						     c->serve.response_max + SERVER_LINE_SLACK,
						     why, sizeof(why));
		if (!c->serve.server)
			cli_die(CLI_EXIT_FAILURE, "%s", why);
	}
	c->run_dir = c->docker ? make_docker_run_dir(c)
			       : c->where ? make_entered_run_dir(c) : make_run_dir();
	if (!a->guest_program) {
		if (asprintf(&c->prog_file, "%s/%s/%s", c->run_dir, MAFP_DIR_HOST_TOOLS,
			     MAFP_FILE_PROGRAM) < 0)
			cli_die(CLI_EXIT_FAILURE, "out of memory");
		c->prog_argv[1] = c->prog_file;
	}
	c->opts.run_dir = c->run_dir;
	c->opts.program = c->program;
	c->opts.program_len = c->program_len;
	c->opts.argv = c->prog_argv;

	rc = mafh_run_new(c->reg, c->backend, &c->opts, &c->run, &err);
	if (rc < 0) {
		if (c->serve.server)
			cli_tools_server_free(c->serve.server);
		if (c->docker || (c->where && a->guest_program))
			cli_warn("the empty run directory %s is left %s", c->run_dir, c->where);
		else if (!c->where)
			rmdir(c->run_dir);
		cli_die(CLI_EXIT_FAILURE, "cannot start the run: %s", cli_sentence(&err, rc));
	}
	c->events.res = mafh_run_result(c->run);
	c->serve.deadline_ms = mono_ms() + a->timeout_ms;
}

/* Drives the run to its end, SIGINT, SIGTERM and SIGHUP stopping it cleanly; then ends the
 * tools server, keeping its error. */
static void run_drive(struct run_cmd *c)
{
	struct run_serve *s = &c->serve;
	pthread_t watcher;
	int watching = 0;

	if (pipe2(stop_pipe, O_CLOEXEC) == 0 &&
	    pthread_create(&watcher, NULL, stop_watcher, c->run) == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		watching = 1;
	}

	c->drive_rc = mafh_run_wait(c->run, &c->drive_err);

	if (watching) {
		char zero = 0;

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		if (write(stop_pipe[1], &zero, 1) == 1)
			pthread_join(watcher, NULL);
	}
	if (s->server) {
		if (cli_tools_server_error(s->server) && !s->server_error[0] && !cli_tools_cancel)
			snprintf(s->server_error, sizeof(s->server_error), "%s",
				 cli_tools_server_error(s->server));
		cli_tools_server_free(s->server);
		s->server = NULL;
	}
}

/* ---- report ------------------------------------------------------------------------------- */

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



/* Prints the program's output or the JSON report, then what went wrong on stderr. Returns
 * maf-host's exit code. */
static int run_report(struct run_cmd *c)
{
	const struct run_args *a = &c->args;
	const struct mafh_run_result *res = mafh_run_result(c->run);
	const char *server_error = c->serve.server_error[0] ? c->serve.server_error : NULL;
	int code = host_exit_code(res);
	struct cli_report rep = {
		.res = res, .backend = a->backend,
		.engine_requests = c->docker ? (long long)mafh_backend_docker_requests(c->docker)
					     : -1,
		.transport = mafh_transport_name(res->transport),
		.latency_ms = (long long)a->latency_ms,
		.run_dir = a->keep_run_dir ? c->run_dir : NULL, .error = server_error,
	};

	if (c->drive_rc < 0 && res->status == MAFH_RUN_RUNNING)
		code = CLI_EXIT_FAILURE;
	/* The library reclaims the run directory; here R itself is ours (mkdtemp), and is
	 * removed if anything kept it. */
	if (!a->keep_run_dir && !c->where)
		rmdir(c->run_dir);

	rep.exit_code = code;
	if (a->json) {
		if (cli_report_json(stdout, &rep) < 0) {
			cli_warn("out of memory writing the report");
			code = CLI_EXIT_FAILURE;
		}
	} else if (res->output_len > 0) {
		fwrite(res->output, 1, res->output_len, stdout);
	}
	fflush(stdout);

	if (c->drive_rc < 0)
		cli_warn("the run could not be driven: %s", cli_sentence(&c->drive_err,
									 c->drive_rc));
	switch (res->status) {
	case MAFH_RUN_TIMEOUT:
		cli_warn("the run timed out after %.3g s and was stopped", a->timeout_ms / 1000.0);
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
		cli_warn("the run failed: %s", cli_sentence(&res->error, MAFH_EIO));
		break;
	case MAFH_RUN_LOST:
		cli_warn("the run is lost: %s", cli_sentence(&res->error, MAFH_EPROTO));
		break;
	default:
		if (res->error.message[0])
			cli_warn("%s", res->error.message);
		break;
	}
	if (server_error)
		cli_warn("tools server error: %s", server_error);
	/* Neither an identity of its own nor Landlock: the program could have written the
	 * exit marker and record itself. */
	if (res->pid > 0 && !res->verified)
		cli_warn("the result is unverified: the program ran under the launcher's identity "
			 "without Landlock (%s), so it could have written its exit marker and record "
			 "itself", res->landlock[0] ? res->landlock : "not said");
	if (res->output_truncated && !a->json)
		cli_warn("the program's output was truncated");
	if (a->keep_run_dir && c->where)
		cli_warn("run directory kept: %s %s", c->run_dir, c->where);
	else if (a->keep_run_dir)
		cli_warn("run directory kept: %s", c->run_dir);
	if (a->summary)
		cli_report_summary(stderr, &rep);
	return code;
}

static void run_cmd_free(struct run_cmd *c)
{
	mafh_run_free(c->run);
	mafh_backend_free(c->backend);
	mafh_registry_free(c->reg);
	cli_run_args_free(&c->args);
	free(c->prog_argv);
	free(c->prog_file);
	free(c->run_dir);
	free(c->launcher);
	free(c->where);
	free(c->program);
}

int cli_cmd_run(int argc, char **argv)
{
	struct run_cmd c;
	int code;

	memset(&c, 0, sizeof(c));
	/* Parse: the command line into options, each value as far as the CLI alone knows it. */
	cli_run_args_parse(&c.args, argc, argv);
	/* Build: the library judges the rest as the registry and the run options are made. */
	build_registry(&c);
	build_backend(&c);
	build_run_options(&c);
	/* Run, then report. */
	run_start(&c);
	run_drive(&c);
	code = run_report(&c);
	run_cmd_free(&c);
	return code;
}
