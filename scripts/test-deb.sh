#!/bin/bash
# Builds the .deb (Release tree in build-deb/, cpack -G DEB) and checks that
# it installs and mounts a model on a clean Debian 12:
#
#   scripts/test-deb.sh          in a fresh debootstrap --variant=minbase
#                                bookworm root under build-deb/ (about a
#                                minute more than --host; needs root)
#   scripts/test-deb.sh --host   on this machine: apt-get install, mount,
#                                apt-get purge (for throwaway CI machines)
#
# In the package's own environment it checks: modelfs and modelfs-ls in
# PATH, the man pages, fuse3 pulled in, mount -t fuse.modelfs and an fstab
# line, the tree and one tensor's bytes against modelfs-ls of the build, and
# a clean purge. Ends with one "test-deb: PASS ..." or "test-deb: FAIL ..."
# line; every mount it made is undone and the root removed, also on failure,
# so it can simply be run again.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
SRC=$PWD
B=$SRC/build-deb
ROOT=$B/bookworm-root
MODE=chroot
case "${1:-}" in
    "") ;;
    --host) MODE=host ;;
    *) echo "usage: $0 [--host]" >&2; exit 2 ;;
esac
START=$(date +%s)
export DEBIAN_FRONTEND=noninteractive LC_ALL=C

say() { echo "test-deb: $*" >&2; }
# Everything below that may fail goes through fail, so the last line says why.
fail() {
    say "$*"
    echo "test-deb: FAIL ($MODE, $(( $(date +%s) - START )) s): $*"
    exit 1
}

# Mounts under a folder in the order to undo them: FUSE mounts first (their
# daemons hold /dev/fuse open through the bound /dev), then deepest first.
mounts_under() {
    awk -v r="$1" '$2 == r || index($2, r "/") == 1 { print ($3 ~ /^fuse/ ? 0 : 1) " " $2 }' \
        /proc/self/mounts | sort -k1,1 -k2,2r | cut -d' ' -f2-
}

WORK=$B/deb-check
HOST_MARK=$B/host-installed  # --host installed the package: purge it
cleanup() {
    local m
    for m in $(mounts_under "$WORK"); do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
    if [ -e "$HOST_MARK" ]; then
        # check.sh puts the fstab line back at once; this is for a run cut short.
        if grep -qF "$WORK/model.rten " /etc/fstab; then
            grep -vF "$WORK/model.rten " /etc/fstab >"$B/fstab.tmp"
            cat "$B/fstab.tmp" >/etc/fstab && rm -f "$B/fstab.tmp"
        fi
        dpkg-query -W -f='${Status}' modelfs 2>/dev/null | grep -q "install ok installed" &&
            apt-get purge -y -qq modelfs >/dev/null 2>&1
        rm -f "$HOST_MARK"
    fi
    if [ -d "$ROOT" ]; then
        for m in $(mounts_under "$ROOT"); do
            umount "$m" 2>/dev/null || umount -l "$m"
        done
        # Never remove through a mount left behind (the host's /dev).
        if [ -z "$(mounts_under "$ROOT")" ]; then
            rm -rf --one-file-system "$ROOT"
        else
            say "left $ROOT: still mounted: $(mounts_under "$ROOT" | tr '\n' ' ')"
        fi
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || fail "needs root (apt-get install, mount, chroot)"
cleanup  # what an interrupted run left

# --- the package ---------------------------------------------------------
./scripts/install-deps.sh || fail "install-deps.sh"
say "building a Release tree in $B"
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null || fail "cmake configure"
cmake --build "$B" -j2 >"$B/build.log" 2>&1 || fail "build (see $B/build.log)"
rm -f "$B"/modelfs_*.deb
(cd "$B" && cpack -G DEB >cpack.log 2>&1) || fail "cpack -G DEB (see $B/cpack.log)"
DEBS=("$B"/modelfs_*_*.deb)
{ [ ${#DEBS[@]} -eq 1 ] && [ -f "${DEBS[0]}" ]; } || fail "cpack made no single modelfs_<version>_<arch>.deb"
DEB=${DEBS[0]}
VERSION=$(dpkg-deb -f "$DEB" Version)
ARCH=$(dpkg --print-architecture)
[ "$(basename "$DEB")" = "modelfs_${VERSION}_${ARCH}.deb" ] || fail "$DEB: not modelfs_${VERSION}_${ARCH}.deb"
dpkg-deb -f "$DEB" Depends | grep -qE '(^|, )fuse3(,|$| )' || fail "$DEB does not depend on fuse3"
# libcurl is opened when a file is first fetched: no link shows it.
dpkg-deb -f "$DEB" Depends | grep -qE '(^|, )libcurl4(,|$| )' || fail "$DEB does not depend on libcurl4"
say "$(basename "$DEB"): Depends: $(dpkg-deb -f "$DEB" Depends)"

# --- a model and what the build says of it -------------------------------
rm -rf --one-file-system "$WORK" && mkdir -p "$WORK"
/usr/bin/python3 scripts/gen_rten.py --demo "$WORK/model.rten" >/dev/null || fail "gen_rten.py --demo"
"$B/modelfs-ls" "$WORK/model.rten" >"$WORK/tree.txt" || fail "modelfs-ls of the model"
TENSOR=$(awk '$3 ~ /^tensors\/[^\/]+$/ { print $3; exit }' "$WORK/tree.txt")
[ -n "$TENSOR" ] || fail "no tensors/ file in modelfs-ls's tree"
"$B/modelfs-ls" "$WORK/model.rten" "$TENSOR" >"$WORK/tensor.bin" || fail "modelfs-ls MODEL $TENSOR"

# The same checks in both modes, run where the package is installed. $1 is
# the folder holding model.rten, tree.txt and tensor.bin there.
cat >"$WORK/check.sh" <<'EOF'
#!/bin/bash
set -u
W=$1 TENSOR=$2 VERSION=$3
no() { echo "check: $*" >&2; exit 1; }
[ "$(command -v modelfs)" = /usr/bin/modelfs ] || no "modelfs is not /usr/bin/modelfs in PATH"
[ "$(command -v modelfs-ls)" = /usr/bin/modelfs-ls ] || no "modelfs-ls is not in PATH"
modelfs --version | grep -q "^modelfs $VERSION " || no "modelfs --version: $(modelfs --version)"
for p in modelfs modelfs-ls; do
    [ -s /usr/share/man/man1/$p.1.gz ] || no "/usr/share/man/man1/$p.1.gz missing"
done
dpkg-query -W -f='${Status}' fuse3 | grep -q "install ok installed" || no "fuse3 not installed with it"
[ -x /sbin/mount.fuse3 ] || no "no mount.fuse3"
modelfs-ls "$W/model.rten" | cmp -s - "$W/tree.txt" || no "installed modelfs-ls lists another tree"

M=$W/mnt-t F=$W/mnt-fstab
mkdir -p "$M" "$F"
mount -t fuse.modelfs "$W/model.rten" "$M" || no "mount -t fuse.modelfs failed"
ls -l "$M" "$M/tensors" >/dev/null || no "ls of the mount failed"
cmp "$M/$TENSOR" "$W/tensor.bin" || no "$TENSOR differs from modelfs-ls's bytes"
grep -q " $M fuse.modelfs " /proc/self/mounts || no "not mounted as fuse.modelfs"
# Without -o ro, mount(8) hands "rw" on: modelfs puts ro last, and refuses
# writes itself too.
grep -q " $M fuse.modelfs ro," /proc/self/mounts || no "mount -t without -o ro is not read-only"
touch "$M/new" 2>/dev/null && no "a file could be made in the mount"
fusermount3 -u "$M" || no "fusermount3 -u failed"

# The README's fstab line.
cp /etc/fstab "$W/fstab.orig"
echo "$W/model.rten $F fuse.modelfs ro 0 0" >>/etc/fstab
mount "$F"; rc=$?
cp "$W/fstab.orig" /etc/fstab
[ $rc -eq 0 ] || no "mount of the fstab line failed"
cmp "$F/$TENSOR" "$W/tensor.bin" || no "$TENSOR differs (fstab mount)"
grep -q " $F fuse.modelfs ro," /proc/self/mounts || no "the fstab mount is not read-only"
umount "$F" || no "umount of the fstab mount failed"
echo "check: ok"
EOF

# --- installed on a clean Debian 12, or on this machine ---------------------
if [ "$MODE" = chroot ]; then
    command -v debootstrap >/dev/null || {
        apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null
    } || fail "cannot install debootstrap"
    # The mirror this machine's apt uses (deb822 or one-line sources).
    [ -n "${MIRROR:-}" ] || MIRROR=$(sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
    [ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
    # No host is named here: a machine without one in its apt sources
    # cannot debootstrap from what it knows.
    [ -n "$MIRROR" ] || fail "no Debian mirror in /etc/apt/sources.list{,.d/*.sources}; set MIRROR=URL"
    T0=$(date +%s)
    say "debootstrap --variant=minbase bookworm from $MIRROR"
    debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$B/debootstrap.log" 2>&1 ||
        fail "debootstrap (see $B/debootstrap.log)"
    say "debootstrap took $(( $(date +%s) - T0 )) s"
    # As a Debian 12 machine has them: updates and security too.
    cp /etc/apt/sources.list "$ROOT/etc/apt/" 2>/dev/null
    cp /etc/apt/sources.list.d/*.sources "$ROOT/etc/apt/sources.list.d/" 2>/dev/null
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
    # No service is started from inside the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d" && chmod +x "$ROOT/usr/sbin/policy-rc.d"
    for d in dev proc sys; do
        mount --bind "/$d" "$ROOT/$d" || fail "bind mount of /$d"
    done
    mkdir -p "$ROOT/check"
    cp "$DEB" "$WORK/model.rten" "$WORK/tree.txt" "$WORK/tensor.bin" "$WORK/check.sh" "$ROOT/check/"
    T0=$(date +%s)
    chroot "$ROOT" apt-get update -qq >"$B/apt.log" 2>&1 || fail "apt-get update in the root (see $B/apt.log)"
    chroot "$ROOT" sh -c "cd /check && apt-get install -y -qq ./$(basename "$DEB")" >>"$B/apt.log" 2>&1 ||
        fail "apt-get install ./$(basename "$DEB") in the root (see $B/apt.log)"
    say "apt-get install took $(( $(date +%s) - T0 )) s"
    chroot "$ROOT" /bin/bash /check/check.sh /check "$TENSOR" "$VERSION" || fail "checks in the root"
    chroot "$ROOT" apt-get purge -y -qq modelfs >>"$B/apt.log" 2>&1 || fail "apt-get purge modelfs"
    { [ ! -e "$ROOT/usr/bin/modelfs" ] && [ ! -e "$ROOT/usr/share/man/man1/modelfs.1.gz" ]; } ||
        fail "purge left files behind"
else
    dpkg-query -W -f='${Status}' modelfs 2>/dev/null | grep -q "install ok installed" &&
        fail "a modelfs package is installed here already: --host would replace it"
    touch "$HOST_MARK"
    apt-get install -y -qq "$DEB" >"$B/apt.log" 2>&1 || fail "apt-get install $DEB (see $B/apt.log)"
    bash "$WORK/check.sh" "$WORK" "$TENSOR" "$VERSION" || fail "checks on this machine"
    apt-get purge -y -qq modelfs >>"$B/apt.log" 2>&1 || fail "apt-get purge modelfs"
    rm -f "$HOST_MARK"
    [ ! -e /usr/bin/modelfs ] || fail "purge left /usr/bin/modelfs"
fi

cleanup
[ ! -e "$ROOT" ] || fail "could not remove $ROOT"
echo "test-deb: PASS ($MODE, $(basename "$DEB"), $(( $(date +%s) - START )) s)"
