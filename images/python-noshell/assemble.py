#!/usr/bin/python3
"""Assembles the root filesystem of the maf-launch/python-noshell image as one tar, which its
Dockerfile ADDs to an image built FROM scratch; the Dockerfile adds maf-launch.

    usage: assemble.py OUT.tar

What goes in, all from this machine's Debian packages, each file as it is installed here:
- the interpreter (/usr/bin/python3.11, and the python3 link to it) and the standard
  library of python3.11-minimal, libpython3.11-minimal and libpython3.11-stdlib (as `dpkg -L`
  lists them), with the byte code Debian compiled for it, less what a program run by
  maf-launch cannot use or does not need: the test suites, IDLE, Tk, turtle, curses and
  readline (no terminal), ensurepip and lib2to3, the test and experimental extension
  modules, and Debian's sitecustomize (an apport hook);
- the shared libraries the interpreter and the kept extension modules need, resolved with
  ldd, the dynamic loader, every symbolic link on their way (/lib -> usr/lib...), and the
  copyright file of each Debian package a file comes from;
- /etc/passwd and /etc/group (root and nobody), /root (0700), /tmp (1777) and /runs (0755,
  for run directories, which only root makes).
Nothing else: no shell, no coreutils. Every entry is owned by root; the tar lists entries in
order, and files keep their modification times (the byte code is checked against them).

Exits 1 with one sentence on stderr when something it needs is missing."""
import io
import os
import re
import stat
import subprocess
import sys
import tarfile

PY = "python3.11"
PACKAGES = ("python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib")
STDLIB = f"/usr/lib/{PY}"
# Left out of the standard library: every file and directory of these names in it.
PRUNED = {"test", "tests", "idlelib", "tkinter", "turtledemo", "turtle.py", "ensurepip",
          "lib2to3", "curses", "sitecustomize.py", "__phello__", "__hello__.py"}
# Extension modules left out, by the name before the first dot.
PRUNED_EXT = re.compile(r"^(_test\w*|_xxtestfuzz|_xxsubinterpreters|xxlimited\w*|_ctypes_test|"
                        r"_curses\w*|readline|_tkinter|nis|ossaudiodev|_dbm)$")
PASSWD = ("root:x:0:0:root:/root:/nonexistent\n"
          "nobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n")
GROUP = "root:x:0:\nnogroup:x:65534:\n"
FIXED_MTIME = 0  # of what is made here rather than copied: directories, /etc files


def fail(sentence):
    print(f"assemble.py: {sentence}", file=sys.stderr)
    sys.exit(1)


def run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


class Rootfs:
    """The image's files by path: ("file", host path) / ("link", target) / ("dir", mode) /
    ("data", bytes, mode)."""

    def __init__(self):
        self.entries = {}

    def _parents(self, path):
        d = os.path.dirname(path)
        while d != "/":
            kind = self.entries.get(d, ("dir",))[0]
            if kind != "dir":
                fail(f"{d} is both a directory and a {kind} in the image")
            self.entries.setdefault(d, ("dir", 0o755))
            d = os.path.dirname(d)

    def dir(self, path, mode):
        self._parents(path)
        self.entries[path] = ("dir", mode)

    def data(self, path, content, mode=0o644):
        self._parents(path)
        self.entries[path] = ("data", content.encode(), mode)

    def add(self, path):
        """Adds path as it is here: each symbolic link on the way (the same link in the
        image), then the regular file it leads to."""
        parts = path.strip("/").split("/")
        cur = ""
        for i, part in enumerate(parts):
            cur = f"{cur}/{part}"
            if os.path.islink(cur):
                target = os.readlink(cur)
                self._parents(cur)
                self.entries[cur] = ("link", target)
                base = "/" if target.startswith("/") else os.path.dirname(cur)
                rest = parts[i + 1:]
                return self.add(os.path.normpath(os.path.join(base, target, *rest)))
        st = os.stat(cur)
        if not stat.S_ISREG(st.st_mode):
            fail(f"{cur} is not a regular file")
        self._parents(cur)
        self.entries[cur] = ("file", cur)
        return cur

    def write(self, out):
        with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as tar:
            for path in sorted(self.entries):
                e = self.entries[path]
                info = tarfile.TarInfo(path.lstrip("/"))
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                info.mtime = FIXED_MTIME
                if e[0] == "dir":
                    info.type, info.mode = tarfile.DIRTYPE, e[1]
                    tar.addfile(info)
                elif e[0] == "link":
                    info.type, info.linkname, info.mode = tarfile.SYMTYPE, e[1], 0o777
                    tar.addfile(info)
                elif e[0] == "data":
                    info.size, info.mode = len(e[1]), e[2]
                    tar.addfile(info, io.BytesIO(e[1]))
                else:
                    st = os.stat(e[1])
                    info.size, info.mode = st.st_size, stat.S_IMODE(st.st_mode)
                    info.mtime = int(st.st_mtime)
                    with open(e[1], "rb") as f:
                        tar.addfile(info, f)


def package_files():
    files = []
    for pkg in PACKAGES:
        rc, out, _ = run(["dpkg-query", "-L", pkg])
        if rc != 0:
            fail(f"the Debian package {pkg} is not installed (make setup installs python3)")
        files += out.splitlines()
    return files


def kept(path):
    if path == f"/usr/bin/{PY}":
        return True
    if path.startswith(f"/etc/{PY}/"):
        return False  # sitecustomize.py only, left out
    if not path.startswith(STDLIB + "/") or os.path.isdir(path) and not os.path.islink(path):
        return False
    rel = path[len(STDLIB) + 1:].split("/")
    if any(p in PRUNED for p in rel):
        return False
    if rel[0] == "lib-dynload" and PRUNED_EXT.match(rel[-1].split(".")[0]):
        return False
    return True


def needed_libraries(binaries):
    """The shared libraries (as ldd names them) and the loader the binaries need."""
    rc, out, err = run(["ldd", *binaries])
    if rc != 0 and "not a dynamic executable" not in err:
        fail(f"ldd failed: {err.strip()}")
    libs = set()
    for line in out.splitlines():
        line = line.strip()
        if "not found" in line:
            fail(f"a library the interpreter needs is not installed: {line}")
        m = re.match(r"^\S+ => (/\S+) \(0x", line) or re.match(r"^(/\S+) \(0x", line)
        if m:
            libs.add(m.group(1))
    return sorted(libs)


def copyrights(paths):
    """The copyright files of the packages that hold paths (each as ldd or dpkg named it)."""
    pkgs = set()
    for p in paths:
        alt = p[4:] if p.startswith("/usr/") else "/usr" + p
        for candidate in (p, alt):
            rc, out, _ = run(["dpkg-query", "-S", candidate])
            if rc == 0:
                pkgs.add(out.split(":", 1)[0])
                break
        else:
            fail(f"no Debian package holds {p}")
    return sorted(f"/usr/share/doc/{pkg}/copyright" for pkg in pkgs)


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    fs = Rootfs()
    stdlib = [p for p in package_files() if kept(p)]
    for p in stdlib:
        fs.add(p)
        if p.endswith(".py"):
            d, name = os.path.split(p)
            pyc = f"{d}/__pycache__/{name[:-3]}.cpython-311.pyc"
            if os.path.isfile(pyc):
                fs.add(pyc)
    if os.path.realpath("/usr/bin/python3") != f"/usr/bin/{PY}":
        fail(f"/usr/bin/python3 is not {PY} here (make setup installs python3)")
    fs.add("/usr/bin/python3")
    binaries = [f"/usr/bin/{PY}"] + [p for p in stdlib if p.endswith(".so")]
    libs = needed_libraries(binaries)
    for lib in libs:
        fs.add(lib)
    # The packages of the libraries, the interpreter and the two halves of the stdlib.
    held = libs + [f"/usr/bin/{PY}", f"{STDLIB}/os.py", f"{STDLIB}/json/__init__.py"]
    for doc in copyrights(held):
        fs.add(doc)
    fs.data("/etc/passwd", PASSWD)
    fs.data("/etc/group", GROUP)
    fs.dir("/root", 0o700)
    fs.dir("/tmp", 0o1777)
    fs.dir("/runs", 0o755)
    tmp = out + ".part"
    fs.write(tmp)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
