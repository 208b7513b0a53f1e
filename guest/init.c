/* maf-launch init: a minimal PID 1 for container images, so that a bare `docker run -d IMAGE`
 * gives a container that reaps and stops cleanly.
 *
 * Every process whose parent ends is handed to the pid namespace's init. A process started
 * by `docker exec` has its parent outside the container, so what it leaves behind (the
 * supervisor of `maf-launch run`, which outlives the exec by design) becomes init's child;
 * an init that never calls wait() keeps every such process a zombie forever. This one
 * reaps them, forwards signals and exits cleanly:
 *
 * - Without CMD it waits and reaps until SIGTERM or SIGINT, then ends the rest (below) and
 *   exits 0.
 * - With CMD it starts CMD as its child, forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
 *   SIGUSR2 and SIGWINCH to it, reaps everything, and once CMD has ended, ends the rest and
 *   exits with CMD's status (128+N when signal N ended it).
 * - Ending the rest, as PID 1 only: SIGTERM to every other process in the namespace
 *   (kill(-1)), so each run's supervisor ends its run and writes its markers; then it waits
 *   up to the grace for them all to be gone, and SIGKILLs what is left.
 * - Not PID 1, it makes itself the child subreaper, so CMD's orphans are still its own to
 *   reap while it runs. It signals nothing but CMD: kill(-1) outside a container would reach
 *   every process of the user.
 *
 * Signals are blocked and read from a signalfd in the one loop; no handler does any work. A
 * blocked signal is queued even for a namespace's init, which the kernel otherwise spares
 * the signals it has no handler for. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "protocol.h"
#include "util.h"

#define INIT_DEFAULT_GRACE_MS 5000
#define INIT_GRACE_MAX_MS 3600000LL
/* During the grace only: a process whose parent is outside the container ends without a
 * SIGCHLD here, so whether anyone is left is looked at this often as well. */
#define INIT_GRACE_POLL_MS 50

/* What the loop knows. The signalfd is owned here and never closed: init exits with it. */
struct init {
	int sfd;
	int pid1;		/* getpid() == 1 */
	pid_t cmd;		/* CMD's pid while it runs, else 0 */
	int cmd_status;		/* CMD's wait status, once it is reaped */
	int cmd_done;
};

/* Reaps every child that has ended, and notes CMD's status when it is among them. */
static void reap(struct init *in)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (in->cmd && p == in->cmd) {
			in->cmd = 0;
			in->cmd_status = st;
			in->cmd_done = 1;
		}
	}
}

/* The next signal, or 0 when none came within timeout_ms (-1: wait as long as it takes). */
static int next_signal(const struct init *in, int timeout_ms)
{
	struct signalfd_siginfo si;
	struct pollfd pf = {.fd = in->sfd, .events = POLLIN};
	ssize_t n;

	for (;;) {
		n = read(in->sfd, &si, sizeof(si));
		if (n == (ssize_t)sizeof(si))
			return (int)si.ssi_signo;
		if (n >= 0)
			mafl_die(MAFP_EXIT_LAUNCHER, "the signal descriptor returned a short read");
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot read the signal descriptor");
		pf.revents = 0;
		if (poll(&pf, 1, timeout_ms) < 0 && errno != EINTR)
			mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot wait for a signal");
		if (!pf.revents && timeout_ms >= 0)
			return 0;
	}
}

/* True while a process other than init is alive or a zombie in init's namespace. */
static int others_left(void)
{
	return kill(-1, 0) == 0 || errno != ESRCH;
}

/* As PID 1: SIGTERM to every other process, the grace for them to go (reaping those that
 * are init's), then SIGKILL to what is left; init's exit then takes the rest with it. */
static void end_the_rest(struct init *in, long long grace_ms)
{
	long long deadline = mafl_now_ms() + grace_ms;

	if (!in->pid1 || kill(-1, SIGTERM) < 0)
		return;
	for (;;) {
		long long left;
		int sig;

		reap(in);
		if (!others_left())
			return;
		left = deadline - mafl_now_ms();
		if (left <= 0)
			break;
		sig = next_signal(in, left < INIT_GRACE_POLL_MS ? (int)left : INIT_GRACE_POLL_MS);
		if (sig == SIGTERM || sig == SIGINT)
			break;
	}
	mafl_warnx("processes still running after the %lld ms grace: killing them", grace_ms);
	kill(-1, SIGKILL);
}

/* Starts CMD with the signal mask init had before it blocked its own. Dies in the child,
 * with 127 or 126 as a shell would, when CMD cannot be executed. */
static pid_t start_cmd(char **cmd, const sigset_t *old)
{
	pid_t pid = fork();

	if (pid < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot fork to start %s", cmd[0]);
	if (pid > 0)
		return pid;
	sigprocmask(SIG_SETMASK, old, NULL);
	execvp(cmd[0], cmd);
	mafl_die_errno(errno == ENOENT ? MAFP_EXIT_NOT_FOUND : MAFP_EXIT_CANNOT_EXEC,
		       "cannot execute %s", cmd[0]);
}

int mafl_cmd_init(int argc, char **argv)
{
	static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
					SIGWINCH};
	struct init in = {.sfd = -1};
	long long grace_ms = INIT_DEFAULT_GRACE_MS;
	sigset_t mask, old;
	const char *v;
	char **cmd = NULL;
	struct mafl_args a;
	size_t k;

	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_INIT], argc, argv);
	while (mafl_opt_next(&a, &v) != MAFL_OPT_END) {
		/* --grace, its one option but --help */
		if (mafl_parse_seconds_ms(v, INIT_GRACE_MAX_MS, &grace_ms) < 0)
			mafl_die(MAFP_EXIT_USAGE, "--grace takes a number of seconds up to 3600, "
				 "not '%s'", v);
	}
	if (a.i < argc)
		cmd = argv + a.i;

	in.pid1 = getpid() == 1;
	if (!in.pid1 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot become the child subreaper");
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (k = 0; k < sizeof(forwarded) / sizeof(forwarded[0]); k++)
		sigaddset(&mask, forwarded[k]);
	if (sigprocmask(SIG_BLOCK, &mask, &old) < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot block signals");
	in.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (in.sfd < 0)
		mafl_die_errno(MAFP_EXIT_LAUNCHER, "cannot create the signal descriptor");
	if (cmd)
		in.cmd = start_cmd(cmd, &old);

	for (;;) {
		int sig;

		reap(&in);
		if (in.cmd_done)
			break;
		sig = next_signal(&in, -1);
		if (sig == SIGCHLD)
			continue;
		if (in.cmd)
			kill(in.cmd, sig);
		else if (sig == SIGTERM || sig == SIGINT)
			break;
	}
	end_the_rest(&in, grace_ms);
	if (!in.cmd_done)
		return 0;
	if (WIFSIGNALED(in.cmd_status))
		return 128 + WTERMSIG(in.cmd_status);
	return WEXITSTATUS(in.cmd_status);
}
