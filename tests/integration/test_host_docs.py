"""maf-host's help, man page and bash completion, all printed from its one table, and
libmafhost(3), made from the header: for every command, every option of the table is in its
--help, in maf-host(1) and in the completion, and is parsed; an unknown option is a usage
error naming it; every MAFH_API function of the header is on libmafhost(3). The table is read
through the build's docgen (host/cli/gen/docgen.c), linked with maf-host's own objects."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD_TREE, HOST

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "host" / "include" / "mafhost.h"
PART = re.compile(r'^#include "([^"]+)"[ \t]*$', re.M)
MAN3_PY = ROOT / "host" / "gen" / "man3.py"
DOCGEN = BUILD_TREE / "gen" / "maf-host-docgen"
MAN1 = BUILD_TREE / "man" / "maf-host.1"
MAN3 = BUILD_TREE / "man" / "libmafhost.3"
COMPLETION = BUILD_TREE / "completions" / "maf-host.bash"
PROGRAM = "maf-host"          # the table's name for maf-host's own options
UNKNOWN = "--no-such-option"


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, timeout=60, **kw)


def table():
    """{command: [(option, arg or "")]} as docgen reads the table, in its order."""
    assert DOCGEN.exists(), f"{DOCGEN} is not built (run make)"
    p = run([str(DOCGEN), "options"], check=True)
    out = {}
    for ln in p.stdout.decode().splitlines():
        cmd, name, arg = ln.split("\t")
        out.setdefault(cmd, []).append((name, arg))
    return out


def commands():
    """The commands maf-host --help lists."""
    text = run([str(HOST), "--help"]).stdout.decode()
    block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [ln.split()[0] for ln in block.splitlines()]


ALL = [PROGRAM] + commands() if HOST.exists() else [PROGRAM]


def options_of(cmd):
    return table().get(cmd, [])


def has_option(text, name):
    return re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text) is not None


def render(page, width=200):
    """The page as man shows it, in ASCII (options with plain hyphens)."""
    env = dict(os.environ, LC_ALL="C", MANWIDTH=str(width))
    p = run(["man", "--warnings", "-l", str(page)], env=env)
    assert p.returncode == 0, p.stderr
    assert p.stderr == b"", p.stderr.decode()
    return re.sub(r".\x08", "", p.stdout.decode())


def man_section(text, title):
    """A subsection (3 spaces in) or a section (none) of a rendered page, up to the next."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.rstrip() == title)
    indent = len(title) - len(title.lstrip())
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= indent
                and not lines[i].startswith(" " * (indent + 1))), len(lines))
    return "\n".join(lines[start + 1:end])


def complete(*words):
    """What the completion offers for maf-host WORDS..., the cursor on the last word."""
    assert COMPLETION.exists(), f"{COMPLETION} is not built (run make)"
    script = ('. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _maf_host; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    p = run(["bash", "-c", script, "sh", str(COMPLETION), "maf-host", *words])
    assert p.returncode == 0, p.stderr
    return [w for w in p.stdout.decode().splitlines() if w]


def help_of(cmd):
    argv = [str(HOST), "--help"] if cmd == PROGRAM else [str(HOST), "help", cmd]
    p = run(argv)
    assert p.returncode == 0, p
    return p.stdout.decode()


def test_the_table_has_every_command(host):
    t = table()
    assert ALL[1:] == ["run", "shim", "help"], ALL
    assert set(t) <= set(ALL), t.keys()
    assert {name for name, _ in t[PROGRAM]} == {"--help", "--version"}
    assert t["run"] and t["shim"]


@pytest.mark.parametrize("cmd", ALL)
def test_every_option_is_in_the_help(host, cmd):
    text = help_of(cmd)
    for name, arg in options_of(cmd):
        shown = name + (" " + arg if arg else "")
        assert re.search(r"^  " + re.escape(shown) + r"(\s|$)", text, re.M), (cmd, shown, text)


@pytest.mark.parametrize("cmd", ALL)
def test_every_option_is_in_the_man_page(host, cmd):
    text = render(MAN1)
    section = man_section(text, "OPTIONS" if cmd == PROGRAM else "   maf-host " + cmd)
    for name, arg in options_of(cmd):
        shown = name + (" " + arg if arg else "")
        assert re.search(r"^\s+" + re.escape(shown) + r"(\s|$)", section, re.M), \
            (cmd, shown, section)
    if cmd != PROGRAM:
        # The command's usage lines, as its help prints them.
        usage = [ln.split("maf-host", 1)[1].strip() for ln in help_of(cmd).splitlines()
                 if ln.startswith(("usage: maf-host", "       maf-host"))]
        for u in usage:
            assert "maf-host " + u in section, (u, section)


@pytest.mark.parametrize("cmd", ALL)
def test_every_option_is_in_the_completion(host, cmd):
    words = [] if cmd == PROGRAM else [cmd]
    offered = complete(*words, "--")
    assert sorted(set(offered)) == sorted({name for name, _ in options_of(cmd)}), offered
    for name, arg in options_of(cmd):
        # Each choice of a value, where it is a word (auto|files|wait): --transport <TAB>
        # and --transport=<TAB>.
        choices = [c for c in arg.split("|") if re.fullmatch(r"[a-z0-9-]+", c)] \
            if "|" in arg else []
        if choices:
            assert set(choices) <= set(complete(*words, name, "")), (name, arg)
            assert set(choices) <= set(complete(*words, name, "=")), (name, arg)


def test_the_completion_offers_commands_and_files(host, tmp_path):
    assert complete("") == commands()
    assert complete("help", "") == commands()
    assert complete("run", "--trans") == ["--transport"]
    assert complete("run", "--backend", "") == ["local", "docker:", "enter:"]
    (tmp_path / "prog.py").write_text("")
    assert complete("run", str(tmp_path / "pr")) == [str(tmp_path / "prog.py")]
    assert complete("run", "--launcher", str(tmp_path / "pr")) == [str(tmp_path / "prog.py")]
    assert complete("run", "--timeout", "") == []


@pytest.mark.parametrize("cmd", ALL)
def test_every_option_is_parsed(host, cmd):
    """The parser takes each option of the table: given it (and a value), then an unknown
    option, maf-host gets past it to the unknown one, or stops at the option's own error."""
    words = [] if cmd == PROGRAM else [cmd]
    for name, arg in options_of(cmd):
        value = [] if not arg else [arg.split("|")[0] if "|" in arg else
                                    {"S": "1", "N": "1", "BYTES": "1M"}.get(arg, "x")]
        p = run([str(HOST), *words, name, *value, UNKNOWN])
        err = p.stderr.decode()
        assert f"unknown option '{name}" not in err, (name, err)
        if name in ("--help", "--version"):
            assert p.returncode == 0 and p.stdout, (name, p)
        else:
            assert p.returncode == 2, (name, p)


@pytest.mark.parametrize("cmd", ALL)
@pytest.mark.parametrize("form", [UNKNOWN, UNKNOWN + "=1", "-x"])
def test_an_unknown_option_is_a_usage_error_naming_it(host, cmd, form):
    words = [] if cmd == PROGRAM else [cmd]
    p = run([str(HOST), *words, form])
    err = p.stderr.decode()
    assert p.returncode == 2, (cmd, form, p)
    assert len(err.strip().splitlines()) == 1, err
    assert f"'{form}'" in err and "unknown" in err, err
    assert p.stdout == b""


def test_the_pages_are_the_generators_own():
    """What the build installs is what the table and the header make now."""
    assert MAN1.read_bytes() == run([str(DOCGEN), "man"], check=True).stdout
    assert COMPLETION.read_bytes() == run([str(DOCGEN), "bash"], check=True).stdout
    # The link flags are the Makefile's.
    libs = re.search(r"^MAFH_LIBS := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    made = run([sys.executable, str(MAN3_PY), "--libs", libs, str(HEADER)], check=True).stdout
    assert MAN3.read_bytes() == made, f"{MAN3} is not the header's (make)"


def test_the_pages_render_without_a_warning():
    for page in (MAN1, MAN3):
        p = run(["groff", "-man", "-ww", "-z", str(page)])
        assert p.returncode == 0 and p.stderr == b"", (page, p.stderr.decode())
        render(page, 80)


def header_text(header=HEADER):
    """The header as the compiler reads it: each part it includes (host/include/mafhost/*.h,
    a quoted #include) in its place."""
    return PART.sub(lambda m: header_text(header.parent / m.group(1)), header.read_text())


def header_functions(text):
    return re.findall(r"^MAFH_API\b[^;]*?\b(mafh_\w+)\s*\(", text, re.M)


def test_libmafhost_3_has_every_function_of_the_header():
    header = header_text()
    fns = header_functions(header)
    assert len(fns) > 50, fns
    text = render(MAN3)
    missing = [fn for fn in fns if not re.search(r"\b" + fn + r"\(", text)]
    assert not missing, missing
    # Grouped as the header groups them: each ruler a subsection, in the header's order.
    rulers = re.findall(r"^/\* -{4} (.+?) -+ \*/$", header, re.M)
    titles = [ln.strip() for ln in text.splitlines() if re.match(r"^   \S", ln)]
    assert titles == [r[:1].upper() + r[1:] for r in rulers], titles
    # Each function in its own section.
    for ruler, body in zip(rulers, re.split(r"^/\* -{4} .+? -+ \*/$", header, flags=re.M)[1:]):
        section = man_section(text, "   " + ruler[:1].upper() + ruler[1:])
        for fn in header_functions(body):
            assert re.search(r"\b" + fn + r"\(", section), (fn, ruler)
    # ERRORS: every MAFH_E* code with its errno.
    errors = man_section(text, "ERRORS")
    for code, errno in re.findall(r"^#define (MAFH_E\w+) \((-E\w+)\)", header, re.M):
        assert re.search(r"^\s+" + code + r"\s*\n\s+\(" + errno + r"\)", errors, re.M), code
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "ERRORS", "SEE ALSO"):
        assert re.search(r"^" + section + "$", text, re.M), section
    assert "#include <mafhost.h>" in man_section(text, "SYNOPSIS")
    assert "-lmafhost" in man_section(text, "SYNOPSIS")


def test_man3_follows_the_header(tmp_path):
    """A function added to the header (in one of its parts) is on the page; a declaration
    the generator cannot read fails it rather than leave something out."""
    include = tmp_path / "include"
    shutil.copytree(HEADER.parent, include)
    h = include / HEADER.name
    part = next(p for p in sorted(include.rglob("*.h"))
                if "/* ---- the blocking driver" in p.read_text())
    assert part != h
    header = part.read_text()
    added = header.replace(
        "/* ---- the blocking driver",
        "/* Does a new thing: 0, or MAFH_EINVAL. */\n"
        "MAFH_API int mafh_new_thing(struct mafh_run *run,\n"
        "\t\t\t   int how);\n\n"
        "/* ---- the blocking driver", 1)
    assert added != header
    part.write_text(added)
    p = run([sys.executable, str(MAN3_PY), str(h)])
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert "int mafh_new_thing(struct mafh_run *run, int how);" in out
    assert "Does a new thing: 0, or MAFH_EINVAL." in out
    part.write_text(header.replace("/* ---- the blocking driver",
                                   "int (*mafh_odd)(void) = 0, x;\n\n"
                                   "/* ---- the blocking driver", 1))
    p = run([sys.executable, str(MAN3_PY), str(h)])
    assert p.returncode != 0 and b"man3.py" in p.stderr, p


def test_the_header_includes_each_of_its_parts(tmp_path):
    """Every file of host/include/mafhost/ is a part of mafhost.h, included once (so its
    functions are on libmafhost(3) and make install puts it beside the header); included
    alone, a part refuses to compile, naming the header to include."""
    parts = sorted(p.relative_to(HEADER.parent).as_posix()
                   for p in (HEADER.parent / "mafhost").glob("*.h"))
    assert parts, "no parts under host/include/mafhost"
    assert sorted(PART.findall(HEADER.read_text())) == parts
    cc = os.environ.get("CC", "cc")
    if not shutil.which(cc):
        pytest.skip(f"no C compiler {cc}")
    for part in parts:
        src = tmp_path / "part.c"
        src.write_text(f"#include <{part}>\n")
        p = run([cc, "-fsyntax-only", "-I", str(HEADER.parent), str(src)])
        assert p.returncode != 0 and b"include <mafhost.h>" in p.stderr, (part, p)


def test_no_name_of_maf_host_is_one_of_the_launchers():
    """maf-host and maf-launch are two programs built from one tree: no header of host/cli
    has the name of one of guest/, and maf-host's own objects define cli_ names alone."""
    cli_headers = {p.name for p in (ROOT / "host" / "cli").glob("*.h")}
    guest_headers = {p.name for p in (ROOT / "guest").glob("*.h")}
    assert not cli_headers & guest_headers, cli_headers & guest_headers
    if not shutil.which("nm"):
        pytest.skip("no nm")

    def defined(objs):
        assert objs, "no objects (run make)"
        p = run(["nm", "-g", "--defined-only", *map(str, objs)], check=True)
        # A sanitizer's own symbols (ASan's __odr_asan.NAME, one per global) are not ours.
        return {f.split()[2] for f in p.stdout.decode().splitlines()
                if len(f.split()) == 3 and not f.split()[2].startswith("__")}

    cli = defined(sorted((BUILD_TREE / "host-obj" / "host" / "cli").glob("*.o")))
    guest = defined(sorted((BUILD_TREE / "guest-obj" / "guest").glob("*.o")))
    assert cli & guest == {"main"}, cli & guest
    assert {s for s in cli if not s.startswith("cli_")} == {"main"}, cli
