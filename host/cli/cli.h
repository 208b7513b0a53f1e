/* maf-host: the CLI over libmafhost. main.c dispatches; commands.c is maf-host's table: its
 * commands, each with its synopsis, description and options (whose rows live beside their
 * setters, in run_args.c and shim.c), its exit codes and environment; from it options.c
 * parses a command's options and prints its help, and gen/docgen.c writes the man page and
 * the bash completion. run.c and shim.c are the commands (run_args.c parses run's argv,
 * events.c prints a run's events); report.c prints a run's result; tools.c runs the host's
 * tools. */
#ifndef CLI_H
#define CLI_H

#include <stdio.h>

#include "mafhost.h"

/* maf-host's own exit codes (beside the program's, passed through by run). */
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_TIMEOUT 124   /* the run hit --timeout (as timeout(1)) */
#define CLI_EXIT_FAILURE 125   /* maf-host itself, the backend or the launcher failed */

extern const char *cli_prog;   /* "maf-host", or "maf-host run" once dispatched */
extern const char *cli_argv0;  /* main's argv[0] */

/* Prints "PROG: MESSAGE" on stderr. */
__attribute__((format(printf, 1, 2))) void cli_warn(const char *fmt, ...);
/* Prints "PROG: MESSAGE (try 'PROG --help')" and exits 2. */
__attribute__((noreturn, format(printf, 1, 2))) void cli_usage_error(const char *fmt, ...);
/* Prints "PROG: MESSAGE" and exits with code. */
__attribute__((noreturn, format(printf, 2, 3))) void cli_die(int code, const char *fmt, ...);
/* The sentence of a library error: its message, else the name of its code (borrowed). */
const char *cli_sentence(const struct mafh_error *err, int code);

/* One option of a command. A command's table is its parser, its help, its part of the man
 * page and of the completion, so none can drift. */
struct cli_option {
	const char *name;          /* "--timeout"; NULL for a heading (help is its text) */
	const char *arg;           /* the value's name in the help ("S"); NULL for a flag */
	/* Takes the value (NULL for a flag) into the command's options (ctx); a value it
	 * cannot parse is a usage error naming opt->name. NULL only for --help. */
	void (*set)(void *ctx, const struct cli_option *opt, const char *value);
	size_t offset;             /* for the setter: where in ctx the value goes, if it says */
	const char *help;          /* one paragraph: wrapped when printed */
};

/* A command of maf-host, or maf-host itself (cli_program). */
struct cli_command {
	const char *name;          /* "run"; "maf-host" for cli_program */
	const char *summary;       /* one line: in maf-host --help, and the man page's NAME */
	/* The usage lines after "maf-host NAME " ("[OPTION]... PROGRAM.py [--] [ARG]..."),
	 * NULL-terminated. */
	const char *const *synopsis;
	const char *description;   /* paragraphs separated by '\n', wrapped when printed */
	/* Ended by a row of NULLs; NULL for a command without options (help). */
	const struct cli_option *options;
	int exit_codes;            /* its help ends with cli_exit_codes */
	/* Runs the command with argv[0] its name; NULL for help, which main.c does. */
	int (*fn)(int argc, char **argv);
};

/* A row of a list in the man page (exit codes, environment); ended by a NULL text. */
struct cli_entry {
	const char *name;
	const char *text;
};

extern const struct cli_command cli_program;
extern const struct cli_command cli_command_run, cli_command_shim, cli_command_help;
/* The commands in the order maf-host --help lists them, NULL-terminated. */
extern const struct cli_command *const cli_commands[];
/* maf-host's own options (--help, --version), and each command's. */
extern const struct cli_option cli_program_options[];
extern const struct cli_option cli_run_options[];
extern const struct cli_option cli_shim_options[];
/* The exit codes: a row without a name is the program's own, passed on. */
extern const struct cli_entry cli_exit_codes[];
/* The environment variables maf-host and the library read. */
extern const struct cli_entry cli_environment[];

/* The command called name, or NULL. */
const struct cli_command *cli_find_command(const char *name);

/* Parses the options in argv[1..] against cmd's table: --name VALUE, --name=VALUE, or --name
 * for a flag. Stops at the first operand (returns its index, argc if none) or after "--".
 * --help and -h print cmd's help on stdout and exit 0; an unknown option, a missing value or
 * a value given to a flag is a usage error. */
int cli_parse_options(int argc, char **argv, const struct cli_command *cmd, void *ctx);
/* Prints cmd's help (cli_program: maf-host --help): its usage lines, its description, its
 * options (each with its value, its help wrapped beside it), and the exit codes if it says
 * so. */
void cli_print_help(FILE *f, const struct cli_command *cmd);

/* Length of the valid UTF-8 sequence at s[0..len) (len > 0), or 0 if it is not one
 * (overlongs, surrogates and code points past U+10FFFF are not). */
size_t cli_utf8_seq(const unsigned char *s, size_t len);

int cli_cmd_run(int argc, char **argv);
int cli_cmd_shim(int argc, char **argv);

/* What report.c prints beside the library's result. */
struct cli_report {
	const struct mafh_run_result *res;
	const char *backend;         /* "local", "docker:CONTAINER", "enter:PID" */
	long long engine_requests;   /* the Docker backend's requests to the engine; -1: none */
	const char *transport;       /* the one the run ended on: "files", "wait", ... */
	long long latency_ms;        /* --simulate-latency-ms, 0 if none */
	const char *run_dir;         /* shown only when kept */
	const char *error;           /* a run error beside the library's (tools server), or NULL */
	int exit_code;               /* maf-host's own exit code */
};

/* One JSON object and a newline on f: exit_code, status, output, output_truncated, calls,
 * refusals, undelivered, ops, ops_total, ops_per_call, wall_ms, error, errors, and the rest
 * of the record. 0, or -1 when it could not be made (out of memory; nothing printed). */
int cli_report_json(FILE *f, const struct cli_report *r);
/* A few human lines on f: status, calls, backend operations by kind, wall time. */
void cli_report_summary(FILE *f, const struct cli_report *r);

#endif
