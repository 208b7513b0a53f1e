/* Whether a pid names the supervisor of a run: what `maf-launch stop` checks before it signals
 * anything, and `maf-launch wait` before it trusts the supervisor to be alive. */
#ifndef MAFL_PROVE_H
#define MAFL_PROVE_H

#include <sys/stat.h>
#include <sys/types.h>

/* Checks that the process behind /proc/PID is the supervisor of run_dir (no trailing slash):
 * it runs this executable (self is stat("/proc/self/exe")), leads its own session, and is
 * 'maf-launch run' with --run-dir run_dir. Where its executable cannot be looked at (the
 * supervisor is not dumpable, and the caller lacks CAP_SYS_PTRACE), it runs under the
 * caller's own uid in its stead. Returns 0, or -1 with the reason in why. Only as
 * good as the moment: a caller holding a pidfd of pid knows /proc/PID was that process while
 * the pidfd has not polled readable. */
int mafl_prove_supervisor(pid_t pid, const char *run_dir, const struct stat *self, char *why,
			  size_t size);

#endif
