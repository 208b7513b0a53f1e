/* docgen: the man page and the bash completion of maf-launch, made when it is built from the
 * same tables the launcher parses its options with and prints its help from
 * (guest/commands.c, opt.h), so none of the three can say what the others do not. Built with
 * the host's compiler, with guest/commands.c compiled without the commands' code
 * (MAFL_DOCGEN). The prose only the man page has (the sections around the commands) is here,
 * not in the launcher, which is baked into every image.
 *
 *   docgen man     the man page, maf-launch(1), in roff (man macros) on stdout
 *   docgen bash    the bash completion on stdout
 *   docgen table   every command's options, one a line: COMMAND<TAB>OPTION<TAB>VALUE
 *                  (VALUE "-" for none), the launcher's own as COMMAND "-"; for the tests
 *
 * Exits 1 with a sentence on stderr if a text holds what roff cannot take as it is (a byte
 * that is not ASCII), 2 on usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "commands.h"
#include "protocol.h"
#include "version.h"

#define ALL_COMMANDS(c) for (c = mafl_commands; c->name; c++)

static void fail(const char *what, const char *text)
{
	fprintf(stderr, "docgen: %s: %.60s\n", what, text);
	exit(1);
}

/* ---- roff ---------------------------------------------------------------------------- */

/* Writes len bytes of p as roff text: a backslash, a hyphen (a minus in an option or a
 * command name, which must survive a copy from the page) and a leading dot or quote are
 * escaped, and a word that holds a hyphen, a slash, an underscore or a dot (an option, a
 * path, a file name) is not hyphenated. */
static void roff_chars_nbsp(const char *p, size_t len, int nbsp);

static void roff_chars(const char *p, size_t len)
{
	roff_chars_nbsp(p, len, 0);
}

/* roff_chars, with every space unbreakable when nbsp is set. */
static void roff_chars_nbsp(const char *p, size_t len, int nbsp)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (ch >= 0x80 || (ch < 0x20 && ch != '\t'))
			fail("not ASCII", p);
		if (i == 0 && (ch == '.' || ch == '\''))
			fputs("\\&", stdout);
		if ((i == 0 || p[i - 1] == ' ') && ch != ' ') {
			size_t end = i;

			while (end < len && (nbsp || p[end] != ' '))
				end++;
			if (memchr(p + i, '-', end - i) || memchr(p + i, '/', end - i) ||
			    memchr(p + i, '_', end - i) || memchr(p + i, '.', end - i - 1))
				fputs("\\%", stdout);
		}
		if (ch == ' ' && nbsp)
			fputs("\\ ", stdout);
		else if (ch == '\\')
			fputs("\\e", stdout);
		else if (ch == '-')
			fputs("\\-", stdout);
		else
			putchar(ch);
	}
}

static void roff_str(const char *s)
{
	roff_chars(s, strlen(s));
}

/* Writes text (opt.h's format) as roff: paragraphs apart (par: the request that starts one,
 * ".PP", or ".IP" inside an option's entry), a break between prose lines, a listing in
 * no-fill mode. */
static void roff_text(const char *text, const char *par)
{
	const char *p = text;
	int listing = 0, prose = 0;

	for (;;) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);

		if (end == p) {
			if (listing)
				puts(".fi");
			puts(par);
			listing = prose = 0;
		} else if (*p == ' ') {
			if (!listing)
				puts(".nf");
			listing = 1;
			roff_chars(p, (size_t)(end - p));
			putchar('\n');
		} else {
			if (listing)
				puts(".fi");
			else if (prose)
				puts(".br");
			listing = 0;
			prose = 1;
			roff_chars(p, (size_t)(end - p));
			putchar('\n');
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (listing)
		puts(".fi");
}

/* A synopsis, broken only between its bracketed parts. */
static void roff_synopsis_text(const char *p)
{
	while (*p) {
		const char *q = p;
		int depth = 0;

		for (; *q && (depth > 0 || *q != ' '); q++)
			depth += (*q == '[') - (*q == ']');
		roff_chars_nbsp(p, (size_t)(q - p), 1);
		for (p = q; *p == ' '; p++)
			;
		putchar(*p ? ' ' : '\n');
	}
}

/* "maf-launch NAME", bold, then the synopsis. */
static void roff_synopsis(const struct mafl_command *c)
{
	fputs(".B maf\\-launch", stdout);
	if (c->name[0]) {
		putchar(' ');
		roff_str(c->name);
	}
	putchar('\n');
	roff_synopsis_text(c->synopsis);
	puts(".br");
}

static void roff_option(const struct mafl_opt *o, const char *other_name)
{
	puts(".TP");
	fputs(".B ", stdout);
	if (other_name) {
		roff_str(other_name);
		fputs(", ", stdout);
	}
	roff_str(o->name);
	if (o->arg) {
		fputs(" \\fI", stdout);
		roff_str(o->arg);
		fputs("\\fP", stdout);
	}
	putchar('\n');
	roff_text(o->help, ".IP");
}

static void roff_options(const struct mafl_command *c)
{
	const struct mafl_opt *o;

	for (o = c->opts; o->name; o++)
		roff_option(o, NULL);
	roff_option(&mafl_opt_help, "-h");
}

static void roff_command(const struct mafl_command *c)
{
	fputs(".SS \"maf\\-launch ", stdout);
	roff_str(c->name);
	puts("\"");
	roff_synopsis(c);
	if (c->flags & MAFL_CMD_APPLET) {
		fputs(".B ", stdout);
		roff_str(c->name);
		putchar('\n');
		roff_synopsis_text(c->synopsis);
	}
	puts(".PP");
	roff_text(c->about, ".PP");
	roff_options(c);
	puts(".PP");
	fputs("Exit codes: ", stdout);
	roff_text(c->exit_codes, ".PP");
}

/* A tagged paragraph of the man page's own: tag in bold, then text (opt.h's format). */
static void roff_item(const char *tag, const char *text)
{
	puts(".TP");
	fputs(".B ", stdout);
	roff_str(tag);
	putchar('\n');
	roff_text(text, ".IP");
}

static void man_head(void)
{
	const struct mafl_command *c;

	puts(".\\\" maf-launch(1). Made by the build (guest/gen/docgen.c) from the launcher's");
	puts(".\\\" option tables (guest/commands.c): edit those, not this page.");
	printf(".TH MAF\\-LAUNCH 1 \"\" \"maf\\-launch %s\" \"User Commands\"\n", MAF_VERSION);
	/* Left-adjusted: options and paths are long words, which a justified line spreads
	 * the others around. */
	puts(".ad l");
	puts(".SH NAME");
	fputs("maf\\-launch \\- ", stdout);
	roff_str(mafl_launcher.summary);
	puts("\n.SH SYNOPSIS");
	roff_synopsis(&mafl_launcher);
	puts(".B maf\\-launch \\-\\-help\n.br\n.B maf\\-launch \\-\\-version\n.br");
	ALL_COMMANDS(c)
		roff_synopsis(c);
	ALL_COMMANDS(c) {
		if (!(c->flags & MAFL_CMD_APPLET))
			continue;
		fputs(".B ", stdout);
		roff_str(c->name);
		putchar('\n');
		roff_synopsis_text(c->synopsis);
		puts(".br");
	}
}

static void man_description(void)
{
	const struct mafl_command *c;

	puts(".SH DESCRIPTION");
	roff_text(mafl_launcher.about, ".PP");
	puts(".PP");
	roff_text("maf-launch is the one static program a sandbox image needs for maf's "
		  "host-tool calls: 'maf-launch run' is the drop-in for maf-sandbox's shell "
		  "launcher (sh run_program.sh), and the other commands are what a host runs "
		  "in the sandbox around it: maf-host(1) and libmafhost(3) drive them through "
		  "their backends. Its seccomp filters are built when it is built; it links no "
		  "libseccomp.\n\n"
		  "Every command reads its options the same way: --NAME VALUE or --NAME=VALUE, "
		  "in any order, the last of a repeated option winning unless it says it "
		  "adds up; '--' ends the options. A command that takes operands (run, call, "
		  "init) ends its options at the first word that is not one. A name the "
		  "command does not know is a usage error (exit 2) that names it, on one line "
		  "of stderr, as every error of maf-launch is.", ".PP");
	ALL_COMMANDS(c) {
		if (!(c->flags & MAFL_CMD_APPLET))
			continue;
		puts(".PP");
		printf("Run by the name \\fB");
		roff_str(c->name);
		printf("\\fP (a link to maf\\-launch so named), it is \\fBmaf\\-launch ");
		roff_str(c->name);
		puts("\\fP.");
	}
}

static void man_exit_status(void)
{
	puts(".SH EXIT STATUS");
	roff_text("As env(1) and tini have them, and as each command above details:", ".PP");
	roff_item("0", "success");
	roff_item("2", "usage: an option or a value the command does not take (one line on "
		  "stderr names it)");
	roff_item("125", "the launcher's own failure");
	roff_item("126", "a program that cannot be executed");
	roff_item("127", "a program that is not found");
	roff_item("128+N", "a program ended by signal N, in program_exit_code and as init's "
		  "own status");
	puts(".PP");
	roff_text("call, stop and reclaim also exit 1 (refused, not the supervisor, "
		  "something left), stop 3 (the run is lost).", ".PP");
}

static void man_environment(void)
{
	puts(".SH ENVIRONMENT");
	roff_item(MAFL_CHANNEL_FD_ENV, "set by run for the program: the descriptor of the "
		  "call channel it inherits; read by call");
	roff_item(MAFL_CHANNEL_SOCKET_ENV, "set by run for the program: the channel's "
		  "socket, R/" MAFP_DIR_HOST_TOOLS "/" MAFP_FILE_CHANNEL_SOCKET ", for a "
		  "process of the run that no longer holds the descriptor; read by call");
	roff_item(MAFL_CHANNEL_TOOLS_ENV, "set by run for the program: the --tool names, "
		  "separated by spaces");
	roff_item("PYTHONPATH", "rebuilt by run for the program: R/" MAFP_DIR_HOST_TOOLS
		  " first, then the inherited entries that are absolute, canonical and "
		  "outside R");
	roff_item("PYTHONUNBUFFERED, PYTHONNOUSERSITE", "set to 1 by run for the program");
	roff_item("TMPDIR, TMP, TEMP", "set by run for the program: R/tmp, its private "
		  "temporary directory");
	roff_item("PATH", "where run looks for PROGRAM (the program's own PATH) and init "
		  "for CMD");
}

static void man_files(void)
{
	puts(".SH FILES");
	roff_text("In the run directory R of 'maf-launch run' (the maf-sandbox file "
		  "protocol, shared/PROTOCOL.md in the source):", ".PP");
	roff_item("R/" MAFP_DIR_WORK, "the program's working directory");
	roff_item("R/tmp", "the program's private temporary directory");
	roff_item("R/" MAFP_DIR_HOST_TOOLS "/" MAFP_FILE_OUTPUT, "the program's stdout and "
		  "stderr, capped by --max-output-bytes");
	roff_item("R/" MAFP_DIR_HOST_TOOLS "/" MAFP_MARKER_SESSION ", "
		  "R/" MAFP_DIR_HOST_TOOLS "/" MAFP_MARKER_PID, "the program's session and pid, "
		  "once it runs");
	roff_item("R/" MAFP_DIR_HOST_TOOLS "/" MAFP_FILE_EXIT_RECORD, "the exit record: "
		  "status, exit code, signal, times, output, containment");
	roff_item("R/" MAFP_DIR_HOST_TOOLS "/" MAFP_MARKER_EXIT_CODE, "the exit code (128+N "
		  "for signal N), written last");
	roff_item("R/" MAFP_DIR_HOST_TOOLS "/" MAFP_DIR_CALLS "/NNNN" MAFP_SUFFIX_REQUEST ", "
		  "NNNN" MAFP_SUFFIX_RESPONSE, "a host-tool call's request and its response");
	roff_item("R/" MAFP_DIR_HOST_TOOLS "/" MAFP_FILE_CHANNEL_SOCKET, "the call channel's "
		  "socket, for the run's own processes alone");
}

static void man(void)
{
	const struct mafl_command *c;

	man_head();
	man_description();
	puts(".SH OPTIONS");
	roff_options(&mafl_launcher);
	puts(".SH COMMANDS");
	ALL_COMMANDS(c)
		roff_command(c);
	man_exit_status();
	man_environment();
	man_files();
	puts(".SH SEE ALSO");
	puts(".BR maf\\-host (1),\n.BR libmafhost (3)");
}

/* ---- bash ---------------------------------------------------------------------------- */

/* The options of c, --help included, separated by spaces; valued: only those that take a
 * value. */
static void bash_names(const struct mafl_command *c, int valued)
{
	const struct mafl_opt *o;
	const char *sep = "";

	for (o = c->opts; o->name; o++) {
		if (valued && !o->arg)
			continue;
		printf("%s%s", sep, o->name);
		sep = " ";
	}
	if (!valued)
		printf("%s%s", sep, mafl_opt_help.name);
}

/* The completion of c's options' values, one case a kind. */
static void bash_values(const struct mafl_command *c)
{
	static const char *const how[] = {
		[MAFL_COMPLETE_NONE] = ";;",
		[MAFL_COMPLETE_DIR] = "_maf_launch_paths -d ;;",
		[MAFL_COMPLETE_FILE] = "_maf_launch_paths -f ;;",
	};
	const struct mafl_opt *o;

	for (o = c->opts; o->name; o++) {
		const char *p;

		if (!o->arg)
			continue;
		printf("\t\t\t%s) ", o->name);
		if (o->complete != MAFL_COMPLETE_WORDS) {
			puts(how[o->complete]);
			continue;
		}
		fputs("COMPREPLY=($(compgen -W '", stdout);
		for (p = o->arg; *p; p++)
			putchar(*p == '|' ? ' ' : *p);
		puts("' -- \"$cur\")) ;;");
	}
}

static void bash(void)
{
	const struct mafl_command *c;

	puts("# bash completion for maf-launch(1): its commands, and each command's options and");
	puts("# their values. Made by the build (guest/gen/docgen.c) from the launcher's option");
	puts("# tables (guest/commands.c): edit those, not this file.\n");
	puts("_maf_launch_paths()\n{");
	puts("\tcompopt -o filenames 2>/dev/null");
	puts("\tCOMPREPLY=($(compgen \"$1\" -- \"$cur\"))\n}\n");
	puts("_maf_launch()\n{");
	puts("\tlocal cur prev cmd w i first=0 opts valued operands alone");
	puts("\tCOMPREPLY=()");
	puts("\tcur=${COMP_WORDS[COMP_CWORD]}");
	puts("\tprev=${COMP_WORDS[COMP_CWORD-1]}");
	puts("\t# --NAME=VALUE: bash has split the word at the '='");
	puts("\tif [[ $cur == = ]]; then\n\t\tcur=\n\telif [[ $prev == = ]]; then");
	puts("\t\tprev=${COMP_WORDS[COMP_CWORD-2]}\n\tfi");
	puts("\tif ((COMP_CWORD == 1)); then");
	fputs("\t\tCOMPREPLY=($(compgen -W '", stdout);
	ALL_COMMANDS(c)
		printf("%s ", c->name);
	bash_names(&mafl_launcher, 0);
	puts("' -- \"$cur\"))\n\t\treturn\n\tfi");
	puts("\tcmd=${COMP_WORDS[1]}");
	puts("\tcase $cmd in");
	ALL_COMMANDS(c) {
		printf("\t%s)\n\t\topts='", c->name);
		bash_names(c, 0);
		fputs("'\n\t\tvalued='", stdout);
		bash_names(c, 1);
		printf("'\n\t\toperands=%s\n\t\talone=%s\n\t\t;;\n",
		       !(c->flags & MAFL_CMD_OPERANDS) ? "" :
		       c->operands == MAFL_COMPLETE_COMMAND ? "command" : "other",
		       c->flags & MAFL_CMD_ALONE ? "1" : "");
	}
	puts("\t*)\n\t\treturn\n\t\t;;\n\tesac");
	puts("\t# Where the options end: at '--', at the first operand, or (alone) at once.");
	puts("\tfor ((i = 2; i < COMP_CWORD; i++)); do");
	puts("\t\tw=${COMP_WORDS[i]}");
	puts("\t\tif [[ -n $alone || $w == -- ]]; then\n\t\t\tfirst=$((i + 1))\n\t\t\tbreak");
	puts("\t\telif [[ $w != -* || $w == - ]]; then\n\t\t\tfirst=$i\n\t\t\tbreak");
	puts("\t\telif [[ \" $valued \" == *\" $w \"* ]]; then");
	puts("\t\t\t[[ ${COMP_WORDS[i+1]} == = ]] && ((i++))\n\t\t\t((i++))\n\t\tfi\n\tdone");
	puts("\tif ((first == 0)) && [[ \" $valued \" == *\" $prev \"* ]]; then");
	puts("\t\tcase $cmd in");
	ALL_COMMANDS(c) {
		const struct mafl_opt *o;

		for (o = c->opts; o->name && !o->arg; o++)
			;
		if (!o->name)
			continue;
		printf("\t\t%s)\n\t\t\tcase $prev in\n", c->name);
		bash_values(c);
		puts("\t\t\tesac\n\t\t\t;;");
	}
	puts("\t\tesac\n\t\treturn\n\tfi");
	puts("\tif ((first == 0)) && [[ $cur == -* || -z $operands ]]; then");
	puts("\t\t[[ -n $alone ]] && ((COMP_CWORD > 2)) && return");
	puts("\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n\t\treturn\n\tfi");
	puts("\tif [[ $operands == command ]] && ((first == 0 || first == COMP_CWORD)); then");
	puts("\t\tCOMPREPLY=($(compgen -c -- \"$cur\"))");
	puts("\telif [[ $operands == command ]]; then\n\t\t_maf_launch_paths -f\n\tfi\n}");
	puts("complete -F _maf_launch maf-launch");
}

/* ---- table --------------------------------------------------------------------------- */

static void table_of(const char *name, const struct mafl_command *c)
{
	const struct mafl_opt *o;

	for (o = c->opts; o->name; o++)
		printf("%s\t%s\t%s\n", name, o->name, o->arg ? o->arg : "-");
	printf("%s\t%s\t-\n", name, mafl_opt_help.name);
}

static void table(void)
{
	const struct mafl_command *c;

	table_of("-", &mafl_launcher);
	ALL_COMMANDS(c)
		table_of(c->name, c);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "man") == 0)
		man();
	else if (argc == 2 && strcmp(argv[1], "bash") == 0)
		bash();
	else if (argc == 2 && strcmp(argv[1], "table") == 0)
		table();
	else {
		fputs("usage: docgen man|bash|table\n", stderr);
		return 2;
	}
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
