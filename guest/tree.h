/* The processes of a run, found through /proc. */
#ifndef MAFL_TREE_H
#define MAFL_TREE_H

#include <sys/types.h>

/* Sends sig to every descendant of root (not root itself, nor spare and what descends from
 * it when spare > 0), found by following parent pids in /proc. Returns how many were
 * signalled, or -1 if /proc cannot be read. */
int mafl_tree_signal(pid_t root, int sig, pid_t spare);

/* Parses the parent pid out of the text of /proc/PID/stat (the field after the command
 * name, which may itself hold spaces and parentheses). Returns 0, or -1 if malformed. */
int mafl_parse_stat_ppid(const char *buf, size_t len, pid_t *ppid);

/* Parent links mafl_tree_descends follows at most: a process nested deeper is not found. */
#define MAFL_TREE_DEPTH_MAX 64

/* Whether pid is a descendant of ancestor (not ancestor itself), following the parent pids
 * in procfd (a descriptor of /proc) at most MAFL_TREE_DEPTH_MAX links up. A parent that
 * exits during the walk cannot lead it astray through a reused pid (each link is checked
 * still in place once the parent's directory is open); the walk then starts over, a few
 * times at most. The pid itself is the caller's to pin (a pidfd checked live afterwards).
 * Returns 1 or 0; 0 also when /proc cannot tell. */
int mafl_tree_descends(int procfd, pid_t pid, pid_t ancestor);

#endif
