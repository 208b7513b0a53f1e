/* maf-host: parse the subcommand and dispatch; nothing else lives here. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv)
{
	const struct cli_command *cmd;
	static char prog[64];

	/* A tool or a tools server that goes away must be an error to handle, not our death. */
	signal(SIGPIPE, SIG_IGN);
	if (argc > 0 && argv[0])
		cli_argv0 = argv[0];
	if (argc < 2) {
		cli_print_help(stderr, &cli_program);
		return CLI_EXIT_USAGE;
	}
	/* maf-host's own options (--help, --version) come alone, before any command. */
	if (argv[1][0] == '-' && argv[1][1] && strcmp(argv[1], "--") != 0)
		cli_parse_options(2, argv, &cli_program, NULL);
	if (strcmp(argv[1], "help") == 0) {
		if (argc == 2) {
			cli_print_help(stdout, &cli_program);
			return 0;
		}
		if (argc > 3)
			cli_usage_error("help takes one COMMAND");
		cmd = cli_find_command(argv[2]);
		if (!cmd)
			cli_usage_error("unknown command '%s'", argv[2]);
		cli_print_help(stdout, cmd);
		return 0;
	}
	cmd = cli_find_command(argv[1]);
	if (!cmd)
		cli_usage_error("unknown command '%s'", argv[1]);
	snprintf(prog, sizeof(prog), "maf-host %s", cmd->name);
	cli_prog = prog;
	return cmd->fn(argc - 1, argv + 1);
}
