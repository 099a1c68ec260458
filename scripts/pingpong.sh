#!/usr/bin/env bash
# Runs the examples rc_pingpong, uc_pingpong, ud_pingpong and srq_pingpong on the software device
# sw0, each as one command: `<example> --self -d sw0` runs the server and the client on two
# threads of one process (a software device lives in its process, so two processes could not
# share it), their TCP exchange of addresses over 127.0.0.1.
#
# Usage: bash scripts/pingpong.sh [rc|uc|ud|srq ...] [-- OPTIONS]
#   the programs to run (default: all four); OPTIONS go to each of them after `--self -d sw0`,
#   e.g. `bash scripts/pingpong.sh rc -- -n 100000 -s 64` or `-- -e` (sleep on CQ events).
#   PINGPONG_TIMEOUT   seconds each run may take (default 120)
# Prints each run's summary lines (server's and client's), PASS or FAIL per program and a
# closing "pingpong: N passed, N failed"; exits non-zero if any failed. The full output of each
# run is in target/pingpong/<program>.log. Builds the examples in release mode first.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=setup.sh
source scripts/setup.sh
# shellcheck source=lib/runs.sh
source scripts/lib/runs.sh

programs=()
while [ $# -gt 0 ]; do
    case $1 in
    --) shift; break ;;
    rc | uc | ud | srq) programs+=("${1}_pingpong") ;;
    rc_pingpong | uc_pingpong | ud_pingpong | srq_pingpong) programs+=("$1") ;;
    *) echo "usage: bash scripts/pingpong.sh [rc|uc|ud|srq ...] [-- OPTIONS]" >&2; exit 2 ;;
    esac
    shift
done
[ "${#programs[@]}" -gt 0 ] || programs=(rc_pingpong uc_pingpong ud_pingpong srq_pingpong)

build_release pingpong "${programs[@]}"

logs=target/pingpong
mkdir -p "$logs"
for p in "${programs[@]}"; do
    log=$logs/$p.log
    echo "pingpong: $p --self -d sw0${*:+ $*}"
    run_logged "$log" "${PINGPONG_TIMEOUT:-120}" "target/release/examples/$p" --self -d sw0 "$@"
    if [ "$rc" = 0 ]; then
        grep -E ' bytes in | iters in ' "$log" | sed 's/^/  /'
        passed "$p"
    else
        failed "$log" "$p" "exit $rc"
    fi
done
summary pingpong
