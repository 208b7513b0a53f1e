/* docgen: maf-host's man page and bash completion, written by the build from the table maf-host
 * itself parses and prints its help from (host/cli/commands.c and the option rows beside their
 * setters). It is linked with maf-host's own objects, main.o excepted, so it reads the very
 * table the program carries: an option added there is in the help, the man page and the
 * completion at once, and can be in none of them without the others.
 *
 * A program of its own rather than a hidden mode of maf-host: the installed program has no
 * command a user does not see in its help, and the build needs nothing of it but its objects.
 *
 *   docgen man        maf-host(1), roff, on stdout
 *   docgen bash       the bash completion of maf-host, on stdout
 *   docgen options    every option of the table, a line each: COMMAND, NAME, ARG (empty for a
 *                     flag), tab-separated; COMMAND is "maf-host" for maf-host's own (tests)
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mafhost.h"

/* ---- roff ------------------------------------------------------------------------------- */

/* Text for roff, on a line of its own from its start when line_start: backslashes and
 * hyphens escaped, and a control character at the line's start made text. */
static void roff_text(FILE *f, const char *s, int line_start)
{
	for (; *s; s++) {
		if (line_start && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		line_start = 0;
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

/* A paragraph of the table (a '\n' starts the next one), filled by roff. */
static void roff_paragraphs(FILE *f, const char *s)
{
	while (*s) {
		size_t n = strcspn(s, "\n");
		char *p = strndup(s, n);

		if (!p) {
			perror("docgen");
			exit(1);
		}
		roff_text(f, p, 1);
		fputc('\n', f);
		free(p);
		s += n;
		if (*s == '\n') {
			s++;
			fputs(".PP\n", f);
		}
	}
}

/* Words of a usage line or an option's value in their fonts: an option bold, a placeholder
 * (a word that begins with a capital: PATH, PROGRAM.py) italic, a literal word (auto, local)
 * bold, the rest (brackets, '|', '...') roman. */
static void roff_words(FILE *f, const char *s)
{
	while (*s) {
		size_t n;

		if (s[0] == '-' && s[1] == '-') {
			n = 2 + strspn(s + 2, "abcdefghijklmnopqrstuvwxyz0123456789-");
			fputs("\\fB", f);
		} else if (isupper((unsigned char)*s)) {
			n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
			/* PROGRAM.py: the extension is part of the placeholder. */
			if (s[n] == '.' && islower((unsigned char)s[n + 1]))
				n += 1 + strspn(s + n + 1, "abcdefghijklmnopqrstuvwxyz");
			fputs("\\fI", f);
		} else if (islower((unsigned char)*s)) {
			n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-");
			fputs("\\fB", f);
		} else {
			fputc(*s == '\\' ? 'e' : *s, f);
			s++;
			continue;
		}
		{
			char *w = strndup(s, n);

			if (!w) {
				perror("docgen");
				exit(1);
			}
			roff_text(f, w, 0);
			free(w);
		}
		fputs("\\fR", f);
		s += n;
	}
}

static void roff_synopsis(FILE *f, const struct cli_command *cmd)
{
	size_t i;

	for (i = 0; cmd->synopsis[i]; i++) {
		fputs("\\fBmaf\\-host", f);
		if (cmd != &cli_program)
			fprintf(f, " %s", cmd->name);
		fputs("\\fR ", f);
		roff_words(f, cmd->synopsis[i]);
		fputc('\n', f);
	}
}

/* A table of options, each a tagged paragraph; a heading a paragraph in bold (skipped when
 * the section's title says it). */
static void roff_options(FILE *f, const struct cli_option *o, int headings)
{
	for (; o->name || o->help; o++) {
		if (!o->name) {
			if (headings) {
				fputs(".PP\n\\fB", f);
				roff_text(f, o->help, 0);
				fputs("\\fR\n", f);
			}
			continue;
		}
		fputs(".TP\n", f);
		roff_words(f, o->name);
		if (o->arg) {
			fputc(' ', f);
			roff_words(f, o->arg);
		}
		fputc('\n', f);
		roff_text(f, o->help, 1);
		fputc('\n', f);
	}
}

static void man(FILE *f)
{
	const struct cli_command *const *c;
	const struct cli_entry *e;

	fputs(".\\\" maf-host(1), made by the build (host/cli/gen/docgen.c) from maf-host's own\n"
	      ".\\\" table, host/cli/commands.c and the option rows beside their setters: edit\n"
	      ".\\\" those, not this file.\n", f);
	fprintf(f, ".TH MAF\\-HOST 1 \"\" \"maf-launch %s\" \"maf-launch\"\n", MAFH_VERSION);
	/* Neither hyphenated nor justified: option names stay whole, and unstretched. */
	fputs(".nh\n.ad l\n", f);
	fputs(".SH NAME\nmaf\\-host \\- ", f);
	roff_text(f, cli_program.summary, 0);
	fputs("\n.SH SYNOPSIS\n.nf\n", f);
	roff_synopsis(f, &cli_program);
	for (c = cli_commands; *c; c++)
		roff_synopsis(f, *c);
	fputs(".fi\n.SH DESCRIPTION\n", f);
	roff_paragraphs(f, cli_program.description);
	fputs(".PP\nEach command has its own options, printed by \\fBmaf\\-host\\fR "
	      "\\fICOMMAND\\fR \\fB\\-\\-help\\fR; an option's value follows it as the next "
	      "argument or after '=' (\\fB\\-\\-timeout\\fR \\fI30\\fR or "
	      "\\fB\\-\\-timeout=\\fR\\fI30\\fR). An unknown option is a usage error (exit "
	      "status 2).\n", f);
	fputs(".SH OPTIONS\n", f);
	roff_options(f, cli_program.options, 0);
	fputs(".SH COMMANDS\n", f);
	for (c = cli_commands; *c; c++) {
		fprintf(f, ".SS \"maf-host %s\"\n.nf\n", (*c)->name);
		roff_synopsis(f, *c);
		fputs(".fi\n.PP\n", f);
		roff_paragraphs(f, (*c)->description);
		if ((*c)->options)
			roff_options(f, (*c)->options, 1);
	}
	fputs(".SH \"EXIT STATUS\"\n", f);
	for (e = cli_exit_codes; e->text; e++) {
		if (e->name) {
			fputs(".TP\n.B ", f);
			roff_text(f, e->name, 0);
			fputc('\n', f);
			roff_text(f, e->text, 1);
			fputc('\n', f);
		} else {
			/* The program's own code, before maf-host's. */
			fputs(".PP\n", f);
			fputc(toupper((unsigned char)e->text[0]), f);
			roff_text(f, e->text + 1, 0);
			fputs(", or:\n", f);
		}
	}
	fputs(".SH ENVIRONMENT\n", f);
	for (e = cli_environment; e->text; e++) {
		fputs(".TP\n.B ", f);
		roff_text(f, e->name, 0);
		fputc('\n', f);
		roff_text(f, e->text, 1);
		fputc('\n', f);
	}
	fputs(".SH \"SEE ALSO\"\n.BR maf\\-launch (1),\n.BR libmafhost (3)\n", f);
}

/* ---- bash completion --------------------------------------------------------------------- */

/* Prints the names of table's options, each once, separated by spaces. */
static void option_words(FILE *f, const struct cli_option *table)
{
	const struct cli_option *o, *p;
	int first = 1;

	for (o = table; o && (o->name || o->help); o++) {
		if (!o->name)
			continue;
		for (p = table; p != o && !(p->name && strcmp(p->name, o->name) == 0); p++)
			;
		if (p != o)
			continue;
		fprintf(f, "%s%s", first ? "" : " ", o->name);
		first = 0;
	}
}

/* The literal words of a choice such as auto|files|wait, separated by spaces: a literal
 * alternative whole, one such as docker:CONTAINER as its prefix (docker:), a placeholder (N)
 * not at all. Returns how many, and sets *prefix when one is a prefix. */
static int literal_words(FILE *f, const char *arg, int *prefix)
{
	const char *s = arg;
	int n = 0;

	if (!strchr(arg, '|'))
		return 0;
	while (*s) {
		size_t len = strcspn(s, "|");
		size_t lit = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-");

		if (lit < len && s[lit] == ':' && isupper((unsigned char)s[lit + 1])) {
			lit++;
			if (prefix)
				*prefix = 1;
		}
		if (lit == len || (lit > 0 && s[lit - 1] == ':')) {
			if (f)
				fprintf(f, "%s%.*s", n ? " " : "", (int)lit, s);
			n++;
		}
		s += len + (s[len] == '|');
	}
	return n;
}

/* What an operand of cmd completes to, from its usage lines: "commands" (COMMAND), "files"
 * (any other placeholder that is not an option's value: PROGRAM.py, ARG), or NULL. */
static const char *operand_kind(const struct cli_command *cmd)
{
	const char *kind = NULL;
	size_t i;

	for (i = 0; cmd->synopsis[i]; i++) {
		const char *s = cmd->synopsis[i];
		int after_option = 0;

		while (*s) {
			size_t n;

			s += strspn(s, " [].");
			n = strcspn(s, " []");
			if (n == 0)
				break;
			if (s[0] == '-' && s[1] == '-') {
				after_option = n > 2;
			} else if (isupper((unsigned char)s[0])) {
				if (!after_option && strncmp(s, "OPTION", n) != 0)
					kind = strncmp(s, "COMMAND", n) == 0 ? "commands" : "files";
				after_option = 0;
			}
			s += n;
		}
	}
	return kind;
}

/* The case of the word before the cursor: an option whose value is to be completed. */
static void bash_values(FILE *f, const struct cli_option *table)
{
	const struct cli_option *o;
	int none = 0, any = 0;

	for (o = table; o->name || o->help; o++)
		any |= o->name && o->arg;
	if (!any)
		return;
	fputs("\t\tcase $prev in\n", f);
	for (o = table; o->name || o->help; o++) {
		int prefix = 0;

		if (!o->name || !o->arg)
			continue;
		if (literal_words(NULL, o->arg, &prefix)) {
			fprintf(f, "\t\t%s)\n", o->name);
			/* docker: is the start of a word, not a word. */
			if (prefix)
				fputs("\t\t\tcompopt -o nospace 2>/dev/null\n", f);
			fputs("\t\t\t_maf_host_words '", f);
			literal_words(f, o->arg, NULL);
			fputs("'\n\t\t\treturn ;;\n", f);
		} else if (strcmp(o->arg, "PATH") == 0) {
			fprintf(f, "\t\t%s)\n\t\t\t_maf_host_files\n\t\t\treturn ;;\n", o->name);
		} else if (strcmp(o->arg, "COMMAND") == 0) {
			fprintf(f, "\t\t%s)\n\t\t\tmapfile -t COMPREPLY < <(compgen -c -- \"$cur\")\n"
				   "\t\t\treturn ;;\n", o->name);
		} else {
			none = 1;
		}
	}
	if (none) {
		/* A value with nothing to offer: a number, a name, a spec. */
		const char *sep = "\t\t";

		for (o = table; o->name || o->help; o++) {
			const struct cli_option *p;

			if (!o->name || !o->arg || literal_words(NULL, o->arg, NULL) ||
			    strcmp(o->arg, "PATH") == 0 || strcmp(o->arg, "COMMAND") == 0)
				continue;
			for (p = table; p != o && !(p->name && strcmp(p->name, o->name) == 0); p++)
				;
			if (p != o)
				continue;
			fprintf(f, "%s%s", sep, o->name);
			sep = "|";
		}
		fputs(")\n\t\t\treturn ;;\n", f);
	}
	fputs("\t\tesac\n", f);
}

/* One arm of the completion's case: cmd's option values, its options, its operands. */
static void bash_command(FILE *f, const struct cli_command *cmd)
{
	const struct cli_command *const *c;
	const char *kind = operand_kind(cmd);

	if (cmd->options)
		bash_values(f, cmd->options);
	fputs("\t\tif [[ $cur == -* ]]; then\n\t\t\t_maf_host_words '", f);
	option_words(f, cmd->options);
	fputs("'\n", f);
	if (kind && strcmp(kind, "commands") == 0) {
		fputs("\t\telse\n\t\t\t_maf_host_words '", f);
		for (c = cli_commands; *c; c++)
			fprintf(f, "%s%s", c == cli_commands ? "" : " ", (*c)->name);
		fputs("'\n", f);
	} else if (kind) {
		fputs("\t\telse\n\t\t\t_maf_host_files\n", f);
	}
	fputs("\t\tfi ;;\n", f);
}

static void bash(FILE *f)
{
	const struct cli_command *const *c;

	fputs("# bash completion for maf-host(1), made by the build (host/cli/gen/docgen.c) from\n"
	      "# maf-host's own table: edit host/cli/commands.c and the option rows, not this "
	      "file.\n"
	      "\n"
	      "_maf_host_words()\n"
	      "{\n"
	      "\tmapfile -t COMPREPLY < <(compgen -W \"$1\" -- \"$cur\")\n"
	      "}\n"
	      "\n"
	      "_maf_host_files()\n"
	      "{\n"
	      "\tcompopt -o filenames 2>/dev/null\n"
	      "\tmapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n"
	      "}\n"
	      "\n"
	      "_maf_host()\n"
	      "{\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev= cmd= i\n"
	      "\n"
	      "\tCOMPREPLY=()\n"
	      "\t((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
	      "\t# --name=VALUE: bash splits the word at '=' (COMP_WORDBREAKS).\n"
	      "\tif [[ $cur == = ]]; then\n"
	      "\t\tcur=\n"
	      "\telif [[ $prev == = ]] && ((COMP_CWORD > 1)); then\n"
	      "\t\tprev=${COMP_WORDS[COMP_CWORD - 2]}\n"
	      "\tfi\n"
	      "\t# The command: the first word that is not one of maf-host's own options.\n"
	      "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	      "\t\tif [[ ${COMP_WORDS[i]} != -* ]]; then\n"
	      "\t\t\tcmd=${COMP_WORDS[i]}\n"
	      "\t\t\tbreak\n"
	      "\t\tfi\n"
	      "\tdone\n"
	      "\tcase $cmd in\n"
	      "\t'')\n", f);
	bash_command(f, &cli_program);
	for (c = cli_commands; *c; c++) {
		fprintf(f, "\t%s)\n", (*c)->name);
		bash_command(f, *c);
	}
	fputs("\tesac\n"
	      "}\n"
	      "complete -F _maf_host maf-host\n", f);
}

/* ---- the options, for the tests ---------------------------------------------------------- */

static void list_options(FILE *f, const char *command, const struct cli_option *o)
{
	for (; o && (o->name || o->help); o++)
		if (o->name)
			fprintf(f, "%s\t%s\t%s\n", command, o->name, o->arg ? o->arg : "");
}

int main(int argc, char **argv)
{
	const struct cli_command *const *c;

	if (argc != 2) {
		fprintf(stderr, "usage: docgen man|bash|options\n");
		return 2;
	}
	if (strcmp(argv[1], "man") == 0) {
		man(stdout);
	} else if (strcmp(argv[1], "bash") == 0) {
		bash(stdout);
	} else if (strcmp(argv[1], "options") == 0) {
		list_options(stdout, cli_program.name, cli_program.options);
		for (c = cli_commands; *c; c++)
			list_options(stdout, (*c)->name, (*c)->options);
	} else {
		fprintf(stderr, "docgen: unknown output '%s' (man, bash, options)\n", argv[1]);
		return 2;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("docgen: stdout");
		return 1;
	}
	return 0;
}
