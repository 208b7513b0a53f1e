"""The package's ctypes structs against mafhost.h: every size and field offset as the C
compiler lays them out."""
import ctypes
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from mafhost import _abi


def test_every_struct_matches_the_header(tmp_path):
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.fail(f"no C compiler {cc} (make setup installs gcc)")
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "mafhost.h"',
             "int main(void) {"]
    for cname, cls in _abi.STRUCTS.items():
        lines.append(f'printf("{cname} %zu\\n", sizeof(struct {cname}));')
        for fname, _ in cls._fields_:
            lines.append(f'printf("{cname}.{fname} %zu\\n", offsetof(struct {cname}, '
                         f'{fname}));')
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", "-I", str(ROOT / "host" / "include"), "-o", str(exe),
                    str(src)], check=True)
    want = dict(line.rsplit(" ", 1) for line in
                subprocess.run([str(exe)], check=True, capture_output=True,
                               text=True).stdout.splitlines())
    got = {}
    for cname, cls in _abi.STRUCTS.items():
        got[cname] = str(ctypes.sizeof(cls))
        for fname, _ in cls._fields_:
            got[f"{cname}.{fname}"] = str(getattr(cls, fname).offset)
    assert got == want
    # and no field of the header is missing from the mirror (its size would differ)


def test_the_enums_match_the_header():
    header = (ROOT / "host" / "include" / "mafhost.h").read_text()
    assert "MAFH_VERSION \"%s\"" % _abi.VERSION in header
    # One version, from the header: the package's is read from it, its project file names
    # none of its own.
    import mafhost
    assert mafhost.__version__ == _abi.VERSION
    assert 'dynamic = ["version"]' in (ROOT / "host/python/pyproject.toml").read_text()
    assert _abi.SONAME == "libmafhost.so." + ".".join(_abi.VERSION.split(".")[:2])
    lib = ctypes.CDLL(os.path.join(os.environ.get("MAF_BUILD", str(ROOT / "build")),
                                   f"libmafhost.so.{mafhost.__version__}"))
    try:
        _check_names(lib)
    finally:  # the handle is this test's own: test_library checks that unloading unmaps
        import _ctypes
        _ctypes.dlclose(lib._handle)


def _check_names(lib):
    for fn, names in (("mafh_run_status_name", _abi.RUN_STATUSES),
                      ("mafh_transport_name", _abi.TRANSPORTS),
                      ("mafh_event_kind_name", _abi.EVENT_KINDS),
                      ("mafh_json_type_name", _abi.JSON_TYPES)):
        f = getattr(lib, fn)
        f.restype = ctypes.c_char_p
        assert tuple(f(i).decode() for i in range(len(names))) == names, fn
    f = lib.mafh_op_kind_name
    f.restype = ctypes.c_char_p
    assert tuple(f(i).decode() for i in range(len(_abi.OP_NAMES))) == _abi.OP_NAMES
    assert [getattr(_abi, "OP_" + n.upper()) for n in _abi.OP_NAMES] == \
        list(range(len(_abi.OP_NAMES)))
