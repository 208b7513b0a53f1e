/* maf-host: the CLI over libmafhost. main.c dispatches; options.c parses a command's options
 * and prints its help, from one table; run.c and shim.c are the commands (run_args.c parses
 * run's argv, events.c prints a run's events); report.c prints a run's result; tools.c runs
 * the host's tools. */
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

/* One option of a command. A command's table is both its parser and its help, so the two
 * cannot drift. */
struct cli_option {
	const char *name;          /* "--timeout"; NULL for a heading (help is its text) */
	const char *arg;           /* the value's name in the help ("S"); NULL for a flag */
	/* Takes the value (NULL for a flag) into the command's options (ctx); a value it
	 * cannot parse is a usage error naming opt->name. NULL only for --help. */
	void (*set)(void *ctx, const struct cli_option *opt, const char *value);
	size_t offset;             /* for the setter: where in ctx the value goes, if it says */
	const char *help;          /* one paragraph: wrapped when printed */
};

/* Parses the options in argv[1..] against table (ended by a row of NULLs): --name VALUE,
 * --name=VALUE, or --name for a flag. Stops at the first operand (returns its index, argc if
 * none) or after "--". --help and -h print usage on stdout and exit 0; an unknown option, a
 * missing value or a value given to a flag is a usage error. */
int cli_parse_options(int argc, char **argv, const struct cli_option *table, void *ctx,
		      void (*usage)(FILE *f));
/* Prints the table as help lines: each option with its value, its help wrapped beside it. */
void cli_print_options(FILE *f, const struct cli_option *table);

/* Length of the valid UTF-8 sequence at s[0..len) (len > 0), or 0 if it is not one
 * (overlongs, surrogates and code points past U+10FFFF are not). */
size_t cli_utf8_seq(const unsigned char *s, size_t len);

int cli_cmd_run(int argc, char **argv);
int cli_cmd_shim(int argc, char **argv);
void cli_cmd_run_usage(FILE *f);
void cli_cmd_shim_usage(FILE *f);

/* What report.c prints beside the library's result. */
struct cli_report {
	const struct mafh_run_result *res;
	const char *backend;         /* "local", "docker:CONTAINER" */
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
