/* A host that uses only <mafhost.h>, built by `make install-check` against an installed
 * libmafhost. usage: host LAUNCHER PROGRAM.py; prints the program's output and its calls. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mafhost.h>

/* The number after "key": in the arguments, which the run checked against the parameters. */
static double number(const char *json, const char *key)
{
	const char *p = strstr(json, key);

	p = p ? strchr(p + strlen(key), ':') : NULL;
	return p ? strtod(p + 1, NULL) : 0;
}

static int add(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	char sum[32];

	(void)ud;
	snprintf(sum, sizeof(sum), "%.17g",
		 number(call->arguments, "\"a\"") + number(call->arguments, "\"b\""));
	return mafh_reply_value(reply, sum, strlen(sum));
}

int main(int argc, char **argv)
{
	static const struct mafh_param params[] = {
		{"a", MAFH_JSON_NUMBER, 1}, {"b", MAFH_JSON_NUMBER, 1},
	};
	struct mafh_tool tool = {.size = sizeof(tool), .name = "add", .params = params,
				 .n_params = 2, .fn = add};
	struct mafh_registry *reg;
	struct mafh_backend *backend;
	struct mafh_run_options opts;
	struct mafh_run *run;
	const struct mafh_run_result *res;
	struct mafh_error err = {0};
	char program[4096], run_dir[] = "/tmp/maf-install-check-XXXXXX";
	FILE *f = argc == 3 ? fopen(argv[2], "r") : NULL;
	size_t len = f ? fread(program, 1, sizeof(program), f) : 0;
	int rc;

	if (!f || !mkdtemp(run_dir) || mafh_registry_new(&reg) < 0 ||
	    mafh_registry_add(reg, &tool, &err) < 0 ||
	    mafh_backend_local_new(argv[1], &backend) < 0) {
		fprintf(stderr, "host: usage: host LAUNCHER PROGRAM.py (%s)\n", err.message);
		return 2;
	}
	mafh_run_options_init(&opts);
	opts.run_dir = run_dir;
	opts.program = program;
	opts.program_len = len;
	if (mafh_run_new(reg, backend, &opts, &run, &err) < 0 || mafh_run_wait(run, &err) < 0) {
		fprintf(stderr, "host: %s\n", err.message);
		return 1;
	}
	res = mafh_run_result(run);
	printf("%scalls: %lld\n", res->output, (long long)res->calls);
	rc = res->status == MAFH_RUN_EXITED && res->exit_code == 0 ? 0 : 1;
	mafh_run_free(run);
	mafh_backend_free(backend);
	mafh_registry_free(reg);
	rmdir(run_dir);
	return rc;
}
