/* The run's witness: a process of the launcher's own inside the program's session, which
 * writes the exit record and the exit marker when the supervisor hands them over.
 *
 * The supervisor stays outside the program's session, where the program cannot end it. But
 * a host may end the run itself by killing the session (maf-sandbox does, at its deadline:
 * `kill -KILL -- -SESSION`, then at once `rm -rf R/host_tools`), and then nothing may appear
 * in R/host_tools any more: a file made there between rm's listing and its rmdir makes rm
 * fail. The witness is in the session, so that kill ends it too; the supervisor sees it gone
 * and writes nothing, and while it lives, what it writes it writes before such a kill can
 * land. Its real and saved uids are the launcher's (root, when the program has an identity of
 * its own), so the program can neither signal it nor move it out of the session's process
 * group (it is not the program's child: the program's process makes it with CLONE_PARENT).
 *
 * The program's process and the witness are "clone children" of the supervisor: they end
 * with MAFL_CHILD_EXIT_SIGNAL rather than SIGCHLD, so waitpid() without __WALL sees only the
 * rest of the run, and "no child left" still means "no process of the run left". */
#ifndef MAFL_WITNESS_H
#define MAFL_WITNESS_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#define MAFL_CHILD_EXIT_SIGNAL SIGUSR1

/* How the witness exits: 0 once it has published what it was handed; NOTHING when there
 * was nothing whole to publish; FAILED when it could not take the uid it publishes with or
 * publish (R/host_tools not the launcher's own, say): the supervisor then publishes. */
#define WITNESS_EXIT_NOTHING 1
#define WITNESS_EXIT_FAILED 2

/* Largest exit-code text handed over. */
#define MAFL_WITNESS_CODE_MAX 32

/* Makes the witness from the program's process, once that leads its session (CLONE_PARENT:
 * the witness is the supervisor's child). In the witness, does not return: it keeps only
 * marker_r and host_tools, takes program_uid as its effective uid until it publishes (none:
 * (uid_t)-1), waits for the hand-over and exits. Returns the witness's pid in the caller,
 * or -1 with errno set. */
pid_t mafl_witness_start(int marker_r, int host_tools, pid_t supervisor, uid_t program_uid);

/* Hands the record and the exit-code text to the witness through marker_w, which it closes.
 * Returns 0, or -1 with errno set (the witness is gone: EPIPE). */
int mafl_witness_hand_over(int marker_w, const char *record, size_t record_len,
			   const char *code, size_t code_len);

/* Checks a hand-over as the witness read it (buf[0..len)): 0 with the record and the code
 * pointed into buf, or -1 when it is not one whole hand-over (the supervisor died while
 * writing it). */
int mafl_witness_parse(const char *buf, size_t len, const char **record, size_t *record_len,
		       const char **code, size_t *code_len);

#endif
