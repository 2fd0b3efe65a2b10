#!/bin/sh
# The README's first command: installs the dependencies, builds modelfs,
# makes a small example model, mounts it and shows it with ls, jq, getfattr
# and numpy. The mount stays up for you to explore (MODELFS_DEMO_UNMOUNT=1
# unmounts at the end, as CI does).
set -eu
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" >/dev/null

model=build/demo/demo.rten
mnt=${MODELFS_DEMO_MNT:-/tmp/modelfs-demo}
mkdir -p build/demo "$mnt"
/usr/bin/python3 scripts/gen_rten.py --demo "$model"
if mountpoint -q "$mnt"; then fusermount3 -u "$mnt"; fi

show() { printf '\n$ %s\n' "$*"; sh -c "$*"; }

show ./build/modelfs "$model" "$mnt"
show ls -l "$mnt" "$mnt/tensors"
show jq -c "'.format, .format_version, .metadata, (.tensors[] | {name, dtype, shape, nbytes})'" "$mnt/model.json"
show getfattr -d "'$mnt/tensors/encoder%2Ffc1.weight'"
show /usr/bin/python3 -c "'import numpy as np; w = np.fromfile(\"$mnt/tensors/encoder%2Ffc1.weight\", \"<f4\").reshape(64, 784); print(w.shape, w.dtype, w[0, :4])'"
show head -n 12 "$mnt/model.toml"
show /usr/bin/python3 -c "'import numpy as np; a = np.load(\"$mnt/npy/encoder%2Ffc1.weight.npy\", mmap_mode=\"r\"); print(type(a).__name__, a.dtype, a.shape, a[0, :4])'"
show "cd '$mnt' && sha256sum -c SHA256SUMS"

# Two models that differ in one tensor, in one mount: which tensor changed?
/usr/bin/python3 - "$model" build/demo/changed.rten <<'PY'
import json, subprocess, sys
src, dst = sys.argv[1], sys.argv[2]
data = bytearray(open(src, "rb").read())
doc = json.loads(subprocess.run(["build/modelfs-ls", src, "model.json"], check=True,
                                capture_output=True).stdout)
t = [t for t in doc["tensors"] if t["name"] == "head/fc2.bias"][0]
data[t["offset"]:t["offset"] + 4] = bytes(4)   # one value set to 0.0
open(dst, "wb").write(data)
PY
two=$mnt-two
mkdir -p "$two"
if mountpoint -q "$two"; then fusermount3 -u "$two"; fi
show ./build/modelfs "$model" build/demo/changed.rten "$two"
show ls "$two"
show "diff '$two/demo.rten/SHA256SUMS' '$two/changed.rten/SHA256SUMS' || true"
show "diff -r '$two/demo.rten' '$two/changed.rten' | grep -v '^[<>-]' || true"
show fusermount3 -u "$two"

if [ "${MODELFS_DEMO_UNMOUNT:-0}" = 1 ]; then
    show fusermount3 -u "$mnt"
else
    printf '\nThe model is mounted at %s. Unmount with: fusermount3 -u %s\n' "$mnt" "$mnt"
fi
