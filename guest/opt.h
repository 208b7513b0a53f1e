/* The launcher's commands as data: one table per command (guest/commands.c) says its options,
 * what each takes and what it does, and its help. One parser reads every command's argv
 * against its table (opt.c), `maf-launch COMMAND --help` is printed from it, and the build
 * makes the man page and the bash completion from the same tables (guest/gen/docgen.c).
 *
 * The help's texts (about, an option's help, exit_codes) are paragraphs separated by an empty
 * line ("\n\n"). In a paragraph, a line that starts with a space is shown as it is (a
 * listing); any other line is prose, filled to the width of the terminal's help or the man
 * page, and a line break between two prose lines is kept. */
#ifndef MAFL_OPT_H
#define MAFL_OPT_H

#include <stdio.h>

/* What an option is, to the command that reads it: mafl_opt_next returns it. */
enum mafl_opt_key {
	MAFL_O_HELP = 1,        /* every command's, handled by the parser */
	MAFL_O_VERSION,
	MAFL_O_RUN_DIR,
	MAFL_O_TIMEOUT,
	MAFL_O_GRACE,
	MAFL_O_MAX_OUTPUT_BYTES,
	MAFL_O_EGRESS,
	MAFL_O_SECCOMP,
	MAFL_O_LANDLOCK,
	MAFL_O_TOOL,
	MAFL_O_MAX_CALLS,
	MAFL_O_USER,
	MAFL_O_MAX_PROCS,
	MAFL_O_MAX_MEMORY,
	MAFL_O_WRITABLE,
	MAFL_O_SUPERVISOR_PID,
	MAFL_O_FLOOR,
	MAFL_O_CHECK,
	MAFL_O_NEXT,
	MAFL_O_TIMEOUT_MS,
	MAFL_O_MAX_BYTES,
	MAFL_O_ANSWER,
	MAFL_O_VALUE_STDIN,
	MAFL_O_MAX_ANSWER_BYTES,
	MAFL_O_KEEP,
	MAFL_O_ACK,
	MAFL_O_OUTPUT,
	MAFL_O_RECLAIM,
	MAFL_O_FILES_STDIN,
};

/* What a shell completes a value or an operand with. */
enum mafl_complete {
	MAFL_COMPLETE_NONE,     /* nothing: a number, a name */
	MAFL_COMPLETE_DIR,      /* a directory */
	MAFL_COMPLETE_FILE,     /* a path */
	MAFL_COMPLETE_WORDS,    /* one of the words of arg, between '|' ("closed|open") */
	MAFL_COMPLETE_COMMAND,  /* a program on PATH */
};

/* One option. */
struct mafl_opt {
	const char *name;       /* "--run-dir"; NULL ends a table */
	const char *arg;        /* its value, as the help names it ("R"); NULL: it takes none */
	const char *help;       /* what it does (the format above) */
	unsigned char key;      /* enum mafl_opt_key */
	unsigned char complete; /* enum mafl_complete, for its value */
};

/* A command takes operands after its options (options end at the first): */
#define MAFL_CMD_OPERANDS 1
/* It is also run by its own name, as a link to maf-launch so named (busybox's applets): */
#define MAFL_CMD_APPLET 2
/* Its options are options only as its sole argument, as coreutils' sleep has them; every
 * other word is an operand, one that starts with '-' included: */
#define MAFL_CMD_ALONE 4

/* One command; maf-launch itself is the one whose name is "". */
struct mafl_command {
	const char *name;
	int (*fn)(int argc, char **argv);  /* argv[0] is the command's name */
	const char *summary;    /* one line, for the list of commands */
	const char *synopsis;   /* the usage line, after "maf-launch NAME " */
	const char *about;      /* the help's text between the usage line and the options */
	const struct mafl_opt *opts;    /* --help is every command's, not in the table */
	const char *exit_codes; /* the help's last paragraph, after "Exit codes: " */
	unsigned char flags;    /* MAFL_CMD_* */
	unsigned char operands; /* enum mafl_complete, for the operands */
};

/* --help, which every command has: -h is its other name. */
extern const struct mafl_opt mafl_opt_help;

/* One command's argv, as the parser goes through it. */
struct mafl_args {
	const struct mafl_command *cmd;
	int argc;
	char **argv;
	int i;                  /* the next word; at MAFL_OPT_END, the first operand */
	int done;               /* MAFL_OPT_END was returned, and is from now on */
};

#define MAFL_OPT_END (-1)

/* Starts reading cmd's argv (argv[0] is the command's name, or maf-launch's). */
void mafl_opt_init(struct mafl_args *a, const struct mafl_command *cmd, int argc, char **argv);
/* The next option: its key, and its value in *value when it takes one (borrowed from argv:
 * "--name VALUE" or "--name=VALUE"); MAFL_OPT_END once the options end, at "--" (passed
 * over) or, for a command with operands, at the first word that is not an option, and at
 * every call after that. --help
 * and -h print the command's help on stdout and exit 0. An option not in the table, one
 * without its value, or an operand given to a command that takes none exits 2
 * (mafl_die), naming it. */
int mafl_opt_next(struct mafl_args *a, const char **value);
/* The option of cmd that word names, as "--name" or "--name=VALUE" (*value then points past
 * the '=', else NULL); --help and -h included. NULL when none does. Pure. */
const struct mafl_opt *mafl_opt_match(const struct mafl_command *cmd, const char *word,
				      const char **value);
/* Prints cmd's help on f: the usage line, about, the options and the exit codes. */
void mafl_opt_help_print(FILE *f, const struct mafl_command *cmd);

#endif
