"""The wheel carries libmafhost, built beside this package (make), in mafhost/_lib/; it is
then tagged for this platform. $MAFHOST_LIBRARY, set while building, names the library to
carry instead. Without one, the package loads the library the dynamic loader finds (make
install), or the one $MAFHOST_LIBRARY names when it runs. Everything else is in
pyproject.toml."""
import atexit
import os
import re
import shutil
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _version():
    """The project's one version: MAFH_VERSION in host/include/mafhost.h."""
    with open(os.path.join(ROOT, "host", "include", "mafhost.h"), encoding="utf-8") as f:
        return re.search(r'^#define MAFH_VERSION "(.*)"$', f.read(), re.M).group(1)


def _library():
    """The library to carry, or None."""
    env = os.environ.get("MAFHOST_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise FileNotFoundError(f"MAFHOST_LIBRARY names {env}, which is not a file")
        return env
    built = os.path.join(ROOT, "build", f"libmafhost.so.{_version()}")
    return built if os.path.isfile(built) else None


def _soname():
    return "libmafhost.so." + ".".join(_version().split(".")[:2])


class BuildPy(build_py):
    """build_py, and the library copied into the built package."""

    def run(self):
        super().run()
        with open(os.path.join(self.build_lib, "mafhost", "_version.py"), "w",
                  encoding="utf-8") as f:
            f.write(f'"""Written when the package was built."""\nVERSION = "{_version()}"\n')
        lib = _library()
        if lib and not self.editable_mode:
            dest = os.path.join(self.build_lib, "mafhost", "_lib")
            os.makedirs(dest, exist_ok=True)
            shutil.copyfile(lib, os.path.join(dest, _soname()))
            os.chmod(os.path.join(dest, _soname()), 0o755)


class BinaryDistribution(Distribution):
    """A wheel that carries the library is for this platform only."""

    def has_ext_modules(self):
        return _library() is not None


# What the build makes goes to a directory of its own, removed after: the source tree is left
# as it was.
_work = tempfile.mkdtemp(prefix="mafhost-build-")
atexit.register(shutil.rmtree, _work, True)
setup(version=_version(), cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution,
      options={"build": {"build_base": _work}, "egg_info": {"egg_base": _work}})
