"""Carton's own checks (its format has no generic ones: these are the
whole of them): every carton with an .expect.json in DIRS (the shared
fixtures, and scripts/gen_carton.py's) is mounted and compared with its
expectation (carton.toml metadata, MANIFEST, LINKS, every member under
files/ with its size, sha256 and xattrs, every tensor with its dtype,
shape, bytes or strings, nested folders); model.toml must equal
model.json; tampered members read as EIO and modelfs-ls --verify names them;
hostile names appear nowhere. Then:
  - LINKS through -o links_dir (good and tampered copies);
  - LINKS over http from a server on 127.0.0.1 only: plain, gzip, deflate,
    br and zstd Content-Encoding, a 404 then a good mirror, a tampered file;
  - no copy in the daemon when the 4 MiB stored tensor of stored.carton is
    read (its anonymous memory does not grow; its file-backed memory does);
  - an unpacked folder with a file changed after it was packed.
"""
import brotli
import collections
import errno
import gzip
import hashlib
import http.server
import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import tomllib
import zlib

import zstandard

import mfstest
import gen_carton

DIRS = ("gen/carton", "shared/fixtures/carton")

SHA_EMPTY = hashlib.sha256(b"").hexdigest()


def without_nulls(v):
    if isinstance(v, dict):
        return {k: without_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [without_nulls(x) for x in v]
    return v


def run(args, env, **kw):
    return subprocess.run(args, capture_output=True, env=env, timeout=300, **kw)


class Ctx:
    def __init__(self, build, env):
        self.build, self.env = build, env
        self.modelfs = os.path.join(build, "modelfs")
        self.ls = os.path.join(build, "modelfs-ls")


# ---- one carton against its expectation ------------------------------------

def check_refused(c, x, model, expect):
    name = os.path.basename(model)
    code = 5 if expect["expect"] == "corrupt" else 4
    r = run([x.ls, model], x.env, text=True)
    c.equal(r.returncode, code, "%s: modelfs-ls exit" % name)
    c.check(expect.get("error_contains", "") in r.stderr and model in r.stderr and
            r.stderr.count("\n") == 1, "%s: one line naming the file and %r: %r"
            % (name, expect.get("error_contains"), r.stderr))
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    r = run([x.modelfs, model, mnt], x.env, text=True)
    c.equal(r.returncode, code, "%s: modelfs exit" % name)
    if os.path.ismount(mnt):
        mfstest.unmount(mnt)
    os.rmdir(mnt)


def check_verify(c, x, model, expect, links_dir=None):
    """modelfs-ls --verify fails exactly when something cannot be served,
    naming each such file."""
    name = os.path.basename(model)
    args = [x.ls, "--verify"] + (["--links-dir", links_dir] if links_dir else []) + [model]
    r = run(args, x.env, text=True)
    bad = dict(expect.get("unreadable", {}))
    if links_dir is None:
        for p in expect["metadata"].get("linked_only_files", []):
            bad["files/" + p] = "links_dir"
    c.equal(r.returncode, 8 if bad else 0, "%s: modelfs-ls --verify exit (%s)" % (name, r.stderr.strip()))
    for path, why in bad.items():
        if not path.startswith("files/"):
            continue  # tensors/ files share their member's check
        c.check(any(path in line and why in line for line in r.stderr.splitlines()),
                "%s: --verify names %s (%s): %r" % (name, path, why, r.stderr))


def tensor_table(doc):
    got = collections.defaultdict(list)
    for t in doc["tensors"]:
        got[t["name"]].append(t)
    return got


def check_tensors(c, name, mnt, doc, expect):
    c.equal(doc["tensor_count"], len(expect["tensors"]), "%s: tensor_count" % name)
    got = tensor_table(doc)
    unreadable = expect.get("unreadable", {})
    for want in expect["tensors"]:
        what = "%s: tensor %r" % (name, want["name"])
        if not c.check(got.get(want["name"]), what + " missing from model.json"):
            continue
        t = got[want["name"]].pop(0)
        p = os.path.join(mnt, t["path"])
        c.equal(t["dtype"], want["dtype"], what + " dtype")
        c.equal("problem" in t, bool(want.get("problem")), what + " problem flag (%s)" % t.get("problem"))
        if want["dtype"] == "nested":
            c.check(os.path.isdir(p), what + " is a folder")
            c.equal(t["inner"], want["inner"], what + " inner")
            c.equal(os.getxattr(p, "user.modelfs.dtype"), b"nested", what + " xattr dtype")
            inner = [u for u in doc["tensors"] if u.get("nested_in") == want["name"]]
            found = sum(1 for n in want["inner"] if any(u["name"] == n for u in inner))
            c.equal(found, len(want["inner"]) - (1 if want.get("problem") else 0), what + " inner found")
            for u in inner:
                c.check(u["path"].startswith(t["path"] + "/"), what + " holds %s" % u["path"])
            continue
        c.equal(t["shape"], want["shape"], what + " shape")
        c.equal(os.getxattr(p, "user.modelfs.name"), want["name"].encode(), what + " xattr name")
        c.equal(json.loads(os.getxattr(p, "user.modelfs.shape")), want["shape"], what + " xattr shape")
        data, err = mfstest.read_or_errno(p)
        if t["path"] in unreadable:
            c.equal(err, errno.EIO, what + " EIO (tampered)")
            continue
        if not c.check(data is not None, what + " readable (errno %s)" % err):
            continue
        c.equal(len(data), t["nbytes"], what + " file size vs nbytes")
        if want["dtype"] == "string":
            c.equal(json.loads(data), want["values"], what + " strings")
            c.equal(t["member_sha256"] if "member_sha256" in t else want["file_sha256"],
                    want["file_sha256"], what + " member sha256")
        else:
            c.equal(t["nbytes"], want["nbytes"], what + " nbytes")
            c.equal(hashlib.sha256(data).hexdigest(), want["sha256"], what + " sha256 through the mount")


def check_members(c, name, mnt, doc, expect, is_dir):
    md = expect["metadata"]
    manifest = md.get("manifest", {})
    table = {f["name"]: f for f in doc["files"]}
    unreadable = expect.get("unreadable", {})
    symlinks = expect.get("symlinks", {})
    members = expect.get("directory_files" if is_dir else "zip_entries", [])
    for z in members:
        what = "%s: member %s" % (name, z["name"])
        p = os.path.join(mnt, "files", z["name"])
        if not c.check(os.path.isfile(p), what + " under files/"):
            continue
        f = table.get(z["name"], {})
        if z["name"] in expect.get("duplicates", {}):
            c.equal(mfstest.sha256_file(p), expect["duplicates"][z["name"]], what + " first copy served")
            continue
        c.equal(f.get("storage"), "file" if is_dir else
                (f.get("storage") if z["name"] in symlinks else z["compression"]), what + " storage")
        if z["name"] in manifest:
            c.equal(os.getxattr(p, "user.modelfs.sha256").decode(), manifest[z["name"]], what + " xattr sha256")
        data, err = mfstest.read_or_errno(p)
        if "files/" + z["name"] in unreadable:
            c.equal(err, errno.EIO, what + " EIO (%s)" % unreadable["files/" + z["name"]])
            continue
        if not c.check(data is not None, what + " readable (errno %s)" % err):
            continue
        c.equal(len(data), z["size"], what + " size")
        c.equal(os.stat(p).st_size, z["size"], what + " st_size")
        c.equal(hashlib.sha256(data).hexdigest(), z["sha256"], what + " sha256 through the mount")
    for link, target in symlinks.items():
        c.equal(mfstest.sha256_file(os.path.join(mnt, "files", link)),
                mfstest.sha256_file(os.path.join(mnt, "files", target)), "%s: symlink %s" % (name, link))
    for path in unreadable:
        if path.startswith("files/") and not any("files/" + z["name"] == path for z in members):
            c.equal(mfstest.read_or_errno(os.path.join(mnt, path))[1], errno.EIO, "%s: %s EIO" % (name, path))
    for lp in md.get("linked_only_files", []):
        what = "%s: linked file %s" % (name, lp)
        p = os.path.join(mnt, "files", lp)
        if not c.check(os.path.isfile(p), what + " listed"):
            continue
        detail = expect.get("linked_only_detail", {}).get(lp, {})
        sha = manifest.get(lp)
        c.equal(os.getxattr(p, "user.modelfs.sha256").decode(), sha, what + " xattr sha256")
        urls = md["links"]["urls"][sha]
        c.equal(os.getxattr(p, "user.modelfs.urls").decode().split("\n"), urls, what + " xattr urls")
        c.equal(os.stat(p).st_size, 0, what + " size 0 without links_dir")
        c.equal(os.getxattr(p, "user.modelfs.size_unknown"), b"1", what + " size_unknown")
        c.equal(mfstest.read_or_errno(p)[1], errno.EIO, what + " EIO without links_dir")
        c.check(detail.get("sha256") in (None, sha), what + " detail sha256")


def check_mounted(c, x, name, model, mnt, ls, expect):
    is_dir = os.path.isdir(model)
    tree = mfstest.walk_tree(mnt)
    c.equal(sorted(tree.items(), key=str), sorted(ls.items(), key=str), "%s: tree vs modelfs-ls" % name)
    for path in ("model.json", "model.toml"):
        want = run([x.ls, model, path], x.env).stdout
        c.equal(mfstest.read_or_errno(os.path.join(mnt, path))[0] == want, True, "%s: %s vs modelfs-ls" % (name, path))
    with open(os.path.join(mnt, "model.json"), "rb") as f:
        doc = json.loads(f.read())
    with open(os.path.join(mnt, "model.toml"), "rb") as f:
        tdoc = gen_carton.plain(tomllib.load(f))
    c.equal(tdoc, without_nulls(doc), "%s: model.toml (tomllib) equals model.json minus nulls" % name)

    md, want_md = doc["metadata"], expect["metadata"]
    c.equal(doc["format"], "carton", "%s: format" % name)
    c.equal(doc["format_version"], want_md["carton_toml"].get("spec_version"), "%s: format_version" % name)
    if not is_dir:
        c.equal(doc["file"], {"name": name, "size": expect["file_size"]}, "%s: file" % name)
    c.equal(md["carton_toml"], want_md["carton_toml"], "%s: metadata.carton_toml" % name)
    c.equal(md["has_manifest"], "manifest" in want_md, "%s: has_manifest" % name)
    for key in ("manifest", "manifest_sha256", "links", "linked_only_files", "missing_files"):
        if key in want_md:
            c.equal(md[key], want_md[key], "%s: metadata.%s" % (name, key))
    c.equal(md["has_tensor_data"], any(z["name"].startswith("tensor_data/") for z in
                                       expect.get("directory_files" if is_dir else "zip_entries", [])),
            "%s: has_tensor_data" % name)
    for text in expect.get("warnings_contain", []):
        c.check(any(text in w for w in md["warnings"]), "%s: a warning says %r: %r" % (name, text, md["warnings"]))
    if not expect.get("warnings_contain"):
        c.equal(md["warnings"], [], "%s: no warnings" % name)

    # Nothing hostile is exposed, anywhere.
    for path in tree:
        parts = path.split("/")
        c.check(".." not in parts and all(h not in path for h in expect.get("hidden", [])),
                "%s: %r exposed" % (name, path))
    c.check(os.path.realpath(os.path.join(mnt, "files", "..", "..")) == os.path.dirname(mnt),
            "%s: files/ stays inside the mount" % name)
    check_members(c, name, mnt, doc, expect, is_dir)
    check_tensors(c, name, mnt, doc, expect)


def check_one(c, x, model, expect):
    name = os.path.basename(model)
    if expect["expect"] in ("corrupt", "unknown"):
        check_refused(c, x, model, expect)
        return
    try:
        ls = mfstest.ls_tree(x.ls, model, x.env)
    except RuntimeError as e:
        c.check(False, "%s: %s" % (name, e))
        return
    try:
        with mfstest.mounted_with_log(x.modelfs, model, x.env) as (mnt, log):
            check_mounted(c, x, name, model, mnt, ls, expect)
            if expect.get("warnings_contain"):
                check_warnings_logged(c, x, name, model, log)
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (name, e))
    check_verify(c, x, model, expect)


def check_warnings_logged(c, x, name, model, mount_log):
    """The load's warnings, as each program prints them, say whose they are:
    "modelfs: NAME: warning: ..." from the mount, "modelfs-ls: ..." from
    modelfs-ls (the driver logs them, not the program)."""
    ls_log = run([x.ls, model], x.env, text=True).stderr
    for prog, log in (("modelfs", mount_log), ("modelfs-ls", ls_log)):
        lines = [l for l in log.splitlines() if ": warning: " in l]
        c.check(lines and all(l.startswith("%s: %s: warning: " % (prog, name)) for l in lines),
                "%s: %s prints the warnings under its own name: %r" % (name, prog, lines))


# ---- LINKS: links_dir --------------------------------------------------------

def linked_content(model, expect):
    """The bytes of a carton's linked-only file, when we can make them."""
    base = os.path.basename(model)
    (path, detail), = expect["linked_only_detail"].items()
    side = model + ".links"
    if os.path.isdir(side):
        with open(os.path.join(side, detail["sha256"]), "rb") as f:
            return path, detail, f.read()
    if base == "deflate.carton":  # make_carton.py: np.arange(1000, dtype=float32)
        return path, detail, struct.pack("<1000f", *range(1000))
    return path, detail, None


def check_links_dir(c, x, model, expect):
    name = os.path.basename(model)
    path, detail, data = linked_content(model, expect)
    if data is None or hashlib.sha256(data).hexdigest() != detail["sha256"]:
        c.skip("%s: no copy of %s to put in links_dir" % (name, path))
        return
    with tempfile.TemporaryDirectory(prefix="modelfs-links-") as ld:
        with open(os.path.join(ld, detail["sha256"]), "wb") as f:
            f.write(data)
        with mfstest.mounted(x.modelfs, model, x.env, extra=("-o", "links_dir=" + ld)) as mnt:
            p = os.path.join(mnt, "files", path)
            c.equal(os.stat(p).st_size, detail["size"], "%s: links_dir: size of %s" % (name, path))
            c.equal(mfstest.sha256_file(p), detail["sha256"], "%s: links_dir: sha256 through the mount" % name)
            c.check("user.modelfs.size_unknown" not in os.listxattr(p), "%s: links_dir: size known" % name)
        check_verify(c, x, model, expect, links_dir=ld)
        # A local copy that does not match: EIO, and --verify says so.
        with open(os.path.join(ld, detail["sha256"]), "wb") as f:
            f.write(b"\0" * len(data))
        with mfstest.mounted(x.modelfs, model, x.env, extra=("-o", "links_dir=" + ld)) as mnt:
            c.equal(mfstest.read_or_errno(os.path.join(mnt, "files", path))[1], errno.EIO,
                    "%s: links_dir: tampered copy gives EIO" % name)
        r = run([x.ls, "--verify", "--links-dir", ld, model], x.env, text=True)
        c.check(r.returncode == 8 and "does not match MANIFEST" in r.stderr,
                "%s: --verify with a tampered links_dir copy: %d %r" % (name, r.returncode, r.stderr))


# ---- LINKS: http on 127.0.0.1 ---------------------------------------------------

ENCODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,          # HTTP "deflate" is the zlib format
    "br": brotli.compress,
    "zstd": lambda b: zstandard.ZstdCompressor().compress(b),
}


class Blobs(http.server.BaseHTTPRequestHandler):
    """/good/SHA, /tampered/SHA, /missing/SHA (404), /enc/NAME/SHA (that
    Content-Encoding, only when the client accepts it)."""
    data = b""
    seen = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        parts = self.path.strip("/").split("/")
        body, headers, code = self.data, {}, 200
        Blobs.seen.append((self.path, self.headers.get("Accept-Encoding", "")))
        if parts[0] == "tampered":
            body = bytes([body[0] ^ 1]) + body[1:]
        elif parts[0] == "missing":
            code, body = 404, b"no\n"
        elif parts[0] == "enc":
            accepted = [a.strip().split(";")[0] for a in self.headers.get("Accept-Encoding", "").split(",")]
            if parts[1] not in accepted:
                code, body = 406, b"encoding not accepted\n"
            else:
                body = ENCODERS[parts[1]](body)
                headers["Content-Encoding"] = parts[1]
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def check_http(c, x, work):
    data = gen_carton.LINKED_DATA
    sha = hashlib.sha256(data).hexdigest()
    Blobs.data = data
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Blobs)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % srv.server_address[1]
    cases = [("plain", ["/good/"], True), ("gzip", ["/enc/gzip/"], True),
             ("deflate", ["/enc/deflate/"], True), ("br", ["/enc/br/"], True),
             ("zstd", ["/enc/zstd/"], True), ("mirror", ["/missing/", "/good/"], True),
             ("tampered", ["/tampered/"], False)]
    try:
        for tag, paths, good in cases:
            what = "http %s" % tag
            before = c.failed
            model = os.path.join(work, "links_%s.carton" % tag)
            blob, expect = gen_carton.links_carton([base + p + sha for p in paths], os.path.basename(model))
            with open(model, "wb") as f:
                f.write(blob)
            ld = tempfile.mkdtemp(prefix="modelfs-links-", dir=work)
            Blobs.seen.clear()
            with mfstest.mounted(x.modelfs, model, x.env, extra=("-o", "links_dir=" + ld)) as mnt:
                p = os.path.join(mnt, "files", "model", "linked.bin")
                c.equal(os.getxattr(p, "user.modelfs.size_unknown"), b"1", what + ": size unknown at first")
                # The size was unknown at mount: the first open fetches into
                # links_dir, checks the sha256 and serves the bytes (a
                # tampered file is EIO); the next mount knows the size.
                got, err = mfstest.read_or_errno(p)
                if good:
                    c.equal((err, hashlib.sha256(got or b"").hexdigest()), (0, sha),
                            what + ": first open reads the fetched bytes")
                else:
                    c.equal(err, errno.EIO, what + ": first open of a tampered file")
            c.equal(len(Blobs.seen), len(paths), what + ": requests %r" % Blobs.seen)
            kept = os.path.join(ld, sha)
            if good:
                c.check(os.path.isfile(kept) and mfstest.sha256_file(kept) == sha,
                        what + ": verified copy kept in links_dir")
                c.equal(sorted(os.listdir(ld)), [sha], what + ": nothing else left in links_dir")
                with mfstest.mounted(x.modelfs, model, x.env, extra=("-o", "links_dir=" + ld)) as mnt:
                    p = os.path.join(mnt, "files", "model", "linked.bin")
                    c.equal(os.stat(p).st_size, len(data), what + ": size after the fetch")
                    c.equal(mfstest.sha256_file(p), sha, what + ": bytes after the fetch")
            else:
                c.equal(os.listdir(ld), [], what + ": nothing kept")
                r = run([x.ls, "--verify", "--links-dir", ld, model], x.env, text=True)
                c.check(r.returncode == 8 and "does not match" in r.stderr and "tampered" in r.stderr,
                        what + ": --verify: %d %r" % (r.returncode, r.stderr))
            if tag in ENCODERS:
                c.check(any(tag in enc for _, enc in Blobs.seen), what + ": Accept-Encoding offered it")
            print("%s %s" % ("ok  " if c.failed == before else "FAIL", what), flush=True)
    finally:
        srv.shutdown()
        srv.server_close()


# ---- zero copy ---------------------------------------------------------------

def check_zero_copy(c, x, model):
    """The stored 4 MiB tensor is served from the mapping: reading it (and
    checking its sha256 on first open) maps the file's pages but allocates
    nothing like its size."""
    with mfstest.mounted(x.modelfs, model, x.env) as mnt:
        with open(os.path.join(mnt, "model.json"), "rb") as f:
            doc = json.load(f)
        big = [t for t in doc["tensors"] if t["nbytes"] >= (4 << 20)]
        if not c.check(len(big) == 1, "stored.carton: one 4 MiB tensor"):
            return
        t = big[0]
        c.equal(t["storage"], "stored", "stored.carton: storage")
        with open(model, "rb") as f:
            f.seek(t["offset"])
            want = hashlib.sha256(f.read(t["nbytes"])).hexdigest()
        c.equal(want, t["member_sha256"], "stored.carton: offset points at the member's bytes")
        pid = mfstest.daemon_pid(mnt)
        if not c.check(pid is not None, "stored.carton: daemon pid"):
            return
        # Warm up the daemon's threads and buffers on something small.
        for _ in range(3):
            mfstest.read_or_errno(os.path.join(mnt, "model.json"))
        before = mfstest.rss(pid)
        with open(os.path.join(mnt, t["path"]), "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
            after = mfstest.rss(pid)
        c.equal(got, want, "stored.carton: big tensor through the mount")
        anon = after["RssAnon"] - before["RssAnon"]
        filed = after["RssFile"] - before["RssFile"]
        c.check(anon < (1 << 20), "stored.carton: RssAnon grew by %d bytes reading 4 MiB (a copy?)" % anon)
        c.check(filed >= (3 << 20), "stored.carton: RssFile grew by %d bytes: not from the mapping?" % filed)


# ---- an unpacked folder changed after packing ------------------------------------

def check_tampered_folder(c, x, src, work):
    d = os.path.join(work, "tampered_unpacked")
    shutil.copytree(src, d)
    os.chmod(d, 0o755)
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    bins = sorted(f for f in os.listdir(os.path.join(d, "tensor_data")) if f.endswith(".bin"))
    target = os.path.join(d, "tensor_data", bins[0])
    with open(target, "r+b") as f:
        b = f.read(1)
        f.seek(0)
        f.write(bytes([b[0] ^ 0xFF]))
    with mfstest.mounted(x.modelfs, d, x.env) as mnt:
        c.equal(mfstest.read_or_errno(os.path.join(mnt, "files", "tensor_data", bins[0]))[1], errno.EIO,
                "tampered folder: member EIO")
        with open(os.path.join(mnt, "model.json"), "rb") as f:
            doc = json.load(f)
        t = [t for t in doc["tensors"] if t.get("member") == "tensor_data/" + bins[0]]
        c.check(t and mfstest.read_or_errno(os.path.join(mnt, t[0]["path"]))[1] == errno.EIO,
                "tampered folder: tensor EIO")
        c.check(mfstest.read_or_errno(os.path.join(mnt, "files", "carton.toml"))[0] is not None,
                "tampered folder: the rest still reads")
    r = run([x.ls, "--verify", d], x.env, text=True)
    c.check(r.returncode == 8 and "files/tensor_data/" + bins[0] in r.stderr,
            "tampered folder: --verify: %d %r" % (r.returncode, r.stderr))


def setup(c, t):
    t.carton = Ctx(t.build, t.env)
    t.carton_work = tempfile.mkdtemp(prefix="modelfs-carton-")


def check_model(c, t, model, expect, mount):
    """Mounts of its own: plain, with links_dir, tampered copies."""
    if expect is None or expect.get("format") != "carton":
        return
    x = t.carton
    check_one(c, x, model, expect)
    if expect.get("linked_only_detail"):
        check_links_dir(c, x, model, expect)
    if os.path.basename(model) == "stored.carton":
        check_zero_copy(c, x, model)
    if os.path.basename(model) == "unpacked_model":
        check_tampered_folder(c, x, model, t.carton_work)


def check_links_http(c, t):
    try:
        check_http(c, t.carton, t.carton_work)
    finally:
        shutil.rmtree(t.carton_work, ignore_errors=True)


EXTRAS = (check_links_http,)
