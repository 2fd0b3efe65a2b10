#!/usr/bin/python3
"""Writes HDF5 test models with Debian's h5py (libhdf5), laid out as Keras 2
(save_weights_to_hdf5_group / save_model_to_hdf5: a group per layer, the
attributes layer_names, weight_names, backend, keras_version,
model_config), transformers' tf_model.h5 (Keras 2 weights whose names
carry the model's scope) and Keras 3 .weights.h5 (layers/NAME/vars/0...),
by default and with libver="latest", Keras 3 .keras zips (stored, and
one deflated that modelfs refuses), plus every numeric dtype, compact,
scalar, empty and big-endian datasets, and what modelfs lists with a
problem (chunked, strings). Each with NAME.expect.json (fixture-expect/1),
the ground truth read back by h5py, never by modelfs: every dataset's
dtype, shape and bytes (as stored: big-endian stays big-endian).

usage: gen_hdf5.py OUTDIR
"""
import hashlib
import io
import json
import os
import sys
import zipfile

import numpy as np
try:
    import h5py
except ImportError:  # python3-h5py (scripts/install-deps.sh) missing: no models
    h5py = None


def rng_array(seed, shape, dtype):
    r = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return r.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return r.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dt)
    return r.integers(info.min, info.max, shape, dtype=dt.newbyteorder("=")).astype(dt)


def save_attributes(group, name, data):
    """Keras 2's save_attributes_to_hdf5_group: a numpy array of byte
    strings, cut into NAME0, NAME1... when it would pass 64512 bytes."""
    limit = 64512
    arr = np.asarray(data)
    chunks = 1
    parts = np.array_split(arr, chunks)
    while any(p.nbytes > limit for p in parts):
        chunks += 1
        parts = np.array_split(arr, chunks)
    if chunks > 1:
        for i, p in enumerate(parts):
            group.attrs["%s%d" % (name, i)] = p
    else:
        group.attrs[name] = arr


def keras2_weights(f, layers):
    """layers: [(layer_name, [(weight_name, array)])], as Keras 2 saves them."""
    save_attributes(f, "layer_names", [n.encode("utf8") for n, _ in layers])
    f.attrs["backend"] = b"tensorflow"
    f.attrs["keras_version"] = b"2.13.1"
    for lname, weights in layers:
        g = f.create_group(lname)
        save_attributes(g, "weight_names", [w.encode("utf8") for w, _ in weights])
        for wname, val in weights:
            ds = g.create_dataset(wname, val.shape, dtype=val.dtype)
            if not val.shape:
                ds[()] = val
            else:
                ds[:] = val


def dense_layers(prefix, sizes, seed):
    layers = []
    for i, (a, b) in enumerate(sizes):
        name = "dense" if i == 0 else "dense_%d" % i
        layers.append((name, [("%s%s/kernel:0" % (prefix, name), rng_array(seed + i, (a, b), "<f4")),
                              ("%s%s/bias:0" % (prefix, name), rng_array(seed + 100 + i, (b,), "<f4"))]))
    return layers


def model_keras2_weights(f):
    keras2_weights(f, dense_layers("", [(4, 8), (8, 3)], 1))


def model_keras2_full(f):
    config = {"class_name": "Sequential", "config": {"name": "sequential", "layers": [
        {"class_name": "Dense", "config": {"name": "dense", "units": 8}},
        {"class_name": "Dense", "config": {"name": "dense_1", "units": 3}}]}}
    f.attrs["keras_version"] = b"2.13.1"
    f.attrs["backend"] = b"tensorflow"
    f.attrs["model_config"] = json.dumps(config).encode("utf8")
    f.attrs["training_config"] = json.dumps({"loss": "mse", "metrics": None}).encode("utf8")
    keras2_weights(f.create_group("model_weights"), dense_layers("", [(4, 8), (8, 3)], 7))
    og = f.create_group("optimizer_weights")
    save_attributes(og, "weight_names", [b"Adam/iter:0"])
    og.create_dataset("Adam/iter:0", data=np.int64(12))


def model_tf_bert(f):
    """transformers' TF weights: Keras 2 save_weights of a TFBertModel whose
    one top layer is the main layer "bert", its weights scoped by the model."""
    s = "tf_bert_model/bert/"
    weights = [
        (s + "embeddings/word_embeddings/weight:0", rng_array(3, (30, 16), "<f4")),
        (s + "embeddings/position_embeddings/embeddings:0", rng_array(4, (12, 16), "<f4")),
        (s + "embeddings/LayerNorm/gamma:0", np.ones(16, "<f4")),
        (s + "embeddings/LayerNorm/beta:0", np.zeros(16, "<f4")),
        (s + "encoder/layer_._0/attention/self/query/kernel:0", rng_array(5, (16, 16), "<f4")),
        (s + "encoder/layer_._0/attention/self/query/bias:0", rng_array(6, (16,), "<f4")),
        (s + "pooler/dense/kernel:0", rng_array(8, (16, 16), "<f2")),
    ]
    keras2_weights(f, [("bert", weights)])


def model_keras3(f):
    """Keras 3 .weights.h5 (H5IOStore): layers/NAME/vars/INDEX."""
    for i, (a, b) in enumerate([(4, 8), (8, 3)]):
        g = f.create_group("layers/%s/vars" % ("dense" if i == 0 else "dense_%d" % i))
        g.create_dataset("0", data=rng_array(20 + i, (a, b), "<f4"))
        g.create_dataset("1", data=rng_array(30 + i, (b,), "<f4"))
    f.create_group("optimizer/vars").create_dataset("0", data=np.int64(3))
    f.create_group("vars")


def model_dtypes(f):
    for i, dt in enumerate(["i1", "u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8",
                            "<f2", "<f4", "<f8", ">i2", ">u4", ">f4", ">f8", ">i8", "?"]):
        f.create_dataset("t_%s" % np.dtype(dt).str.replace("<", "le").replace(">", "be")
                         .replace("|", ""), data=rng_array(40 + i, (3, 5), dt))
    # h5py's complex numbers: a compound of floats r and i.
    f.create_dataset("complex64", data=(rng_array(80, (2, 3), "<f4") + 1j).astype("<c8"))
    f.create_dataset("complex128_be", data=(rng_array(81, (4,), "<f8") * 1j).astype(">c16"))
    f.attrs["a_complex"] = np.complex64(1 + 2j)
    f.create_dataset("scalar", data=np.float32(2.5))
    f.create_dataset("empty", data=np.zeros((0, 4), "<f4"))
    f.create_dataset("rank3", data=rng_array(60, (2, 3, 4), "<f4"))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    arr = np.arange(10, dtype="<i4")
    sid = h5py.h5s.create_simple(arr.shape)
    dsid = h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I32LE, sid, dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, arr)
    d = f["rank3"]
    d.attrs["note"] = "an attribute of a dataset"
    d.attrs["scale"] = np.float64(0.5)
    d.attrs["ints"] = np.arange(4, dtype="<i2").reshape(2, 2)
    f.attrs["flag"] = np.bool_(True)
    f.attrs["utf8"] = "grüße"


def model_chunked(f):
    """Chunked datasets, as h5py writes them given chunks or filters:
    deflate, shuffle and fletcher32 in their combinations, edge chunks,
    a chunk never written (zeros), many chunks (a B-tree of several levels)."""
    f.create_dataset("gzip_shuffle_fletcher", data=rng_array(70, (10, 7, 3), "<f4"),
                     chunks=(3, 2, 2), compression="gzip", shuffle=True, fletcher32=True)
    f.create_dataset("plain", data=rng_array(71, (1000,), "<i8"), chunks=(7,))
    f.create_dataset("gzip9", data=np.arange(20000, dtype="<u2"), chunks=(100,),
                     compression="gzip", compression_opts=9)
    f.create_dataset("fletcher_odd", data=rng_array(72, (5, 3), "u1"), chunks=(2, 2), fletcher32=True)
    f.create_dataset("big_endian", data=rng_array(73, (6, 6), ">f8"), chunks=(4, 4), shuffle=True)
    d = f.create_dataset("partly_written", (20, 20), dtype="<f4", chunks=(5, 5))
    d[0:5, 5:10] = 1.5
    f.create_dataset("bools", data=rng_array(74, (9,), "?"), chunks=(4,), compression="gzip")
    f.create_dataset("resizable", data=rng_array(76, (3, 4), "<f4"), chunks=(1, 4), maxshape=(None, 4))
    f.create_dataset("many_chunks", data=np.arange(3000, dtype="<i4"), chunks=(2,))
    d = f.create_dataset("sparse_pages", (6000,), dtype="<i2", chunks=(2,), compression="gzip")
    d[2500:2600] = 5
    d[5990:] = 3
    # Space allocated at creation, no filters: with libver="latest" the
    # implicit chunk index (chunks one after another, no index).
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((2, 3))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    arr = rng_array(77, (5, 7), "<i4")
    sid = h5py.h5s.create_simple(arr.shape)
    h5py.h5d.create(f.id, b"early", h5py.h5t.STD_I32LE, sid, dcpl=dcpl).write(
        h5py.h5s.ALL, h5py.h5s.ALL, arr)
    f.create_dataset("one_chunk", data=rng_array(75, (4, 5), "<f4"), chunks=(4, 5), compression="gzip",
                     shuffle=True)


def model_unlimited(f):
    """Resizable datasets, as h5py writes them with libver="latest": one
    unlimited dimension indexes the chunks with an extensible array, more
    than one with a version 2 B-tree. Enough small chunks (1 x 4) that the
    array has super blocks and the B-tree more than one level; filtered
    (gzip + shuffle, fletcher32) and not; appended to by resizing; chunks
    never written; an array whose data blocks are paged (past 65520
    chunks, sparsely written); a fixed array and an implicit index of a
    maximum extent beyond the current one."""
    f.create_dataset("ea_plain", data=rng_array(80, (3000, 4), "<i2"), chunks=(1, 4),
                     maxshape=(None, 4))
    f.create_dataset("ea_gzip_shuffle", data=rng_array(81, (1500, 4), "<f4"), chunks=(1, 4),
                     maxshape=(None, 4), compression="gzip", shuffle=True)
    f.create_dataset("ea_fletcher", data=rng_array(82, (700, 3), "u1"), chunks=(2, 3),
                     maxshape=(None, 3), fletcher32=True)
    # The unlimited dimension last, the other below its maximum: the
    # array's index runs over the grid of the maximum extent.
    f.create_dataset("ea_last_dim", data=rng_array(83, (6, 50), "<f8"), chunks=(2, 3),
                     maxshape=(8, None))
    d = f.create_dataset("ea_appended", (0, 5), dtype="<i4", chunks=(3, 5), maxshape=(None, 5))
    for i in range(12):
        d.resize((d.shape[0] + 7, 5))
        d[-7:] = rng_array(84 + i, (7, 5), "<i4")
    d = f.create_dataset("ea_sparse_paged", (70000,), dtype="u1", chunks=(1,), maxshape=(None,))
    d[3:9] = 7
    d[66000:66010] = np.arange(10, dtype="u1") + 1
    f.create_dataset("bt2_plain", data=rng_array(90, (1500, 8), "<i2"), chunks=(1, 4),
                     maxshape=(None, None))
    f.create_dataset("bt2_gzip_shuffle_fletcher", data=rng_array(91, (600, 8), "<f4"),
                     chunks=(1, 4), maxshape=(None, None), compression="gzip", shuffle=True,
                     fletcher32=True)
    f.create_dataset("bt2_edges", data=rng_array(92, (5, 7, 3), "<f4"), chunks=(2, 3, 2),
                     maxshape=(None, None, 3))
    d = f.create_dataset("bt2_partly_written", (40, 40), dtype="<u2", chunks=(4, 4),
                         maxshape=(None, None), compression="gzip")
    d[8:20, 4:12] = 9
    f.create_dataset("fixed_below_max", data=rng_array(93, (10, 4), "<f4"), chunks=(3, 4),
                     maxshape=(16, 4))
    # Space allocated at creation below a maximum extent: the implicit
    # index lays out the chunks of the maximum grid.
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((2, 3))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    arr = rng_array(94, (5, 7), "<i4")
    sid = h5py.h5s.create_simple(arr.shape, (9, 10))
    h5py.h5d.create(f.id, b"implicit_below_max", h5py.h5t.STD_I32LE, sid, dcpl=dcpl).write(
        h5py.h5s.ALL, h5py.h5s.ALL, arr)


def model_problems(f):
    """Strings (as JSON string tensors), and what modelfs lists but does not
    serve as a tensor: a
    dataset never written, a chunked one with a filter it does not know
    (scale-offset)."""
    f.create_dataset("names", data=np.array([b"abc", b"de"]))
    f.create_dataset("vlen_names", data=np.array(["dense", "dense_1", "grüße", ""], dtype=object),
                     dtype=h5py.string_dtype())
    f.create_dataset("one_name", data="kernel:0", dtype=h5py.string_dtype("ascii"))
    f.create_dataset("chunked", data=np.arange(100, dtype="<f4"), chunks=(10,), compression="gzip")
    d = f.create_dataset("filled", (8,), dtype="<f4", chunks=(2,), fillvalue=7.0)
    d[0:2] = 1.0
    f.create_dataset("filled_whole", data=np.arange(8, dtype="<f4"), chunks=(2,), fillvalue=7.0)
    f.create_dataset("scaleoffset", data=np.arange(100, dtype="<i4"), chunks=(10,), scaleoffset=0)
    f.create_dataset("unwritten", (4, 4), dtype="<f4")
    f.create_dataset("ok", data=np.arange(6, dtype="<f8"))


def model_dense(f):
    """libver="latest" past the compact limits (8 links, 8 attributes):
    links and attributes in a fractal heap indexed by a v2 B-tree."""
    g = f.create_group("layer")
    for i in range(150):
        g.create_dataset("w%03d:0" % i, data=rng_array(200 + i, (i % 4 + 1,), "<f4"))
    for i in range(20):
        g.attrs["attr_%02d" % i] = np.arange(i + 1, dtype="<i8")
    f.attrs["weight_names"] = np.array([("w%03d:0" % i).encode() for i in range(150)])
    f.attrs["backend"] = b"tensorflow"


MODELS = [
    ("keras2.weights.h5", model_keras2_weights, "earliest"),
    ("keras2_model.h5", model_keras2_full, "earliest"),
    ("tf_model.h5", model_tf_bert, "earliest"),
    ("keras3.weights.h5", model_keras3, "earliest"),
    ("dtypes.h5", model_dtypes, "earliest"),
    ("problems.h5", model_problems, "earliest"),
    ("chunked.h5", model_chunked, "earliest"),
    ("chunked_latest.h5", model_chunked, "latest"),
    ("keras2_latest.weights.h5", model_keras2_weights, "latest"),
    ("dtypes_latest.h5", model_dtypes, "latest"),
    ("dense_latest.h5", model_dense, "latest"),
    ("unlimited_latest.h5", model_unlimited, "latest"),
]


def raw_bytes(path, ds):
    """The dataset's bytes as stored in the file (contiguous/compact), read
    at the offset libhdf5 reports; b"" when it has none there."""
    off = ds.id.get_offset()
    if off is None:
        return b""
    with open(path, "rb") as fh:
        fh.seek(off)
        return fh.read(ds.id.get_storage_size())


def chunk_index_read(ds):
    """Whether modelfs decodes this chunked dataset: any chunk index (the
    version 1 B-tree of libhdf5's default format; with libver="latest" a
    single chunk, the implicit index, a fixed array, an extensible array or
    a version 2 B-tree), its filters deflate, shuffle and fletcher32 (ids 1
    to 3), and chunks never written only with a zero fill value."""
    plist = ds.id.get_create_plist()
    grid = int(np.prod([-(-n // c) for n, c in zip(ds.shape, ds.chunks)]))
    if ds.fillvalue != 0 and ds.id.get_num_chunks() < grid:
        return False  # chunks never written would be the fill value: not read
    if any(plist.get_filter(i)[0] not in (1, 2, 3) for i in range(plist.get_nfilters())):
        return False
    return True


def expectation(path):
    tensors = []
    with h5py.File(path, "r") as f:
        items = []
        f.visititems(lambda n, o: items.append((n, o)) if isinstance(o, h5py.Dataset) else None)
        for name, ds in items:
            plist = ds.id.get_create_plist()
            layout = plist.get_layout()
            dt = ds.dtype
            numeric = dt.kind in "biuf" and dt.itemsize in (1, 2, 4, 8) or \
                dt.kind == "c" and dt.itemsize in (8, 16)
            unwritten = layout == h5py.h5d.CONTIGUOUS and ds.id.get_offset() is None and ds.size > 0
            if layout == h5py.h5d.CHUNKED and not chunk_index_read(ds) or unwritten:
                data = b""
                want = {"dtype": None, "shape": list(ds.shape), "problem": True}
            elif dt.kind == "S" or h5py.check_string_dtype(dt) is not None:
                values = [v.decode("utf-8") if isinstance(v, bytes) else v
                          for v in np.asarray(ds[()]).reshape(-1).tolist()]
                values = [v.split("\0")[0] for v in values]
                data = json.dumps(values, ensure_ascii=False, separators=(",", ":")).encode()
                want = {"dtype": "string", "shape": list(ds.shape), "values": values}
            elif numeric:
                data = np.ascontiguousarray(ds[()]).tobytes()
                want = {"dtype": dt.name, "shape": list(ds.shape)}
                if layout == h5py.h5d.CONTIGUOUS and ds.size > 0:
                    assert data == raw_bytes(path, ds), name
            else:
                data = raw_bytes(path, ds)
                want = {"dtype": None, "shape": list(ds.shape), "problem": True}
            want.update({"name": name, "nbytes": len(data),
                         "sha256": hashlib.sha256(data).hexdigest()})
            tensors.append(want)
    return tensors


def write(outdir, name, fn, libver, userblock=0):
    path = os.path.join(outdir, name)
    if os.path.exists(path):
        os.unlink(path)
    with h5py.File(path, "w", libver=libver, userblock_size=userblock) as f:
        fn(f)
    tensors = expectation(path)
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        sb = fh.read(userblock + 9)[userblock + 8]
    expect = {
        "schema": "fixture-expect/1", "fixture": name, "format": "hdf5", "expect": "readable",
        "made_by": "modelfs scripts/gen_hdf5.py (h5py %s, HDF5 %s, libver=%s)"
                   % (h5py.__version__, h5py.version.hdf5_version, libver),
        "file_size": size, "format_version": sb,
        "tensor_count": len(tensors), "tensors": tensors,
    }
    with open(path + ".expect.json", "w") as f:
        json.dump(expect, f, indent=1, ensure_ascii=False)
        f.write("\n")


def write_keras(outdir, name, compression=None):
    """A Keras 3 .keras file as saving_lib writes it: a zip (stored, zipfile's
    default) of metadata.json, config.json and model.weights.h5, the
    weights made by h5py in memory and written with writestr."""
    path = os.path.join(outdir, name)
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        model_keras3(f)
    weights = buf.getvalue()
    config = {"module": "keras", "class_name": "Sequential", "config": {"name": "sequential",
              "layers": [{"class_name": "Dense", "config": {"units": 8}},
                         {"class_name": "Dense", "config": {"units": 3}}]}}
    metadata = {"keras_version": "3.0.5", "date_saved": "2024-03-01@12:00:00"}
    kw = {} if compression is None else {"compression": compression}
    with zipfile.ZipFile(path, "w", **kw) as zf:
        zf.writestr("metadata.json", json.dumps(metadata))
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", weights)
    tensors = []
    with zipfile.ZipFile(path) as zf, h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r") as f:
        items = []
        f.visititems(lambda n, o: items.append((n, o)) if isinstance(o, h5py.Dataset) else None)
        for n, ds in items:
            data = np.ascontiguousarray(ds[()]).tobytes()
            tensors.append({"name": n, "dtype": ds.dtype.name, "shape": list(ds.shape),
                            "nbytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    expect = {
        "schema": "fixture-expect/1", "fixture": name, "format": "hdf5",
        "expect": "readable" if compression is None else "corrupt",
        "made_by": "modelfs scripts/gen_hdf5.py (h5py %s, HDF5 %s, zipfile)"
                   % (h5py.__version__, h5py.version.hdf5_version),
        "file_size": os.path.getsize(path), "format_version": weights[8],
        "tensor_count": len(tensors), "tensors": tensors,
        "keras": {"config": config, "metadata": metadata},
    }
    if compression is not None:
        expect["error_contains"] = "compressed"
    with open(path + ".expect.json", "w") as f:
        json.dump(expect, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if h5py is None:
        print("SKIP gen_hdf5: no h5py (python3-h5py): no HDF5 models written", file=sys.stderr)
        return
    for name, fn, libver in MODELS:
        write(out, name, fn, libver)
    # A user block before the superblock (as MATLAB's v7.3 .mat files have).
    write(out, "userblock.h5", model_keras2_weights, "earliest", userblock=512)
    write(out, "userblock_latest.h5", model_keras2_weights, "latest", userblock=1024)
    write_keras(out, "model.keras")
    write_keras(out, "deflated.keras", zipfile.ZIP_DEFLATED)


if __name__ == "__main__":
    main()
