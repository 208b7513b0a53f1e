"""The package's build backend (PEP 517), standard library only, so that `pip install
host/python` works offline. The wheel holds the mafhost package and, when the tree has been
built (make), a copy of libmafhost in mafhost/_lib/ (then the wheel is tagged for this
platform); without one the package loads the library the dynamic loader finds (make
install), or the one $MAFHOST_LIBRARY names. $MAFHOST_LIBRARY, set while building, names the
library to bundle."""
import base64
import hashlib
import io
import os
import re
import sysconfig
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _project():
    text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()
    field = lambda k: re.search(rf'^{k} = "(.*)"$', text, re.M).group(1)  # noqa: E731
    return field("name"), field("version"), field("description"), field("requires-python")


def _library(version):
    env = os.environ.get("MAFHOST_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise FileNotFoundError(f"MAFHOST_LIBRARY names {env}, which is not a file")
        return env
    built = os.path.join(ROOT, "build", f"libmafhost.so.{version}")
    return built if os.path.isfile(built) else None


def _files(version):
    """(name in the wheel, bytes) for every file of the package."""
    pkg = os.path.join(HERE, "mafhost")
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(pkg, name), "rb") as f:
                yield f"mafhost/{name}", f.read()
    lib = _library(version)
    if lib:
        soname = "libmafhost.so." + ".".join(version.split(".")[:2])
        with open(lib, "rb") as f:
            yield f"mafhost/_lib/{soname}", f.read()


def _metadata(name, version, summary, requires):
    return (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n"
            f"Requires-Python: {requires}\nLicense: MIT\n").encode()


def _tag(bundled):
    if not bundled:
        return "py3-none-any"
    return "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, summary, requires = _project()
    files = list(_files(version))
    tag = _tag(any(p.startswith("mafhost/_lib/") for p, _ in files))
    dist = f"{name}-{version}.dist-info"
    files.append((f"{dist}/METADATA", _metadata(name, version, summary, requires)))
    files.append((f"{dist}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: mafhost-backend\n"
                                    f"Root-Is-Purelib: {str(tag.endswith('any')).lower()}\n"
                                    f"Tag: {tag}\n").encode()))
    files.append((f"{dist}/top_level.txt", b"mafhost\n"))
    record = [_record_line(p, d) for p, d in files] + [f"{dist}/RECORD,,"]
    files.append((f"{dist}/RECORD", ("\n".join(record) + "\n").encode()))
    wheel = f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            info = zipfile.ZipInfo(path, (2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if "/_lib/" in path else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    name, version, summary, requires = _project()
    base = f"{name}-{version}"
    out = os.path.join(sdist_directory, f"{base}.tar.gz")
    with tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT) as t:
        for rel in ["pyproject.toml", "_build/backend.py"] + \
                [f"mafhost/{n}" for n in sorted(os.listdir(os.path.join(HERE, "mafhost")))
                 if n.endswith(".py") or n == "py.typed"]:
            t.add(os.path.join(HERE, rel), f"{base}/{rel}")
        pkg_info = _metadata(name, version, summary, requires)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        t.addfile(info, io.BytesIO(pkg_info))
    return os.path.basename(out)
