/* The local backend's files: write_file (a temporary name and a rename, or the reuse of the
 * file it replaces), read_file and stat, every path walked without following a symlink,
 * since every name under the run directory may have been planted by the program. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "local.h"

int mafh__local_open_parent(int root, const char *path, int create, char *copy,
			    size_t copy_size, const char **base)
{
	char *p, *slash;
	int dfd, nfd;

	if (!path || path[0] != '/' || strlen(path) >= copy_size) {
		errno = EINVAL;
		return -1;
	}
	memcpy(copy, path, strlen(path) + 1);
	slash = strrchr(copy, '/');
	*base = slash + 1;
	if (!**base || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0) {
		errno = EINVAL;
		return -1;
	}
	*slash = '\0';
	/* One system call where the kernel has openat2 (5.6): RESOLVE_NO_SYMLINKS refuses a
	 * symlink in any component, as the walk below does (".." is refused by hand first).
	 * Missing directories, or a kernel or seccomp policy without openat2, take the walk. */
	if (!strstr(copy, "/../") && !(strlen(copy) >= 3 && strcmp(copy + strlen(copy) - 3,
								    "/..") == 0)) {
		struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				       .resolve = RESOLVE_NO_SYMLINKS};

		/* Below another process's root: resolved as if it were /, no magic link
		 * (/proc/N/root, /proc/N/fd/M) leading out of it. */
		if (root >= 0) {
			how.resolve |= RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
			dfd = (int)syscall(SYS_openat2, root, copy[0] ? copy + 1 : ".", &how,
					   sizeof(how));
		} else {
			dfd = (int)syscall(SYS_openat2, AT_FDCWD, copy[0] ? copy : "/", &how,
					   sizeof(how));
		}
		if (dfd >= 0) {
			*slash = '/';
			return dfd;
		}
		if (errno == ELOOP || errno == ENOTDIR || (errno == ENOENT && !create))
			return -1;
	}
	dfd = root >= 0 ? openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
			: open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	for (p = copy; *p;) {
		char *next;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		next = strchr(p, '/');
		if (next)
			*next = '\0';
		if (strcmp(p, "..") == 0) {
			close(dfd);
			errno = EINVAL;
			return -1;
		}
		nfd = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && create) {
			if (mkdirat(dfd, p, 0755) < 0 && errno != EEXIST) {
				int e = errno;

				close(dfd);
				errno = e;
				return -1;
			}
			nfd = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd < 0) {
			int e = errno;

			close(dfd);
			errno = e;
			return -1;
		}
		close(dfd);
		dfd = nfd;
		if (next) {
			*next = '/';
			p = next + 1;
		} else {
			break;
		}
	}
	*slash = '/';
	return dfd;
}

static int write_fresh(int root, long pid, const char *path, const void *data, size_t len,
		       struct mafh_error *err)
{
	char copy[LOCAL_PATH_MAX], tmp[NAME_MAX + 1];
	const char *base;
	const char *p = data;
	size_t done = 0;
	int dfd, fd = -1, e, i;

	dfd = mafh__local_open_parent(root, path, 1, copy, sizeof(copy), &base);
	if (dfd < 0) {
		e = errno;
		return mafh__error_set(err, -e, "cannot reach the directory of %s without "
				       "following a symlink: %s", path, strerror(e));
	}
	if (strlen(base) > NAME_MAX - 24) {
		close(dfd);
		return mafh__error_set(err, MAFH_EINVAL, "the file name in %s is too long", path);
	}
	/* A temporary name and a rename: a symlink the program planted at path is replaced,
	 * never followed, and the reader in the guest never sees a half-written file. */
	for (i = 0; i < 100 && fd < 0; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(tmp, sizeof(tmp), ".%s.%ld.%lx.tmp", base, pid,
			 (unsigned long)(ts.tv_nsec ^ ((unsigned long)i << 20)));
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = errno;
		close(dfd);
		return mafh__error_set(err, -e, "cannot create a temporary file for %s: %s",
				       path, strerror(e));
	}
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Nothing taken, and no errno to say why: MAFH_EIO. */
			e = n < 0 ? errno : EIO;
			goto fail;
		}
		done += (size_t)n;
	}
	if (close(fd) < 0) {
		fd = -1;
		e = errno;
		goto fail;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, base) < 0) {
		e = errno;
		goto fail;
	}
	close(dfd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(dfd, tmp, 0);
	close(dfd);
	return mafh__error_set(err, -e, "cannot write %s: %s", path, strerror(e));
}

/* write_file into donor's inode, renamed to path: no new inode (see mafhost.h). donor must
 * be in path's directory and still be a regular file with one link, looked at before it is
 * opened (opening a device or FIFO can have effects of its own) and again once open
 * (mafp_call_file_hand_over: the same file). Anything else, or a failure before the rename,
 * writes path afresh. */
int mafh__local_write_file(int root, long pid, const char *path, const void *data, size_t len,
			   const char *donor, struct mafh_error *err)
{
	char copy[LOCAL_PATH_MAX];
	const char *base, *dslash = donor ? strrchr(donor, '/') : NULL;
	const char *pslash = path ? strrchr(path, '/') : NULL;
	struct stat st;
	int dfd;

	if (!dslash || !pslash || dslash - donor != pslash - path ||
	    memcmp(donor, path, (size_t)(pslash - path)) != 0 || !dslash[1] ||
	    strcmp(dslash + 1, ".") == 0 || strcmp(dslash + 1, "..") == 0 ||
	    strcmp(dslash + 1, pslash + 1) == 0)
		return write_fresh(root, pid, path, data, len, err);
	dfd = mafh__local_open_parent(root, path, 0, copy, sizeof(copy), &base);
	if (dfd < 0)
		return write_fresh(root, pid, path, data, len, err);
	if (fstatat(dfd, dslash + 1, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_nlink != 1)
		goto fresh;
	if (mafp_call_file_hand_over(dfd, dslash + 1, base, (uint64_t)st.st_dev,
				     (uint64_t)st.st_ino, data, len) < 0)
		goto fresh;
	close(dfd);
	return 0;
fresh:
	close(dfd);
	return write_fresh(root, pid, path, data, len, err);
}

int mafh__local_read_file(int root, const char *path, size_t cap, struct mafh_read_result *res,
			  struct mafh_error *err)
{
	char copy[LOCAL_PATH_MAX];
	const char *base;
	struct stat st;
	char *buf = NULL;
	size_t len = 0, room;
	int dfd, fd, e;

	memset(res, 0, sizeof(*res));
	dfd = mafh__local_open_parent(root, path, 0, copy, sizeof(copy), &base);
	if (dfd < 0) {
		e = errno;
		if (e == ENOENT) {
			res->status = MAFH_READ_ABSENT;
			return 0;
		}
		return mafh__error_set(err, -e, "cannot reach the directory of %s without "
				       "following a symlink: %s", path, strerror(e));
	}
	/* Look before opening: opening a device or FIFO can have effects of its own. */
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		e = errno;
		close(dfd);
		if (e == ENOENT) {
			res->status = MAFH_READ_ABSENT;
			return 0;
		}
		return mafh__error_set(err, -e, "cannot stat %s: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(dfd);
		res->status = MAFH_READ_NOT_REGULAR;
		return 0;
	}
	/* The name may have been swapped since: O_NOFOLLOW, O_NONBLOCK (a FIFO put there now
	 * must not block us) and fstat again on what was really opened. */
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	e = errno;
	close(dfd);
	if (fd < 0) {
		if (e == ENOENT) {
			res->status = MAFH_READ_ABSENT;
			return 0;
		}
		if (e == ELOOP) {
			res->status = MAFH_READ_NOT_REGULAR;
			return 0;
		}
		return mafh__error_set(err, -e, "cannot open %s: %s", path, strerror(e));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		res->status = MAFH_READ_NOT_REGULAR;
		return 0;
	}
	if ((uint64_t)st.st_size > cap) {
		close(fd);
		res->status = MAFH_READ_TOO_BIG;
		res->size = st.st_size;
		return 0;
	}
	/* Read up to cap + 1 bytes: the file may grow after the fstat. */
	room = (size_t)st.st_size + 1;
	if (room > cap + 1)
		room = cap + 1;
	buf = malloc(room + 1);
	if (!buf) {
		close(fd);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading %s", path);
	}
	for (;;) {
		ssize_t n;

		if (len == room) {
			char *nb;

			if (room > cap)
				break;
			room = room * 2 > cap + 1 ? cap + 1 : room * 2;
			nb = realloc(buf, room + 1);
			if (!nb) {
				free(buf);
				close(fd);
				return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading %s",
						       path);
			}
			buf = nb;
		}
		n = read(fd, buf + len, room - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			free(buf);
			close(fd);
			return mafh__error_set(err, -e, "cannot read %s: %s", path, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
		/* Short of what was asked: a regular file's end, with no read more to learn it. */
		if (len < room)
			break;
	}
	close(fd);
	if (len > cap) {
		free(buf);
		res->status = MAFH_READ_TOO_BIG;
		res->size = -1;
		return 0;
	}
	buf[len] = '\0';
	res->status = MAFH_READ_OK;
	res->data = buf;
	res->len = len;
	res->size = (int64_t)len;
	return 0;
}

int mafh__local_stat(int root, const char *path, struct mafh_stat *out, struct mafh_error *err)
{
	char copy[LOCAL_PATH_MAX];
	const char *base;
	struct stat st;
	int dfd, e;

	memset(out, 0, sizeof(*out));
	dfd = mafh__local_open_parent(root, path, 0, copy, sizeof(copy), &base);
	if (dfd < 0) {
		e = errno;
		if (e == ENOENT)
			return 0;
		return mafh__error_set(err, -e, "cannot reach the directory of %s without "
				       "following a symlink: %s", path, strerror(e));
	}
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		e = errno;
		close(dfd);
		if (e == ENOENT)
			return 0;
		return mafh__error_set(err, -e, "cannot stat %s: %s", path, strerror(e));
	}
	close(dfd);
	out->exists = 1;
	out->size = st.st_size;
	out->type = S_ISREG(st.st_mode) ? MAFH_FILE_REGULAR
		    : S_ISDIR(st.st_mode) ? MAFH_FILE_DIR
		    : S_ISLNK(st.st_mode) ? MAFH_FILE_SYMLINK : MAFH_FILE_OTHER;
	return 0;
}
