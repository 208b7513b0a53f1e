"""Engines the tests start, on this machine's loopback alone:
- tls: a dockerd of its own on 127.0.0.1, refusing any client without a certificate its CA
  signed (--tlsverify), with certificates made here by openssl: the CA, the engine's (for
  127.0.0.1 and localhost), a client's, and a stranger CA with a client of its own;
- ssh: an sshd on 127.0.0.1 taking one key, through which `ssh HOST docker system
  dial-stdio` reaches this machine's own engine, as the docker CLI's ssh:// does; `ssh` is
  a wrapper first in PATH that gives the real one this sshd's config (key, known host);
- podman: Debian's Podman as root, its Docker-compatible API served by `podman system
  service` on a unix socket of its own, with storage of its own (overlay) and a
  containers.conf of its own (cgroupfs, events to a file: no systemd here; descriptor and
  process limits runc can set);
- podman-rootless: the same service run by a user of its own (made here, removed after),
  with subordinate uid and gid ranges that hold the launcher's run uids (2^20 + pid, so
  2^20 + pid_max of them at least), its runtime directory (XDG_RUNTIME_DIR) and storage in
  a directory of its own.
Each yields the environment a client reaches it with (DOCKER_HOST and TLS's variables, or
PATH), and on leaving stops what it started and removes what it made.

As a command: python3 tests/engines/engines.py tls|ssh|podman|podman-rootless -- COMMAND...
runs COMMAND in that environment (how make engines runs tests/docker against each) and
exits with its status."""
import contextlib
import io
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

DOCKERD = shutil.which("dockerd") or "/usr/sbin/dockerd"
PODMAN = shutil.which("podman") or "/usr/bin/podman"
SSHD = "/usr/sbin/sshd"
SSH = shutil.which("ssh") or "/usr/bin/ssh"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def missing(kind):
    """Why kind cannot be started here, or None."""
    if shutil.which("openssl") is None:
        return "no openssl (make setup installs it)"
    if kind == "tls" and not os.path.exists(DOCKERD):
        return "no dockerd (make setup installs docker.io)"
    if kind == "podman-rootless":
        for tool in ("newuidmap", "newgidmap", "useradd", "userdel", "runuser"):
            if shutil.which(tool) is None:
                return f"no {tool} for a rootless Podman (make setup installs uidmap)"
    if kind.startswith("podman"):
        if not os.path.exists(PODMAN):
            return "no podman (make setup installs it)"
        if shutil.which("docker") is None:
            return "no docker CLI to reach it with"
    if kind == "ssh":
        if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None:
            return "no sshd (make setup installs openssh-server)"
        if shutil.which("docker") is None:
            return "no docker CLI for dial-stdio"
    if os.geteuid() != 0:
        return "these engines are started as root"
    return None


def _run(*args, **kw):
    subprocess.run(args, check=True, capture_output=True, timeout=120, **kw)


def make_certs(d: Path):
    """The PKI of the tls engine, in d: ca.pem, server-{cert,key}.pem, and client dirs
    (ca.pem, cert.pem, key.pem as DOCKER_CERT_PATH wants them): client/ (signed by the CA),
    stranger/ (a certificate another CA signed), nocert/ (the CA alone), wrongca/ (a CA
    that did not sign the engine's certificate, with the good client pair)."""
    d.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def ca(name):
        _run("openssl", "req", "-x509", *ec, "-keyout", str(d / f"{name}-key.pem"), "-out",
             str(d / f"{name}.pem"), "-days", "2", "-subj", f"/CN=maf-launch test {name}")

    def signed(name, ca_name, ext):
        (d / f"{name}.ext").write_text(ext)
        _run("openssl", "req", *ec, "-keyout", str(d / f"{name}-key.pem"), "-out",
             str(d / f"{name}.csr"), "-subj", f"/CN=maf-launch test {name}")
        _run("openssl", "x509", "-req", "-in", str(d / f"{name}.csr"), "-CA",
             str(d / f"{ca_name}.pem"), "-CAkey", str(d / f"{ca_name}-key.pem"),
             "-CAcreateserial", "-out", str(d / f"{name}-cert.pem"), "-days", "2",
             "-extfile", str(d / f"{name}.ext"))

    ca("ca")
    ca("otherca")
    signed("server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                           "extendedKeyUsage=serverAuth\n")
    signed("client", "ca", "extendedKeyUsage=clientAuth\n")
    signed("strangerclient", "otherca", "extendedKeyUsage=clientAuth\n")
    for sub, ca_file, pair in (("client", "ca", "client"), ("stranger", "ca", "strangerclient"),
                               ("nocert", "ca", None), ("wrongca", "otherca", "client")):
        (d / sub).mkdir(exist_ok=True)
        shutil.copy(d / f"{ca_file}.pem", d / sub / "ca.pem")
        if pair:
            shutil.copy(d / f"{pair}-cert.pem", d / sub / "cert.pem")
            shutil.copy(d / f"{pair}-key.pem", d / sub / "key.pem")
    for p in d.rglob("*key.pem"):
        p.chmod(0o600)


def _wait(ok, seconds, what, log):
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if ok():
            return
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RuntimeError(f"{what} did not come up within {seconds} s:\n{tail}")


def _answers(proc, log, what, argv=("docker",), env=None, tail=2000):
    """The check _wait makes of a service just started: it has not exited (RuntimeError with
    its log's last tail characters, or all of it), and the docker CLI (argv, env) gets its
    version."""
    def up():
        if proc.poll() is not None:
            text = log.read_text(errors="replace")
            raise RuntimeError(f"{what} exited {proc.returncode}:\n"
                               f"{text[-tail:] if tail else text}")
        r = subprocess.run([*argv, "version", "--format", "{{.Server.APIVersion}}"],
                           capture_output=True, timeout=30, env=env)
        return r.returncode == 0
    return up


def copy_image(tag, src_env, dst_env):
    """`docker save TAG | docker load`: tag from the engine src_env reaches into the one
    dst_env reaches. RuntimeError, with docker's words, when either fails."""
    save = subprocess.Popen(["docker", "save", tag], env=src_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        load = subprocess.run(["docker", "load", "-q"], env=dst_env, stdin=save.stdout,
                              capture_output=True, timeout=600)
    finally:
        save.stdout.close()
        save_err = save.stderr.read()
        save.wait(timeout=600)
    if save.returncode != 0:
        raise RuntimeError(f"docker save {tag} exited {save.returncode}: "
                           f"{save_err.decode(errors='replace').strip()}")
    if load.returncode != 0:
        raise RuntimeError(f"docker load of {tag} into {dst_env.get('DOCKER_HOST')} exited "
                           f"{load.returncode}: {load.stderr.decode(errors='replace').strip()}")


def image_file(tag, path, env=None):
    """The bytes of path in the image tag (a container made from it, never started, and
    removed), on the engine env reaches. RuntimeError, with docker's words, when a docker
    command fails."""
    def docker(*args):
        proc = subprocess.run(["docker", *args], capture_output=True, timeout=300, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)} exited {proc.returncode}: "
                               f"{proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout
    cid = docker("create", "--network", "none", tag).decode().strip()
    try:
        tar = docker("cp", f"{cid}:{path}", "-")
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=300, env=env)
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return t.extractfile(t.next()).read()


def _stop(proc, seconds=30):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def tls_engine():
    """A dockerd on 127.0.0.1:PORT with --tlsverify (and on 127.0.0.2:PORT2, a name its
    certificate does not hold); yields a dict: env (for a client with the good
    certificate), port, port2, certs (the dir of make_certs), sock (its unix socket, for
    the suite's own set-up alone)."""
    d = Path(tempfile.mkdtemp(prefix="/tmp/maf-tls-"))
    proc = None
    try:
        make_certs(d / "certs")
        port, port2 = free_port(), free_port()
        log = d / "dockerd.log"
        sock = d / "docker.sock"
        proc = subprocess.Popen(
            [DOCKERD, "--data-root", str(d / "data"), "--exec-root", str(d / "x"),
             "--pidfile", str(d / "dockerd.pid"), "-H", f"unix://{sock}",
             "-H", f"tcp://127.0.0.1:{port}", "-H", f"tcp://127.0.0.2:{port2}", "--tlsverify",
             "--tlscacert", str(d / "certs/ca.pem"), "--tlscert", str(d / "certs/server-cert.pem"),
             "--tlskey", str(d / "certs/server-key.pem"), "--bridge", "none",
             "--iptables=false", "--ip-masq=false", "--containerd-namespace", "maf-tls",
             "--containerd-plugins-namespace", "maf-tls-plugins", "--log-level", "warn"],
            stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)

        _wait(_answers(proc, log, "dockerd", ("docker", "-H", f"unix://{sock}")), 90,
              "the TLS dockerd", log)
        env = {**os.environ, "DOCKER_HOST": f"tcp://127.0.0.1:{port}",
               "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(d / "certs/client")}
        env.pop("DOCKER_CONTEXT", None)
        yield {"env": env, "port": port, "port2": port2, "certs": d / "certs", "sock": sock,
               "dir": d}
    finally:
        if proc is not None:
            # Its containers first: they would hold the data root's mounts.
            subprocess.run(f"docker -H unix://{d}/docker.sock ps -aq | xargs -r docker -H "
                           f"unix://{d}/docker.sock rm -f", shell=True, capture_output=True,
                           timeout=120)
            _stop(proc)
        subprocess.run(["umount", "-R", "-l", str(d / "data")], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def ssh_engine():
    """An sshd on 127.0.0.1:PORT for root with one key; yields a dict: env (PATH with the
    ssh wrapper first, DOCKER_HOST=ssh://root@127.0.0.1:PORT), port, dir, and bindir."""
    d = Path(tempfile.mkdtemp(prefix="/tmp/maf-ssh-"))
    proc = None
    try:
        port = free_port()
        for key in ("host_key", "client_key", "other_key"):
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key))
        shutil.copy(d / "client_key.pub", d / "authorized_keys")
        (d / "sshd_config").write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n"
            f"AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            f"PidFile {d}/sshd.pid\nStrictModes no\nLogLevel ERROR\n"
            # Each connection is a session: many streams at once are many logins at once.
            "MaxStartups 200\nMaxSessions 200\n")
        host_pub = (d / "host_key.pub").read_text().split()
        (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
        for name, key in (("ssh_config", "client_key"), ("other_config", "other_key")):
            (d / name).write_text(
                f"Host *\n  IdentityFile {d}/{key}\n  IdentitiesOnly yes\n"
                f"  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking yes\n"
                "  BatchMode yes\n  LogLevel ERROR\n")
        bindir = d / "bin"
        bindir.mkdir()
        wrapper = bindir / "ssh"
        wrapper.write_text(f"#!/bin/sh\nexec {SSH} -F \"${{MAF_SSH_CONFIG:-{d}/ssh_config}}\""
                           " \"$@\"\n")
        wrapper.chmod(0o755)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        log = d / "sshd.log"
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
                                stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                                start_new_session=True)
        env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
               "DOCKER_HOST": f"ssh://root@127.0.0.1:{port}"}
        for k in ("DOCKER_TLS_VERIFY", "DOCKER_TLS", "DOCKER_CERT_PATH", "DOCKER_CONTEXT"):
            env.pop(k, None)

        _wait(_answers(proc, log, "sshd", env=env, tail=None), 30, "sshd", log)
        yield {"env": env, "port": port, "dir": d, "bindir": bindir}
    finally:
        if proc is not None:
            _stop(proc, 10)
        shutil.rmtree(d, ignore_errors=True)


def _podman_conf(d: Path, rootless: bool) -> Path:
    """containers.conf for the service, in d. As root, Podman gives a container the
    kernel's largest descriptor and process limits, which runc cannot set above the
    service's own (EPERM, "error setting rlimits"): the descriptor limit here instead, as
    dockerd's containers inherit dockerd's, and a process limit of 32,768 at most (runc was
    refused this machine's own, 96,362, too). Rootless, a container keeps the user's."""
    limits = []
    for name, which, cap in (("nofile", resource.RLIMIT_NOFILE, None),
                             ("nproc", resource.RLIMIT_NPROC, 32768)):
        soft, hard = resource.getrlimit(which)
        soft = hard if soft == resource.RLIM_INFINITY else soft
        if not rootless and (hard != resource.RLIM_INFINITY or cap):
            top = min(x for x in (soft, hard, cap) if x is not None and x >= 0)
            limits.append(f'"{name}={top}:{top}"')
    conf = d / "containers.conf"
    conf.write_text((f'[containers]\ndefault_ulimits = [{", ".join(limits)}]\n' if limits
                     else "") +
                    '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
                    f'events_logfile_path = "{d}/events.log"\n')
    return conf


ROOTLESS_USER = "maf-podman"
SUBID_FILES = ("/etc/subuid", "/etc/subgid")


def _subid_range() -> tuple:
    """(first, count) of a subordinate range for the rootless user: count holds every id a
    run takes (the launcher's run uids are 2^20 + pid) and more; first lies past every range
    /etc/subuid and /etc/subgid hold already."""
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    count = -(-((1 << 20) + pid_max + 1) // 65536) * 65536
    first = 100000
    for f in SUBID_FILES:
        if os.path.exists(f):
            for line in Path(f).read_text().splitlines():
                parts = line.split(":")
                if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                    first = max(first, int(parts[1]) + int(parts[2]))
    return first, count


@contextlib.contextmanager
def _rootless_user(d: Path):
    """A system user of its own for a rootless Podman, with subordinate ranges (uid and
    gid) and d its home; yields (uid, gid). On leaving: its processes ended (the rootless
    pause process holds its user namespace), its ranges and the user removed."""
    made = subprocess.run(["id", "-u", ROOTLESS_USER], capture_output=True).returncode != 0
    added = None
    try:
        if made:
            _run("useradd", "--system", "--no-create-home", "--home-dir", str(d / "home"),
                 "--shell", "/usr/sbin/nologin", ROOTLESS_USER)
        uid = int(subprocess.run(["id", "-u", ROOTLESS_USER], capture_output=True,
                                 check=True).stdout)
        gid = int(subprocess.run(["id", "-g", ROOTLESS_USER], capture_output=True,
                                 check=True).stdout)
        # A user left by a run that was killed: its pause process and ranges first.
        subprocess.run(["pkill", "-KILL", "-U", str(uid)], capture_output=True)
        _drop_subids(uid)
        first, count = _subid_range()
        added = f"{uid}:{first}:{count}"
        for f in SUBID_FILES:
            with open(f, "a") as fh:
                fh.write(added + "\n")
        yield uid, gid
    finally:
        if added:
            subprocess.run(["pkill", "-KILL", "-U", str(uid)], capture_output=True)
            _drop_subids(uid)
        if made:
            subprocess.run(["userdel", ROOTLESS_USER], capture_output=True)


def _drop_subids(uid: int) -> None:
    for f in SUBID_FILES:
        if os.path.exists(f):
            lines = Path(f).read_text().splitlines(keepends=True)
            kept = [x for x in lines if x.split(":")[0] not in (str(uid), ROOTLESS_USER)]
            if kept != lines:
                Path(f).write_text("".join(kept))


@contextlib.contextmanager
def podman_engine(rootless: bool = False):
    """`podman system service` on a unix socket in a directory of its own, with its own
    storage (--root, --runroot) and containers.conf; as root, or rootless as a user of its
    own (_rootless_user). Yields a dict: env (DOCKER_HOST unix://SOCKET, CONTAINERS_CONF),
    sock, dir, rootless. On leaving: its containers removed, the service stopped, conmon
    processes it left ended, its mounts undone, the directory removed."""
    d = Path(tempfile.mkdtemp(prefix="/tmp/maf-podman-"))
    proc = None
    with contextlib.ExitStack() as stack:
        as_user = []
        penv = dict(os.environ)
        if rootless:
            uid, gid = stack.enter_context(_rootless_user(d))
            for sub in ("home", "run"):
                (d / sub).mkdir(mode=0o700)
            for p in (d, d / "home", d / "run"):
                os.chown(p, uid, gid)
            # runuser: no login, no shell (the user's is nologin); the environment given.
            penv = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(d / "home"),
                    "XDG_RUNTIME_DIR": str(d / "run"), "USER": ROOTLESS_USER}
            as_user = ["runuser", "-u", ROOTLESS_USER, "--"]
        conf = _podman_conf(d, rootless)
        penv["CONTAINERS_CONF"] = str(conf)
        sock = d / "run" / "podman.sock" if rootless else d / "podman.sock"
        base = as_user + [PODMAN, "--root", str(d / "root"), "--runroot",
                          str(d / "runroot"), "--storage-driver", "overlay"]
        try:
            log = d / "service.log"
            proc = subprocess.Popen(base + ["system", "service", "--time=0",
                                            f"unix://{sock}"],
                                    stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                                    env=penv, start_new_session=True, cwd=d)
            env = {**os.environ, "DOCKER_HOST": f"unix://{sock}",
                   "CONTAINERS_CONF": str(conf)}
            for k in ("DOCKER_TLS_VERIFY", "DOCKER_TLS", "DOCKER_CERT_PATH",
                      "DOCKER_CONTEXT"):
                env.pop(k, None)

            _wait(_answers(proc, log, "podman system service", env=env), 60,
                  "podman system service", log)
            yield {"env": env, "sock": sock, "dir": d, "rootless": rootless}
        finally:
            if proc is not None:
                subprocess.run(base + ["rm", "-af", "-t", "0"], capture_output=True,
                               env=penv, timeout=120, cwd=d)
                _stop(proc)
                # A container's conmon outlives the service; each names the run root.
                subprocess.run(["pkill", "-KILL", "-f", f"conmon.*{d}/"],
                               capture_output=True)
                subprocess.run(base + ["system", "reset", "-f"], capture_output=True,
                               env=penv, timeout=120, cwd=d)
            for _ in range(3):
                mounts = [line.split()[4] for line in open("/proc/self/mountinfo")
                          if line.split()[4].startswith(f"{d}/")]
                for m in sorted(mounts, key=len, reverse=True):
                    subprocess.run(["umount", "-l", m], capture_output=True)
            shutil.rmtree(d, ignore_errors=True)


ENGINES = {"tls": tls_engine, "ssh": ssh_engine, "podman": podman_engine,
           "podman-rootless": lambda: podman_engine(rootless=True)}


def main(argv):
    if len(argv) < 3 or argv[0] not in ENGINES or argv[1] != "--":
        print("usage: engines.py tls|ssh|podman|podman-rootless -- COMMAND...",
              file=sys.stderr)
        return 2
    why = missing(argv[0])
    if why:
        if os.environ.get("REQUIRE_DOCKER") == "1":
            print(f"engines.py: REQUIRE_DOCKER=1, but the {argv[0]} engine cannot be "
                  f"started: {why}", file=sys.stderr)
            return 1
        print(f"engines.py: the {argv[0]} engine is skipped: {why}", file=sys.stderr)
        return 0
    with ENGINES[argv[0]]() as e:
        print(f"engines.py: {argv[0]} engine up, DOCKER_HOST={e['env']['DOCKER_HOST']}",
              file=sys.stderr, flush=True)
        return subprocess.run(argv[2:], env=e["env"]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
