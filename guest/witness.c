/* The run's witness (witness.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "protocol.h"
#include "util.h"
#include "witness.h"

#ifndef CLONE_PARENT
#define CLONE_PARENT 0x00008000
#endif

#define HAND_OVER_MAGIC 0x4d414657u	/* "MAFW" */

struct hand_over_head {
	uint32_t magic;
	uint32_t record_len;
	uint32_t code_len;
};

#define HAND_OVER_MAX (sizeof(struct hand_over_head) + MAFP_EXIT_RECORD_MAX + \
		       MAFL_WITNESS_CODE_MAX)

int mafl_witness_parse(const char *buf, size_t len, const char **record, size_t *record_len,
		       const char **code, size_t *code_len)
{
	struct hand_over_head h;

	if (len < sizeof(h))
		return -1;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != HAND_OVER_MAGIC || h.record_len > MAFP_EXIT_RECORD_MAX ||
	    h.code_len == 0 || h.code_len > MAFL_WITNESS_CODE_MAX ||
	    len != sizeof(h) + h.record_len + h.code_len)
		return -1;
	*record = buf + sizeof(h);
	*record_len = h.record_len;
	*code = *record + h.record_len;
	*code_len = h.code_len;
	return 0;
}

int mafl_witness_hand_over(int marker_w, const char *record, size_t record_len,
			   const char *code, size_t code_len)
{
	char buf[HAND_OVER_MAX];
	struct hand_over_head h = {HAND_OVER_MAGIC, (uint32_t)record_len, (uint32_t)code_len};
	int rc, err;

	if (record_len > MAFP_EXIT_RECORD_MAX || code_len == 0 ||
	    code_len > MAFL_WITNESS_CODE_MAX) {
		close(marker_w);
		errno = EINVAL;
		return -1;
	}
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), record, record_len);
	memcpy(buf + sizeof(h) + record_len, code, code_len);
	/* Smaller than a pipe's buffer: one write, which the witness reads at its pace. */
	rc = mafl_write_all(marker_w, buf, sizeof(h) + record_len + code_len);
	err = errno;
	close(marker_w);
	errno = err;
	return rc;
}

/* Closes every descriptor but a and b. */
static void keep_only(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo > 0)
		syscall(SYS_close_range, 0u, (unsigned)lo - 1, 0u);
	if (hi > lo + 1)
		syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0u);
	syscall(SYS_close_range, (unsigned)hi + 1, ~0u, 0u);
}

static __attribute__((noreturn)) void witness_main(int marker_r, int host_tools,
						   pid_t supervisor, uid_t program_uid)
{
	static char buf[HAND_OVER_MAX + 1];
	const char *record, *code;
	size_t record_len, code_len;
	sigset_t all;
	ssize_t n;

	/* Only SIGKILL (and SIGSTOP) reach it: the kill of its session is what it is for. */
	sigfillset(&all);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, (size_t)(_NSIG / 8));
	/* In the program's process group, with no capability and the program's uid as its
	 * effective one (its real and saved uids stay the launcher's): the program may set
	 * the priority of its own group as a whole, as it could with upstream's inner shell
	 * in it (the kernel wants the target's effective uid, and no capability the caller
	 * lacks), but may still not signal it (that needs the target's real or saved uid).
	 * Set before the parent-death signal, which a change of the effective uid clears. */
	if (program_uid != (uid_t)-1) {
		struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct none[2];

		memset(none, 0, sizeof(none));
		if (syscall(SYS_setresuid, -1L, (long)program_uid, -1L) < 0 ||
		    syscall(SYS_capset, &hdr, none) < 0)
			_exit(WITNESS_EXIT_FAILED);
	}
	/* Nothing of the run outlives its supervisor. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != supervisor)
		_exit(WITNESS_EXIT_NOTHING);
	keep_only(marker_r, host_tools);
	n = mafl_read_full(marker_r, buf, sizeof(buf));
	if (n <= 0 || mafl_witness_parse(buf, (size_t)n, &record, &record_len, &code,
					 &code_len) < 0)
		_exit(WITNESS_EXIT_NOTHING);	/* the supervisor went without a word */
	/* Back to the launcher's uid, the owner of R/host_tools, with still no capability. */
	if (program_uid != (uid_t)-1 && syscall(SYS_setresuid, -1L, 0L, -1L) < 0)
		_exit(WITNESS_EXIT_FAILED);
	/* The record first, durably: once program_exit_code exists a host may reclaim the run. */
	if (record_len &&
	    mafl_publish_at(host_tools, MAFP_FILE_EXIT_RECORD, record, record_len, 1) < 0)
		_exit(WITNESS_EXIT_FAILED);
	_exit(mafl_publish_at(host_tools, MAFP_MARKER_EXIT_CODE, code, code_len, 1) < 0 ?
	      WITNESS_EXIT_FAILED : 0);
}

pid_t mafl_witness_start(int marker_r, int host_tools, pid_t supervisor, uid_t program_uid)
{
	/* A fork (own memory), a sibling of the caller. The exit signal is the caller's: with
	 * CLONE_PARENT the kernel takes it from the calling process, not from the flags. */
	long pid = syscall(SYS_clone, (unsigned long)CLONE_PARENT, 0UL, 0UL, 0UL, 0UL);

	if (pid == 0)
		witness_main(marker_r, host_tools, supervisor, program_uid);
	return (pid_t)pid;
}
