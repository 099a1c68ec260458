#!/usr/bin/env bash
# Runs the demo (examples/demo.rs) on a device, then rc_pingpong with server and client in one
# process on that device (rdma-core's style of summary).
#
#   bash scripts/demo.sh            # the device named by $TYPED_VERBS_DEVICE, else the software device sw0
#   bash scripts/demo.sh rxe0       # a named device
#
# Installs missing system packages first (see scripts/setup.sh).
set -euo pipefail

if [ "$#" -gt 1 ]; then
    echo "usage: bash scripts/demo.sh [DEVICE]" >&2
    exit 2
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=setup.sh
source scripts/setup.sh

# The demo's device is named, sw0 when nothing names one: Context::open_from_env() would take a
# machine's first real device instead.
device=${1:-${TYPED_VERBS_DEVICE:-sw0}}
cargo run --release --example demo -- "$device"
echo
echo "rc_pingpong --self -d $device (server and client in one process)"
exec cargo run --release --example rc_pingpong -- --self -d "$device"
