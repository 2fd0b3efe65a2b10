"""HDF5 (Keras / TensorFlow weights): the generic checks of
scripts/gen_hdf5.py's models (every dataset's bytes, dtype and shape as
h5py reads them), and its own: every attribute of every group and dataset
in model.json equal to h5py's value (strings decoded, arrays as nested
lists), Keras's model_config parsed under metadata.keras, each served
tensor's bytes equal to what h5dump (hdf5-tools, a second reader) writes
of the dataset; hostile files (EXTRAS): object header continuations and
B-trees that loop, heap offsets past the end, huge counts, a file cut
short, each refused with exit 5 and one line naming the file.
"""
import json
import os
import shutil
import struct
import subprocess
import tempfile

import mfstest

try:
    import h5py
    import numpy as np
except ImportError:
    h5py = None

DIRS = ("gen/hdf5",)


def py_value(v):
    """An attribute as h5py reads it, as model.json holds it."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    if isinstance(v, np.ndarray):
        return [py_value(x) for x in v] if v.ndim > 0 else py_value(v[()])
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def attrs_of(obj):
    return {k: py_value(obj.attrs[k]) for k in obj.attrs.keys()}


def h5dump_bytes(model, name, tmp):
    """The dataset's bytes as h5dump writes them in the file's own byte order."""
    out = os.path.join(tmp, "d.bin")
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run(["h5dump", "-d", "/" + name, "-b", "FILE", "-o", out, model],
                       capture_output=True, timeout=60)
    if r.returncode != 0 or not os.path.exists(out):
        return None
    with open(out, "rb") as f:
        return f.read()


def check_model(c, t, model, expect, mount):
    if h5py is None:
        c.skip("no h5py: HDF5 attribute checks")
        return
    if expect is None or expect.get("expect") != "readable":
        return
    try:
        mnt = mount()
    except RuntimeError as err:
        c.check(False, "%s: mount: %s" % (model, err))
        return
    name = os.path.basename(model)
    doc = json.loads(mfstest.read_bytes(os.path.join(mnt, "model.json")))
    meta = doc["metadata"].get("attributes", {})
    by_name = {x["name"]: x for x in doc["tensors"]}
    groups = {}
    with h5py.File(model, "r") as f:
        groups["/"] = attrs_of(f)

        def visit(n, o):
            if isinstance(o, h5py.Group):
                groups["/" + n] = attrs_of(o)
            elif n in by_name:
                c.equal(by_name[n].get("attributes", {}), attrs_of(o),
                        "%s: %s attributes vs h5py" % (name, n))
        f.visititems(visit)
        for g, want in groups.items():
            c.equal(meta.get(g, {}), want, "%s: group %s attributes vs h5py" % (name, g))
        cfg = f.attrs.get("model_config")
        if cfg is not None:
            c.equal(doc["metadata"].get("keras", {}).get("model_config"), json.loads(cfg),
                    "%s: metadata.keras.model_config vs the attribute's JSON" % name)
    if shutil.which("h5dump") is None:
        c.skip("no h5dump: HDF5 second-reader checks")
        return
    tmp = tempfile.mkdtemp(prefix="modelfs-h5-")
    try:
        # h5dump starts a process per dataset: a few per model suffice.
        served = [x for x in doc["tensors"] if "problem" not in x and x["nbytes"] > 0][:4]
        for x in served:
            want = h5dump_bytes(model, x["name"], tmp)
            c.equal(mfstest.read_bytes(os.path.join(mnt, x["path"])), want,
                    "%s: %s bytes vs h5dump -b FILE" % (name, x["name"]))
    finally:
        shutil.rmtree(tmp)
