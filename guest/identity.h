/* The program's identity: when the launcher is privileged, an unprivileged uid and gid of the
 * run's own, no supplementary groups, no capability in any set, securebits locked; the run
 * directory lent to that identity for the run, and taken back at its end. */
#ifndef MAFL_IDENTITY_H
#define MAFL_IDENTITY_H

#include <sys/types.h>

#include "launch.h"
#include "protocol.h"

struct mafl_identity {
	int own;                /* the program runs under uid/gid, not the launcher's */
	int per_run;            /* uid/gid is mafl_run_id(the supervisor's pid) */
	uid_t uid;
	gid_t gid;
	int bounding_dropped;   /* the supervisor emptied its bounding set already */
};

/* What prepare changed in the run directory, to be taken back at the end. */
struct mafl_lent_dirs {
	int saved;
	mode_t run_mode, tools_mode;
	gid_t run_gid, tools_gid;
	/* The topmost directory above R the identity cannot pass, which the program's process
	 * covers (cover.h); "" when every one lets it pass. */
	char cover[MAFP_RUN_DIR_MAX + 1];
};

/* Chooses the program's identity from --user and the launcher's privilege: --user as given
 * (only a privileged launcher can take it), else mafl_run_id(supervisor) when root,
 * else the launcher's own. Returns 0, or -1 with a sentence in why. */
int mafl_identity_choose(const struct run_opts *o, pid_t supervisor, struct mafl_identity *id,
			 char *why, size_t why_size);

/* Lends the run directory to id (nothing when !id->own), without following a symlink
 * anywhere: R (group id->gid, mode 0710: the program may pass through, not list),
 * R/host_tools (group, 0750), R/host_tools/host_tool_calls, open as calls (group, 01770:
 * the program may add its requests but not touch the files of others), R/work, open as
 * work, and what it holds on the same file system (the program's), R/tmp, open as tmp (the
 * program's, 0700), and the channel's socket (group). What it changed is recorded in *lent
 * for mafl_identity_take_back, with the directory above R that the program's process must
 * cover (lent->cover), when one does not let id pass and the launcher can cover it; when it
 * cannot, the launch fails. Closes calls and tmp. Returns 0, or -1 with a sentence in why. */
int mafl_identity_lend_dirs(const struct mafl_identity *id, const struct run_dirs *d, int work,
			    int calls, int tmp, const char *run_dir, struct mafl_lent_dirs *lent,
			    char *why, size_t why_size);

/* At the end of the run: R and R/host_tools go back to their group, and to their owner's
 * access only, so that no later identity reaches what the program left. */
void mafl_identity_take_back(const struct mafl_identity *id, const struct run_dirs *d,
			     const struct mafl_lent_dirs *lent);

/* At the end of a run under an identity of its own (per_run only: an identity --user gives
 * may be another run's too), removes what that identity left in /dev/shm, the one place
 * outside R it may write by default. */
void mafl_identity_clean_shared(const struct mafl_identity *id);

/* In the supervisor, while it waits for the launcher's files, for an identity of the run's
 * own (nothing otherwise): empties its own bounding set, which the program's process then
 * inherits, rather than have that process do it (a system call a capability, on the launch's
 * path). The supervisor never executes anything, so it loses nothing by it: the bounding set
 * limits only what an exec may grant, and what a process may make inheritable; its own
 * effective and permitted sets are as they were. Sets id->bounding_dropped if it did. */
void mafl_identity_drop_bounding(struct mafl_identity *id);

/* In the program's process, before Landlock and seccomp: takes id with raw system calls
 * (the process may share the supervisor's memory; the C library's set*id would try to
 * reach threads it does not have): no supplementary groups, gid, every capability dropped
 * from the bounding (unless id->bounding_dropped: inherited empty) and ambient sets,
 * securebits set and locked so that no root uid can bring one back, uid, then the
 * permitted, effective and inheritable sets emptied and all of it checked. Returns 0, or a negative errno with *step naming what failed. */
int mafl_identity_take(const struct mafl_identity *id, const char **step);

/* Kills every process running as id's uid: a child takes the identity and signals all it
 * may signal (kill(-1) reaches exactly the processes of its own uid, never itself, forks
 * under way included). Only for an identity of the run's own (per_run or --user). With
 * look, first looks through /proc for a live one (a scan of every process) and, if there
 * was one, waits until none is left alive (at most a second). Returns 1 if it looked and
 * found one, 0 if not (or it did not look), or -1 if no child could be made. */
int mafl_identity_sweep(const struct mafl_identity *id, int look);

#endif
