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
	const char *summary;
} commands[] = {
	{"run", cmd_run, "run a Python program through maf-launch and serve its host tools"},
	{"shim", cmd_shim, "print the generated Python shim (maf_host_tools.py)"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: maf-host COMMAND [OPTION]... \n"
		   "\n"
		   "The host side of maf host-tool calls: runs a program in a sandbox through\n"
		   "maf-launch, answers its host-tool calls from tools on this machine, enforces\n"
		   "the call cap and the deadline, and cleans up.\n"
		   "\n"
		   "Commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-6s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n"
		   "Options:\n"
		   "  --help     print this help, and each command's options\n"
		   "  --version  print the version\n"
		   "\n");
	cmd_run_usage(f);
	fprintf(f, "\n");
	cmd_shim_usage(f);
}

int main(int argc, char **argv)
{
	size_t i;

	/* A tool or a tools server that goes away must be an error to handle, not our death. */
	signal(SIGPIPE, SIG_IGN);
	if (argc > 0 && argv[0])
		cli_argv0 = argv[0];
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("maf-host %s (libmafhost %s, protocol %s)\n", MAFH_VERSION, MAFH_VERSION,
		       "maf-sandbox 0.21 files");
		return 0;
	}
	for (i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			static char prog[64];

			snprintf(prog, sizeof(prog), "maf-host %s", commands[i].name);
			cli_prog = prog;
			return commands[i].fn(argc - 1, argv + 1);
		}
	}
	cli_usage_error("unknown command '%s'", argv[1]);
}
