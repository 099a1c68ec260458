# What the VM lanes share (scripts/rxe-lane.sh: one VM; scripts/two-host-lane.sh: two VMs on a
# private wire): the system packages they need, Debian's generic kernel (downloaded with apt and
# unpacked, never installed on the host), an initramfs root with programs and the libraries ldd
# lists for them, kernel modules with their dependencies from the kernel's modules.dep, Debian
# packages unpacked into the root (never installed on the host), and the packing of the root.
#
# Sourced, after scripts/setup.sh (for `installed`), with these set by the lane:
#   VM_NAME   the prefix of its messages ("rxe-lane")
#   CACHE     where downloads are kept between runs
#   ROOT      the initramfs tree being built
# shellcheck shell=bash

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    SUDO=(false) # fails with a message below if anything needs installing
fi

# vm_need_packages PKG...: installs the packages that are missing, saying which.
vm_need_packages() {
    local p missing=()
    for p in "$@"; do
        installed "$p" || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "$VM_NAME: installing missing system packages: ${missing[*]}"
        [ "${SUDO[0]:-}" != false ] || { echo "$VM_NAME: not root and no sudo: install them as root" >&2; exit 1; }
        "${SUDO[@]}" apt-get update -qq
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

# vm_kernel: the package linux-image-amd64 depends on (the generic flavour; cloud-amd64 has no
# rdma_rxe), downloaded and unpacked into $CACHE, not installed, with the modules.dep depmod
# makes for it. Sets kpkg, kdir, kver, vmlinuz.
vm_kernel() {
    kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    if [ -z "$kpkg" ]; then
        "${SUDO[@]}" apt-get update -qq
        kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    fi
    [ -n "$kpkg" ] || { echo "$VM_NAME: cannot find the kernel package behind linux-image-amd64" >&2; exit 1; }
    kdir=$CACHE/$kpkg
    if [ ! -d "$kdir" ]; then
        echo "$VM_NAME: downloading $kpkg"
        rm -rf "$kdir.part" && mkdir -p "$kdir.part"
        (cd "$kdir.part" && apt-get download -q "$kpkg" 2>/dev/null >/dev/null)
        dpkg-deb -x "$kdir.part"/*.deb "$kdir.part/tree"
        mv "$kdir.part/tree" "$kdir" && rm -rf "$kdir.part"
    fi
    kver=$(ls "$kdir/lib/modules")
    vmlinuz=$kdir/boot/vmlinuz-$kver
    # The package has no modules.dep (its postinst makes it): made once, in the cache.
    [ -s "$kdir/lib/modules/$kver/modules.dep" ] || depmod -b "$kdir" "$kver"
}

# vm_copy_libs PROGRAM...: copies every library ldd lists for the programs to the same path in
# $ROOT (libraries already in $ROOT, e.g. from vm_debs, are found there and left alone).
vm_copy_libs() {
    local f lib root_abs libpath
    root_abs=$(cd "$ROOT" && pwd)
    libpath=$root_abs/lib/$multiarch:$root_abs/usr/lib/$multiarch
    for f in "$@"; do
        for lib in $(LD_LIBRARY_PATH=$libpath ldd "$f" 2>/dev/null | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'); do
            case $lib in "$root_abs"/*) continue ;; esac
            if [ ! -e "$ROOT$lib" ]; then
                mkdir -p "$ROOT$(dirname "$lib")"
                cp -L "$lib" "$ROOT$lib"
            fi
        done
    done
}

# vm_copy_with_libs FILE...: copies system programs or libraries (absolute paths) to the same
# path in $ROOT, with their libraries.
vm_copy_with_libs() {
    local f
    for f in "$@"; do
        case $f in /*) ;; *) echo "$VM_NAME: vm_copy_with_libs needs an absolute path: $f" >&2; exit 1 ;; esac
        mkdir -p "$ROOT$(dirname "$f")"
        cp -L "$f" "$ROOT$f"
    done
    vm_copy_libs "$@"
}

# vm_modules NAME...: copies the kernel's modules of these names into $ROOT, each with the
# modules it depends on (the kernel's modules.dep), then runs depmod over the copy. Modules that
# are loaded at run time without a symbol dependency (crc32_generic, which rxe's ICRC asks the
# crypto layer for) must be named.
vm_modules() {
    local mdir=$kdir/lib/modules/$kver m rel dep queue=() done_list=" "
    for m in "$@"; do
        rel=$(awk -v m="$m" -F: '{ n = $1; sub(/.*\//, "", n); sub(/\.ko(\.[a-z]+)?$/, "", n); gsub(/-/, "_", n) }
            n == m { print $1; exit }' "$mdir/modules.dep")
        [ -n "$rel" ] || { echo "$VM_NAME: module $m not in $kpkg" >&2; exit 1; }
        queue+=("$rel")
    done
    while [ "${#queue[@]}" -gt 0 ]; do
        rel=${queue[0]}
        queue=("${queue[@]:1}")
        case $done_list in *" $rel "*) continue ;; esac
        done_list="$done_list$rel "
        mkdir -p "$ROOT/lib/modules/$kver/$(dirname "$rel")"
        cp "$mdir/$rel" "$ROOT/lib/modules/$kver/$rel"
        for dep in $(awk -v r="$rel:" '$1 == r { $1 = ""; print; exit }' "$mdir/modules.dep"); do
            queue+=("$dep")
        done
    done
    cp "$mdir"/modules.{order,builtin,builtin.modinfo} "$ROOT/lib/modules/$kver/" 2>/dev/null || true
    depmod -b "$ROOT" "$kver"
}

# vm_debs PKG...: downloads Debian packages (cached in $CACHE/debs) and unpacks them into $ROOT;
# they are never installed on the host. vm_copy_libs then finds their libraries in $ROOT.
vm_debs() {
    local p deb missing=()
    mkdir -p "$CACHE/debs"
    for p in "$@"; do
        ls "$CACHE/debs/${p}"_*.deb >/dev/null 2>&1 || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "$VM_NAME: downloading ${missing[*]}"
        (cd "$CACHE/debs" && apt-get download -q "${missing[@]}" >/dev/null 2>&1) ||
            { "${SUDO[@]}" apt-get update -qq && (cd "$CACHE/debs" && apt-get download -q "${missing[@]}" >/dev/null); } ||
            { echo "$VM_NAME: apt-get download ${missing[*]} failed" >&2; exit 1; }
    fi
    for p in "$@"; do
        for deb in "$CACHE/debs/${p}"_*.deb; do
            dpkg-deb -x "$deb" "$ROOT"
        done
    done
}

# vm_pack OUT: the loader's configuration for the libraries in $ROOT, then $ROOT as a gzipped
# newc cpio (an initramfs) at OUT.
vm_pack() {
    printf '%s\n' "/lib/$multiarch" "/usr/lib/$multiarch" "/usr/lib/$multiarch/libibverbs" >"$ROOT/etc/ld.so.conf"
    ldconfig -r "$ROOT" 2>/dev/null || true
    (cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1) >"$1"
}

# vm_fail_context CONSOLE...: for each failed step (at most 4), the 12 console lines before its
# FAIL verdict (the step's own messages: its programs' logs, the failing tests' names), prefixed
# with the step's name. Printed next to the summary, so a log that keeps only its end still shows
# why a step failed.
vm_fail_context() {
    local c
    for c in "$@"; do
        awk -v vm="$VM_NAME" '
            { ring[NR % 12] = $0 }
            /LANE: FAIL / && shown < 4 {
                shown++
                name = $0; sub(/.*LANE: FAIL /, "", name)
                for (i = NR - 11; i < NR; i++) if (i > 0) print vm ": FAIL " name ": " ring[i % 12]
            }' "$c"
    done
}

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
