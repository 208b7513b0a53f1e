#!/bin/sh
# The reference: maf-sandbox's POSIX-shell launcher (release 0.21), rebuilt from its
# documented behaviour (shared/PROTOCOL.md, "The shell launcher upstream"). The integration tests and
# `make bench-launch` compare `maf-launch run` against it; it is not shipped.
#
# Usage: sh R/host_tools/run_program.sh [R]
# Upstream's host bakes R into the script it uploads to R/host_tools/run_program.sh; here R is
# the first argument, or else derived from the script's own absolute path.
# Needs only what upstream needs: sh, nohup, mkdir, mv, printf (setsid optional), python3.

R=${1:-}
if [ -z "$R" ]; then
	case $0 in
	/*/host_tools/run_program.sh) R=${0%/host_tools/run_program.sh} ;;
	*) printf '%s\n' "run_program.sh: cannot tell the run directory from '$0'" >&2; exit 2 ;;
	esac
fi
HT=$R/host_tools

# 1. Create and enter R/work; the launch fails if it cannot.
mkdir -p "$R/work" || exit 1
cd "$R/work" || exit 1

# 2. PYTHONPATH: R/host_tools first, then only the inherited entries that are absolute,
#    canonical (no /./, /../, //, trailing /. or /..) and outside R.
pp=$HT
if [ -n "${PYTHONPATH:-}" ]; then
	rest=$PYTHONPATH:
	while [ -n "$rest" ]; do
		e=${rest%%:*}
		rest=${rest#*:}
		case $e in
		/*) ;;
		*) continue ;;
		esac
		case $e in
		*//* | */./* | */../* | */. | */..) continue ;;
		esac
		case $e in
		"$R" | "$R"/*) continue ;;
		esac
		pp=$pp:$e
	done
fi
PYTHONPATH=$pp
# 3. The output file is the only witness of a timed-out run; no user site through HOME.
PYTHONUNBUFFERED=1
PYTHONNOUSERSITE=1
export PYTHONPATH PYTHONUNBUFFERED PYTHONNOUSERSITE

# 5. The inner shell: records its own pid as the session (it leads it when setsid made one),
#    starts the program with stdout and stderr merged into the output file, records its pid,
#    waits, and records the status as sh reports it (128+N for signal N). Every marker is
#    staged as NAME.part and renamed into place.
inner='
HT=$1
publish() { printf %s "$2" >"$HT/$1.part" && mv -f "$HT/$1.part" "$HT/$1"; }
publish program_session "$$"
python3 "$HT/program.py" >"$HT/program_output.txt" 2>&1 &
pid=$!
publish program_pid "$pid"
wait "$pid"
publish program_exit_code "$?"
'

# 4. Detach: return at once while the program runs on. Only the stdout line tells the host a
#    session exists.
if command -v setsid >/dev/null 2>&1; then
	setsid nohup sh -c "$inner" sh "$HT" >/dev/null 2>&1 &
	printf '%s\n' 'maf-host-tools: session'
else
	nohup sh -c "$inner" sh "$HT" >/dev/null 2>&1 &
fi
exit 0
