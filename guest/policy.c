/* maf-launch policy: print the seccomp filters a run would load: libseccomp's as its PFC text,
 * the floor as a listing of its instructions. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "contain.h"
#include "protocol.h"
#include "util.h"

int mafl_policy_option(struct mafl_policy *p, const char *opt, const char *val)
{
	if (strcmp(opt, "--egress") == 0) {
		if (val && strcmp(val, "closed") == 0)
			p->egress_open = 0;
		else if (val && strcmp(val, "open") == 0)
			p->egress_open = 1;
		else
			mafl_die(MAFP_EXIT_USAGE, "--egress takes 'closed' or 'open'");
		return 1;
	}
	if (strcmp(opt, "--seccomp") == 0) {
		if (val && strcmp(val, "default") == 0)
			p->seccomp = 1;
		else if (val && strcmp(val, "off") == 0)
			p->seccomp = 0;
		else
			mafl_die(MAFP_EXIT_USAGE, "--seccomp takes 'default' or 'off'");
		return 1;
	}
	if (strcmp(opt, "--landlock") == 0) {
		if (val && strcmp(val, "auto") == 0)
			p->landlock = 1;
		else if (val && strcmp(val, "off") == 0)
			p->landlock = 0;
		else
			mafl_die(MAFP_EXIT_USAGE, "--landlock takes 'auto' or 'off'");
		return 1;
	}
	return 0;
}

int mafl_cmd_policy(int argc, char **argv)
{
	struct mafl_policy p = {.seccomp = 1, .egress_open = 0, .landlock = 1,
				.supervisor = MAFL_POLICY_EXAMPLE_SUPERVISOR};
	unsigned long long pid;
	struct mafl_args a;
	const char *v;
	int key, rc, floor = 0;

	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_POLICY], argc, argv);
	while ((key = mafl_opt_next(&a, &v)) != MAFL_OPT_END) {
		switch (key) {
		case MAFL_O_SUPERVISOR_PID:
			if (mafl_parse_u64(v, 0x3fffffff, &pid) < 0 || pid == 0)
				mafl_die(MAFP_EXIT_USAGE, "--supervisor-pid takes a pid");
			p.supervisor = (int)pid;
			break;
		case MAFL_O_CHECK:
			mafl_die(MAFP_EXIT_USAGE, "--check is done when maf-launch is built (this "
				 "binary links no libseccomp): build/gen/filtergen --check PID...");
		case MAFL_O_FLOOR:
			floor = 1;
			break;
		case MAFL_O_EGRESS:
			mafl_policy_option(&p, "--egress", v);
			break;
		case MAFL_O_SECCOMP:
			mafl_policy_option(&p, "--seccomp", v);
			break;
		}
	}
	fflush(stdout);
	rc = floor ? mafl_seccomp_export_floor(&p, 1) : mafl_seccomp_export_pfc(&p, 1);
	if (rc < 0)
		mafl_die(MAFP_EXIT_LAUNCHER, "cannot build the seccomp filter: %s", strerror(-rc));
	return 0;
}
