/* The program's process: what it does between the supervisor's vfork and the exec of the
 * program (program.c), and what it tells the supervisor on the way. */
#ifndef MAFL_PROGRAM_H
#define MAFL_PROGRAM_H

#include <stdint.h>

#include "identity.h"
#include "launch.h"

/* Messages from the program's process to the supervisor over a close-on-exec pipe: EOF
 * without a FAIL message means exec succeeded. */
enum mafl_program_msg_kind {
	MAFL_PROGRAM_LANDLOCK = 1,
	MAFL_PROGRAM_FAIL = 2,
	MAFL_PROGRAM_WITNESS = 3,
};
struct mafl_program_msg {
	int kind;
	int code;               /* FAIL: the launcher exit code; LANDLOCK: the ABI or <= 0;
				 * WITNESS: the witness's pid */
	int err;                /* errno, or 0: what is the whole sentence */
	char what[256];         /* FAIL: the step that failed ("cannot WHAT: errno's text"),
				 * or with err 0 the sentence itself; the size of the exit
				 * record's error (protocol.h), which holds the line */
};

/* What the supervisor hands the program's process; borrowed until the exec. */
struct mafl_program_args {
	const struct run_opts *o;
	const struct mafl_identity *id;
	int work;               /* R/work */
	int run;                /* R */
	const char *cover;      /* the directory above R to cover (cover.h); "": none */
	int host_tools;         /* R/host_tools, for the witness */
	int ruleset;            /* the Landlock ruleset the launcher began (run.c), or -1 */
	uint64_t ignored;       /* the signals to reset (mafl_program_ignored_signals) */
	int marker_r;           /* the witness's end of the hand-over pipe */
	int out_w, msg_w, chan_fd;
	char **envp;
	const struct mafl_cpu_hold *cpus;
};

/* The program's process, for mafl_spawn_vfork_signal (spawn.h) with a struct
 * mafl_program_args: session and witness, stdio, containment (rlimits, the identity,
 * no_new_privs, Landlock, seccomp, in that order), exec. Until exec it borrows the
 * supervisor's memory, so it allocates nothing, and it leaves only through exec or _exit,
 * having told the supervisor through msg_w why not. */
int mafl_program_main(void *arg);

/* The signals this process ignores, from SigIgn in /proc/self/status (bit N-1 for signal
 * N): three system calls rather than one sigaction per signal. Without /proc, all of them. */
uint64_t mafl_program_ignored_signals(void);

/* Keeps this process on the CPU it runs on (h->held says whether it took), the caller's
 * affinity saved in h; mafl_cpu_release gives it back. Returns 0 or -1 with errno set. */
void mafl_cpu_hold(struct mafl_cpu_hold *h);
int mafl_cpu_release(const struct mafl_cpu_hold *h);

#endif
