#!/bin/sh
# pp-chk.sh: runs a ping-pong program with -c (rc_pingpong's buffer check) inside the VM lanes
# and judges it by its exit status and its output: rdma-core's ibv_rc_pingpong prints
# "invalid data in page N" when its check fails and exits 0 all the same (POSIX sh, busybox is
# enough).
#
# Usage:
#   pp-chk.sh PROGRAM ARGS...           prints the program's output; fails if it failed or
#                                       printed an "invalid data" line
#   pp-chk.sh --probe=NAME PROGRAM ARGS...
#                                       a probe, whose outcome is reported, not required:
#                                       prints the program's output, then one line
#                                       "NOTE probe NAME: exit N, K invalid-data lines[; LAST]"
#                                       (LAST: the output's last line, when N or K is not 0),
#                                       and exits 0
probe=
case ${1:-} in
--probe=*)
    probe=${1#--probe=}
    shift
    ;;
esac
[ $# -gt 0 ] || { echo "usage: pp-chk.sh [--probe=NAME] PROGRAM ARGS..." >&2; exit 2; }
out=/tmp/pp-chk.$$
"$@" >"$out" 2>&1
rc=$?
cat "$out"
bad=$(grep -c '^invalid data' "$out")
last=$(tail -n 1 "$out")
rm -f "$out"
if [ -n "$probe" ]; then
    if [ "$rc" = 0 ] && [ "$bad" = 0 ]; then
        echo "NOTE probe $probe: exit $rc, $bad invalid-data lines"
    else
        echo "NOTE probe $probe: exit $rc, $bad invalid-data lines; $last"
    fi
    exit 0
fi
if [ "$bad" != 0 ]; then
    echo "pp-chk.sh: $bad invalid-data lines (exit $rc)" >&2
    exit 3
fi
exit $rc
