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

/* The filter names the supervisor's pid; a run fills in its own. */
#define POLICY_EXAMPLE_SUPERVISOR 4242

static void usage(FILE *f)
{
	fprintf(f, "usage: maf-launch policy [--egress closed|open] [--seccomp default|off]\n  "
		"                       [--supervisor-pid PID] [--floor]\n\nPrints the seccomp "
		"filter 'maf-launch run' would load with the same options, as\nlibseccomp's "
		"pseudo filter code (PFC). Prints nothing with --seccomp off.\nThe filter "
		"denies signals to the run's supervisor, so it names its pid: a run\nfills in "
		"its own; PID (default %d) stands for it here.\n\nA run loads a second filter "
		"after it, the floor, which compares syscall\nnumbers only: it denies the "
		"newer calls the policy denies whether libseccomp\nknows their names or not, "
		"and answers ENOSYS to every number the policy does\nnot know. --floor prints "
		"its instructions instead of the PFC.\n\nA run does not build the filter: it "
		"loads the one libseccomp built when\nmaf-launch was built, with the "
		"supervisor's pid filled in, and so does this\ncommand print it (maf-launch "
		"links no libseccomp). The build checks that\nfilling in a pid gives what "
		"libseccomp builds for it; so does\n'build/gen/filtergen --check PID...' in "
		"the source tree.\n", POLICY_EXAMPLE_SUPERVISOR);
}

int mafl_cmd_policy(int argc, char **argv)
{
	struct mafl_policy p = {.seccomp = 1, .egress_open = 0, .landlock = 1,
				.supervisor = POLICY_EXAMPLE_SUPERVISOR};
	unsigned long long pid;
	int i, rc, floor = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--supervisor-pid") == 0 && i + 1 < argc) {
			if (mafl_parse_u64(argv[++i], 0x3fffffff, &pid) < 0 || pid == 0)
				mafl_die(MAFP_EXIT_USAGE, "--supervisor-pid takes a pid");
			p.supervisor = (int)pid;
			continue;
		}
		if (strcmp(argv[i], "--check") == 0)
			mafl_die(MAFP_EXIT_USAGE, "--check is done when maf-launch is built "
				 "(this binary links no libseccomp): build/gen/filtergen "
				 "--check PID...");
		if (strcmp(argv[i], "--floor") == 0) {
			floor = 1;
			continue;
		}
		if (strcmp(argv[i], "--landlock") != 0 &&
		    mafl_policy_option(&p, argv[i], i + 1 < argc ? argv[i + 1] : NULL)) {
			i++;
			continue;
		}
		usage(stderr);
		mafl_die(MAFP_EXIT_USAGE, "unknown option '%s'", argv[i]);
	}
	fflush(stdout);
	rc = floor ? mafl_seccomp_export_floor(&p, 1) : mafl_seccomp_export_pfc(&p, 1);
	if (rc < 0)
		mafl_die(MAFP_EXIT_LAUNCHER, "cannot build the seccomp filter: %s", strerror(-rc));
	return 0;
}
