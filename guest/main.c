/* maf-launch: parse the subcommand and dispatch; nothing else lives here. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "commands.h"
#include "profile.h"
#include "protocol.h"
#include "version.h"
#include "util.h"

/* applet: maf-launch also answers to the command by the name it was run as (a link named
 * so in an image with no coreutils), as busybox does. */
static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	int applet;
} commands[] = {
	{"run", mafl_cmd_run, "start a program detached, supervised and contained", 0},
	{"call", mafl_cmd_call,
	 "call a host tool through the run's channel, from inside the run", 0},
	{"policy", mafl_cmd_policy, "print the seccomp filter a run would load", 0},
	{"wait", mafl_cmd_wait,
	 "block until request N or the run's exit marker exists; print it", 0},
	{"relay", mafl_cmd_relay,
	 "write an answer, then wait as 'wait' does: one exec a call", 0},
	{"serve", mafl_cmd_serve,
	 "the relay over a stream: frames on stdin, events on stdout", 0},
	{"stop", mafl_cmd_stop,
	 "end a run's whole process tree through its verified supervisor", 0},
	{"reclaim", mafl_cmd_reclaim,
	 "delete a run directory without following symlinks or mounts", 0},
	{"init", mafl_cmd_init,
	 "a container's PID 1: reap orphans, forward signals, stop cleanly", 0},
	{"sleep", mafl_cmd_sleep,
	 "pause as coreutils' sleep does (also run by the name sleep)", 1},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: maf-launch COMMAND [OPTION]... [-- PROGRAM [ARG]...]\n"
		   "\n"
		   "The in-sandbox side of maf host-tool calls: starts a program detached from\n"
		   "the caller, supervises and contains it, and writes the run's markers in the\n"
		   "maf-sandbox file protocol.\n"
		   "\n"
		   "Commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n"
		   "Run 'maf-launch COMMAND --help' for a command's options.\n"
		   "  --help     print this help\n"
		   "  --version  print the version\n"
		   "\n"
		   "Exit codes: 0 success, 2 usage, 125 launcher failure, 126 cannot execute,\n"
		   "127 not found.\n");
}

/* A caller may start us with stdin, stdout or stderr closed; the next open() would then
 * land on 0, 1 or 2 and be clobbered by a later dup2 onto stdio. Fill them with /dev/null
 * first, as tini and bubblewrap do. */
static void fill_stdio(void)
{
	int fd;

	do {
		fd = open("/dev/null", O_RDWR);
	} while (fd >= 0 && fd < 3);
	if (fd > 2)
		close(fd);
}

/* The last component of argv[0]. */
static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path ? path : "";
}

int main(int argc, char **argv)
{
	const char *self = base_name(argc > 0 ? argv[0] : NULL);
	size_t i;

	MAFL_MARK("launcher: main");
	fill_stdio();
	for (i = 0; i < NCOMMANDS; i++) {
		if (commands[i].applet && strcmp(self, commands[i].name) == 0) {
			mafl_prog = commands[i].name;
			return commands[i].fn(argc, argv);
		}
	}
	if (argc < 2) {
		usage(stderr);
		return MAFP_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("maf-launch %s (protocol %s)\n", MAF_VERSION, MAFP_PROTOCOL_VERSION);
		return 0;
	}
	for (i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			static char prog[64];

			snprintf(prog, sizeof(prog), "maf-launch %s", commands[i].name);
			mafl_prog = prog;
			return commands[i].fn(argc - 1, argv + 1);
		}
	}
	mafl_die(MAFP_EXIT_USAGE, "unknown command '%s' (try 'maf-launch --help')", argv[1]);
}
