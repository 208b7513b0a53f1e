"""maf-launch's option tables (guest/commands.c): every command's --help, the man page and the
bash completion, all made from them, name every option of the table; the one parser takes
exactly the table's options, and refuses any other as a usage error that names it.

The table is read from the build's generator (build/gen/maf-launch-docgen table), which is compiled
from the same source as the launcher; make integration builds the man page and the
completion first (guest/docs.mk)."""
import json
import re
import shutil
import subprocess

import pytest

from conftest import BUILD_TREE, LAUNCHER, launch, wait_exit

DOCGEN = BUILD_TREE / "gen" / "maf-launch-docgen"
MAN_PAGE = BUILD_TREE / "man" / "maf-launch.1"
COMPLETION = BUILD_TREE / "completions" / "maf-launch.bash"
UNKNOWN = "--zz-not-an-option"
LAUNCHER_ITSELF = "-"   # the launcher's own options, in the table's words

# A value each option takes, by the name the help gives it (what the parser reads; whether
# the command could then run with it does not matter: an unknown option follows it).
SAMPLES = {"R": "/tmp/maf-options-test", "NAME": "add", "UID[:GID]": "1000", "BYTES": "1G",
           "PATH": "/tmp", "PID": "1234", "P": "1234"}


def read_table():
    out = subprocess.run([str(DOCGEN), "table"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    table = {}
    for line in out.splitlines():
        command, option, value = line.split("\t")
        table.setdefault(command, []).append((option, None if value == "-" else value))
    return table


TABLE = read_table()
COMMANDS = [c for c in TABLE if c != LAUNCHER_ITSELF]
EVERY = [(c, o, v) for c in TABLE for o, v in TABLE[c]]
ALONE = {"sleep"}       # options only as the sole argument, as coreutils' sleep has them


def argv_of(command):
    return [str(LAUNCHER)] if command == LAUNCHER_ITSELF else [str(LAUNCHER), command]


def ml(command, *args, **kw):
    return subprocess.run([*argv_of(command), *args], capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL, **kw)


def sample(value):
    if value is None:
        return []
    if "|" in value:
        return [value.split("|")[0]]
    return [SAMPLES.get(value, "1")]


def one_line(stderr):
    assert stderr.endswith("\n") and stderr.count("\n") == 1, repr(stderr)
    return stderr


def test_the_table_has_every_command_the_launcher_lists():
    text = ml(LAUNCHER_ITSELF, "--help").stdout
    listed = re.findall(r"^  (\S+)  +\S", text.split("Commands:\n")[1].split("\n\n")[0], re.M)
    assert listed == COMMANDS


# --- --help --------------------------------------------------------------------------------

@pytest.mark.parametrize("command", TABLE)
def test_help_names_every_option(command):
    proc = ml(command, "--help")
    assert proc.returncode == 0 and proc.stderr == ""
    name = "" if command == LAUNCHER_ITSELF else f" {command}"
    assert re.match(rf"usage: (\S+ \S+\n   or: )?maf-launch{name}( |\n)", proc.stdout), \
        proc.stdout
    assert "\nExit codes: " in proc.stdout
    for option, value in TABLE[command]:
        shown = f"{option} {value}" if value else option
        assert re.search(rf"^  {re.escape(shown)}( |$)", proc.stdout, re.M), \
            f"{command} --help does not list {shown}"
    assert ml(command, "-h").stdout == proc.stdout


@pytest.mark.parametrize("command", TABLE)
def test_help_fits_80_columns(command):
    for line in ml(command, "--help").stdout.splitlines():
        assert len(line) <= 80, line


def test_run_help_names_every_field_of_the_launch_line(run_dir):
    proc = launch(run_dir, "true")
    assert proc.returncode == 0, proc.stderr
    fields = json.loads(proc.stdout.decode().splitlines()[0])
    assert wait_exit(run_dir) == "0"
    text = " ".join(ml("run", "--help").stdout.split())
    shown = re.search(r"\{(\"[^}]*)\}", text).group(1)
    assert [f.strip(' "') for f in shown.split(",")] == list(fields)


# --- the man page --------------------------------------------------------------------------

def man_sections():
    """The page's roff by command, without its no-hyphenation marks (\\%): the launcher's own
    is its OPTIONS section."""
    roff = MAN_PAGE.read_text().replace("\\%", "")
    sections = {LAUNCHER_ITSELF: roff.split("\n.SH OPTIONS\n")[1].split("\n.SH ")[0]}
    for part in roff.split('\n.SS "maf\\-launch ')[1:]:
        name, body = part.split('"\n', 1)
        sections[name.replace("\\-", "-")] = body.split("\n.SH ")[0]
    return sections


@pytest.mark.parametrize("command", TABLE)
def test_man_page_names_every_option(command):
    section = man_sections()[command]
    for option, value in TABLE[command]:
        tag = option.replace("-", "\\-")
        if value:
            tag += " \\fI" + value.replace("-", "\\-") + "\\fP"
        assert re.search(rf"^\.B (\\\-h, )?{re.escape(tag)}$", section, re.M), \
            f"the man page does not list {option} under {command}"


def test_man_page_has_every_command_and_its_sections():
    assert set(man_sections()) == set(TABLE)
    roff = MAN_PAGE.read_text()
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS",
                    "ENVIRONMENT", "FILES", "SEE ALSO"):
        assert f"\n.SH {section}\n" in roff
    assert ".BR maf\\-host (1)," in roff and ".BR libmafhost (3)" in roff


def test_man_page_header_carries_the_version():
    version = ml(LAUNCHER_ITSELF, "--version").stdout.split()[1]
    th = next(line for line in MAN_PAGE.read_text().splitlines() if line.startswith(".TH "))
    assert f'"maf\\-launch {version}"' in th, th


@pytest.mark.skipif(not shutil.which("groff"), reason="no groff")
def test_man_page_renders_without_warnings():
    proc = subprocess.run(["groff", "-man", "-ww", "-z", str(MAN_PAGE)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    if shutil.which("man"):
        proc = subprocess.run(["man", "--warnings", "-l", str(MAN_PAGE)], capture_output=True,
                              text=True, timeout=60,
                              env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin"})
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert "maf-launch run" in proc.stdout


def test_the_launcher_holds_no_prose_of_the_man_page_alone():
    """The launcher is baked into every image: the man page's own sections stay out of it."""
    binary = LAUNCHER.read_bytes()
    for words in (b"As env(1) and tini have them", b"the one static program a sandbox",
                  b"the call channel's socket, for the run's own processes alone"):
        assert words not in binary


# --- the bash completion -------------------------------------------------------------------

def complete(*words):
    """What the completion offers for the last of words (maf-launch first)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _maf_launch; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    proc = subprocess.run(["bash", "-c", script, "bash", str(COMPLETION), *words],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


@pytest.mark.parametrize("command", TABLE)
def test_completion_offers_every_option(command):
    words = ["maf-launch"] if command == LAUNCHER_ITSELF else ["maf-launch", command]
    offered = complete(*words, "-")
    assert {o for o, _ in TABLE[command]} <= offered


def test_completion_offers_every_command_and_the_values_it_knows():
    assert set(COMMANDS) <= complete("maf-launch", "")
    assert complete("maf-launch", "run", "--egress", "") == {"closed", "open"}
    assert complete("maf-launch", "run", "--egress", "=", "o") == {"open"}
    assert complete("maf-launch", "policy", "--seccomp", "") == {"default", "off"}
    # After "--" the run's operands are the program and its arguments, not options.
    assert "--run-dir" not in complete("maf-launch", "run", "--run-dir", "/tmp", "--", "-")


# --- the parser ----------------------------------------------------------------------------

@pytest.mark.parametrize("command,option,value", EVERY)
def test_the_parser_takes_every_option_of_the_table(command, option, value):
    if option == "--help":
        proc = ml(command, option)
        assert proc.returncode == 0 and proc.stdout.startswith("usage: ")
        return
    if option == "--version" or command in ALONE:
        proc = ml(command, option)
        assert proc.returncode == 0 and proc.stdout.endswith("\n") and proc.stderr == ""
        return
    forms = [[option, *sample(value)]]
    if value:
        forms.append([f"{option}={sample(value)[0]}"])
    for form in forms:
        proc = ml(command, *form, UNKNOWN)
        assert proc.returncode == 2, (form, proc.stderr)
        if (command, option) == ("policy", "--check"):
            # Taken, to say where the check is made.
            assert "filtergen --check" in one_line(proc.stderr)
            continue
        # The option and its value were taken: the parser went on to the next word.
        assert f"unknown option '{UNKNOWN}'" in one_line(proc.stderr), (form, proc.stderr)


@pytest.mark.parametrize("command", TABLE)
def test_an_option_not_in_the_table_is_a_usage_error_naming_it(command):
    mine = {o for o, _ in TABLE[command]}
    others = sorted({o for c in TABLE for o, _ in TABLE[c]} - mine) + [UNKNOWN, "-x"]
    for option in others:
        proc = ml(command, option, "1")
        assert proc.returncode == 2, (option, proc.stderr)
        assert proc.stdout == ""
        text = one_line(proc.stderr)
        if command in ALONE:
            assert f"'{option}'" in text
        else:
            assert f"unknown option '{option}'" in text, text
        assert text.startswith(("maf-launch", "sleep")), text


@pytest.mark.parametrize("command", [c for c in TABLE if c not in ALONE])
def test_an_option_without_its_value_is_a_usage_error(command):
    for option, value in TABLE[command]:
        if value:
            proc = ml(command, option)
            assert proc.returncode == 2
            assert one_line(proc.stderr).endswith(f"{option} needs a value\n")
