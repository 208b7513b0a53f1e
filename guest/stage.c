/* maf-launch run --files-stdin: the files of R/host_tools (the program, the guest API) taken
 * from the launcher's stdin before the launch, so that the host puts them in place and starts
 * the program with one exec rather than a write each and then the exec.
 *
 * Stdin is read to its end first: each file a line "NAME SIZE" and SIZE bytes. Nothing is
 * written before all of it has been read and checked; then each file is written beside its
 * name (".NAME.maf-stage", made anew) and renamed over it, so that whatever a program left at
 * R/host_tools/NAME (a symlink, a file) is replaced and never followed or written through. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch.h"
#include "protocol.h"
#include "util.h"

#define STAGE_TMP_SUFFIX ".maf-stage"

const char *mafl_stage_header(const char *line, size_t len, char *name,
			      unsigned long long *size)
{
	const char *sp = memchr(line, ' ', len);
	size_t n;
	char num[24];

	if (!sp)
		return "it is not 'NAME SIZE'";
	n = (size_t)(sp - line);
	if (n == 0)
		return "the name is empty";
	if (n > NAME_MAX)
		return "the name is longer than 255 bytes";
	if (line[0] == '.')
		return "the name starts with '.'";
	for (size_t i = 0; i < n; i++)
		if (line[i] == '/' || line[i] == '\0')
			return "the name holds a '/' or a NUL (it is one entry of R/host_tools)";
	len -= n + 1;
	if (len == 0 || len >= sizeof(num))
		return "the size is not a decimal number of bytes";
	memcpy(num, sp + 1, len);
	num[len] = '\0';
	if ((num[0] == '0' && len > 1) ||
	    mafl_parse_u64(num, MAFL_STAGE_BYTES_MAX, size) < 0)
		return "the size is not a decimal number of bytes up to 64 MiB";
	memcpy(name, line, n);
	name[n] = '\0';
	return NULL;
}

/* Stdin, whole, into a buffer of *len bytes; dies past what the files may hold. */
static char *read_stdin(size_t *len)
{
	size_t cap = 65536, max = MAFL_STAGE_BYTES_MAX + MAFL_STAGE_FILES_MAX * (NAME_MAX + 32);
	char *buf = malloc(cap);

	*len = 0;
	if (!buf)
		mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
	for (;;) {
		ssize_t n;

		if (*len == cap) {
			if (cap >= max)
				mafl_die(MAFP_EXIT_USAGE, "--files-stdin: stdin holds more than the "
					 "%d files of at most 64 MiB in all it may", MAFL_STAGE_FILES_MAX);
			cap = cap * 2 > max ? max : cap * 2;
			buf = realloc(buf, cap);
			if (!buf)
				mafl_die(MAFP_EXIT_LAUNCHER, "out of memory");
		}
		n = read(0, buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "--files-stdin: cannot read stdin");
		if (n == 0)
			return buf;
		*len += (size_t)n;
	}
}

/* NAME's bytes written beside it and renamed over it. */
static void put(int host_tools, const char *run_dir, const char *name, const char *data,
		unsigned long long size)
{
	char tmp[NAME_MAX + sizeof(STAGE_TMP_SUFFIX) + 2];
	int fd;

	snprintf(tmp, sizeof(tmp), ".%s" STAGE_TMP_SUFFIX, name);
	if (unlinkat(host_tools, tmp, 0) < 0 && errno != ENOENT)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot remove %s/%s/%s", run_dir,
			       MAFP_DIR_HOST_TOOLS, tmp);
	fd = openat(host_tools, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot create %s/%s/%s", run_dir,
			       MAFP_DIR_HOST_TOOLS, tmp);
	if (mafl_write_all(fd, data, (size_t)size) < 0 || fchmod(fd, 0644) < 0 || close(fd) < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot write %s/%s/%s", run_dir,
			       MAFP_DIR_HOST_TOOLS, tmp);
	if (renameat(host_tools, tmp, host_tools, name) < 0) {
		int e = errno;

		unlinkat(host_tools, tmp, 0);
		errno = e;
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot put %s in place in %s/%s", name,
			       run_dir, MAFP_DIR_HOST_TOOLS);
	}
}

void mafl_stage_files(int host_tools, const char *run_dir)
{
	char name[NAME_MAX + 1];
	const char *why;
	unsigned long long size, total = 0;
	size_t len, at, nfiles = 0;
	char *buf = read_stdin(&len);

	/* Checked whole before anything is written. */
	for (int pass = 0; pass < 2; pass++) {
		for (at = 0, nfiles = 0, total = 0; at < len; at += (size_t)size) {
			const char *nl = memchr(buf + at, '\n', len - at);

			if (!nl)
				mafl_die(MAFP_EXIT_USAGE, "--files-stdin: stdin ends within a line");
			if ((why = mafl_stage_header(buf + at, (size_t)(nl - buf - at), name, &size)))
				mafl_die(MAFP_EXIT_USAGE, "--files-stdin: file %zu: %s", nfiles + 1,
					 why);
			at = (size_t)(nl - buf) + 1;
			if (++nfiles > MAFL_STAGE_FILES_MAX || (total += size) > MAFL_STAGE_BYTES_MAX)
				mafl_die(MAFP_EXIT_USAGE, "--files-stdin: more than %d files or 64 MiB",
					 MAFL_STAGE_FILES_MAX);
			if (size > len - at)
				mafl_die(MAFP_EXIT_USAGE, "--files-stdin: stdin ends within %s", name);
			if (pass == 1)
				put(host_tools, run_dir, name, buf + at, size);
		}
	}
	free(buf);
}
