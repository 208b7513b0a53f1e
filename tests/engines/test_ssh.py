"""An engine through ssh, as the docker CLI reaches one (ssh://[USER@]HOST[:PORT][/SOCKET]:
`ssh -l USER -p PORT -o ConnectTimeout=30 -T -- HOST 'docker system dial-stdio'`), each
connection an ssh process of its own; what ssh says is the sentence of a failure."""
import glob
import os
import subprocess
import time

import pytest

from conftest import absent, host_new

PREFIX = "maf-host run: "


@pytest.fixture(autouse=True)
def no_directory_left():
    """Each connection's listener lives in a directory of its own under /tmp, removed once
    ssh has connected: none is left by maf-host, which ends at once on these failures."""
    before = set(glob.glob("/tmp/maf-ssh-*"))
    yield
    assert set(glob.glob("/tmp/maf-ssh-*")) <= before


def url(ssh, tail=""):
    return f"ssh://root@127.0.0.1:{ssh['port']}{tail}"


def ssh_processes(port):
    out = subprocess.run(["pgrep", "-f", f"-p {port} "], capture_output=True, text=True)
    return [p for p in out.stdout.split()]


def test_the_engine_is_reached_through_ssh(ssh):
    assert host_new(ssh["env"]) == absent(url(ssh))
    # Every ssh it started has ended and been reaped with maf-host.
    assert not ssh_processes(ssh["port"])


def test_a_socket_named_on_the_far_side(ssh):
    env = {**ssh["env"], "DOCKER_HOST": url(ssh, "/var/run/docker.sock")}
    assert host_new(env) == absent(url(ssh, "/var/run/docker.sock"))
    env = {**ssh["env"], "DOCKER_HOST": url(ssh, "/nonexistent.sock")}
    rc, line = host_new(env)
    assert rc == 125
    assert line.startswith(f"{PREFIX}cannot reach the Docker engine at "
                           f"{url(ssh, '/nonexistent.sock')}: ssh says: "), line
    assert "/nonexistent.sock" in line.split("ssh says: ", 1)[1]


def test_a_key_the_far_side_does_not_take(ssh):
    env = {**ssh["env"], "MAF_SSH_CONFIG": str(ssh["dir"] / "other_config")}
    assert host_new(env) == (125, f"{PREFIX}cannot reach the Docker engine at {url(ssh)}: ssh "
                                  "says: root@127.0.0.1: Permission denied (publickey).")


def test_a_host_key_that_is_not_known(ssh, tmp_path):
    cfg = (ssh["dir"] / "ssh_config").read_text().replace(
        str(ssh["dir"] / "known_hosts"), str(tmp_path / "known_hosts"))
    (tmp_path / "config").write_text(cfg)
    env = {**ssh["env"], "MAF_SSH_CONFIG": str(tmp_path / "config")}
    assert host_new(env) == (125, f"{PREFIX}cannot reach the Docker engine at {url(ssh)}: ssh "
                                  "says: Host key verification failed.")


def test_no_ssh_to_start(ssh, tmp_path):
    env = {**ssh["env"], "PATH": str(tmp_path)}
    assert host_new(env) == (125, f"{PREFIX}cannot start ssh to reach the Docker engine: No "
                                  f"such file or directory (for {url(ssh)})")


def test_nobody_listening(ssh):
    import engines
    port = engines.free_port()
    env = {**ssh["env"], "DOCKER_HOST": f"ssh://root@127.0.0.1:{port}"}
    rc, line = host_new(env)
    assert (rc, line) == (125, f"{PREFIX}cannot reach the Docker engine at "
                               f"ssh://root@127.0.0.1:{port}: ssh says: ssh: connect to host "
                               f"127.0.0.1 port {port}: Connection refused")
