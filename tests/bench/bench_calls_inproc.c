/* The in-process host of `make bench-calls`: libmafhost with the `echo` tool registered as
 * a C callback, so a call crosses three processes (program, supervisor, host) where maf-host
 * with a tools server takes four. It runs tests/bench/bench_calls_program.py on the local
 * backend and prints the run as one JSON object, with the fields `maf-host run --json`
 * gives that bench_calls.py reads (status, exit_code, output, calls, ops, wall_ms).
 *
 * usage: bench_calls_inproc [--keep-run-dir] LAUNCHER PROGRAM.py MAX_CALLS TIMEOUT_S [ARG]...
 * The run directory is made under $TMPDIR (or /tmp) and reclaimed at the end, unless
 * --keep-run-dir, as maf-host's option of that name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cJSON.h"
#include "mafhost.h"

static int echo(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	(void)ud;
	return mafh_reply_value(reply, call->arguments, call->arguments_len);
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_calls_inproc: %s: %s\n", what, why);
	exit(1);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *buf;

	if (!f || fstat(fileno(f), &st) < 0)
		die(path, strerror(errno));
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		die(path, "cannot read it");
	fclose(f);
	buf[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return buf;
}

int main(int argc, char **argv)
{
	struct mafh_tool tool = {.size = sizeof(tool), .name = "echo", .fn = echo};
	struct mafh_registry *reg;
	struct mafh_backend *backend;
	struct mafh_run_options opts;
	struct mafh_run *run;
	struct mafh_limits lim;
	struct mafh_error err;
	const struct mafh_run_result *res;
	const char *tmp = getenv("TMPDIR");
	char run_dir[4096], prog_file[4200];
	const char **prog_argv;
	cJSON *out, *ops;
	char *program, *text;
	size_t program_len;
	int keep = argc > 1 && strcmp(argv[1], "--keep-run-dir") == 0, i, rc;

	argc -= keep;
	argv += keep;
	if (argc < 5)
		die("usage", "bench_calls_inproc [--keep-run-dir] LAUNCHER PROGRAM.py MAX_CALLS "
			     "TIMEOUT_S [ARG]...");
	program = read_all(argv[2], &program_len);
	memset(&err, 0, sizeof(err));
	if (mafh_registry_new(&reg) < 0)
		die("registry", "out of memory");
	mafh_registry_get_limits(reg, &lim);
	lim.max_calls = atoll(argv[3]);
	if (mafh_registry_set_limits(reg, &lim, &err) < 0 || mafh_registry_add(reg, &tool, &err) < 0)
		die("registry", err.message);
	rc = mafh_backend_local_new(argv[1], &backend);
	if (rc < 0)
		die("local backend", mafh_strerror(rc));

	snprintf(run_dir, sizeof(run_dir), "%s/maf-bench-inproc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(run_dir))
		die(run_dir, strerror(errno));
	snprintf(prog_file, sizeof(prog_file), "%s/host_tools/program.py", run_dir);
	prog_argv = calloc((size_t)argc, sizeof(*prog_argv));
	if (!prog_argv)
		die("argv", "out of memory");
	prog_argv[0] = "python3";
	prog_argv[1] = prog_file;
	for (i = 5; i < argc; i++)
		prog_argv[i - 3] = argv[i];
	mafh_run_options_init(&opts);
	opts.run_dir = run_dir;
	opts.program = program;
	opts.program_len = program_len;
	opts.argv = prog_argv;
	opts.timeout_ms = atoll(argv[4]) * 1000;
	opts.write_shim = 1;
	opts.keep_run_dir = keep;
	if (mafh_run_new(reg, backend, &opts, &run, &err) < 0)
		die("run", err.message);
	mafh_run_wait(run, &err);
	res = mafh_run_result(run);

	out = cJSON_CreateObject();
	ops = cJSON_AddObjectToObject(out, "ops");
	cJSON_AddStringToObject(out, "status", mafh_run_status_name(res->status));
	cJSON_AddNumberToObject(out, "exit_code", res->exit_code);
	cJSON_AddStringToObject(out, "output", res->output);
	cJSON_AddNumberToObject(out, "calls", (double)res->calls);
	cJSON_AddStringToObject(out, "transport", mafh_transport_name(res->transport));
	cJSON_AddNumberToObject(out, "wall_ms", (double)res->wall_ms);
	cJSON_AddStringToObject(out, "error", res->error.message);
	cJSON_AddNumberToObject(ops, "exec", (double)res->ops.exec);
	cJSON_AddNumberToObject(ops, "read", (double)res->ops.read);
	cJSON_AddNumberToObject(ops, "write", (double)res->ops.write);
	cJSON_AddNumberToObject(ops, "stat", (double)res->ops.stat);
	cJSON_AddNumberToObject(ops, "wait", (double)res->ops.wait);
	text = cJSON_PrintUnformatted(out);
	if (!text)
		die("report", "out of memory");
	puts(text);
	free(text);
	cJSON_Delete(out);
	mafh_run_free(run);
	if (!keep)
		rmdir(run_dir);
	mafh_backend_free(backend);
	mafh_registry_free(reg);
	free(prog_argv);
	free(program);
	return 0;
}
