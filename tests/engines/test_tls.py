"""An engine over TCP with TLS, as the docker CLI reaches one: DOCKER_HOST,
DOCKER_TLS_VERIFY, DOCKER_TLS and DOCKER_CERT_PATH, and contexts; each certificate or
connection error with its one sentence, from maf-host and from mafhost alike."""
import asyncio
import os
import socket
import subprocess
import threading

import pytest

from conftest import absent, host_new

PREFIX = "maf-host run: "


def where(tls, host="127.0.0.1"):
    return f"tcp://{host}:{tls['port']}"


def with_certs(tls, sub, **more):
    env = {**tls["env"], "DOCKER_CERT_PATH": str(tls["certs"] / sub), **more}
    return {k: v for k, v in env.items() if v is not None}


def test_the_engine_is_reached_with_the_clients_certificate(tls):
    assert host_new(tls["env"]) == absent(where(tls))
    # By name too: the engine's certificate is for 127.0.0.1 and localhost.
    assert host_new({**tls["env"], "DOCKER_HOST": f"tcp://localhost:{tls['port']}"}) == \
        absent(f"tcp://localhost:{tls['port']}")


def test_an_engine_that_wants_a_certificate_refuses_a_client_without_one(tls):
    rc, line = host_new(with_certs(tls, "nocert"))
    assert rc == 125
    assert line.startswith(f"{PREFIX}the Docker engine at {where(tls)} refused the TLS "
                           "connection: it wants a client certificate it trusts (none was "
                           "sent): "), line


def test_a_certificate_another_ca_signed_is_refused(tls):
    rc, line = host_new(with_certs(tls, "stranger"))
    cert = tls["certs"] / "stranger" / "cert.pem"
    assert rc == 125
    # TLS 1.3: the engine refuses it with an alert, or closes the connection under the
    # first request, whichever the client sees first.
    assert (line.startswith(f"{PREFIX}the Docker engine at {where(tls)} refused the TLS "
                            f"connection: it wants a client certificate it trusts ({cert}): ")
            or line.startswith(f"{PREFIX}the Docker engine at {where(tls)} closed the TLS "
                               "connection as it began, as an engine with --tlsverify does "
                               f"to a client certificate its CA did not sign ({cert}): ")), line


def test_an_engine_whose_certificate_another_ca_signed_is_not_trusted(tls):
    rc, line = host_new(with_certs(tls, "wrongca"))
    assert (rc, line) == (125, f"{PREFIX}the Docker engine at {where(tls)} is not the one its "
                               "certificate should show: SSL certificate problem: unable to "
                               "get local issuer certificate (checked against "
                               f"{tls['certs']}/wrongca/ca.pem)")


def test_an_engine_by_a_name_its_certificate_does_not_hold(tls):
    # 127.0.0.2 is this machine, but not a name in the engine's certificate.
    env = {**tls["env"], "DOCKER_HOST": f"tcp://127.0.0.2:{tls['port2']}"}
    rc, line = host_new(env)
    assert rc == 125
    assert line.startswith(f"{PREFIX}the Docker engine at tcp://127.0.0.2:{tls['port2']} is "
                           "not the one its certificate should show: "), line
    assert "127.0.0.2" in line.split("show: ", 1)[1]


def test_without_verification_another_cas_engine_is_taken(tls):
    # DOCKER_TLS alone: TLS, the engine's certificate not verified (the CLI's --tls).
    env = with_certs(tls, "wrongca", DOCKER_TLS_VERIFY=None, DOCKER_TLS="1")
    assert host_new(env) == absent(where(tls))


def test_plain_http_to_the_tls_engine(tls):
    env = with_certs(tls, "client", DOCKER_TLS_VERIFY=None)
    assert host_new(env) == (125, f"{PREFIX}the Docker engine at {where(tls)} speaks TLS, and "
                                  "this client does not: set DOCKER_TLS_VERIFY=1 (with ca.pem, "
                                  "cert.pem and key.pem in DOCKER_CERT_PATH), or DOCKER_TLS=1")


def test_no_ca_certificate(tls, tmp_path):
    env = {**tls["env"], "DOCKER_CERT_PATH": str(tmp_path)}
    assert host_new(env) == (125, f"{PREFIX}TLS to the Docker engine at {where(tls)} needs the "
                                  f"CA certificate {tmp_path}/ca.pem: No such file or "
                                  "directory")


def test_a_key_that_is_not_one(tls, tmp_path):
    for name in ("ca.pem", "cert.pem"):
        (tmp_path / name).write_bytes((tls["certs"] / "client" / name).read_bytes())
    (tmp_path / "key.pem").write_text("not a key\n")
    rc, line = host_new({**tls["env"], "DOCKER_CERT_PATH": str(tmp_path)})
    assert rc == 125
    assert line.startswith(f"{PREFIX}the client certificate {tmp_path}/cert.pem or its key "
                           f"{tmp_path}/key.pem for the Docker engine at {where(tls)} cannot "
                           "be used: "), line


def test_tls_to_a_plain_listener(tls):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]

    def answer():
        try:
            c, _ = srv.accept()
        except OSError:
            return
        c.recv(4096)
        c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        c.close()
    threading.Thread(target=answer, daemon=True).start()
    env = {**tls["env"], "DOCKER_HOST": f"tcp://127.0.0.1:{port}"}
    rc, line = host_new(env)
    srv.close()
    assert rc == 125
    assert line.startswith(f"{PREFIX}the Docker engine at tcp://127.0.0.1:{port} does not "
                           "speak TLS (unset DOCKER_TLS_VERIFY and DOCKER_TLS for plain TCP): "), \
        line


# ---- contexts, as `docker context` makes them -----------------------------------------------

@pytest.fixture
def config(tls, tmp_path):
    """A docker CLI configuration of the test's own, with a context for the engine (its
    certificates stored by the CLI) and one that skips verification with none."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DOCKER_")}
    env["DOCKER_CONFIG"] = str(tmp_path / "docker-config")
    c = tls["certs"] / "client"
    subprocess.run(["docker", "context", "create", "maf-tls", "--docker",
                    f"host={where(tls)},ca={c}/ca.pem,cert={c}/cert.pem,key={c}/key.pem"],
                   env=env, check=True, capture_output=True, timeout=60)
    subprocess.run(["docker", "context", "create", "maf-noverify", "--docker",
                    f"host={where(tls)},skip-tls-verify=true"], env=env, check=True,
                   capture_output=True, timeout=60)
    return env


def test_a_context_by_docker_context(tls, config):
    # The CLI itself reaches the engine through it.
    cli = subprocess.run(["docker", "--context", "maf-tls", "version", "--format",
                          "{{.Server.APIVersion}}"], env=config, capture_output=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert host_new({**config, "DOCKER_CONTEXT": "maf-tls"}) == absent(where(tls))


def test_the_current_context(tls, config):
    subprocess.run(["docker", "context", "use", "maf-tls"], env=config, check=True,
                   capture_output=True, timeout=60)
    assert host_new(config) == absent(where(tls))
    # DOCKER_HOST still comes before it, as with the CLI.
    rc, line = host_new({**config, "DOCKER_HOST": "unix:///nonexistent.sock"})
    assert line == (f"{PREFIX}cannot reach the Docker engine at /nonexistent.sock: No such "
                    "file or directory")


def test_a_context_that_skips_verification_still_speaks_tls(tls, config):
    rc, line = host_new({**config, "DOCKER_CONTEXT": "maf-noverify"})
    assert rc == 125
    assert f"the Docker engine at {where(tls)} refused the TLS connection: it wants a client " \
           "certificate it trusts (none was sent)" in line, line


def test_a_context_that_is_not_there(config):
    rc, line = host_new({**config, "DOCKER_CONTEXT": "maf-absent"})
    assert (rc, line) == (125, f"{PREFIX}there is no Docker context 'maf-absent' "
                               f"(DOCKER_CONTEXT) in {config['DOCKER_CONFIG']}/contexts")


def test_the_default_context_is_the_default_socket(config, tmp_path):
    rc, line = host_new({**config, "DOCKER_CONTEXT": "default"})
    # The machine's own engine: no such container there either.
    assert (rc, line) == absent("/var/run/docker.sock")


def test_mafhost_says_what_maf_host_says(tls):
    """One source of sentences: DockerSandbox is the library's backend."""
    import mafhost
    from conftest import BUILD
    mafhost.load(str(BUILD / f"libmafhost.so.{mafhost.__version__}"))
    saved = {k: os.environ.get(k) for k in ("DOCKER_HOST", "DOCKER_TLS_VERIFY",
                                             "DOCKER_CERT_PATH")}
    for sub in ("client", "nocert", "wrongca"):
        env = with_certs(tls, sub)
        _, line = host_new(env)
        os.environ.update({k: env[k] for k in saved})
        try:
            sb = mafhost.DockerSandbox("maf-engines-test-absent")
            with pytest.raises(mafhost.BackendError) as e:
                asyncio.run(sb.check())
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        assert PREFIX + str(e.value) == line
    # host= as the option, without the environment.
    sb = mafhost.DockerSandbox("maf-engines-test-absent", host="tcp://127.0.0.1:1")
    with pytest.raises(mafhost.BackendError) as e:
        asyncio.run(sb.check())
    assert str(e.value) == "cannot reach the Docker engine at tcp://127.0.0.1:1: Connection refused"
