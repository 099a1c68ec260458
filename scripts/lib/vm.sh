# What the VM lanes (scripts/rxe-lane.sh, scripts/two-host-lane.sh) share beyond building the
# image (scripts/vm-lib.sh): building the crate's programs that go into the image, and counting
# the verdicts the VMs wrote on their consoles.
#
# Sourced after scripts/vm-lib.sh, with VM_NAME and WORK set by the lane.
# shellcheck shell=bash

# vm_build VAR WHAT FILE CARGO_ARG...: `cargo build CARGO_ARG...`, its messages as JSON in
# $WORK/FILE.json and the rest of its output in $WORK/FILE.log (whose end is shown if it fails);
# the executables it built go into the array VAR, and there must be one per --example= argument.
# Stops the lane (saying "building the WHAT failed" or "WHAT not found") otherwise.
vm_build() {
    local -n vm_built=$1
    local what=$2 file=$WORK/$3 arg want=0
    shift 3
    for arg in "$@"; do
        [[ $arg != --example=* ]] || want=$((want + 1))
    done
    if ! cargo build "$@" --message-format=json-render-diagnostics >"$file.json" 2>"$file.log"; then
        tail -n 30 "$file.log" >&2
        echo "$VM_NAME: building the $what failed" >&2
        exit 1
    fi
    mapfile -t vm_built < <(sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' "$file.json")
    [ "${#vm_built[@]}" = "$want" ] || { echo "$VM_NAME: $what not found" >&2; exit 1; }
}

# vm_init_start FILE: writes the start of a VM's init script to FILE (the lane appends the rest):
# busybox's applets, PATH, /proc, /sys and /dev, modprobe for the kernel's module requests, and a
# fresh console line.
vm_init_start() {
    cat >"$1" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo /bin/modprobe >/proc/sys/kernel/modprobe
# The firmware's last console line ("Booting from ROM..") has no line end: start a fresh line, so
# no LANE line is glued to it (the host also finds LANE lines anywhere in a line).
echo
INIT
}

# vm_tally VERDICTS REPORTED EXPECTED: prints the verdicts in the file VERDICTS (its lines
# "LANE: PASS|FAIL NAME ...") and counts them in `pass` and `fail`; `missing_steps` counts the
# names in the array `expected` not reported exactly once, and one more if the number of
# verdicts is not the number expected ("N REPORTED, M EXPECTED").
vm_tally() {
    local verdict what rest step_name n
    pass=0
    fail=0
    while read -r _ verdict what rest; do
        echo "  $verdict $what${rest:+ $rest}"
        case $verdict in
        PASS) pass=$((pass + 1)) ;;
        FAIL) fail=$((fail + 1)) ;;
        esac
    done <"$1"
    missing_steps=0
    for step_name in "${expected[@]}"; do
        n=$(awk -v s="$step_name" '$3 == s' "$1" | wc -l)
        if [ "$n" != 1 ]; then
            echo "  MISSING $step_name (reported $n times, expected once)"
            missing_steps=$((missing_steps + 1))
        fi
    done
    if [ "$((pass + fail))" != "${#expected[@]}" ]; then
        echo "$VM_NAME: $((pass + fail)) $2, ${#expected[@]} $3" >&2
        missing_steps=$((missing_steps + 1))
    fi
}
