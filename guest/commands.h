/* The launcher's subcommands; each takes the argv after its own name (argv[0] is the
 * subcommand) and returns the process exit code, or exits through mafl_die(). Their tables
 * (opt.h) are in guest/commands.c. */
#ifndef MAFL_COMMANDS_H
#define MAFL_COMMANDS_H

#include "opt.h"

int mafl_cmd_run(int argc, char **argv);
int mafl_cmd_policy(int argc, char **argv);
int mafl_cmd_stop(int argc, char **argv);
int mafl_cmd_reclaim(int argc, char **argv);
/* reclaim's work, for a run_dir already checked (absolute, no trailing '/') and keep NULL or
 * a name mafl_reclaim_keep_check passed: returns 0 when it is done, or exits as reclaim
 * does (1 something left, each named on stderr; 2, 125). */
int mafl_reclaim(const char *run_dir, const char *keep);
/* NULL if name is one entry of R that --keep may name, else why not. */
const char *mafl_reclaim_keep_check(const char *name);
int mafl_cmd_wait(int argc, char **argv);
int mafl_cmd_relay(int argc, char **argv);
int mafl_cmd_serve(int argc, char **argv);
int mafl_cmd_call(int argc, char **argv);
int mafl_cmd_init(int argc, char **argv);
int mafl_cmd_sleep(int argc, char **argv);

/* maf-launch itself: its options, and the commands it dispatches to. */
extern const struct mafl_command mafl_launcher;

/* Every command, in the order the help lists them; mafl_commands[MAFL_NCOMMANDS] has a NULL
 * name. */
enum mafl_command_index {
	MAFL_COMMAND_RUN,
	MAFL_COMMAND_CALL,
	MAFL_COMMAND_POLICY,
	MAFL_COMMAND_WAIT,
	MAFL_COMMAND_RELAY,
	MAFL_COMMAND_SERVE,
	MAFL_COMMAND_STOP,
	MAFL_COMMAND_RECLAIM,
	MAFL_COMMAND_INIT,
	MAFL_COMMAND_SLEEP,
	MAFL_NCOMMANDS
};
extern const struct mafl_command mafl_commands[MAFL_NCOMMANDS + 1];

#endif
