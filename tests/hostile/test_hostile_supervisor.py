"""Nothing outside the run is within the program's reach: not its supervisor, not the host,
not any other process (limits, scheduling, priorities, signals, /proc). No process of the run
outlives it, even when its supervisor is killed; the host then reports the run lost, before
its deadline."""
import json
import os
import re
import signal
import subprocess
import time

from hostile_lib import HOST, denied, run_hostile, runs_base, run_processes

# Finds maf-host, the run's host: the one process of that name (its /proc/PID/comm is
# readable by anyone).
FIND_HOST = r'''
def host_pid():
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if open("/proc/%s/comm" % d).read().strip() == "maf-host":
                    return int(d)
            except OSError:
                pass
    return None
HOST = host_pid()
SUP = os.getppid()
'''


def test_limits_and_scheduling_of_others_out_of_reach():
    proc, rep, r = run_hostile(FIND_HOST + r'''
import resource
for who, pid in (("sup", SUP), ("host", HOST), ("init", 1)):
    attempt(who + "_nofile", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (0, 0)))
    attempt(who + "_fsize", lambda: resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, 1)))
    attempt(who + "_idle", lambda: os.sched_setscheduler(pid, os.SCHED_IDLE,
                                                         os.sched_param(0)))
    attempt(who + "_affinity", lambda: os.sched_setaffinity(pid, {0}))
    attempt(who + "_nice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
    attempt(who + "_ioprio", lambda: sc(251, 1, pid, (3 << 13)))
    attempt(who + "_kill", lambda: os.kill(pid, signal.SIGKILL))
    attempt(who + "_stop", lambda: os.kill(pid, signal.SIGSTOP))
attempt("user_nice", lambda: os.setpriority(os.PRIO_USER, 0, 19))
# The caller itself stays the caller's to change.
attempt("self_nofile", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)))
attempt("self_affinity", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
attempt("self_nice", lambda: os.setpriority(os.PRIO_PROCESS, 0, 5))
report(host=HOST)
'''.replace("import resource", "import resource, signal"))
    assert r is not None, proc.stderr
    assert r["host"], "the program could not find maf-host to attack"
    for who in ("sup", "host", "init"):
        denied(r, *(f"{who}_{a}" for a in ("nofile", "fsize", "idle", "affinity", "nice",
                                           "ioprio", "kill", "stop")))
    denied(r, "user_nice")
    assert r["self_nofile"] == r["self_affinity"] == r["self_nice"] == "ok", r
    assert rep["status"] == "exited" and rep["record"]["status"] == "exited"


def test_memory_and_environment_of_others_out_of_reach():
    secret = "maf-hostile-secret-%d" % os.getpid()
    env = dict(os.environ, MAF_HOSTILE_SECRET=secret)
    proc, rep, r = run_hostile(FIND_HOST + r'''
targets = {"sup": SUP, "host": HOST}
try:
    for d in os.listdir("/proc"):
        if d.isdigit() and open("/proc/%s/comm" % d).read().strip() == "dockerd":
            targets["dockerd"] = int(d)
except OSError:
    pass
for who, pid in targets.items():
    for f in ("environ", "auxv", "maps", "pagemap", "mem", "stack", "syscall"):
        attempt("%s_%s" % (who, f), lambda: open("/proc/%d/%s" % (pid, f), "rb").read(64))
    attempt(who + "_fd", lambda: os.listdir("/proc/%d/fd" % pid))
    attempt(who + "_root", lambda: os.listdir("/proc/%d/root/" % pid))
    attempt(who + "_ptrace", lambda: sc(101, 16, pid, 0, 0))
    attempt(who + "_vm_readv", lambda: sc(310, pid, 0, 0, 0, 0, 0))
report(targets=sorted(targets))
''', env=env)
    assert r is not None, proc.stderr
    for who in r["targets"]:
        for f in ("environ", "auxv", "maps", "pagemap", "mem", "stack", "syscall", "fd",
                  "root", "ptrace", "vm_readv"):
            denied(r, f"{who}_{f}")
    assert secret not in rep["output"]


def test_no_process_outlives_the_run_and_the_record_is_the_supervisors():
    # A daemon (double fork, new session) that tries to outlive the run and to write the
    # run's exit marker and record; the program itself exits 3.
    proc, rep, r = run_hostile(r'''
import time
ht = os.environ["PYTHONPATH"].split(":")[0]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for i in range(300):
            for name, text in (("program_exit_code", "0"),
                               ("program_exit.json", '{"status":"exited","exit_code":0}')):
                try:
                    with open(os.path.join(ht, name), "w") as f:
                        f.write(text)
                except OSError:
                    pass
            time.sleep(0.01)
        os._exit(0)
    os._exit(0)
time.sleep(0.3)
attempt("forge", lambda: open(os.path.join(ht, "program_exit_code"), "w").write("0"))
report()
sys.exit(3)
''', "--timeout", "60")
    assert r is not None, proc.stderr
    denied(r, "forge")
    assert rep["status"] == "exited" and rep["exit_code"] == 3, rep
    assert rep["record"]["exit_code"] == 3 and rep["verified"]
    assert proc.returncode == 3


def test_a_killed_supervisor_leaves_nothing_and_the_run_is_lost():
    # The supervisor is killed from outside the run (as an administrator or the OOM killer
    # might): the program goes with it, its other processes are swept, and the host reports
    # the run lost well before its deadline.
    prog = runs_base() / "sleeper.py"
    prog.write_text("import os, time\n"
                    "if os.fork() == 0:\n"
                    "    os.setsid()\n"
                    "    time.sleep(600)\n"
                    "time.sleep(600)\n")
    env = dict(os.environ, TMPDIR=str(runs_base()))
    host = subprocess.Popen([str(HOST), "run", "--verbose", "--json", "--timeout", "300",
                             str(prog)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    try:
        line = host.stderr.readline().decode()
        m = re.search(r"started \(pid (\d+), supervisor (\d+)\)", line)
        assert m, line
        sup = int(m.group(2))
        time.sleep(0.5)
        assert run_processes(sup), "the run's processes are not there to kill"
        os.kill(sup, signal.SIGKILL)
        out, err = host.communicate(timeout=120)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        prog.unlink()
    rep = json.loads(out)
    assert rep["status"] == "lost", (rep, err)
    assert host.returncode == 125
    assert "the run is lost" in err.decode()
    assert not run_processes(sup)


def test_the_witness_in_the_session_is_out_of_reach():
    # The run's witness sits in the program's own process group (so that a host's kill of
    # the session ends it, and the run leaves nothing more behind). The program finds it
    # there and tries to end it, stop it, move it out of the group, renice it away from
    # the group, and to kill its own whole group: the witness survives all of it and
    # writes the record, which says what the program's own group kill did to it.
    proc, rep, r = run_hostile(r'''
import signal, time
me = os.getpid()
members = []
for d in os.listdir("/proc"):
    if d.isdigit() and int(d) != me:
        try:
            f = open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(f[2]) == os.getpgrp():
            members.append(int(d))
w = members[0] if members else 0
attempt("kill", lambda: os.kill(w, signal.SIGKILL))
attempt("stop", lambda: os.kill(w, signal.SIGSTOP))
attempt("setpgid", lambda: os.setpgid(w, w))
attempt("pidfd_kill", lambda: signal.pidfd_send_signal(os.pidfd_open(w), signal.SIGKILL))
attempt("ptrace", lambda: sc(101, 16, w, 0, 0))
attempt("environ", lambda: open("/proc/%d/environ" % w, "rb").read(64))
# The group's priority as a whole stays the program's to set, as with a shell in the group.
attempt("group_nice", lambda: os.setpriority(os.PRIO_PGRP, 0, 0))
report(members=len(members))
sys.stdout.flush()
os.killpg(0, signal.SIGKILL)
''', "--timeout", "60")
    assert r is not None, proc.stderr
    assert r["members"] == 1, r
    denied(r, "kill", "stop", "setpgid", "pidfd_kill", "ptrace", "environ",
           allowed=("EPERM", "EACCES", "ESRCH"))
    assert r["group_nice"] == "ok", r
    # The program killed its group, itself included: the record is there, written by the
    # witness, and says so.
    assert rep["status"] == "signaled", rep
    assert rep["record"]["signal"] == 9 and rep["verified"], rep
