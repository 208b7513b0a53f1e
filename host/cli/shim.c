/* maf-host shim: print the Python shim a run writes as R/host_tools/maf_host_tools.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mafhost.h"

static int noop_tool(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	(void)call;
	(void)ud;
	return mafh_reply_refuse(reply, "not served");
}

/* --tool NAME or NAME=COMMAND: registers NAME in the registry ctx. */
static void set_tool(void *ctx, const struct cli_option *opt, const char *spec)
{
	struct mafh_tool tool = {.size = sizeof(tool), .fn = noop_tool};
	struct mafh_error err = {0};
	char *name = strndup(spec, strcspn(spec, "="));
	int rc;

	(void)opt;
	if (!name)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	tool.name = name;
	rc = mafh_registry_add(ctx, &tool, &err);
	if (rc == MAFH_ENOMEM)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	if (rc < 0)
		cli_usage_error("--tool %s: %s", name, cli_sentence(&err, rc));
	free(name);
}

const struct cli_option cli_shim_options[] = {
	{NULL, NULL, NULL, 0, "Options:"},
	{"--tool", "NAME", set_tool, 0,
	 "a tool to make a wrapper for (NAME=COMMAND is accepted as in run; the COMMAND is "
	 "ignored)"},
	{"--help", NULL, NULL, 0, "print this help"},
	{NULL, NULL, NULL, 0, NULL},
};

int cli_cmd_shim(int argc, char **argv)
{
	struct mafh_registry *reg;
	struct mafh_error err = {0};
	char *text = NULL;
	size_t len = 0;
	int first, rc;

	if (mafh_registry_new(&reg) < 0)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	first = cli_parse_options(argc, argv, &cli_command_shim, reg);
	if (first < argc)
		cli_usage_error("takes no argument, not '%s'", argv[first]);
	rc = mafh_shim_source(reg, &text, &len, &err);
	if (rc < 0)
		cli_die(CLI_EXIT_FAILURE, "cannot generate the shim: %s", cli_sentence(&err, rc));
	fwrite(text, 1, len ? len : strlen(text), stdout);
	free(text);
	mafh_registry_free(reg);
	return fflush(stdout) == 0 ? 0 : CLI_EXIT_FAILURE;
}
