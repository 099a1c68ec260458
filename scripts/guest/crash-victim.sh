#!/bin/sh
# crash-victim.sh: the victim's half of a crash step of the two-host lane (POSIX sh, busybox is
# enough). Runs the victim program in the background, waits until it prints
# "victim: traffic running" (at most 60 s), lets the traffic run 0.2 s more, then kills:
#
#   crash-victim.sh process CASE PROGRAM ARGS...
#       the program's process, with SIGKILL; prints its output and one line
#       "crash: CASE: victim pid N killed (SIGKILL) mid-traffic ..."; exits 0 if the program
#       died of the SIGKILL (status 137), 1 otherwise
#   crash-victim.sh start CASE PROGRAM ARGS...
#       leaves the program running (for the VM kill of a later step); prints its output so far
#       and one line "crash: CASE: victim pid N left running ..."; exits 0
#   crash-victim.sh vm CASE PROGRAM ARGS...
#       the whole VM: writes "LANE-KILL-VM NODE" on the console, where the host, which reads
#       the consoles while the VMs run, kills this VM's qemu with SIGKILL. Nothing after that
#       runs; if the VM is still alive 60 s later, fails.
how=${1:-}
case_name=${2:-}
case $how in process | start | vm) ;; *) how= ;; esac
[ $# -gt 2 ] && [ -n "$how" ] ||
    { echo "usage: crash-victim.sh process|start|vm CASE PROGRAM ARGS..." >&2; exit 2; }
shift 2
log=/tmp/victim.$$
"$@" >"$log" 2>&1 &
pid=$!
i=0
while ! grep -q '^victim: traffic running' "$log"; do
    if ! kill -0 $pid 2>/dev/null; then
        wait $pid
        s=$?
        cat "$log"
        echo "crash: $case_name: the victim ended (status $s) before its traffic ran"
        exit 1
    fi
    i=$((i + 1))
    if [ $i -gt 600 ]; then
        kill -KILL $pid
        cat "$log"
        echo "crash: $case_name: no traffic within 60 s"
        exit 1
    fi
    sleep 0.1
done
sleep 0.2 # mid-traffic
case $how in
process)
    kill -KILL $pid
    wait $pid
    s=$?
    cat "$log"
    rm -f "$log"
    if [ $s = 137 ]; then
        echo "crash: $case_name: victim pid $pid killed (SIGKILL) mid-traffic at uptime $(cut -d' ' -f1 /proc/uptime) s (exit status 137)"
        exit 0
    fi
    echo "crash: $case_name: the victim ended with status $s, not by the SIGKILL"
    exit 1
    ;;
start)
    cat "$log"
    echo "crash: $case_name: victim pid $pid left running mid-traffic, for the VM kill of a later step"
    exit 0
    ;;
vm)
    node=b
    case $(cat /proc/cmdline) in *lane.node=a*) node=a ;; esac
    cat "$log"
    echo "crash: $case_name: asking the host to kill VM $node mid-traffic"
    echo "LANE-KILL-VM $node" >/dev/console
    sleep 60
    echo "crash: $case_name: VM $node still alive 60 s after asking the host to kill it"
    exit 1
    ;;
esac
