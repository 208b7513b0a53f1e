/* The Docker backend's archives, through libarchive: the one-entry tar a write puts into the
 * container, and the first entry of the tar a read gets back. In memory both ways: a write's
 * tar is its data and a few blocks more, and a read's tar is never kept past its cap and
 * the tar's own overhead (docker.c stops the transfer there). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <archive.h>
#include <archive_entry.h>

#include "docker.h"
#include "internal.h"

/* A growing buffer libarchive writes into. */
struct membuf {
	char *p;
	size_t len, size;
	int nomem;
};

static la_ssize_t mem_write(struct archive *a, void *ud, const void *buf, size_t n)
{
	struct membuf *m = ud;

	(void)a;
	if (mafh__append(&m->p, &m->len, &m->size, SIZE_MAX, buf, n) < 0) {
		m->nomem = 1;
		return -1;
	}
	return (la_ssize_t)n;
}

int mafh__docker_tar_one(const char *name, int dir, unsigned mode, const void *data,
			 size_t len, char **out, size_t *out_len, struct mafh_error *err)
{
	struct membuf m = {0};
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	int rc = MAFH_EIO;

	*out = NULL;
	*out_len = 0;
	if (!a || !e) {
		rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory making a tar");
		goto out;
	}
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, dir ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(e, mode & 07777);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_mtime(e, time(NULL), 0);
	archive_entry_set_size(e, dir ? 0 : (la_int64_t)len);
	/* ustar where the name fits, pax headers where it does not; no padding of the last
	 * block to 10 KiB. */
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open2(a, &m, NULL, mem_write, NULL, NULL) != ARCHIVE_OK ||
	    archive_write_header(a, e) != ARCHIVE_OK ||
	    (!dir && len && archive_write_data(a, data, len) != (la_ssize_t)len) ||
	    archive_write_close(a) != ARCHIVE_OK) {
		if (m.nomem)
			rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory making a tar");
		else
			rc = mafh__error_set(err, MAFH_EIO, "cannot make a tar of %s: %s", name,
					     archive_error_string(a) ? archive_error_string(a)
								     : "libarchive failed");
		goto out;
	}
	*out = m.p;
	*out_len = m.len;
	m.p = NULL;
	rc = 0;
out:
	free(m.p);
	archive_entry_free(e);
	archive_write_free(a);
	return rc;
}

int mafh__docker_tar_first(const char *tar, size_t len, int truncated, size_t cap,
			   struct mafh_read_result *res, struct mafh_error *err)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	la_int64_t size;
	char *buf = NULL;
	size_t got = 0;
	int rc;

	memset(res, 0, sizeof(*res));
	if (!a)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading a tar");
	if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
	    archive_read_open_memory(a, tar, len) != ARCHIVE_OK) {
		rc = mafh__error_set(err, MAFH_EPROTO, "the Docker engine's archive cannot be "
				     "read: %s", archive_error_string(a) ? archive_error_string(a)
									 : "not a tar");
		goto out;
	}
	rc = archive_read_next_header(a, &e);
	if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
		rc = mafh__error_set(err, MAFH_EPROTO, "the Docker engine's archive holds no "
				     "entry: %s", archive_error_string(a) ? archive_error_string(a)
									  : "empty");
		goto out;
	}
	/* A hard link entry is not the file's data: only a plain regular file is read. */
	if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e)) {
		res->status = MAFH_READ_NOT_REGULAR;
		rc = 0;
		goto out;
	}
	size = archive_entry_size(e);
	if (size < 0 || (uint64_t)size > cap) {
		res->status = MAFH_READ_TOO_BIG;
		res->size = size < 0 ? -1 : (int64_t)size;
		rc = 0;
		goto out;
	}
	buf = malloc((size_t)size + 1);
	if (!buf) {
		rc = mafh__error_set(err, MAFH_ENOMEM, "out of memory reading a file of %lld bytes",
				     (long long)size);
		goto out;
	}
	while (got < (size_t)size) {
		la_ssize_t n = archive_read_data(a, buf + got, (size_t)size - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got != (size_t)size) {
		free(buf);
		buf = NULL;
		rc = mafh__error_set(err, MAFH_EPROTO, "the Docker engine's archive %s before the "
				     "end of a file of %lld bytes", truncated ? "was cut off"
									      : "ends",
				     (long long)size);
		goto out;
	}
	buf[got] = '\0';
	res->status = MAFH_READ_OK;
	res->data = buf;
	res->len = got;
	res->size = (int64_t)got;
	rc = 0;
out:
	archive_read_free(a);
	return rc;
}
