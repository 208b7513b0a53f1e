/* maf-launch: parse the subcommand and dispatch; nothing else lives here. The commands and
 * their options are tables (commands.c). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "commands.h"
#include "profile.h"
#include "protocol.h"
#include "version.h"
#include "util.h"

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
	const char *self = base_name(argc > 0 ? argv[0] : NULL), *v;
	const struct mafl_command *c;
	struct mafl_args a;

	MAFL_MARK("launcher: main");
	fill_stdio();
	/* maf-launch also answers to an applet's name (a link named so in an image with no
	 * coreutils), as busybox does. */
	for (c = mafl_commands; c->name; c++) {
		if ((c->flags & MAFL_CMD_APPLET) && strcmp(self, c->name) == 0) {
			mafl_prog = c->name;
			return c->fn(argc, argv);
		}
	}
	mafl_opt_init(&a, &mafl_launcher, argc, argv);
	while (mafl_opt_next(&a, &v) != MAFL_OPT_END) {
		/* --version, its one option but --help */
		printf("maf-launch %s (protocol %s)\n", MAF_VERSION, MAFP_PROTOCOL_VERSION);
		return 0;
	}
	if (a.i >= argc) {
		mafl_opt_help_print(stderr, &mafl_launcher);
		return MAFP_EXIT_USAGE;
	}
	for (c = mafl_commands; c->name; c++) {
		if (strcmp(argv[a.i], c->name) == 0) {
			static char prog[64];

			snprintf(prog, sizeof(prog), "maf-launch %s", c->name);
			mafl_prog = prog;
			return c->fn(argc - a.i, argv + a.i);
		}
	}
	mafl_die(MAFP_EXIT_USAGE, "unknown command '%s' (try 'maf-launch --help')", argv[a.i]);
}
