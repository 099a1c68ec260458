#!/usr/bin/env bash
# Runs the perftest-style tools tv_send_bw, tv_write_bw, tv_send_lat and tv_write_lat on the
# software device sw0, each as one command (`--self -d sw0`: server and client on two threads
# of one process, since sw0 lives in its process), at a small and a large size, each in both
# posting methods (the default, the extended QP's ibv_wr_* when the device has it, and
# --use_old_post_send, ibv_post_send), and checks that each printed perftest's result table with
# a row that parses (with the parser of scripts/guest/perf-compare.sh, the one the VM lanes use
# on perftest's output and ours) and the banner's `ibv_wr* API` line (OFF with
# --use_old_post_send; the default's is shown).
#
# Usage: bash scripts/perf-self.sh [-- OPTIONS]   (OPTIONS go to each run, e.g. `-- -n 5000`)
#   PERF_SELF_TIMEOUT   seconds each run may take (default 120)
# Prints each run's row, PASS or FAIL per run and "perf-self: N passed, N failed"; exits
# non-zero if any failed. Each run's output is in target/perf-self/. Builds the tools in
# release mode first (into $CARGO_TARGET_DIR when it is set).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=setup.sh
source scripts/setup.sh
# shellcheck source=lib/runs.sh
source scripts/lib/runs.sh

tools=(tv_send_bw tv_write_bw tv_send_lat tv_write_lat)
build_release perf-self "${tools[@]}"

logs=target/perf-self
mkdir -p "$logs"
examples=${CARGO_TARGET_DIR:-target}/release/examples
port=18700
for t in "${tools[@]}"; do
    case $t in *_bw) kind=bw ;; *) kind=lat ;; esac
    for size in 4 65536; do
        for method in new old; do
            if [ "$method" = old ]; then old=(--use_old_post_send); else old=(); fi
            log=$logs/$t.$size.$method.log
            port=$((port + 1))
            echo "perf-self: $t --self -d sw0 -F -s $size -n 200 -p $port${old[*]:+ ${old[*]}}${*:+ $*}"
            run_logged "$log" "${PERF_SELF_TIMEOUT:-120}" "$examples/$t" --self -d sw0 -F \
                -s "$size" -n 200 -p "$port" "${old[@]}" "$@"
            # The client's banner (the server's lines start with "server: ").
            api=$(sed -n 's/^ ibv_wr\* API *: *\([A-Z]*\).*/\1/p' "$log" | head -n 1)
            if [ "$rc" = 0 ] && v=$(sh scripts/guest/perf-compare.sh parse "$kind" "$size" "$log") &&
                { [ "$method" = new ] || [ "$api" = OFF ]; } && [ -n "$api" ]; then
                grep -E "^ $size " "$log" | sed 's/^/  /'
                passed "$t $size${old[*]:+ ${old[*]}} ($kind figure $v, ibv_wr* API $api)"
            else
                failed "$log" "$t $size${old[*]:+ ${old[*]}}" \
                    "exit $rc, no row parsed, or ibv_wr* API '${api}' (OFF expected with --use_old_post_send)"
            fi
        done
    done
done
summary perf-self
