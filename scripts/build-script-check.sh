#!/usr/bin/env bash
# build.rs under a distribution's C flags: with link-time optimisation in CFLAGS (Arch's and
# Fedora's package builds set `-flto=auto`), the layout probe must still be an object file with
# symbol sizes (build.rs puts -fno-lto after CFLAGS); likewise with a sanitizer
# (-fno-sanitize=all). Reruns only typed-verbs's build script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
status=0
for flags in "-flto" "-flto=auto -O2" "-fsanitize=address"; do
    if CFLAGS="$flags" cargo check -p typed-verbs --lib --quiet; then
        echo "build-script-check: CFLAGS=\"$flags\" ok"
    else
        echo "build-script-check: CFLAGS=\"$flags\" FAILED" >&2
        status=1
    fi
done
exit "$status"
