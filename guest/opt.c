/* The one parser of the launcher's commands, and their help, both from a command's table
 * (opt.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "opt.h"
#include "protocol.h"
#include "util.h"

/* The help fits an 80-column terminal; an option's help starts in one column, the first
 * past its longest name and value, but never past HELP_COLUMN_MAX. */
#define HELP_WIDTH 79
#define HELP_COLUMN_MAX 26

void mafl_opt_init(struct mafl_args *a, const struct mafl_command *cmd, int argc, char **argv)
{
	a->cmd = cmd;
	a->argc = argc;
	a->argv = argv;
	a->i = 1;
	a->done = 0;
}

const struct mafl_opt *mafl_opt_match(const struct mafl_command *cmd, const char *word,
				      const char **value)
{
	const struct mafl_opt *o;

	*value = NULL;
	if (strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0)
		return &mafl_opt_help;
	for (o = cmd->opts; o->name; o++) {
		size_t n = strlen(o->name);

		if (strncmp(word, o->name, n) != 0)
			continue;
		if (word[n] == '\0')
			return o;
		if (word[n] == '=' && o->arg) {
			*value = word + n + 1;
			return o;
		}
	}
	return NULL;
}

/* "maf-launch NAME", or "maf-launch" for the launcher itself. */
static void put_name(FILE *f, const struct mafl_command *cmd)
{
	fputs(cmd->name[0] ? "maf-launch " : "maf-launch", f);
	fputs(cmd->name, f);
}

/* The options have ended, for good. */
static int options_end(struct mafl_args *a)
{
	a->done = 1;
	return MAFL_OPT_END;
}

int mafl_opt_next(struct mafl_args *a, const char **value)
{
	const struct mafl_command *c = a->cmd;
	const struct mafl_opt *o;
	const char *w, *sp = c->name[0] ? " " : "";

	*value = NULL;
	if (a->done || a->i >= a->argc)
		return options_end(a);
	w = a->argv[a->i];
	if (c->flags & MAFL_CMD_ALONE) {
		o = a->argc == 2 ? mafl_opt_match(c, w, value) : NULL;
		if (!o)
			return options_end(a);
	} else if (strcmp(w, "--") == 0) {
		a->i++;
		return options_end(a);
	} else if (w[0] != '-' || w[1] == '\0') {
		if (c->flags & MAFL_CMD_OPERANDS)
			return options_end(a);
		mafl_die(MAFP_EXIT_USAGE, "unexpected argument '%s' (try 'maf-launch%s%s --help')",
			 w, sp, c->name);
	} else if (!(o = mafl_opt_match(c, w, value))) {
		mafl_die(MAFP_EXIT_USAGE, "unknown option '%s' (try 'maf-launch%s%s --help')", w,
			 sp, c->name);
	}
	a->i++;
	if (o->key == MAFL_O_HELP) {
		mafl_opt_help_print(stdout, c);
		exit(0);
	}
	if (o->arg && !*value) {
		if (a->i >= a->argc)
			mafl_die(MAFP_EXIT_USAGE, "%s needs a value", o->name);
		*value = a->argv[a->i++];
	}
	return o->key;
}

/* Fills the prose words of p..end onto the line, at most HELP_WIDTH columns, each further
 * line starting at column indent. *col is the column the line is at. */
static void fill(FILE *f, const char *p, const char *end, int indent, int *col)
{
	int first = 1;

	while (p < end) {
		const char *space = memchr(p, ' ', (size_t)(end - p));
		int len = (int)((space ? space : end) - p);

		if (!first && *col + 1 + len > HELP_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			*col = indent;
			first = 1;
		}
		if (!first) {
			fputc(' ', f);
			(*col)++;
		}
		fwrite(p, 1, (size_t)len, f);
		*col += len;
		first = 0;
		for (p += len; p < end && *p == ' '; p++)
			;
	}
}

/* Prints text (opt.h's format) with its lines at column indent; the first continues a line
 * already at column col. Ends with a newline. */
static void put_text(FILE *f, const char *text, int indent, int col)
{
	const char *p = text;

	for (;;) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);

		if (end > p && col < 0) {
			fprintf(f, "%*s", indent, "");
			col = indent;
		}
		if (*p == ' ')
			fwrite(p, 1, (size_t)(end - p), f);
		else
			fill(f, p, end, indent, &col);
		fputc('\n', f);
		if (!nl)
			return;
		col = -1;
		p = nl + 1;
	}
}

/* The usage line: lead, the command's name and its synopsis, broken only between the
 * synopsis's bracketed parts, each further line aligned under the first part. */
static void put_usage(FILE *f, const char *lead, const struct mafl_command *cmd)
{
	const char *p = cmd->synopsis;
	int col = (int)strlen(lead) + 10 + (cmd->name[0] ? 1 + (int)strlen(cmd->name) : 0);
	int indent = col;

	fputs(lead, f);
	put_name(f, cmd);
	while (*p) {
		const char *q = p;
		int depth = 0, len;

		for (; *q && (depth > 0 || *q != ' '); q++)
			depth += (*q == '[') - (*q == ']');
		len = (int)(q - p);
		if (col > indent && col + 1 + len > HELP_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		}
		fprintf(f, " %.*s", len, p);
		col += 1 + len;
		for (p = q; *p == ' '; p++)
			;
	}
	fputc('\n', f);
}

static void put_option(FILE *f, const struct mafl_opt *o, int column)
{
	int col = fprintf(f, "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");

	if (col + 2 > column) {
		fputc('\n', f);
		col = -1;
	} else {
		fprintf(f, "%*s", column - col, "");
		col = column;
	}
	put_text(f, o->help, column, col);
}

void mafl_opt_help_print(FILE *f, const struct mafl_command *cmd)
{
	const struct mafl_opt *o;
	int column = (int)strlen(mafl_opt_help.name) + 4, col;

	if (cmd->flags & MAFL_CMD_APPLET) {
		fprintf(f, "usage: %s %s\n", cmd->name, cmd->synopsis);
		put_usage(f, "   or: ", cmd);
	} else {
		put_usage(f, "usage: ", cmd);
	}
	fputc('\n', f);
	put_text(f, cmd->about, 0, -1);
	if (!cmd->name[0]) {
		const struct mafl_command *c;

		fputs("\nCommands:\n", f);
		for (c = mafl_commands; c->name; c++)
			fprintf(f, "  %-8s %s\n", c->name, c->summary);
	}
	for (o = cmd->opts; o->name; o++) {
		col = (int)(strlen(o->name) + (o->arg ? strlen(o->arg) + 1 : 0)) + 4;
		if (col > column && col <= HELP_COLUMN_MAX)
			column = col;
	}
	fputs("\nOptions:\n", f);
	for (o = cmd->opts; o->name; o++)
		put_option(f, o, column);
	put_option(f, &mafl_opt_help, column);
	col = fprintf(f, "\nExit codes: ") - 1;
	put_text(f, cmd->exit_codes, 0, col);
}
