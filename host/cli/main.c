/* maf-host: parse the subcommand and dispatch; nothing else lives here. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mafhost.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	void (*usage)(FILE *f);
	const char *summary;
} commands[] = {
	{"run", cli_cmd_run, cli_cmd_run_usage,
	 "run a Python program through maf-launch and serve its host tools"},
	{"shim", cli_cmd_shim, cli_cmd_shim_usage,
	 "print the generated Python shim (maf_host_tools.py)"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: maf-host COMMAND [OPTION]...\n"
		   "\n"
		   "The host side of maf host-tool calls: runs a program in a sandbox through\n"
		   "maf-launch, answers its host-tool calls from tools on this machine, enforces\n"
		   "the call cap and the deadline, and cleans up.\n"
		   "\n"
		   "Commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-6s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "  %-6s %s\n", "help", "print a command's help: maf-host help COMMAND");
	fprintf(f, "\n"
		   "Options:\n"
		   "  --help     print this help\n"
		   "  --version  print the version\n"
		   "\n"
		   "Each command's options: maf-host COMMAND --help\n");
}

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	static char prog[64];

	/* A tool or a tools server that goes away must be an error to handle, not our death. */
	signal(SIGPIPE, SIG_IGN);
	if (argc > 0 && argv[0])
		cli_argv0 = argv[0];
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    (strcmp(argv[1], "help") == 0 && argc == 2)) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("maf-host %s (libmafhost %s, protocol %s)\n", MAFH_VERSION, mafh_version(),
		       "maf-sandbox 0.21 files");
		return 0;
	}
	if (strcmp(argv[1], "help") == 0) {
		if (argc > 3)
			cli_usage_error("help takes one COMMAND");
		cmd = find_command(argv[2]);
		if (!cmd)
			cli_usage_error("unknown command '%s'", argv[2]);
		cmd->usage(stdout);
		return 0;
	}
	cmd = find_command(argv[1]);
	if (!cmd)
		cli_usage_error("unknown command '%s'", argv[1]);
	snprintf(prog, sizeof(prog), "maf-host %s", cmd->name);
	cli_prog = prog;
	return cmd->fn(argc - 1, argv + 1);
}
