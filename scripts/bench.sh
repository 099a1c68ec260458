#!/usr/bin/env bash
# The poll-loop benchmark (benches/poll, package typed-verbs-bench): the loop that
# `completion_record!` generates against the same loop in C and against other Rust wrappers.
#
#   bash scripts/bench.sh                  # callgrind instruction counts, then criterion wall time
#   bash scripts/bench.sh --no-criterion   # instruction counts only
#   bash scripts/bench.sh --rounds 8       # drains per variant under callgrind (default 4)
#
# 1. Builds `callgrind_poll` with the `bench-callgrind` profile (the release profile plus
#    `debug = 1`, defined in the root Cargo.toml; `--release` itself is unchanged) into
#    target/bench-callgrind/ (under $CARGO_TARGET_DIR when it is set; the reports stay in
#    target/bench/).
# 2. Runs each variant under callgrind, collecting only inside its drain function
#    (--toggle-collect=<fn>): `rounds` drains of N = 4096 completions each; the fills are not
#    counted. Output: target/bench/callgrind.<variant>.out, and callgrind_annotate's inclusive
#    report of it in target/bench/callgrind.<variant>.txt.
# 3. From each: total = every instruction inside the drain function (inclusive); provider = the
#    inclusive instructions of the calls it makes into the software device's CQ functions
#    (typed_verbs::backend::software::cq::start_poll, next_poll, end_poll, read_*, poll_cq);
#    own = total - provider, which keeps malloc/free in the own cost of the Vec variant. Each divided by
#    rounds x N: instructions per completion. The figures come from the call graph in the
#    callgrind file (each call's inclusive cost); the same figures read from callgrind_annotate
#    --inclusive=yes are compared with them, and a difference is reported as a warning.
# 4. Unless --no-criterion: `cargo bench -p typed-verbs-bench` (criterion, about 15 s of
#    measuring), and the time per completion it estimated for each variant.
# 5. Prints the table and writes it as markdown to target/bench/poll.md.
# 6. The post_send benchmark (target/bench/post.md), the extended post path (post_batch against
#    C's ibv_wr_* calls, in sessions of 1 and 16: target/bench/post_ex.md, and the line
#    `post-ex own typed/C worst = R`), the zero-copy receive benchmark (slots against the copy
#    path and C, target/bench/recv.md), then, unless --no-criterion, the safe copies into and
#    out of registered memory against memcpy (target/bench/copy.md).
#
# Installs missing system packages first (scripts/setup.sh, and valgrind).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

rounds=4
criterion=1
while [ $# -gt 0 ]; do
    case "$1" in
        --no-criterion) criterion=0 ;;
        --rounds)
            rounds="${2:?--rounds needs a number}"
            shift
            ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "bench: unknown argument $1 (try --help)" >&2
            exit 2
            ;;
    esac
    shift
done
case "$rounds" in
    '' | *[!0-9]* | 0)
        echo "bench: --rounds needs a positive number" >&2
        exit 2
        ;;
esac

# shellcheck source=setup.sh
source scripts/setup.sh

if ! command -v valgrind >/dev/null 2>&1 || ! command -v callgrind_annotate >/dev/null 2>&1; then
    echo "bench: installing valgrind"
    apt_install bench valgrind valgrind
fi

N=4096 # typed_verbs_bench::N
VARIANTS=(generated c checked vec poll_cq)
declare -A SYMBOL=(
    [generated]=drain_generated
    [c]=c_drain
    [checked]=drain_checked
    [vec]=drain_vec
    [poll_cq]=drain_poll_cq
)
declare -A LABEL=(
    [generated]="(a) generated"
    [c]="(b) C"
    [checked]="(c) checked"
    [vec]="(d) Vec"
    [poll_cq]="(e) ibv_poll_cq"
)
PROVIDER='^typed_verbs::backend::software::cq::'
out=target/bench
# Where cargo puts what it builds (the binaries and criterion's estimates).
tgt=${CARGO_TARGET_DIR:-target}
mkdir -p "$out"

echo "bench: building callgrind_poll (profile bench-callgrind)"
cargo build -q -p typed-verbs-bench --profile bench-callgrind --bin callgrind_poll
bin=$tgt/bench-callgrind/callgrind_poll

# Reads a callgrind output file (one event: Ir) and prints `total`, `provider` (the inclusive Ir
# of the calls from functions outside the provider into functions matching $PROVIDER) and one
# `call <fn> <calls> <Ir>` line per provider function called. The call edges are exact: every
# `calls=` line is followed by the inclusive cost of those calls.
callgrind_costs() {
    awk -v prov="$PROVIDER" '
        function name(s,   id) {
            if (match(s, /^\([0-9]+\)/)) {
                id = substr(s, 2, RLENGTH - 2)
                if (length(s) > RLENGTH) names[id] = substr(s, RLENGTH + 2)
                return names[id]
            }
            return s
        }
        /^fn=/ { fn = name(substr($0, 4)); next }
        /^cfn=/ { cfn = name(substr($0, 5)); next }
        /^calls=/ { incall = 1; split(substr($0, 7), c, " "); ncalls[fn SUBSEP cfn] += c[1]; next }
        /^(summary|totals):/ { total = $2; next }
        /^[0-9+*-]/ {
            cost = (NF >= 2) ? $2 : 0
            if (incall) { edge[fn SUBSEP cfn] += cost; incall = 0 }
            next
        }
        END {
            for (k in edge) {
                split(k, p, SUBSEP)
                if (p[2] ~ prov && p[1] !~ prov) {
                    provider += edge[k]; pcalls[p[2]] += ncalls[k]; pcost[p[2]] += edge[k]
                }
            }
            printf "total %d\nprovider %d\n", total, provider
            for (f in pcalls) printf "call %s %d %d\n", f, pcalls[f], pcost[f]
        }' "$1"
}

# From callgrind_annotate --inclusive=yes output: the inclusive Ir of the functions whose name
# matches $2. callgrind_annotate lists a function once per source file its code (inlined code
# included) comes from, and under the caller's spelling of its file; the entry with the most Ir
# is the function's inclusive cost. Sums over the matching functions.
annotate_inclusive() {
    awk -v want="$2" '
        /^ *[0-9,]+ +\(/ {
            ir = $1; gsub(",", "", ir)
            f = $0; sub(/^ *[0-9,]+ +\([^)]*\) +/, "", f); sub(/ \[[^]]*\]$/, "", f)
            sub(/^[^:]*:/, "", f)
            if (f ~ want && ir + 0 > best[f]) best[f] = ir + 0
        }
        END { for (f in best) s += best[f]; printf "%d\n", s }' "$1"
}

declare -A TOTAL OWN PROV NS CALLS
for v in "${VARIANTS[@]}"; do
    sym=${SYMBOL[$v]}
    echo "bench: callgrind: $v ($sym), $rounds x $N completions"
    valgrind --tool=callgrind --toggle-collect="$sym" \
        --callgrind-out-file="$out/callgrind.$v.out" "$bin" "$v" "$rounds" \
        2>"$out/callgrind.$v.log"
    callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$out/callgrind.$v.out" \
        >"$out/callgrind.$v.txt"
    costs=$(callgrind_costs "$out/callgrind.$v.out")
    total=$(awk '$1 == "total" { print $2 }' <<<"$costs")
    provider=$(awk '$1 == "provider" { print $2 }' <<<"$costs")
    CALLS[$v]=$(awk '$1 == "call" { sub(/.*::/, "", $2); printf "%s%s x%d", sep, $2, $3; sep = ", " }' \
        <<<"$(grep '^call ' <<<"$costs" | sort)")
    # The same two figures from callgrind_annotate's inclusive report, as a cross-check.
    a_total=$(annotate_inclusive "$out/callgrind.$v.txt" "^$sym\$")
    a_provider=$(annotate_inclusive "$out/callgrind.$v.txt" "$PROVIDER")
    if [ "$a_total" != "$total" ] || [ "$a_provider" != "$provider" ]; then
        echo "bench: warning: $v: callgrind_annotate says total $a_total, provider $a_provider;" \
            "the call graph says $total, $provider (used)" >&2
    fi
    if [ -z "$total" ] || [ "$total" -eq 0 ]; then
        echo "bench: $v: callgrind collected nothing inside $sym" >&2
        exit 1
    fi
    TOTAL[$v]=$total
    PROV[$v]=$provider
    OWN[$v]=$((total - provider))
    NS[$v]="-"
done

if [ "$criterion" -eq 1 ]; then
    echo "bench: criterion: cargo bench -p typed-verbs-bench"
    cargo bench -p typed-verbs-bench --bench poll
    for v in "${VARIANTS[@]}"; do
        est=$tgt/criterion/poll/$v/new/estimates.json
        if [ -f "$est" ]; then
            # criterion's reported time per iteration (its slope estimate, else the mean), in ns;
            # one iteration drains N completions.
            NS[$v]=$(awk -v n="$N" '{
                    if (match($0, /"slope":\{"confidence_interval":\{[^}]*\},"point_estimate":[0-9.e+-]+/) ||
                        match($0, /"mean":\{"confidence_interval":\{[^}]*\},"point_estimate":[0-9.e+-]+/)) {
                        s = substr($0, RSTART, RLENGTH); sub(/.*:/, "", s); printf "%.2f", s / n
                    } else printf "-"
                }' "$est")
        fi
    done
fi

per() { awk -v x="$1" -v d="$((rounds * N))" 'BEGIN { printf "%.2f", x / d }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# A target: "<what> <value> <op> <bound>": met or NOT met.
verdict() { awk -v v="$1" -v op="$2" -v b="$3" 'BEGIN { ok = (op == "<=") ? v <= b : v >= b; print ok ? "met" : "NOT met" }'; }

ga=generated
own_ab=$(ratio "${OWN[$ga]}" "${OWN[c]}")
tot_ab=$(ratio "${TOTAL[$ga]}" "${TOTAL[c]}")
own_ca=$(ratio "${OWN[checked]}" "${OWN[$ga]}")
tot_ca=$(ratio "${TOTAL[checked]}" "${TOTAL[$ga]}")
own_da=$(ratio "${OWN[vec]}" "${OWN[$ga]}")
tot_da=$(ratio "${TOTAL[vec]}" "${TOTAL[$ga]}")

{
    echo "# Poll-loop benchmark"
    echo
    echo "One software-device CQ (\`sw0\`, \`wc_flags!(BYTE_LEN | IMM | QP_NUM | SRC_QP)\`), N = $N"
    echo "completions per fill, drained in batches of at most 16. Instructions (Ir) from callgrind,"
    echo "collected inside each variant's drain function only, over $rounds drains"
    echo "($((rounds * N)) completions). *provider* = the software device's CQ functions the loop"
    echo "calls; *own* = total - provider (the loop and its wrapper; for (d) it includes malloc/free)."
    echo "Time per completion from criterion (\`cargo bench -p typed-verbs-bench\`; wall time, noisy)."
    echo
    echo "| variant | drain function | own Ir/completion | provider Ir/completion | total Ir/completion | own / (a) | total / (a) | ns/completion |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|"
    for v in "${VARIANTS[@]}"; do
        printf '| %s | `%s` | %s | %s | %s | %s | %s | %s |\n' "${LABEL[$v]}" "${SYMBOL[$v]}" \
            "$(per "${OWN[$v]}")" "$(per "${PROV[$v]}")" "$(per "${TOTAL[$v]}")" \
            "$(ratio "${OWN[$v]}" "${OWN[$ga]}")" "$(ratio "${TOTAL[$v]}" "${TOTAL[$ga]}")" "${NS[$v]}"
    done
    echo
    echo "| ratio | own | total | target | own | total |"
    echo "|---|---:|---:|---|---|---|"
    echo "| (a)/(b) | $own_ab | $tot_ab | <= 1.00 | $(verdict "$own_ab" "<=" 1) | $(verdict "$tot_ab" "<=" 1) |"
    echo "| (c)/(a) | $own_ca | $tot_ca | >= 1.50 | $(verdict "$own_ca" ">=" 1.5) | $(verdict "$tot_ca" ">=" 1.5) |"
    echo "| (d)/(a) | $own_da | $tot_da | >= 1.50 | $(verdict "$own_da" ">=" 1.5) | $(verdict "$tot_da" ">=" 1.5) |"
    echo
    echo "Provider functions called (calls over all $rounds drains):"
    echo
    for v in "${VARIANTS[@]}"; do
        echo "- ${LABEL[$v]}: ${CALLS[$v]}"
    done
    echo
    echo "Raw data: target/bench/callgrind.<variant>.out (callgrind_annotate's inclusive report:"
    echo "callgrind.<variant>.txt); criterion: target/criterion/poll/<variant>/."
} >"$out/poll.md"

echo
cat "$out/poll.md"
echo
echo "bench: written to $out/poll.md"

# ---------------------------------------------------------------------------------------------
# The post_send benchmark (benches/poll/src/post.rs): the typed Qp::post_send of each opcode
# against C building the same struct ibv_send_wr and calling verbs.h's ibv_post_send
# (c/post_send.c), on an RC pair on sw0. Each posts POSTS requests through a #[no_mangle]
# function that callgrind counts alone; "provider" is the software device's post_send (and what
# it calls), the same for both; "own" is the rest: building and checking the request.
POSTS=1024
PROVIDER='^typed_verbs::backend::software::'
echo "bench: building callgrind_post (profile bench-callgrind)"
cargo build -q -p typed-verbs-bench --profile bench-callgrind --bin callgrind_post
post_bin=$tgt/bench-callgrind/callgrind_post
OPCODES=(send send_imm rdma_write rdma_read fetch_add)
declare -A TYPED_SYM=([send]=typed_post_send [send_imm]=typed_post_send_imm [rdma_write]=typed_post_write
    [rdma_read]=typed_post_read [fetch_add]=typed_post_fetch_add)
declare -A C_SYM=([send]=c_post_send [send_imm]=c_post_send_imm [rdma_write]=c_post_write
    [rdma_read]=c_post_read [fetch_add]=c_post_fetch_add)
declare -A POST_OWN POST_TOTAL
for op in "${OPCODES[@]}"; do
    for variant in typed c; do
        if [ "$variant" = typed ]; then sym=${TYPED_SYM[$op]}; else sym=${C_SYM[$op]}; fi
        file=$out/callgrind.post.$op.$variant.out
        valgrind --tool=callgrind --toggle-collect="$sym" --callgrind-out-file="$file" \
            "$post_bin" "$op" "$variant" "$POSTS" >/dev/null 2>"$out/callgrind.post.$op.$variant.log"
        costs=$(callgrind_costs "$file")
        total=$(awk '$1 == "total" { print $2 }' <<<"$costs")
        prov=$(awk '$1 == "provider" { print $2 }' <<<"$costs")
        POST_TOTAL[$op.$variant]=$total
        POST_OWN[$op.$variant]=$((total - prov))
    done
done
throughput=$("$post_bin" throughput 3)

{
    echo "## post_send: the typed API against C building the same work request"
    echo
    echo "Instructions per post under callgrind ($POSTS posts per variant, RC pair on sw0): *own* is"
    echo "building and checking the request and calling the provider; *total* adds the software"
    echo "device's post_send, which delivers the request (the same for both)."
    echo
    echo "| opcode | typed own | C own | typed total | C total | own typed/C | total typed/C |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for op in "${OPCODES[@]}"; do
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$op" \
            "$(awk -v a="${POST_OWN[$op.typed]}" -v n="$POSTS" 'BEGIN { printf "%.2f", a / n }')" \
            "$(awk -v a="${POST_OWN[$op.c]}" -v n="$POSTS" 'BEGIN { printf "%.2f", a / n }')" \
            "$(awk -v a="${POST_TOTAL[$op.typed]}" -v n="$POSTS" 'BEGIN { printf "%.2f", a / n }')" \
            "$(awk -v a="${POST_TOTAL[$op.c]}" -v n="$POSTS" 'BEGIN { printf "%.2f", a / n }')" \
            "$(ratio "${POST_OWN[$op.typed]}" "${POST_OWN[$op.c]}")" \
            "$(ratio "${POST_TOTAL[$op.typed]}" "${POST_TOTAL[$op.c]}")"
    done
    echo
    echo "Software-device RC 64-byte send/receive loopback on one core: $throughput"
} >"$out/post.md"
echo
cat "$out/post.md"
echo "bench: written to $out/post.md"

# ---------------------------------------------------------------------------------------------
# The extended post benchmark (benches/poll/src/post_ex.rs): the typed Qp::post_batch of each op
# against C making the same ibv_wr_* calls (c/post_ex.c: ibv_wr_start, per request qpx->wr_id,
# qpx->wr_flags, the op's builder and ibv_wr_set_sge, then ibv_wr_complete), on an RC pair on
# sw0 whose sender is an extended QP, in sessions of 1 and of 16 requests, each signaled. Each
# session is one call of a #[no_mangle] function that callgrind counts alone; the receives and
# the draining of the CQ are outside it. "provider" is the software device's functions the
# session calls (its qp_ex ops and what they call, $PROVIDER as for post_send), the same for
# both; "own" is the rest, per request.
EX_POSTS=1024 # a multiple of every session size
EX_SESSIONS=(1 16)
echo "bench: building callgrind_post_ex (profile bench-callgrind)"
cargo build -q -p typed-verbs-bench --profile bench-callgrind --bin callgrind_post_ex
post_ex_bin=$tgt/bench-callgrind/callgrind_post_ex
declare -A EX_NAME=([send]=send [send_imm]=send_imm [rdma_write]=write [rdma_read]=read
    [fetch_add]=fetch_add)
declare -A EX_OWN EX_TOTAL
for op in "${OPCODES[@]}"; do
    for k in "${EX_SESSIONS[@]}"; do
        for variant in typed c; do
            sym=${variant}_ex_${EX_NAME[$op]}_$k
            file=$out/callgrind.post_ex.$op.$k.$variant.out
            if ! valgrind --tool=callgrind --toggle-collect="$sym" --callgrind-out-file="$file" \
                "$post_ex_bin" "$op" "$variant" "$k" "$EX_POSTS" >/dev/null \
                2>"$out/callgrind.post_ex.$op.$k.$variant.log"; then
                echo "bench: post_ex $op $variant (sessions of $k) failed:" >&2
                tail -n 5 "$out/callgrind.post_ex.$op.$k.$variant.log" >&2
                exit 1
            fi
            costs=$(callgrind_costs "$file")
            total=$(awk '$1 == "total" { print $2 }' <<<"$costs")
            prov=$(awk '$1 == "provider" { print $2 }' <<<"$costs")
            if [ -z "$total" ] || [ "$total" -eq 0 ]; then
                echo "bench: post_ex $op $variant: callgrind collected nothing inside $sym" >&2
                exit 1
            fi
            EX_TOTAL[$op.$k.$variant]=$total
            EX_OWN[$op.$k.$variant]=$((total - prov))
        done
    done
done
ex_per() { awk -v a="$1" -v n="$EX_POSTS" 'BEGIN { printf "%.2f", a / n }'; }
ex_worst=$(for op in "${OPCODES[@]}"; do
    for k in "${EX_SESSIONS[@]}"; do
        awk -v a="${EX_OWN[$op.$k.typed]}" -v b="${EX_OWN[$op.$k.c]}" 'BEGIN { printf "%.6f\n", a / b }'
    done
done | sort -g | tail -n 1)
ex_worst=$(awk -v r="$ex_worst" 'BEGIN { printf "%.2f", r }')
{
    echo "## Extended post path: post_batch against C making the same ibv_wr_* calls"
    echo
    echo "Instructions per request under callgrind ($EX_POSTS requests per variant, RC pair on sw0, the"
    echo "sender an extended QP, each request signaled), in sessions (ibv_wr_start .. ibv_wr_complete)"
    echo "of 1 and of 16 requests: *own* is opening the session, setting each request's wr_id and"
    echo "flags, calling its builder and ibv_wr_set_sge, and closing it; *total* adds the software"
    echo "device's qp_ex functions (the same for both)."
    echo
    echo "| op | session size | typed own | C own | typed total | C total | own typed/C |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for op in "${OPCODES[@]}"; do
        for k in "${EX_SESSIONS[@]}"; do
            printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$op" "$k" \
                "$(ex_per "${EX_OWN[$op.$k.typed]}")" "$(ex_per "${EX_OWN[$op.$k.c]}")" \
                "$(ex_per "${EX_TOTAL[$op.$k.typed]}")" "$(ex_per "${EX_TOTAL[$op.$k.c]}")" \
                "$(awk -v a="${EX_OWN[$op.$k.typed]}" -v b="${EX_OWN[$op.$k.c]}" 'BEGIN { printf "%.2f", a / b }')"
        done
    done
    echo
    echo "Worst own typed/C: $ex_worst (target <= 1.00: $(verdict "$ex_worst" "<=" 1))."
} >"$out/post_ex.md"
echo
cat "$out/post_ex.md"
echo "bench: written to $out/post_ex.md"
echo "post-ex own typed/C worst = $ex_worst"

# ---------------------------------------------------------------------------------------------
# The receive benchmark (benches/poll/src/recv.rs): one zero-copy receive (post, completion,
# reading the bytes) with slots (`post_recv_slot`, a `completion_record!` loop with `slot`),
# with today's copy path (`post_recv` into a plain region, a generated loop, `Mr::read`), and in
# C with wr_id = the buffer's descriptor (c/recv.c), on an RC pair on sw0. Each variant's post
# and drain functions are counted together (two --toggle-collect); "provider" is the software
# device's functions they call (post_recv and the CQ), the same work for all three.
RECV_ROUNDS=16
RECV_DEPTH=64 # typed_verbs_bench::recv::DEPTH
echo "bench: building callgrind_recv (profile bench-callgrind)"
cargo build -q -p typed-verbs-bench --profile bench-callgrind --bin callgrind_recv
recv_bin=$tgt/bench-callgrind/callgrind_recv
RECV_VARIANTS=(slot copy c)
declare -A RECV_POST=([slot]=slot_post_recv [copy]=copy_post_recv [c]=c_recv_post)
declare -A RECV_DRAIN=([slot]=slot_drain [copy]=copy_drain [c]=c_recv_drain)
declare -A RECV_OWN RECV_TOTAL
for v in "${RECV_VARIANTS[@]}"; do
    file=$out/callgrind.recv.$v.out
    valgrind --tool=callgrind --toggle-collect="${RECV_POST[$v]}" \
        --toggle-collect="${RECV_DRAIN[$v]}" --callgrind-out-file="$file" \
        "$recv_bin" "$v" "$RECV_ROUNDS" >/dev/null 2>"$out/callgrind.recv.$v.log"
    costs=$(callgrind_costs "$file")
    total=$(awk '$1 == "total" { print $2 }' <<<"$costs")
    prov=$(awk '$1 == "provider" { print $2 }' <<<"$costs")
    RECV_TOTAL[$v]=$total
    RECV_OWN[$v]=$((total - prov))
done
recv_per() { awk -v a="$1" -v n="$((RECV_ROUNDS * RECV_DEPTH))" 'BEGIN { printf "%.2f", a / n }'; }
slot_minus_c=$(awk -v a="${RECV_OWN[slot]}" -v b="${RECV_OWN[c]}" -v n="$((RECV_ROUNDS * RECV_DEPTH))" \
    'BEGIN { printf "%.2f", (a - b) / n }')
{
    echo "## Zero-copy receive: slots against the copy path and C"
    echo
    echo "Instructions per receive under callgrind ($((RECV_ROUNDS * RECV_DEPTH)) receives of 64 bytes, RC pair"
    echo "on sw0): posting it, taking its completion and reading its bytes (byte count and first 8"
    echo "bytes). *own* excludes the software device's functions (post_recv and the CQ's), which"
    echo "are the same for all three; *total* includes them."
    echo
    echo "| variant | functions | own | total |"
    echo "|---|---|---:|---:|"
    for v in "${RECV_VARIANTS[@]}"; do
        printf '| %s | `%s` + `%s` | %s | %s |\n' "$v" "${RECV_POST[$v]}" "${RECV_DRAIN[$v]}" \
            "$(recv_per "${RECV_OWN[$v]}")" "$(recv_per "${RECV_TOTAL[$v]}")"
    done
    echo
    echo "Slot own - C own: $slot_minus_c per receive (target <= 5: $(verdict "$slot_minus_c" "<=" 5))."
} >"$out/recv.md"
echo
cat "$out/recv.md"
echo "bench: written to $out/recv.md"

# ---------------------------------------------------------------------------------------------
# The safe copies into and out of registered memory (benches/poll/benches/copy.rs): Mr::write
# and Mr::read, byte-wise atomic (src/ffi/dma.rs), against copy_from_slice (memcpy) between private
# buffers, at 4 KiB and 1 MiB; criterion wall time as bytes per second. Skipped with
# --no-criterion (there is nothing to count: the copy is one instruction, rep movsb).
if [ "$criterion" -eq 1 ]; then
    echo "bench: criterion: cargo bench -p typed-verbs-bench --bench copy"
    cargo bench -p typed-verbs-bench --bench copy
    # Time per iteration (slope, else mean) in ns from criterion's estimates.
    copy_ns() {
        awk '{
            if (match($0, /"slope":\{"confidence_interval":\{[^}]*\},"point_estimate":[0-9.e+-]+/) ||
                match($0, /"mean":\{"confidence_interval":\{[^}]*\},"point_estimate":[0-9.e+-]+/)) {
                s = substr($0, RSTART, RLENGTH); sub(/.*:/, "", s); print s
            }
        }' "$tgt/criterion/mr_copy/$1/new/estimates.json"
    }
    gbps() { awk -v b="$1" -v ns="$2" 'BEGIN { printf "%.2f", b / ns }'; }
    {
        echo "## Copies into and out of registered memory against memcpy"
        echo
        echo "Bytes per second (GB/s, 10^9) from criterion; a 1 MiB region on sw0 (\`PageBuf\`),"
        echo "page-aligned private buffers; memcpy is \`copy_from_slice\` between two private buffers."
        echo
        echo "| copy | size | safe copy GB/s | memcpy GB/s | safe / memcpy |"
        echo "|---|---:|---:|---:|---:|"
        for size in 4k 1m; do
            if [ "$size" = 4k ]; then bytes=4096; else bytes=1048576; fi
            for dir in in out; do
                if [ "$dir" = in ]; then safe=write_$size; label="into (\`Mr::write\`)";
                else safe=read_$size; label="out of (\`Mr::read\`)"; fi
                s=$(copy_ns "$safe")
                m=$(copy_ns "memcpy_${dir}_$size")
                printf '| %s | %s | %s | %s | %s |\n' "$label" "$size" "$(gbps "$bytes" "$s")" \
                    "$(gbps "$bytes" "$m")" "$(ratio "$m" "$s")"
            done
        done
    } >"$out/copy.md"
    echo
    cat "$out/copy.md"
    echo "bench: written to $out/copy.md"
fi
