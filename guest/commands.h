/* The launcher's subcommands; each takes the argv after its own name (argv[0] is the
 * subcommand) and returns the process exit code, or exits through die(). */
#ifndef MAFL_COMMANDS_H
#define MAFL_COMMANDS_H

int cmd_run(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_reclaim(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_relay(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_call(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_sleep(int argc, char **argv);

#endif
