#!/bin/sh
# make install-check: builds host.c against an installed libmafhost alone (PREFIX, found
# through its pkg-config file), linked statically and shared, runs both, and checks what the
# shared library exports and that the header compiles by itself; then that the man pages
# render without a warning and the bash completions load and complete.
# usage: check.sh PREFIX WORKDIR   (CC from the environment, default cc)
set -eu
prefix=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-cc}
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig"
# Nothing from the environment may point the compiler or the loader at the build tree.
unset CPATH C_INCLUDE_PATH LIBRARY_PATH LD_LIBRARY_PATH

fail() {
	echo "install-check: FAILED: $*" >&2
	exit 1
}

command -v pkg-config >/dev/null || fail "pkg-config is not installed (make setup)"
pkg-config --exists mafhost || fail "no mafhost.pc under $prefix/lib/pkgconfig"
pc() {
	pkg-config "$@" mafhost | sed 's/ *$//'
}
cflags=$(pc --cflags)
libdir=$(pc --variable=libdir)
echo "install-check: mafhost $(pc --modversion): --cflags '$cflags', --libs '$(pc --libs)'," \
	"--static --libs '$(pc --static --libs)'"

# The header alone, with the installed include directory only.
printf '#include <mafhost.h>\n' > "$work/header.c"
for std in "" "-std=c99 -pedantic -Wall -Wextra -Werror"; do
	# shellcheck disable=SC2086
	$CC -fsyntax-only -x c $std $cflags "$work/header.c" ||
		fail "mafhost.h does not compile alone (${std:-default flags})"
done
echo "install-check: mafhost.h compiles alone, and with -std=c99 -pedantic -Wall -Wextra -Werror"

build() {
	out=$1
	shift
	# shellcheck disable=SC2086 # pkg-config's flags are split on purpose
	set -- $CC -std=c99 -Wall -Wextra -Werror $cflags -o "$work/$out" "$here/host.c" "$@"
	echo "install-check: $*"
	"$@" || fail "host.c does not build as $out"
}
# Statically: the archive (-l:libmafhost.a, so the linker cannot pick the .so), then shared.
# shellcheck disable=SC2046
build host-static $(pc --static --libs | sed 's/-lmafhost/-l:libmafhost.a/')
# shellcheck disable=SC2046
build host-shared $(pc --libs) -Wl,-rpath,"$libdir"
readelf -d "$work/host-static" | grep -q 'NEEDED.*libmafhost' &&
	fail "host-static needs a shared libmafhost"
readelf -d "$work/host-shared" | grep -q 'NEEDED.*\[libmafhost\.so\.[0-9]*\.[0-9]*\]' ||
	fail "host-shared does not need libmafhost.so.MAJOR.MINOR"
ldd "$work/host-shared" | grep -q "libmafhost.* => $libdir/" ||
	fail "host-shared does not load $libdir's libmafhost: $(ldd "$work/host-shared")"

for kind in static shared; do
	out=$("$work/host-$kind" "$prefix/bin/maf-launch" "$here/program.py") ||
		fail "host-$kind exited $? printing: $out"
	[ "$out" = "$(printf '42\ncalls: 1')" ] || fail "host-$kind printed: $out"
	echo "install-check: host-$kind printed: $(printf '%s' "$out" | tr '\n' ' ')"
done

# Both libraries export the mafh_ functions and nothing else: no cJSON_, mafp_ or mafh__
# internals. (nm's listing of the .so holds no _init, _fini or _edata here, so nothing is
# filtered out.)
exports_only_mafh() {
	others=$(printf '%s\n' "$2" | grep -Ev '^mafh_[a-z0-9]' || true)
	[ -z "$others" ] || fail "$1 exports more than mafh_ names:" "$others"
	echo "install-check: $1: $(printf '%s\n' "$2" | wc -l) global symbols, all mafh_"
}
so=$(readlink -f "$libdir/libmafhost.so")
exports_only_mafh "nm -D --defined-only $(basename "$so")" \
	"$(nm -D --defined-only "$so" | awk '{ print $3 }')"
exports_only_mafh "nm --defined-only -g libmafhost.a" \
	"$(nm --defined-only -g "$libdir/libmafhost.a" | awk 'NF == 3 { print $3 }')"
soname=$(readelf -d "$so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libmafhost.so.$(pc --modversion | cut -d. -f1-2)" ] ||
	fail "$so has SONAME '$soname'"
[ "$(readlink "$libdir/$soname")" = "$(basename "$so")" ] ||
	fail "$libdir/$soname is not a link to $(basename "$so")"
echo "install-check: SONAME $soname"

# The Python package installed beside it: imported from PYTHONDIR alone, it loads the
# installed library (through mafhost/_lib/) and serves the same call with the installed
# launcher.
out=$(cd "$work" && env -u MAFHOST_LIBRARY -u MAFHOST_LAUNCHER PYTHONPATH="$PYTHONDIR" \
	PYTHONDONTWRITEBYTECODE=1 "${PYTHON:-python3}" "$here/host.py" "$prefix/bin/maf-launch" \
	"$here/program.py" "$libdir") || fail "the Python package: host.py exited $? printing: $out"
[ "$out" = "$(printf '42\ncalls: 1')" ] || fail "the Python package: host.py printed: $out"
echo "install-check: host.py (mafhost from $PYTHONDIR) printed: $(printf '%s' "$out" | tr '\n' ' ')"
# Its metadata: importlib.metadata (and pip) know the package installed, and its version.
got=$(cd "$work" && PYTHONPATH="$PYTHONDIR" "${PYTHON:-python3}" -c \
	'import importlib.metadata as m; print(m.version("mafhost"), len(m.files("mafhost")))') ||
	fail "importlib.metadata does not know the installed mafhost"
[ "${got% *}" = "$(pc --modversion)" ] || fail "the installed mafhost's metadata says: $got"
echo "install-check: importlib.metadata: mafhost ${got% *}, ${got#* } files"
# The man pages: each installed where man finds it, rendered by man and by groff with every
# warning on, and none given.
command -v man >/dev/null && command -v groff >/dev/null ||
	fail "man or groff is not installed (make setup)"
for page in man1/maf-launch.1 man1/maf-host.1 man3/libmafhost.3; do
	f="$prefix/share/man/$page"
	[ -f "$f" ] || fail "no $page under $prefix/share/man"
	name=$(basename "$page")
	warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null) ||
		fail "man -l $page exited $?: $warn"
	[ -z "$warn" ] || fail "man --warnings -l $page: $warn"
	warn=$(groff -man -ww -z "$f" 2>&1) || fail "groff -man $page exited $?: $warn"
	[ -z "$warn" ] || fail "groff -man -ww $page: $warn"
	# Found by name through MANPATH, as a user reads it.
	title=$(MANPATH="$prefix/share/man" MANWIDTH=80 man -P cat "${name%.*}" 2>/dev/null |
		head -n 1) || fail "man ${name%.*} does not find $page"
	printf '%s' "$title" | grep -qi "${name%.*}" || fail "man ${name%.*} shows: $title"
	echo "install-check: $page renders without a warning ($(LC_ALL=C.UTF-8 MANWIDTH=80 \
		man -l "$f" 2>/dev/null | wc -l) lines)"
done

# The completions: each file defines its command's completion, and bash-completion's own
# loader finds it under the prefix by the command's name.
for cmd in maf-launch maf-host; do
	f="$prefix/share/bash-completion/completions/$cmd"
	[ -f "$f" ] || fail "no completion $f"
	out=$(bash -c '. "$1" && complete -p "$2"' sh "$f" "$cmd" 2>&1) ||
		fail "$f does not define the completion of $cmd: $out"
	fn=$(printf '%s\n' "$out" | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
	[ -n "$fn" ] && bash -c '. "$1" && declare -F "$2" >/dev/null' sh "$f" "$fn" ||
		fail "$f: complete -p $cmd is '$out', with no function it defines"
	if [ -f /usr/share/bash-completion/bash_completion ]; then
		out=$(XDG_DATA_DIRS="$prefix/share" BASH_COMPLETION_USER_DIR="$work/none" bash -c \
			'. /usr/share/bash-completion/bash_completion &&
			 __load_completion "$1" && complete -p "$1"' sh "$cmd" 2>&1) ||
			fail "bash-completion does not load $cmd's completion from $prefix: $out"
	fi
	echo "install-check: completion of $cmd: $out"
done
# maf-host's completes its commands and their options.
got=$(bash -c '. "$1"; COMP_WORDS=(maf-host ""); COMP_CWORD=1; _maf_host
	echo "${COMPREPLY[*]}"; COMP_WORDS=(maf-host run --trans); COMP_CWORD=2; _maf_host
	echo "${COMPREPLY[*]}"' sh "$prefix/share/bash-completion/completions/maf-host")
[ "$got" = "$(printf 'run shim help\n--transport')" ] ||
	fail "maf-host's completion offers: $got"
echo "install-check: maf-host <TAB>: $(echo "$got" | head -n 1); maf-host run --trans<TAB>:" \
	"$(echo "$got" | tail -n 1)"
echo "install-check: ok"
