"""The processes of a pid namespace, as this machine's /proc shows them: shared by the tests
of maf-launch init as a namespace's PID 1 (test_init.py) and those of the images, whose
containers are such namespaces (tests/images/conftest.py)."""
import os


def processes_beside(init, ns):
    """{pid on this machine: (state, command line)} of every process in the pid namespace ns
    (the link /proc/PID/ns/pid of its members), but init."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == init:
            continue
        try:
            if os.readlink(f"/proc/{d}/ns/pid") != ns:
                continue
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # gone, or not one of ours (so not in that namespace)
        out[int(d)] = (state, cmd)
    return out
