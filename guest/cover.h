/* A run directory below a directory the program's identity cannot pass (pytest's tmp_path,
 * mkdtemp(), anything under /root): the program gets a mount namespace of its own in which
 * the topmost such directory is covered by a read-only tmpfs holding only the way down to R
 * (each step mode 0711: passed, never listed), and R itself is bind-mounted back at its own
 * path. The program sees R at the paths the host wrote into it, and nothing else of the
 * private directory; the host, the supervisor and the witness stay in the launcher's
 * namespace and reach the same files through their own paths. */
#ifndef MAFL_COVER_H
#define MAFL_COVER_H

/* 1 if this process holds CAP_SYS_ADMIN in its effective set (what the cover needs). */
int mafl_cover_possible(void);

/* In the program's process, before it gives up its capabilities: a new mount namespace,
 * propagation from it to the launcher's cut (every mount a slave), a clone of R's mount
 * tree, a tmpfs over cover (an ancestor of run_dir, absolute, without trailing slash) with
 * the directories from cover down to R, R's clone moved onto its own path, and the tmpfs
 * made read-only. Then enters run_dir/work as the program's working directory, by the new
 * path, after checking that R there is the directory run_fd names. Returns 0, or a negative
 * errno with *step naming what failed. */
int mafl_cover_apply(const char *cover, const char *run_dir, int run_fd, const char **step);

#endif
