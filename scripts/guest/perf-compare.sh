#!/bin/sh
# perf-compare.sh: perftest against the typed tools, side by side, on rxe (runs inside the VM
# lanes; POSIX sh, busybox is enough).
#
# Usage (the interface the lanes rely on; keep it stable):
#   perf-compare.sh both              one VM: each server in the background, its client over
#                                     $PERF_PEER (default 10.0.0.1, rxe0's own address)
#   perf-compare.sh server            two VMs, this one serves: runs every step's server in turn
#   perf-compare.sh client PEER       two VMs, this one is the client of the server at PEER;
#                                     prints the table
#   perf-compare.sh parse bw|lat SIZE FILE
#                                     prints the figure of SIZE from a perftest-format table in
#                                     FILE (bw: MsgRate[Mpps]; lat: t_typical[usec]);
#                                     fails if there is none or it is not a positive number
#
# The steps, in this order on both sides: for each of ib_send_bw, ib_write_bw, ib_send_lat,
# ib_write_lat and each size 4, 4096, 65536: perftest's program, then the typed tool
# (tv_send_bw, ...) with its default posting method (the extended QP's ibv_wr_* where the device
# has it, rxe included, where perftest itself keeps ibv_post_send: its banner says
# "ibv_wr* API : OFF" on rxe), then, in the first $PERF_OLD_REPS pairs, the typed tool with
# --use_old_post_send (ibv_post_send, perftest's method on rxe), alternately, so that drift hits
# all; $PERF_REPS pairs per size. Each run
# is `-d $PERF_DEV -x $PERF_GID -F -s SIZE -n ITERS -p PORT` (the port differs per step) and is
# bounded by `timeout $PERF_TIMEOUT`; a client retries its connection while its server is not
# listening yet (with `both`, a run whose figure is not a positive number, as perftest's "inf"
# or 0 when its clock sample failed, runs once more). ITERS is $PERF_ITERS if set, else by test and size
# (bandwidth: 2000 at 4 B, 1000 at 4 KiB, 200 above; latency: 500, 200, 50), so that a run
# takes well under a second under TCG and the whole comparison (two pairs per size and one run of
# --use_old_post_send) about a minute and a quarter on one VM of an idle machine (several on a
# loaded one).
#
# Output (client and both): one line per run ("perf-compare: RUN ..."), then the table
#   PERF: tool             size   perftest      typed  ratio   best  floor        old  ratio  floor  target
#   PERF: ib_send_bw          4   0.008123   0.008200   1.01   1.05   1.02   0.008100   1.00   1.01  >=1.00 Mpps
# (bandwidth: MsgRate[Mpps], which is BW average / size with more digits, ratio
# typed/perftest, target >= 1.00; latency: t_typical[usec], the median, ratio typed/perftest,
# target <= 1.00; with $PERF_REPS > 1 each figure is the median of the runs and "best" is the
# best ratio of one pair, the two runs next to each other in time; "floor" is the ratio of the
# figures a stall of the machine cannot reach: BW peak, t_min; "typed" is the default posting
# method, "old" the typed tool with --use_old_post_send, with its ratio and floor to perftest's;
# each run's RUN line shows its ibv_wr* API), then
# "perf-compare: OK, N runs in S s" or "perf-compare: FAIL ...". Each RUN line also shows the
# run's whole result row.
# Exit status 0 when every run ran and its table parsed and no test's floor ratio (of either
# posting method) is grossly off at most sizes (the median of its sizes' floors: bandwidth below
# 0.5x, latency above 2x; a bug
# slows every size, while a loaded machine stalls single runs, even whole ones, by
# milliseconds; a size's floor grossly off is marked "!"); ratios are otherwise reported, not
# gated.
#
# Environment:
#   PERF_DEV (rxe0), PERF_GID (1), PERF_PEER (10.0.0.1, `both` only), PERF_PORT (first TCP
#   port, 18515), PERF_REPS (2), PERF_OLD_REPS (1: the pairs that also run the typed tool with
#   --use_old_post_send; 0 leaves it out), PERF_ITERS (by test and size, above), PERF_TIMEOUT
#   (seconds per run, 30), PERF_SIZES ("4 4096 65536"), PERF_TESTS ("send_bw write_bw
#   send_lat write_lat"), PERF_TYPED_DIR (where tv_* are; default /examples if it has them,
#   else $PATH), PERF_LOGS (where each run's output goes, /tmp/perf-compare), PERF_GATE (1; 0
#   reports without failing on a grossly-off ratio).
set -u

DEV=${PERF_DEV:-rxe0}
GID=${PERF_GID:-1}
PORT0=${PERF_PORT:-18515}
REPS=${PERF_REPS:-2}
OLD_REPS=${PERF_OLD_REPS:-1}
TMO=${PERF_TIMEOUT:-30}
SIZES=${PERF_SIZES:-4 4096 65536}
TESTS=${PERF_TESTS:-send_bw write_bw send_lat write_lat}
LOGS=${PERF_LOGS:-/tmp/perf-compare}
GATE=${PERF_GATE:-1}
if [ -n "${PERF_TYPED_DIR:-}" ]; then
    TYPED=$PERF_TYPED_DIR/
elif [ -x /examples/tv_send_bw ]; then
    TYPED=/examples/
else
    TYPED=
fi

usage() {
    echo "usage: perf-compare.sh both | server | client PEER | parse bw|lat SIZE FILE" >&2
    exit 2
}

# parse KIND SIZE FILE: the figure of SIZE in the first result table of FILE (lines as perftest
# prints them: a header line with "#bytes", rows starting with the size; lines another side
# prefixed, "server: ...", are not rows).
parse() {
    awk -v kind="$1" -v size="$2" '
        /^ #bytes/ { table = 1; next }
        table && $1 == size && NF >= 5 {
            v = $5 # bw: MsgRate[Mpps]; lat: t_typical[usec]
            if (v ~ /^[0-9]+(\.[0-9]+)?$/ && v + 0 > 0) { print v; found = 1; exit }
        }
        END { if (!found) exit 1 }
    ' "$3"
}

# The command line of step TEST SIZE for PROGRAM (a perftest program or a typed tool).
args() { # args TEST SIZE PORT
    case $1:$2 in
    *_bw:4) n=2000 ;;
    *_bw:4096) n=1000 ;;
    *_bw:*) n=200 ;;
    *_lat:4) n=500 ;;
    *_lat:4096) n=200 ;;
    *) n=50 ;;
    esac
    n=${PERF_ITERS:-$n}
    echo "-d $DEV -x $GID -F -s $2 -n $n -p $3"
}

# run_client LOG HOST PROGRAM ARGS...: the client, retried (up to 80 times, 0.25 s apart)
# while its connection is refused because the server is not listening yet.
run_client() {
    log=$1 host=$2 prog=$3
    shift 3
    tries=0
    while :; do
        timeout "$TMO" $prog "$@" "$host" </dev/null >"$log" 2>&1
        rc=$?
        [ "$rc" = 0 ] && return 0
        if [ "$tries" -lt 80 ] && grep -qiE "couldn't connect|unable to open file descriptor|connection refused" "$log"; then
            tries=$((tries + 1))
            sleep 0.25
            continue
        fi
        return "$rc"
    done
}

# steps: "TEST SIZE REP WHICH PROGRAM" per line, in the order both sides run them.
steps() {
    for t in $TESTS; do
        for s in $SIZES; do
            r=1
            while [ "$r" -le "$REPS" ]; do
                echo "$t $s $r perftest ib_$t"
                echo "$t $s $r typed ${TYPED}tv_$t"
                [ "$r" -le "$OLD_REPS" ] && echo "$t $s $r old ${TYPED}tv_$t --use_old_post_send"
                r=$((r + 1))
            done
        done
    done
}

[ $# -ge 1 ] || usage
role=$1
shift
case $role in
parse)
    [ $# = 3 ] || usage
    parse "$@"
    exit $?
    ;;
both) peer=${PERF_PEER:-10.0.0.1} ;;
client) [ $# = 1 ] || usage; peer=$1 ;;
server) [ $# = 0 ] || usage; peer= ;;
*) usage ;;
esac

mkdir -p "$LOGS"
start=$(date +%s)
cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
[ -r "$cs" ] && echo "perf-compare: clocksource $(cat "$cs"), $(grep -c ^processor /proc/cpuinfo) CPUs"
failed=0
runs=0
port=$PORT0
results=$LOGS/results
: >"$results"
steps >"$LOGS/steps"
while read -r t s r which prog; do
    a=$(args "$t" "$s" "$port")
    name="$t $s $which #$r"
    base=$LOGS/$t.$s.$which.$r
    runs=$((runs + 1))
    case $role in
    server)
        # shellcheck disable=SC2086
        timeout "$TMO" $prog $a </dev/null >"$base.server.log" 2>&1
        rc=$?
        if [ "$rc" = 0 ]; then echo "perf-compare: RUN $name server ok"; else
            echo "perf-compare: RUN $name server FAILED (exit $rc)"; failed=$((failed + 1)); fi
        ;;
    both | client)
        if [ "$role" = both ]; then
            # shellcheck disable=SC2086
            timeout "$TMO" $prog $a </dev/null >"$base.server.log" 2>&1 &
            spid=$!
        fi
        # shellcheck disable=SC2086
        run_client "$base.client.log" "$peer" "$prog" $a
        rc=$?
        if [ "$role" = both ]; then
            wait "$spid"
            src=$?
            [ "$rc" = 0 ] && rc=$src
        fi
        case $t in *_bw) kind=bw ;; *) kind=lat ;; esac
        if [ "$role" = both ] && [ "$rc" = 0 ] && ! parse "$kind" "$s" "$base.client.log" >/dev/null; then
            # A figure that is not a positive number ("inf" or 0: perftest's clock read zero
            # cycles, or its rate sample failed under load) is
            # measured again, once, with the same program (one VM only: across two, the
            # server has moved on to the next step).
            echo "perf-compare: RUN $name gave no figure, run again: $(grep -E "^ $s " "$base.client.log" | tr -s ' \t' ' ')"
            # shellcheck disable=SC2086
            timeout "$TMO" $prog $a </dev/null >"$base.server.log" 2>&1 &
            spid=$!
            # shellcheck disable=SC2086
            run_client "$base.client.log" "$peer" "$prog" $a
            rc=$?
            wait "$spid"
            src=$?
            [ "$rc" = 0 ] && rc=$src
        fi
        if [ "$rc" = 0 ] && v=$(parse "$kind" "$s" "$base.client.log"); then
            row=$(awk -v size="$s" '/^ #bytes/ { t = 1; next } t && $1 == size { print; exit }' "$base.client.log" | tr -s ' \t' ' ')
            api=$(sed -n 's/^ ibv_wr\* API *: *\([A-Z]*\).*/\1/p' "$base.client.log" | head -n 1)
            echo "perf-compare: RUN $name $v${api:+ (ibv_wr* API $api)} |$row"
            f3=$(awk -v size="$s" '/^ #bytes/ { t = 1; next } t && $1 == size { print $3; exit }' "$base.client.log")
            echo "$t $s $which $v $r $f3" >>"$results"
        else
            echo "perf-compare: RUN $name FAILED (exit $rc)"
            sed 's/^/    /' "$base.client.log" | tail -n 15
            [ -f "$base.server.log" ] && sed 's/^/    server: /' "$base.server.log" | tail -n 5
            failed=$((failed + 1))
        fi
        ;;
    esac
    port=$((port + 1))
done <"$LOGS/steps"

if [ "$role" = server ]; then
    if [ "$failed" = 0 ]; then echo "perf-compare: OK, $runs runs (server)"; exit 0; fi
    echo "perf-compare: FAIL, $failed of $runs runs failed (server)"
    exit 1
fi

# The table: per test and size, the median of each program's runs, and their ratio.
awk -v gate="$GATE" -v tests="$TESTS" -v sizes="$SIZES" '
    { k = $1 " " $2 " " $3; n[k]++; v[k, n[k]] = $4; f[k, n[k]] = $6; byrep[k, $5] = $4; if ($5 > maxrep) maxrep = $5 }
    function median(k,   m, i, j, a, t) { return med(k, 0) }
    function med(k, third,   m, i, j, a, t) {
        m = n[k]
        if (m == 0) return ""
        for (i = 1; i <= m; i++) a[i] = (third ? f[k, i] : v[k, i]) + 0
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END {
        printf "PERF: %-13s %7s %10s %10s %6s %6s %6s %10s %6s %6s  %s\n", "tool", "size", "perftest", "typed", "ratio", "best", "floor", "old", "ratio", "floor", "target"
        nt = split(tests, T, " "); ns = split(sizes, S, " "); bad = 0
        for (i = 1; i <= nt; i++) {
          nf = 0; ng = 0
          for (j = 1; j <= ns; j++) {
            k = T[i] " " S[j]
            p = median(k " perftest"); q = median(k " typed")
            bw = (T[i] ~ /_bw$/)
            unit = bw ? "Mpps" : "usec"
            r = "n/a"
            if (p != "" && q != "" && p + 0 != 0) r = sprintf("%.2f", q / p)
            # The best pair: the ratio of one run of each, next to each other in time.
            best = ""
            for (x = 1; x <= maxrep; x++) {
                if (!((k " perftest", x) in byrep) || !((k " typed", x) in byrep)) continue
                pp = byrep[k " perftest", x] + 0; qq = byrep[k " typed", x] + 0
                if (pp == 0) continue
                rr = qq / pp
                if (best == "" || (bw && rr > best) || (!bw && rr < best)) best = rr
            }
            b = (best == "") ? "n/a" : sprintf("%.2f", best)
            # The floor: the ratio of the figures a short stall cannot reach (bandwidth: BW
            # peak, the best window; latency: t_min, the best iteration), medians of the runs;
            # marked when grossly off.
            fp = med(k " perftest", 1); fq = med(k " typed", 1)
            fl = "n/a"
            if (fp != "" && fq != "" && fp + 0 != 0) {
                fr = fq / fp
                F[++nf] = fr
                fl = sprintf("%.2f", fr)
                if ((bw && fr < 0.5) || (!bw && fr > 2.0)) fl = fl "!"
            }
            # The typed tool with --use_old_post_send: its median, ratio and floor to perftest.
            o = median(k " old"); orr = "n/a"; ofl = "n/a"
            if (o == "") o = "n/a"
            else if (p != "" && p + 0 != 0) orr = sprintf("%.2f", o / p)
            fo = med(k " old", 1)
            if (fp != "" && fo != "" && fp + 0 != 0) {
                gr = fo / fp
                G[++ng] = gr
                ofl = sprintf("%.2f", gr)
                if ((bw && gr < 0.5) || (!bw && gr > 2.0)) ofl = ofl "!"
            }
            printf "PERF: %-13s %7s %10s %10s %6s %6s %6s %10s %6s %6s  %s %s\n", "ib_" T[i], S[j], p, q, r, b, fl, o, orr, ofl, bw ? ">=1.00" : "<=1.00", unit
          }
          # A bug slows every size; a stall of the machine (which can last a whole run) one:
          # the gate is the median of the floors of the test.
          for (x = 1; x <= nf; x++) for (y = x + 1; y <= nf; y++) if (F[y] < F[x]) { z = F[x]; F[x] = F[y]; F[y] = z }
          if (nf > 0) {
              mf = (nf % 2) ? F[(nf + 1) / 2] : (F[nf / 2] + F[nf / 2 + 1]) / 2
              if ((bw && mf < 0.5) || (!bw && mf > 2.0)) {
                  printf "perf-compare: ib_%s: the floor ratio is grossly off at most sizes (median %.2f)\n", T[i], mf
                  bad++
              }
          }
          for (x = 1; x <= ng; x++) for (y = x + 1; y <= ng; y++) if (G[y] < G[x]) { z = G[x]; G[x] = G[y]; G[y] = z }
          if (ng > 0) {
              mg = (ng % 2) ? G[(ng + 1) / 2] : (G[ng / 2] + G[ng / 2 + 1]) / 2
              if ((bw && mg < 0.5) || (!bw && mg > 2.0)) {
                  printf "perf-compare: ib_%s --use_old_post_send: the floor ratio is grossly off at most sizes (median %.2f)\n", T[i], mg
                  bad++
              }
          }
        }
        if (bad && gate) exit 1
    }
' "$results"
gated=$?
elapsed=$(($(date +%s) - start))
if [ "$failed" = 0 ] && [ "$gated" = 0 ]; then
    echo "perf-compare: OK, $runs runs in ${elapsed}s"
    exit 0
fi
echo "perf-compare: FAIL, $failed of $runs runs failed or did not parse, in ${elapsed}s"
exit 1
