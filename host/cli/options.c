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

int cli_parse_options(int argc, char **argv, const struct cli_option *table, void *ctx,
		      void (*usage)(FILE *f))
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
		opt = find_option(table, a, n);
		if (!opt)
			cli_usage_error("unknown option '%s'", a);
		/* The one row without a setter is --help. */
		if (!opt->set) {
			usage(stdout);
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
 * (where the cursor is), the rest at HELP_INDENT. */
static void print_wrapped(FILE *f, const char *text, size_t col)
{
	while (*text) {
		size_t room = HELP_WIDTH - 1 - col, n = strlen(text), cut = n;

		if (n > room) {
			/* The last space that fits; a word longer than a line is left whole. */
			for (cut = room; cut > 0 && text[cut] != ' '; cut--)
				;
			if (cut == 0)
				cut = strcspn(text, " ");
		}
		fprintf(f, "%.*s\n", (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
		if (*text)
			fprintf(f, "%*s", HELP_INDENT, "");
		col = HELP_INDENT;
	}
}

void cli_print_options(FILE *f, const struct cli_option *o)
{
	for (; o->name || o->help; o++) {
		int n;

		if (!o->name) {
			fprintf(f, "\n%s\n", o->help);
			continue;
		}
		n = fprintf(f, "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		/* An option too wide for its column has its help on the next line. */
		if (n + 2 > HELP_INDENT) {
			fprintf(f, "\n%*s", HELP_INDENT, "");
		} else {
			fprintf(f, "%*s", HELP_INDENT - n, "");
		}
		print_wrapped(f, o->help, HELP_INDENT);
	}
}
