"""The image maf-sandbox's own shell launcher runs in: maf-launch/python-noshell with a
shell added (Debian's busybox-static, linked as the commands upstream's launcher and its host
use: sh, mkdir, mv, printf, setsid, kill and rm; and coreutils' nohup, which Debian's
busybox lacks). Made on this machine, where those binaries are, from outside the Debian 13
root the upstream tests run in.

    shell_image.py build TAG BASE    # prints TAG once built
    shell_image.py remove TAG
"""
import os
import subprocess
import sys
import tarfile
import tempfile

BUSYBOX = "/bin/busybox"
APPLETS = ("sh", "mkdir", "mv", "printf", "setsid", "kill", "rm")
NOHUP = "/usr/bin/nohup"


class Failed(Exception):
    """The image could not be made; str() says why."""


def build(tag, base):
    """Builds tag FROM base with the shell added; Failed with the reason."""
    for path, pkg in ((BUSYBOX, "busybox-static"), (NOHUP, "coreutils")):
        if not os.path.isfile(path):
            raise Failed(f"{path} is missing (Debian's {pkg}; make setup installs it)")
    interp = subprocess.run(["readelf", "-l", BUSYBOX], capture_output=True, text=True)
    if interp.returncode != 0 or "INTERP" in interp.stdout:
        raise Failed(f"{BUSYBOX} is not a static binary (the image needs busybox-static's, "
                     "not busybox's)")
    with tempfile.TemporaryDirectory(prefix="maf-shell-image-") as ctx:
        with tarfile.open(os.path.join(ctx, "shell.tar"), "w") as tar:
            for path in (BUSYBOX, NOHUP):
                info = tar.gettarinfo(path, arcname="usr/bin/" + os.path.basename(path))
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                info.mode = 0o755
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            for applet in APPLETS:
                info = tarfile.TarInfo("usr/bin/" + applet)
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, "busybox", 0o777
                tar.addfile(info)
        with open(os.path.join(ctx, "Dockerfile"), "w") as f:
            f.write("ARG BASE\nFROM ${BASE}\nADD shell.tar /\n")
        proc = subprocess.run(["docker", "build", "-q", "--build-arg", f"BASE={base}", "-t",
                               tag, ctx], capture_output=True, text=True)
        if proc.returncode != 0:
            raise Failed(f"docker build of {tag} failed: {proc.stderr.strip()}")
    return tag


def remove(tag):
    subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "build":
        try:
            print(build(sys.argv[2], sys.argv[3]))
        except Failed as e:
            sys.exit(f"shell_image.py: {e}")
    elif len(sys.argv) == 3 and sys.argv[1] == "remove":
        remove(sys.argv[2])
    else:
        sys.exit(__doc__)
