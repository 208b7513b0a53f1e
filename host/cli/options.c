/* maf-host's command line: its messages, and a command's options parsed and printed from
 * one table. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define HELP_INDENT 26          /* the column where an option's help starts */
#define HELP_WIDTH 80           /* help lines stay shorter than this */

const char *cli_prog = "maf-host";
const char *cli_argv0 = "maf-host";

/* "maf-host CMD: MESSAGE" on stderr, without the line's end. */
static void vsay(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", cli_prog);
	vfprintf(stderr, fmt, ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try '%s --help')\n", cli_prog);
	exit(CLI_EXIT_USAGE);
}

void cli_die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

const char *cli_sentence(const struct mafh_error *err, int code)
{
	return err->message[0] ? err->message : mafh_strerror(err->code ? err->code : code);
}

static const struct cli_option *find_option(const struct cli_option *table, const char *name,
					    size_t len)
{
	for (; table->name || table->help; table++)
		if (table->name && strlen(table->name) == len &&
		    strncmp(table->name, name, len) == 0)
			return table;
	return NULL;
}

int cli_parse_options(int argc, char **argv, const struct cli_command *cmd, void *ctx)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *value = NULL;
		const struct cli_option *opt;
		size_t n;

		if (strcmp(a, "--") == 0)
			return i + 1;
		if (a[0] != '-' || a[1] == '\0')
			return i;
		if (strcmp(a, "-h") == 0)
			a = "--help";
		n = strcspn(a, "=");
		opt = cmd->options ? find_option(cmd->options, a, n) : NULL;
		if (!opt)
			cli_usage_error("unknown option '%s'", a);
		/* The one row without a setter is --help. */
		if (!opt->set) {
			cli_print_help(stdout, cmd);
			exit(0);
		}
		if (!opt->arg) {
			if (a[n])
				cli_usage_error("%s takes no value", opt->name);
		} else if (a[n]) {
			value = a + n + 1;
		} else if (i + 1 < argc) {
			value = argv[++i];
		} else {
			cli_usage_error("%s needs a value", opt->name);
		}
		opt->set(ctx, opt, value);
	}
	return i;
}

/* Prints text wrapped into lines shorter than HELP_WIDTH, the first starting at column col
 * (where the cursor is), the rest at column indent. A '\n' in text starts a paragraph, after
 * an empty line. */
static void print_wrapped(FILE *f, const char *text, size_t col, size_t indent)
{
	while (*text) {
		size_t room = HELP_WIDTH - 1 - col, n = strcspn(text, "\n"), cut = n;

		if (n > room) {
			/* The last space that fits; a word longer than a line is left whole. */
			for (cut = room; cut > 0 && text[cut] != ' '; cut--)
				;
			if (cut == 0)
				cut = strcspn(text, " \n");
		}
		fprintf(f, "%.*s\n", (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
		if (*text == '\n') {
			text++;
			fputc('\n', f);
		}
		if (*text)
			fprintf(f, "%*s", (int)indent, "");
		col = indent;
	}
}

/* Each option with its value, its help wrapped beside it from column col; a heading after an
 * empty line. */
static void print_options(FILE *f, const struct cli_option *o, int col)
{
	for (; o->name || o->help; o++) {
		int n;

		if (!o->name) {
			fprintf(f, "\n%s\n", o->help);
			continue;
		}
		n = fprintf(f, "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		/* An option too wide for its column has its help on the next line. */
		if (n + 2 > col) {
			fprintf(f, "\n%*s", col, "");
		} else {
			fprintf(f, "%*s", col - n, "");
		}
		print_wrapped(f, o->help, (size_t)col, (size_t)col);
	}
}

/* The column of maf-host's own options' help: just past the widest. */
static int program_column(void)
{
	const struct cli_option *o;
	int col = 0;

	for (o = cli_program_options; o->name || o->help; o++)
		if (o->name && (int)strlen(o->name) + 4 > col)
			col = (int)strlen(o->name) + 4;
	return col < HELP_INDENT ? col : HELP_INDENT;
}

void cli_print_help(FILE *f, const struct cli_command *cmd)
{
	const struct cli_command *const *c;
	const struct cli_entry *e;
	size_t i;

	for (i = 0; cmd->synopsis[i]; i++)
		fprintf(f, "%s maf-host%s%s %s\n", i ? "      " : "usage:",
			cmd == &cli_program ? "" : " ", cmd == &cli_program ? "" : cmd->name,
			cmd->synopsis[i]);
	fputc('\n', f);
	print_wrapped(f, cmd->description, 0, 0);
	if (cmd == &cli_program) {
		fprintf(f, "\nCommands:\n");
		for (c = cli_commands; *c; c++)
			fprintf(f, "  %-6s %s\n", (*c)->name, (*c)->summary);
	}
	if (cmd->options)
		print_options(f, cmd->options, cmd == &cli_program ? program_column() : HELP_INDENT);
	if (cmd == &cli_program)
		fprintf(f, "\nEach command's options: maf-host COMMAND --help\n");
	if (cmd->exit_codes) {
		char text[1024];
		size_t n = 0;

		/* One sentence, the codes in the table's order. */
		for (e = cli_exit_codes; e->text && n < sizeof(text); e++)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s%s%s",
					      e == cli_exit_codes ? "Exit codes: " : "; ",
					      e->name ? e->name : "", e->name ? " " : "", e->text);
		if (n < sizeof(text))
			snprintf(text + n, sizeof(text) - n, ".");
		fputc('\n', f);
		print_wrapped(f, text, 0, 0);
	}
}
