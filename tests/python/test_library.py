"""libmafhost as the package loads it: unloaded and loaded again in one process, refused
while a run uses it, and errors that say what to do."""
import asyncio
import os

import pytest

import mafhost
import programs
from programs import add
from conftest import LIBRARY, VERSION, arun


def _mapped():
    with open("/proc/self/maps") as f:
        return "libmafhost" in f.read()


def test_unloaded_and_loaded_again_in_one_process(local):
    r = arun(mafhost.run(local, programs.calls(2), tools=[add], timeout=30))
    assert r.calls == 2 and _mapped()
    mafhost.unload()
    assert not _mapped(), "dlclose left libmafhost mapped"
    lib = mafhost.load(str(LIBRARY))
    assert lib.loaded and lib.library_version == VERSION and _mapped()
    r = arun(mafhost.run(local, programs.calls(3), tools=[add], timeout=30))
    assert r.calls == 3 and r.output == f"total {programs.total(3)}\n"
    # Over and over: nothing accumulates.
    for _ in range(3):
        mafhost.unload()
        mafhost.load(str(LIBRARY))
    r = arun(mafhost.run(local, programs.calls(1), tools=[add], timeout=30))
    assert r.calls == 1


def test_a_library_in_use_is_not_unloaded(local):
    async def main():
        started = asyncio.Event()
        task = asyncio.ensure_future(mafhost.run(
            local, "import time\ntime.sleep(0.5)\n", timeout=30,
            on_event=lambda e: e.kind == "run_started" and started.set()))
        await started.wait()
        with pytest.raises(mafhost.LibraryError, match="in use by 1 run"):
            mafhost.unload()
        return await task
    assert arun(main()).exit_code == 0
    mafhost.unload()
    mafhost.load(str(LIBRARY))


def test_a_library_of_its_own_for_a_run(local):
    lib = mafhost.Library(str(LIBRARY))
    r = arun(mafhost.run(local, programs.calls(1), tools=[add], timeout=30, library=lib))
    assert r.calls == 1
    lib.close()
    assert not lib.loaded
    with pytest.raises(mafhost.LibraryError, match="unloaded"):
        arun(mafhost.run(local, programs.calls(1), tools=[add], library=lib))
    assert _mapped()  # the default one is still there


def test_a_library_that_cannot_be_loaded_is_named(tmp_path, monkeypatch):
    with pytest.raises(mafhost.LibraryError, match="cannot load libmafhost: tried /nope.so"):
        mafhost.Library("/nope.so")
    monkeypatch.setenv("MAFHOST_LIBRARY", str(tmp_path / "missing.so"))
    with pytest.raises(mafhost.LibraryError, match="MAFHOST_LIBRARY"):
        mafhost.Library()
    with pytest.raises(mafhost.LibraryError, match="already loaded"):
        mafhost.load("/some/other/libmafhost.so")
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    if os.path.exists(libc):
        with pytest.raises(mafhost.LibraryError, match="not libmafhost: it has no mafh_"):
            mafhost.Library(libc)  # no mafh_ functions
