/* The launcher's subcommands; each takes the argv after its own name (argv[0] is the
 * subcommand) and returns the process exit code, or exits through mafl_die(). */
#ifndef MAFL_COMMANDS_H
#define MAFL_COMMANDS_H

int mafl_cmd_run(int argc, char **argv);
int mafl_cmd_policy(int argc, char **argv);
int mafl_cmd_stop(int argc, char **argv);
int mafl_cmd_reclaim(int argc, char **argv);
int mafl_cmd_wait(int argc, char **argv);
int mafl_cmd_relay(int argc, char **argv);
int mafl_cmd_serve(int argc, char **argv);
int mafl_cmd_call(int argc, char **argv);
int mafl_cmd_init(int argc, char **argv);
int mafl_cmd_sleep(int argc, char **argv);

#endif
