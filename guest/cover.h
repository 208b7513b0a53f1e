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
 * path, after checking that R there is the directory run_fd names.
 *
 * Where / is not a mount's root (a chroot not made a mount point) its mounts cannot be made
 * slaves; the cover then goes ahead only where the mount it goes on is not shared (private,
 * or a slave only: nothing put on it propagates), and R's clone is made a slave once in
 * place. Where that mount is shared, or the kernel cannot say (before Linux 6.8), nothing is
 * mounted.
 *
 * Returns 0; or a negative errno with *step naming what failed; or -EXDEV where the cover
 * would reach other mount namespaces, with the sentence to say in why (why_size bytes; set
 * to "" otherwise). */
int mafl_cover_apply(const char *cover, const char *run_dir, int run_fd, const char **step,
		     char *why, size_t why_size);

#endif
