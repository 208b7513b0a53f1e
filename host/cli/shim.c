/* maf-host shim: print the Python shim a run writes as R/host_tools/maf_host_tools.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mafhost.h"

void cmd_shim_usage(FILE *f)
{
	fprintf(f,
		"usage: maf-host shim [--tool NAME]...\n"
		"\n"
		"Prints the generated Python shim (maf_host_tools.py) on stdout: call(name,\n"
		"**arguments), HostToolError, and one wrapper function per tool whose name is a\n"
		"valid Python identifier.\n"
		"\n"
		"Options:\n"
		"  --tool NAME             a tool to make a wrapper for (NAME=COMMAND is accepted\n"
		"                          as in run; the COMMAND is ignored)\n"
		"  --help                  print this help\n");
}

static int noop_tool(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	(void)call;
	(void)ud;
	return mafh_reply_refuse(reply, "not served");
}

int cmd_shim(int argc, char **argv)
{
	struct mafh_registry *reg;
	struct mafh_error err;
	char *text = NULL;
	size_t len = 0;
	int i, rc;

	if (mafh_registry_new(&reg) < 0)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *spec = NULL;
		struct mafh_tool tool;
		char *name;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			cmd_shim_usage(stdout);
			mafh_registry_free(reg);
			return 0;
		}
		if (strcmp(a, "--tool") == 0) {
			if (i + 1 >= argc)
				cli_usage_error("--tool needs a value");
			spec = argv[++i];
		} else if (strncmp(a, "--tool=", 7) == 0) {
			spec = a + 7;
		} else {
			cli_usage_error("unknown option or argument '%s'", a);
		}
		name = strndup(spec, strcspn(spec, "="));
		if (!name)
			cli_die(CLI_EXIT_FAILURE, "out of memory");
		memset(&tool, 0, sizeof(tool));
		tool.size = sizeof(tool);
		tool.name = name;
		tool.fn = noop_tool;
		memset(&err, 0, sizeof(err));
		rc = mafh_registry_add(reg, &tool, &err);
		if (rc < 0)
			cli_usage_error("--tool %s: %s", name,
					err.message[0] ? err.message : mafh_strerror(rc));
		free(name);
	}
	memset(&err, 0, sizeof(err));
	rc = mafh_shim_source(reg, &text, &len, &err);
	if (rc < 0)
		cli_die(CLI_EXIT_FAILURE, "cannot generate the shim: %s",
			err.message[0] ? err.message : mafh_strerror(rc));
	fwrite(text, 1, len ? len : strlen(text), stdout);
	free(text);
	mafh_registry_free(reg);
	return fflush(stdout) == 0 ? 0 : CLI_EXIT_FAILURE;
}
