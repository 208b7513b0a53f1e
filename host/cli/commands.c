/* maf-host's table: its commands with their synopses and descriptions, its own options, its
 * exit codes and environment. `maf-host --help`, `maf-host COMMAND --help`, the man page
 * maf-host(1) and the bash completion are all printed from here (options.c, gen/docgen.c);
 * each command's option rows are beside their setters (run_args.c, shim.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mafhost.h"

static void print_version(void *ctx, const struct cli_option *opt, const char *value)
{
	(void)ctx;
	(void)opt;
	(void)value;
	printf("maf-host %s (libmafhost %s, protocol %s)\n", MAFH_VERSION, mafh_version(),
	       "maf-sandbox 0.21 files");
	exit(0);
}

const struct cli_option cli_program_options[] = {
	{NULL, NULL, NULL, 0, "Options:"},
	{"--help", NULL, NULL, 0, "print this help"},
	{"--version", NULL, print_version, 0, "print the version"},
	{NULL, NULL, NULL, 0, NULL},
};

static const char *const program_synopsis[] = {"COMMAND [OPTION]...", NULL};

const struct cli_command cli_program = {
	.name = "maf-host",
	.summary = "the host side of maf host-tool calls",
	.synopsis = program_synopsis,
	.description =
		"The host side of maf host-tool calls: runs a program in a sandbox through "
		"maf-launch, answers its host-tool calls from tools on this machine, enforces the "
		"call cap and the deadline, and cleans up.",
	.options = cli_program_options,
};

static const char *const run_synopsis[] = {
	"[OPTION]... PROGRAM.py [--] [ARG]...",
	"[OPTION]... --guest-program PATH [--] [ARG]...",
	NULL,
};
static const char *const shim_synopsis[] = {"[--tool NAME]...", NULL};
static const char *const help_synopsis[] = {"[COMMAND]", NULL};

const struct cli_command cli_command_run = {
	.name = "run",
	.summary = "run a Python program through maf-launch and serve its host tools",
	.synopsis = run_synopsis,
	.description =
		"Runs PROGRAM.py with python3 through maf-launch (contained: seccomp, Landlock, "
		"egress closed by default) in a fresh run directory, serves its host-tool calls "
		"with the tools given below, then prints the program's output and exits with the "
		"program's exit code. In the program, `from maf_host_tools import call, "
		"HostToolError`; call(\"NAME\", key=value, ...) returns the tool's JSON value or "
		"raises HostToolError with the refusal. With --guest-program, the program is one "
		"already in the sandbox, and nothing is uploaded.",
	.options = cli_run_options,
	.exit_codes = 1,
	.fn = cli_cmd_run,
};

const struct cli_command cli_command_shim = {
	.name = "shim",
	.summary = "print the generated Python shim (maf_host_tools.py)",
	.synopsis = shim_synopsis,
	.description =
		"Prints the generated Python shim (maf_host_tools.py) on stdout: call(name, "
		"**arguments), HostToolError, and one wrapper function per tool whose name is a "
		"valid Python identifier.",
	.options = cli_shim_options,
	.fn = cli_cmd_shim,
};

const struct cli_command cli_command_help = {
	.name = "help",
	.summary = "print a command's help: maf-host help COMMAND",
	.synopsis = help_synopsis,
	.description =
		"Prints COMMAND's help, as `maf-host COMMAND --help` does; without COMMAND, "
		"maf-host's own.",
};

const struct cli_command *const cli_commands[] = {
	&cli_command_run, &cli_command_shim, &cli_command_help, NULL,
};

const struct cli_entry cli_exit_codes[] = {
	{NULL, "the program's exit code (128+N when killed by signal N)"},
	{"124", "the run timed out"},
	{"125", "maf-host, the backend or the launcher failed"},
	{"126/127", "the program could not be executed / was not found"},
	{"2", "usage"},
	{NULL, NULL},
};

const struct cli_entry cli_environment[] = {
	{"DOCKER_HOST",
	 "the Docker engine of --backend docker:CONTAINER, as unix:///PATH (any other scheme is "
	 "refused); unset or empty, /var/run/docker.sock"},
	{"MAF_LAUNCH",
	 "the launcher of the local backend when --launcher is not given; unset or empty, "
	 "maf-launch next to maf-host"},
	{"TMPDIR", "where the local backend's run directory is made (default: /tmp)"},
	{NULL, NULL},
};

const struct cli_command *cli_find_command(const char *name)
{
	const struct cli_command *const *c;

	for (c = cli_commands; *c; c++)
		if (strcmp(name, (*c)->name) == 0)
			return *c;
	return NULL;
}
