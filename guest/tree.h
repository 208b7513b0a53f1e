/* The processes of a run, found through /proc. */
#ifndef MAFL_TREE_H
#define MAFL_TREE_H

#include <sys/types.h>

/* Sends sig to every descendant of root (not root itself), found by following parent pids
 * in /proc. Returns how many were signalled, or -1 if /proc cannot be read. */
int mafl_tree_signal(pid_t root, int sig);

/* Parses the parent pid out of the text of /proc/PID/stat (the field after the command
 * name, which may itself hold spaces and parentheses). Returns 0, or -1 if malformed. */
int mafl_parse_stat_ppid(const char *buf, size_t len, pid_t *ppid);

#endif
