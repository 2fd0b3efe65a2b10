#!/usr/bin/python3
"""Remote models from the web servers users meet (issue 34), Debian's own,
started here on 127.0.0.1 by webservers.py: nginx, nginx with `etag off`,
Apache (stock ETags: weak in a file's first second, strong after),
lighttpd with ETags, without (Last-Modified alone) and with neither, and
Caddy over https with HTTP/2. For each server:

 - what it sends and how it answers conditional requests (ETag form for
   an old and a fresh file, Last-Modified, Accept-Ranges; If-Match,
   If-Unmodified-Since and If-Range, each with the file's validator and
   with another): printed as a table, and the facts the cases below rest
   on checked;
 - every public fixture of ../shared/fixtures that is one file (ONNX
   external data: the file beside the model's URL served too; a folder
   model cannot be named over http, which has no listing, and is left
   out, visibly) read from the server with modelfs-ls and compared with
   the same file read locally: the exit code of each (--check), every
   path and size, sha256 and xattr (several models per modelfs-ls run);
   and two of them mounted for real, every file's bytes and xattrs
   against the local file's mount;
 - while a model is mounted from it (check_changes, defects 2-4):
   replaced by other bytes of the same size: reads give EIO, never bytes
   of both versions, where the server gives a validator (strong ETag:
   If-Match sent; weak ETag: compared weakly, and Last-Modified sent as
   If-Unmodified-Since; Last-Modified alone: the same); a server with
   none: one warning at mount naming the URL (the rest cannot be caught);
   the same while Apache's ETags are weak; replaced in place with the
   same size and mtime (every server's ETag stays the same: cannot be
   caught; README must say so); a file mounted in Apache's weak second and
   read 1.5 s later, when its ETag is strong: the right bytes, no EIO.

The matrix (server x fixtures identical x change cases) is printed last.

usage: test_servers.py BUILD_DIR FIXTURES_DIR [KIND...]   (KIND: webservers.KINDS)
"""
import email.utils
import errno
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mfstest  # noqa: E402
import webservers  # noqa: E402

# Mounted for real on each server: a zip of 4 MiB (many ranged reads) and
# an ONNX model whose tensors are in the file beside it.
MOUNTED = ("carton/stored.carton", "onnx/external/model.onnx")
TENSOR = 4 << 20   # the changed model's tensor: 16 blocks of 256 KiB


def run_ls(ls, args, env):
    r = subprocess.run([ls] + args, capture_output=True, env=env, timeout=120)
    return r.returncode, r.stdout.decode("utf-8", "surrogateescape"), \
        r.stderr.decode("utf-8", "replace")


def fixtures(c, fixdir):
    """The public fixtures (each NAME with a NAME.expect.json), relative to
    fixdir: those one URL can name, and those left out (folders)."""
    files, left = [], []
    for d, dirs, names in os.walk(fixdir):
        dirs[:] = sorted(x for x in dirs if x != "make")
        for n in sorted(names):
            if n.endswith(".expect.json"):
                rel = os.path.relpath(os.path.join(d, n[:-len(".expect.json")]), fixdir)
                (files if os.path.isfile(os.path.join(fixdir, rel)) else left).append(rel)
    for rel in left:
        c.skip("%s is a folder: http has no listing to find its files, not served" % rel)
    return sorted(files), left


def by_model(lines):
    """{model name: lines} of a several-models listing (the first part of
    each path is the model's name)."""
    out = {}
    for key, text in lines:
        out.setdefault(key.split("/", 1)[0], []).append(text)
    return out


def ls_all(ls, models, env):
    """What modelfs-ls says of `models` (local files or their URLs), in
    one run per step: {name: exit code}, and {name: [tree, sums and xattr
    lines]} of those that load."""
    _, out, _ = run_ls(ls, ["--check"] + models, env)
    codes = {}
    for line in out.splitlines():
        code, model = line.split("  ", 1)
        codes[os.path.basename(model)] = int(code)
    loaded = [m for m in models if codes.get(os.path.basename(m)) == 0]
    _, out, err = run_ls(ls, loaded + ["--"], env)
    # models.json names each model's source (its URL or its file): left out.
    tree = [(line.split(None, 2)[2], line) for line in out.splitlines()
            if line.split(None, 2)[2] != "models.json"]
    paths = [p for p, line in tree if line.startswith("f ")]
    got = list(tree)
    for _, chunk in mfstest.path_chunks(paths):
        sums, _, _ = mfstest.ls_sums_args(ls, loaded + ["--"], chunk, env)
        got += [(p, "sum %s %s %d" % (p, s, n)) for p, (s, n) in sums.items()]
        _, xs, _ = run_ls(ls, ["-x"] + loaded + ["--"] + chunk, env)
        # "# PATH", then its xattrs: each block as one entry.
        for block in ("\n" + xs).split("\n# ")[1:]:
            got.append((block.split("\n", 1)[0], "x " + block))
    return codes, {k: sorted(v) for k, v in by_model(got).items()}, err


def check_fixtures(c, ls, srv, root, rels, local, env):
    """Every fixture from the server against the local file: the number
    identical (exit code, tree, sums and xattrs all the same)."""
    urls = [srv.url + "/fixtures/" + r for r in rels]
    codes, files, err = ls_all(ls, urls, srv.env(env))
    lcodes, lfiles, _ = local
    same = 0
    for rel in rels:
        name = os.path.basename(rel)
        ok = c.equal(codes.get(name), lcodes.get(name), "%s: %s: exit code, remote vs local (%s)"
                     % (srv.kind, rel, err.strip()[-300:]))
        want, got = lfiles.get(name, []), files.get(name, [])
        if lcodes.get(name) == 0:
            # Not two empty lists: the local side listed, summed and read
            # the xattrs of this model.
            ok = c.check(any(w.startswith("sum ") for w in want) and
                         any(w.startswith("x ") for w in want),
                         "%s: the local listing has its sums and xattrs" % rel) and ok
        differ = sorted(set(want) ^ set(got))
        ok = c.check(not differ, "%s: %s: %d paths, sums or xattrs differ: %s"
                     % (srv.kind, rel, len(differ), [d[:120] for d in differ[:4]])) and ok
        same += ok
    return same


def xattrs(path):
    try:
        return {k: os.getxattr(path, k) for k in sorted(os.listxattr(path))}
    except OSError as e:
        return "errno %d" % e.errno


def check_mount(c, build, srv, url, path, env):
    """The URL mounted for real against the file mounted for real: the
    same tree, every file's bytes and every node's xattrs."""
    modelfs = os.path.join(build, "modelfs")
    name = "%s: %s (mounted)" % (srv.kind, os.path.relpath(path))
    try:
        with mfstest.mounted(modelfs, url, srv.env(env)) as rmnt, \
                mfstest.mounted(modelfs, path, env) as lmnt:
            tree = mfstest.walk_tree(lmnt)
            ok = c.equal(mfstest.walk_tree(rmnt), tree, name + ": tree")
            for p, size in sorted(tree.items()):
                rp, lp = os.path.join(rmnt, p), os.path.join(lmnt, p)
                ok = c.equal(xattrs(rp), xattrs(lp), "%s: %s xattrs" % (name, p)) and ok
                if size is not None:
                    ok = c.equal(mfstest.read_or_errno(rp), mfstest.read_or_errno(lp),
                                 "%s: %s bytes" % (name, p)) and ok
            return ok
    except RuntimeError as e:
        return c.check(False, "%s: %s" % (name, e))


# --- what each server sends ------------------------------------------------

def ask(srv, path, headers, method="GET"):
    """One HTTP/1.1 request: (status, {header: value}), the body read."""
    if srv.https:
        conn = http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=10,
                                           context=srv.ssl_context())
    else:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    try:
        conn.request(method, path, headers=headers)
        r = conn.getresponse()
        r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


def probe(srv, dirpath):
    """What the server sends for an old file (mtime 10 s ago) and a fresh
    one (its mtime not a second old: 30 s ahead, so that a slow request
    sees it fresh too), and its answers to conditional range requests: a
    dict of facts, one row of the table."""
    os.makedirs(dirpath, exist_ok=True)
    rel = "/" + os.path.relpath(dirpath, srv.root)
    old, fresh = os.path.join(dirpath, "old.bin"), os.path.join(dirpath, "fresh.bin")
    for p in (old, fresh):
        with open(p, "wb") as f:
            f.write(os.urandom(100000))
    t = time.time()
    os.utime(old, (t - 10, t - 10))
    os.utime(fresh, (t + 30, t + 30))
    rng = {"Range": "bytes=0-99"}
    st_f, h_f = ask(srv, rel + "/fresh.bin", rng)
    st, h = ask(srv, rel + "/old.bin", rng)
    _, head = ask(srv, rel + "/old.bin", {}, "HEAD")
    etag, lm = h.get("etag"), h.get("last-modified")
    other_etag = '"modelfs-other"'
    earlier = email.utils.formatdate(time.time() - 86400, usegmt=True)
    p = {"kind": srv.kind, "status": st, "etag": etag, "etag_fresh": h_f.get("etag"),
         "fresh_status": st_f, "last_modified": lm,
         "accept_ranges": "%s/%s" % (head.get("accept-ranges", "-"), h.get("accept-ranges", "-"))}

    def status(extra):
        return ask(srv, rel + "/old.bin", dict(rng, **extra))[0]
    p["if_match_same"] = status({"If-Match": etag}) if etag else None
    p["if_match_other"] = status({"If-Match": other_etag})
    p["ius_same"] = status({"If-Unmodified-Since": lm}) if lm else None
    p["ius_earlier"] = status({"If-Unmodified-Since": earlier})
    p["if_range_etag"] = status({"If-Range": etag}) if etag else None
    p["if_range_other"] = status({"If-Range": other_etag})
    p["if_range_date"] = status({"If-Range": lm}) if lm else None
    p["if_range_earlier"] = status({"If-Range": earlier})
    p["weak_fresh"] = bool(p["etag_fresh"] and p["etag_fresh"].startswith("W/"))
    p["validator"] = ("strong etag" if etag and not etag.startswith("W/") else
                      "weak etag" if etag else "last-modified" if lm else "size only")
    return p


def print_probes(probes):
    cols = [("server", "kind"), ("ETag (old file)", "etag"), ("ETag (fresh)", "etag_fresh"),
            ("Last-Modified", "last_modified"), ("Accept-Ranges HEAD/206", "accept_ranges"),
            ("If-Match same/other", ("if_match_same", "if_match_other")),
            ("If-Unmod.-Since LM/earlier", ("ius_same", "ius_earlier")),
            ("If-Range etag/other", ("if_range_etag", "if_range_other")),
            ("If-Range LM/earlier", ("if_range_date", "if_range_earlier"))]
    print("What each server sends (a range of an old and a fresh file) and answers:")
    for p in probes:
        cells = []
        for title, key in cols:
            if isinstance(key, tuple):
                v = "/".join("-" if p[k] is None else str(p[k]) for k in key)
            else:
                v = p[key] if p[key] is not None else "-"
                if key == "last_modified" and p[key]:
                    v = "yes"
            cells.append("%s: %s" % (title, v))
        print("  " + "; ".join(cells))


def check_probe(c, p):
    """The facts the change cases rest on, per server."""
    k = p["kind"]
    c.equal(p["status"], 206, "%s: a range is answered 206" % k)
    want = {"nginx": "strong etag", "nginx-noetag": "last-modified", "apache": "strong etag",
            "lighttpd": "strong etag", "lighttpd-noetag": "last-modified",
            "lighttpd-bare": "size only", "caddy": "strong etag"}[k]
    c.equal(p["validator"], want, "%s: its validator for a file 10 s old" % k)
    c.equal(p["weak_fresh"], k == "apache", "%s: a weak ETag for a fresh file (Apache's)" % k)


# --- a model changed while it is mounted -------------------------------------

FLIP = bytes(255 - i for i in range(256))


def model_bytes(tensor):
    """A safetensors file of one uint8 tensor "t": its bytes."""
    fd, path = tempfile.mkstemp()
    os.close(fd)
    mfstest.write_safetensors(path, {"t": tensor})
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    return data


def write_at(path, data, mtime, in_place=False):
    """The file's new bytes: a new file renamed over it (a new inode, as
    an upload or rsync does), or written in place; then its mtime (ns)."""
    if in_place:
        with open(path, "r+b") as f:
            f.write(data)
    else:
        with open(path + ".new", "wb") as f:
            f.write(data)
        os.rename(path + ".new", path)
    os.utime(path, ns=(mtime, mtime))


CHUNK = 256 << 10


def read_chunks(path):
    """The tensor read in 256 KiB reads from the start, each read made
    even after one failed (a failed fetch must leave nothing that a later
    read serves): [(offset, bytes or errno)]."""
    out = []
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        for off in range(0, size, CHUNK):
            try:
                out.append((off, os.pread(fd, CHUNK, off)))
            except OSError as e:
                out.append((off, e.errno))
    finally:
        os.close(fd)
    return out


def read_part(path):
    """4 KiB 1 MiB into the tensor, without kernel read-ahead: the mount
    fetches that one block, and the rest of the tensor stays unfetched."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        return os.pread(fd, 4096, 1 << 20)
    finally:
        os.close(fd)


def outcome_of(chunks, old, new):
    """What the reads gave: (bytes of the old version, bytes of the new
    one, bytes of neither, errnos of the failed reads), compared in 4 KiB
    pieces."""
    n_old = n_new = n_other = 0
    errs = []
    for off, got in chunks:
        if isinstance(got, int):
            errs.append(got)
            continue
        for i in range(0, len(got), 4096):
            piece = got[i:i + 4096]
            at = off + i
            if piece == old[at:at + len(piece)]:
                n_old += len(piece)
            elif piece == new[at:at + len(piece)]:
                n_new += len(piece)
            else:
                n_other += len(piece)
    return n_old, n_new, n_other, errs


def describe(n_old, n_new, n_other, errs):
    text = "%d old bytes, %d new" % (n_old, n_new)
    if n_other:
        text += ", %d of both or neither" % n_other
    if errs:
        text += ", %d reads failed (%s)" % (len(errs), ", ".join(
            sorted({errno.errorcode.get(e, str(e)) for e in errs})))
    return ("MIXED: " if (n_new or n_other) and n_old else "") + text


def same_date(a, b):
    """Whether two HTTP dates name the same second (None: no date)."""
    try:
        return a is not None and email.utils.parsedate_to_datetime(a) == \
            email.utils.parsedate_to_datetime(b)
    except (TypeError, ValueError):
        return False


def check_changes(c, build, srv, probe_row, env, cases, tensor):
    """The change-during-mount cases of defects 2-4 against the started
    server `srv`, each on a model of its own under srv.root/changes (one
    tensor "t", `tensor`'s bytes; the new version has each byte flipped).
    `cases` gets one outcome per case ({case: text}); what modelfs sent is
    checked from the server's log at the end."""
    cdir = os.path.join(srv.root, "changes")
    os.makedirs(cdir, exist_ok=True)
    env = srv.env(env)
    validator = probe_row["validator"]
    flipped = tensor.translate(FLIP)
    old, new = model_bytes(tensor), model_bytes(flipped)
    url_of = lambda name: srv.url + "/changes/" + name  # noqa: E731
    later = []   # (file name, what): the mounts whose requests are checked

    def replaced(case, in_place, mtime_old, mtime_new):
        """Mount, read part of the tensor, replace the file with other
        bytes of the same size, read the whole tensor: (outcome text,
        whether it is EIO with old bytes only, the mount's stderr)."""
        name = case + ".safetensors"
        path = os.path.join(cdir, name)
        write_at(path, old, mtime_old)
        what = "%s: %s" % (srv.kind, case)
        try:
            with mfstest.mounted_with_log(os.path.join(build, "modelfs"), url_of(name),
                                          env) as (mnt, err):
                t = os.path.join(mnt, "tensors", "t")
                c.equal(read_part(t), tensor[1 << 20:(1 << 20) + 4096], what + ": a part read")
                write_at(path, new, mtime_new, in_place)
                n_old, n_new, n_other, errs = outcome_of(read_chunks(t), tensor, flipped)
        except RuntimeError as e:
            c.check(False, "%s: mount: %s" % (what, e))
            return None, False, ""
        later.append((name, what))
        cases[case] = describe(n_old, n_new, n_other, errs)
        caught = not n_new and not n_other and errs and set(errs) == {errno.EIO}
        return cases[case], caught, err

    now = time.time_ns()
    sec = 10 ** 9
    # Replaced by a new file of the same size, its mtime 5 s on (a new
    # Last-Modified, a new mtime-based ETag): defects 2 and 3. A server
    # with no validator: a warning at mount; one with: a silent mount.
    out, caught, err = replaced("changed", False, now - 10 * sec, now - 5 * sec)
    if out is not None:
        named = [ln for ln in err.splitlines() if url_of("changed.safetensors") in ln]
        if validator == "size only":
            c.check(len(named) == 1 and len(err.strip().splitlines()) == 1,
                    "%s: changed: no validator: one warning at mount naming the URL (got %r)"
                    % (srv.kind, err))
            c.skip("%s: changed: the same size and no validator: cannot be caught (%s)"
                   % (srv.kind, out))
        else:
            c.equal(err.strip(), "", "%s: changed: a mount with a validator (%s) is silent"
                    % (srv.kind, validator))
            c.check(caught, "%s: changed (validator: %s): EIO, never bytes of the new version: %s"
                    % (srv.kind, validator, out))
    # The same while the server's ETags are weak (Apache's, an mtime in the
    # future keeping them weak; others': as above): defect 2. (Apache then
    # sends the request's time as Last-Modified: a new one each second.)
    out, caught, _ = replaced("weak-changed", False, now + 60 * sec, now + 65 * sec)
    if out is not None and validator == "size only":
        c.skip("%s: weak-changed: the same size and no validator: cannot be caught (%s)"
               % (srv.kind, out))
    elif out is not None:
        c.check(caught, "%s: changed while its ETag is %s: EIO, never bytes of the new "
                "version: %s" % (srv.kind, "weak" if probe_row["weak_fresh"] else
                                 "what it always is", out))
    # Written in place, the same size and the mtime put back: the same
    # ETag and Last-Modified for new bytes on every server. Cannot be
    # caught (check_documented: README says so).
    out, caught, _ = replaced("same-mtime", True, now - 10 * sec, now - 10 * sec)
    if out is not None and not caught:
        c.skip("%s: same-mtime: the same size and mtime, the same validator for new bytes: "
               "cannot be caught (%s)" % (srv.kind, out))
    # A fresh file mounted in Apache's weak second (W/"X"), read 1.5 s
    # later, when it answers "X": the same version (defect 4). Its mtime
    # is not moved ahead to widen the second: Apache would then send the
    # time of each request as Last-Modified, another one each second.
    name = "weak-to-strong.safetensors"
    path = os.path.join(cdir, name)
    with open(path, "wb") as f:
        f.write(old)
    written = os.stat(path).st_mtime
    what = "%s: weak-to-strong" % srv.kind
    try:
        with mfstest.mounted(os.path.join(build, "modelfs"), url_of(name), env) as mnt:
            if probe_row["weak_fresh"]:
                time.sleep(max(0.0, written + 1.6 - time.time()))
            n_old, n_new, n_other, errs = outcome_of(
                read_chunks(os.path.join(mnt, "tensors", "t")), tensor, flipped)
        cases["weak-to-strong"] = "right bytes" if n_old == len(tensor) else \
            describe(n_old, n_new, n_other, errs)
        c.check(n_old == len(tensor), "%s: mounted while its ETag is weak, read 1.5 s later: the "
                "right bytes, no EIO (%s)" % (what, cases["weak-to-strong"]))
        later.append((name, what))
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (what, e))

    # What the mounts asked: after the first GET of a model, each carries
    # its validator (If-Match for a strong ETag, If-Unmodified-Since for
    # Last-Modified, with a weak ETag or none); Caddy's were HTTP/2.
    log = srv.requests()
    for name, what in later:
        reqs = [r for r in log if r["path"] == "/changes/" + name and r["method"] == "GET"]
        if not c.check(len(reqs) >= 2, "%s: the server logged the mount's GETs (%d)"
                       % (what, len(reqs))):
            continue
        first, rest = reqs[0], reqs[1:]
        weak = bool(first["etag"]) and first["etag"].startswith("W/")
        if name.startswith("weak-changed") and srv.kind == "apache":
            c.check(weak, "%s: the mount's first answer had a weak ETag (%s)"
                    % (what, first["etag"]))
        if name.startswith("weak-to-strong") and srv.kind == "apache" and not weak:
            c.skip("%s: the mount came after Apache's weak second (ETag %s): the weak-to-strong "
                   "case was not made" % (what, first["etag"]))
        if name.startswith("weak-to-strong") and srv.kind == "apache" and weak:
            c.check(any(r["etag"] == first["etag"][2:] for r in rest),
                    "%s: the server's ETag turned strong during the mount (%s): %s"
                    % (what, first["etag"], [r["etag"] for r in rest]))
        if first["etag"] and not first["etag"].startswith("W/"):
            c.check(all(r["if_match"] == first["etag"] for r in rest),
                    "%s: strong ETag %s: every later GET carries If-Match with it: %s"
                    % (what, first["etag"], [r["if_match"] for r in rest]))
        elif first["last_modified"]:
            c.check(all(same_date(r["if_unmodified_since"], first["last_modified"])
                        for r in rest),
                    "%s: %s, Last-Modified %s: every later GET carries If-Unmodified-Since "
                    "with it: %s" % (what, "weak ETag " + first["etag"] if first["etag"]
                                     else "no ETag", first["last_modified"],
                                     [r["if_unmodified_since"] for r in rest]))
            c.check(all(r["if_match"] is None for r in rest),
                    "%s: no If-Match with a weak ETag or none (compared strongly, it never "
                    "matches)" % what)
        if srv.https:
            c.check(all(r["proto"] == "HTTP/2.0" for r in reqs), "%s: modelfs spoke HTTP/2 to "
                    "it: %s" % (what, sorted({r["proto"] for r in reqs})))


def check_documented(c, readme):
    """The caveat that a server which keeps its ETag for new bytes cannot
    be caught, in README's remote sections."""
    try:
        with open(readme, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        c.check(False, "README: %s" % e)
        return
    paras = re.split(r"\n\s*\n|\n- ", text)
    cannot = r"(cannot|can't|can not|not) be (caught|detected|noticed|told)|undetect|unnoticed"
    c.check(any(re.search(r"same ETag", p, re.I) and re.search(cannot, p, re.I) for p in paras),
            "README documents that a server keeping the same ETag for new bytes (nginx, Caddy "
            "within one second) cannot be caught")


def h2_by_curl(c, srv):
    """curl itself negotiates HTTP/2 with it (ALPN)."""
    if not shutil.which("curl"):
        return c.skip("no curl: HTTP/2 negotiation not checked")
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "--http2", "--cacert", srv.ca,
                        "-w", "%{http_version}", srv.url + "/fixtures/"], capture_output=True,
                       text=True, timeout=30)
    c.equal(r.stdout, "2", "%s: curl negotiates HTTP/2 (%s)" % (srv.kind, r.stderr.strip()))


def run(c, t):
    build, fixdir, kinds = t.build, t.args[0], t.args[1:] or list(webservers.KINDS)
    ls, env = t.modelfs_ls, t.env
    caches = tempfile.mkdtemp(prefix="modelfs-caches-")
    env["XDG_CACHE_HOME"] = caches
    # Served by every server; readable by all (Apache's children run as
    # nobody when the test is root).
    root = mfstest.scratch("modelfs-www-")
    os.chmod(root, 0o755)
    rels, left = [], []
    if os.path.isdir(fixdir):
        rels, left = fixtures(c, fixdir)
        for rel in rels:
            # The fixture and the files beside it (ONNX external data).
            src, dst = os.path.dirname(os.path.join(fixdir, rel)), \
                os.path.join(root, "fixtures", os.path.dirname(rel))
            if not os.path.isdir(dst):
                os.makedirs(dst)
                for n in os.listdir(src):
                    if os.path.isfile(os.path.join(src, n)) and not n.endswith(".expect.json"):
                        # Their mtime kept: not fresh files (Apache's weak second).
                        shutil.copy2(os.path.join(src, n), dst)
        for d, dirs, names in os.walk(root):
            for n in dirs:
                os.chmod(os.path.join(d, n), 0o755)
    else:
        c.skip("%s is absent: the fixtures are not served" % fixdir)
    # Several models are named by their files' names: one each.
    c.equal(len({os.path.basename(r) for r in rels}), len(rels), "fixtures of distinct names")
    local_paths = [os.path.join(root, "fixtures", r) for r in rels]
    local = ls_all(ls, local_paths, env) if rels else ({}, {}, "")
    matrix, probes = [], []
    tensor = os.urandom(TENSOR)
    for kind in kinds:
        failed = c.failed
        try:
            srv = webservers.start(kind, root)
        except webservers.Unavailable as e:
            c.skip("%s: %s" % (kind, e))
            continue
        except RuntimeError as e:
            c.check(False, "%s does not start: %s" % (kind, e))
            continue
        row = {"server": kind}
        try:
            p = probe(srv, os.path.join(root, "probe-" + kind))
            probes.append(p)
            check_probe(c, p)
            if srv.https:
                h2_by_curl(c, srv)
            if rels:
                t0 = time.time()
                row["fixtures"] = "%d/%d" % (check_fixtures(c, ls, srv, root, rels, local, env),
                                             len(rels))
                mounts = 0
                for rel in MOUNTED:
                    if rel in rels:
                        mounts += check_mount(c, build, srv, srv.url + "/fixtures/" + rel,
                                              os.path.join(root, "fixtures", rel), env)
                row["mounted"] = "%d/%d" % (mounts, sum(1 for r in MOUNTED if r in rels))
                row["t_fixtures"] = time.time() - t0
            t0 = time.time()
            check_changes(c, build, srv, p, env, row, tensor)
            row["t_changes"] = time.time() - t0
        finally:
            srv.stop(keep=c.failed > failed)
        matrix.append(row)
    check_documented(c, os.path.join(HERE, "..", "..", "README.md"))
    print_probes(probes)
    print("Matrix (fixtures: identical to the local file, of %d served; %d left out: %s):"
          % (len(rels), len(left), ", ".join(left) or "none"))
    for row in matrix:
        print("  %-16s fixtures %-6s mounted %-4s | changed: %s | weak-changed: %s | "
              "same-mtime: %s | weak-to-strong: %s | %.1f s + %.1f s"
              % (row["server"], row.get("fixtures", "-"), row.get("mounted", "-"),
                 row.get("changed", "-"), row.get("weak-changed", "-"),
                 row.get("same-mtime", "-"), row.get("weak-to-strong", "-"),
                 row.get("t_fixtures", 0), row.get("t_changes", 0)))
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(caches, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("web servers", run, __doc__.strip().splitlines()[-1], min_args=1))
