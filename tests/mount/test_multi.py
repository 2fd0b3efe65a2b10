#!/usr/bin/python3
"""Several models in one mount (issue 9, item 3):
 - `modelfs DIR MNT` of a folder of 200 entries (good models of every
   format, corrupt ones, files that are no model, a FIFO, symlinks in and
   out of DIR): every good model's folder has exactly the tree and bytes of
   that model mounted alone (modelfs-ls MODEL is the oracle, itself checked
   against single mounts by mount.NAME), each corrupt one holds an ERROR
   file with the line `modelfs MODEL MNT` prints, the rest is not shown;
   models.json lists every model; the tree equals `modelfs-ls DIR`;
   inode numbers and bytes are the same on a second mount;
 - models load on first use, not at mount (a model replaced after the
   mount but before its first lookup shows the new file);
 - `modelfs A B A2 MNT`: folders named after the files, "%~2" for a
   second same name, an unrecognised file as an ERROR folder, a missing one
   refused (exit 3);
 - a path swapped for a symlink out of DIR after the mount gives ERROR,
   never the outside model;
 - `diff -r` of two models that differ in one tensor (two mounts, and two
   folders of one mount) names that tensor's file, its .npy and its
   SHA256SUMS line, and otherwise only document lines that name the file.

usage: test_multi.py BUILD_DIR GENERATED_DIR [PART...]
PART: args, diff, zoo, swaps (default: all four, in that order), or
zoo:I/N (shard I of N of the zoo: every N-th model folder's files); ctest
runs each as its own case (mount.multi.PART), in parallel.
"""
import hashlib
import json
import resource
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402


def scan(root):
    """[(relative path, is a directory)] of every entry below root, depth
    first (os.scandir: one process, no stat of the entries)."""
    out, stack = [], [(root, "")]
    while stack:
        d, rel = stack.pop()
        with os.scandir(d) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            is_dir = e.is_dir()
            out.append((rel + e.name, is_dir))
            if is_dir and not e.is_symlink():  # as os.walk
                stack.append((e.path, rel + e.name + "/"))
    return out


def sha256_or_none(path):
    """The sha256 of a file's bytes read through the mount, None when it
    reads as an error (os.open/os.read: no buffering layer)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        h = hashlib.sha256()
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_or_none(path):
    """A file's bytes, or None when it does not read."""
    try:
        return mfstest.read_bytes(path)
    except OSError:
        return None


def files_of(root):
    """{relative path: sha256, or None when it reads as an error} of every
    file below root."""
    return {rel: sha256_or_none(os.path.join(root, rel))
            for rel, is_dir in scan(root) if not is_dir}


def survey(root, read=True):
    """One pass over root: (tree {relative path: size, None for a
    directory} as mfstest.walk_tree gives, {relative path: inode number},
    files_of(root), or {} when not `read`); every entry stat'ed and every
    file read once."""
    tree, inodes, sums = {}, {}, {}
    for rel, is_dir in scan(root):
        p = os.path.join(root, rel)
        st = os.stat(p)
        inodes[rel] = st.st_ino
        tree[rel] = None if is_dir else st.st_size
        if read and not is_dir:
            sums[rel] = sha256_or_none(p)
    return tree, inodes, sums


def inside(path, folders):
    """Whether `path` is below one of the set `folders`."""
    i = path.find("/")
    while i >= 0:
        if path[:i] in folders:
            return True
        i = path.find("/", i + 1)
    return False


def below(d, rel):
    """The entries of dict `d` below folder `rel`, relative to it."""
    pre = rel + "/"
    return {k[len(pre):]: v for k, v in d.items() if k.startswith(pre)}


def oracle(build, model, key, env, cache):
    """(tree, {path: sha256 or None}) of `model` alone, from modelfs-ls
    (a file it cannot make or check: None); the same for the same key."""
    if key in cache:
        return cache[key]
    ls = os.path.join(build, "modelfs-ls")
    tree = mfstest.ls_tree(ls, model, env)
    files = [p for p, size in tree.items() if size is not None]
    sums, _, _ = mfstest.ls_sums(ls, model, files, env)
    cache[key] = (tree, {p: sums[p][0] if p in sums else None for p in files})
    return cache[key]


def refusal(build, model, env):
    """The line `modelfs MODEL MNT` prints for a model it refuses."""
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    r = subprocess.run([os.path.join(build, "modelfs"), model, mnt], capture_output=True,
                       text=True, env=env, timeout=60)
    if os.path.ismount(mnt):
        mfstest.unmount(mnt)
    os.rmdir(mnt)
    return r.returncode, r.stderr


def make_zoo(build, gen, zoo):
    """200 entries below `zoo`; returns (good {rel: source}, bad [rel], skipped [rel])."""
    sources, big = [], set()
    for sub in ("rten", "ptd", "tb", "carton"):
        d = os.path.join(gen, sub)
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            if f.endswith((".expect.json", ".links")) or not os.path.isfile(p):
                continue
            with open(p + ".expect.json") as fh:
                expect = json.load(fh)
            if expect.get("expect") == "corrupt" or os.path.isdir(p + ".links"):
                continue
            r = subprocess.run([os.path.join(build, "modelfs-ls"), p], capture_output=True)
            if r.returncode == 0:
                sources.append(p)
                if r.stdout.count(b"\n") > 1000:
                    big.add(p)
    # Every source once; then the small ones again and again up to 200
    # entries. The three with 3,000-5,000 tensors (mount.rten, .ptd and
    # .tensorbuffers read them alone) five times over were 85% of the files read.
    small = [p for p in sources if p not in big]
    # The zoo's entries are hard links of one private copy of each source:
    # a link to the generated file itself would change its ctime, which
    # the daemons of other tests mounting it (in parallel) take for an
    # edit of the model.
    copies = os.path.join(os.path.dirname(zoo), "sources")
    os.makedirs(copies, exist_ok=True)
    private = {}
    for p in sources:
        private[p] = os.path.join(copies, "%d-%s" % (len(private), os.path.basename(p)))
        shutil.copy(p, private[p])
    good, bad, skipped = {}, [], []
    i = 0
    while len(good) + len(bad) + len(skipped) < 200:
        if i < len(sources):
            src = sources[i]
            name = os.path.basename(src)
        else:
            src = small[(i - len(sources)) % len(small)]
            name = "%d-%s" % (i, os.path.basename(src))
        rel = os.path.join("set%02d" % (i // len(sources)), "g%d" % (i % 3), name)
        os.makedirs(os.path.dirname(os.path.join(zoo, rel)), exist_ok=True)
        os.link(private[src], os.path.join(zoo, rel))
        good[rel] = src
        if i % 10 == 3:
            # Corrupt: the first 200 bytes of a model (probing still says
            # which format, loading refuses it); a legacy RTen, which has
            # no magic, is then no model at all (modelfs-ls exits 4) and
            # not shown, and a model of less than 200 bytes stays whole.
            crel = rel + ".cut"
            with open(src, "rb") as f, open(os.path.join(zoo, crel), "wb") as o:
                o.write(f.read(200))
            r = subprocess.run([os.path.join(build, "modelfs-ls"), os.path.join(zoo, crel)],
                               capture_output=True)
            if r.returncode == 0:
                good[crel] = src
            else:
                (skipped if r.returncode == 4 else bad).append(crel)
        if i % 10 == 7:
            nrel = rel + ".txt"
            with open(os.path.join(zoo, nrel), "wb") as o:
                # Fixed bytes no probe takes (random ones were once an ONNX).
                o.write(b"\xff\xfe" * 1500 if i % 20 == 7 else b"not a model\n")
            skipped.append(nrel)
        i += 1
    os.mkfifo(os.path.join(zoo, "fifo"))
    os.symlink("/etc/passwd", os.path.join(zoo, "outside"))
    os.symlink(os.path.join(gen, "rten", "demo.rten"), os.path.join(zoo, "outside.rten"))
    os.symlink("set00", os.path.join(zoo, "dirlink"))
    os.symlink(os.path.join("set00", "g0", os.path.basename(sources[0])),
               os.path.join(zoo, "inside.rten"))
    good["inside.rten"] = sources[0]
    skipped += ["fifo", "outside", "outside.rten", "dirlink"]
    return good, bad, skipped


def check_zoo(c, build, gen, env, tmp, shard=0, nshards=1):
    """The folder of 200 entries. With nshards > 1 (separate processes, in
    parallel) shard `shard` reads the files of every nshards-th model
    folder, in both mounts; shard 0 also checks what is outside the model
    folders, every entry's inode number and the lazy load. The shards
    together make every check of one unsharded run."""
    mfstest.mounts_on_one_cpu()  # reads one file at a time: see there
    zoo = os.path.join(tmp, "zoo")
    os.mkdir(zoo)
    good, bad, skipped = make_zoo(build, gen, zoo)
    modelfs, ls = os.path.join(build, "modelfs"), os.path.join(build, "modelfs-ls")
    folders = sorted(list(good) + bad)
    mine = folders[shard::nshards]
    t0 = time.time()
    with mfstest.mounted(modelfs, zoo, env=env) as mnt:
        c.check(time.time() - t0 < 30, "the folder mounts in %.1f s" % (time.time() - t0))
        # What is shown: exactly the models, good and bad.
        shown = set()
        for d, dirs, files in os.walk(mnt):
            if os.path.exists(os.path.join(d, "model.json")) or "ERROR" in files:
                shown.add(os.path.relpath(d, mnt))
                dirs[:] = []
        c.equal(sorted(shown), folders, "the model folders shown")
        for rel in bad:
            if rel not in mine:
                continue
            rc, err = refusal(build, os.path.join(zoo, rel), env)
            c.check(rc in (4, 5), "%s: refused alone (exit %d)" % (rel, rc))
            with open(os.path.join(mnt, rel, "ERROR")) as f:
                c.equal(f.read(), err, "%s: ERROR is modelfs's line" % rel)
            c.equal(os.listdir(os.path.join(mnt, rel)), ["ERROR"], "%s: only ERROR" % rel)
        with open(os.path.join(mnt, "models.json")) as f:
            listed = json.load(f)
        if shard == 0:
            c.equal(sorted(m["path"] for m in listed), folders, "models.json paths")
            for m in listed:
                want = "error" if m["path"] in bad else "ok"
                c.equal(m["status"], want, "models.json: %s status" % m["path"])
                c.equal(m["size"], os.path.getsize(os.path.join(zoo, m["path"])),
                        "models.json: %s size" % m["path"])
                c.check(m["format"] in ("rten", "ptd", "tensorbuffers", "carton"),
                        "models.json: %s format %r" % (m["path"], m["format"]))
        # modelfs-ls DIR is the same tree (models.json read: its size
        # known); compared below each model folder, and (shard 0) outside.
        ls_dir = mfstest.ls_tree(ls, zoo, env)
        ls_below = {rel: {} for rel in mine}
        for p, v in ls_dir.items():
            i = p.find("/")
            while i >= 0:
                if p[:i] in ls_below:
                    ls_below[p[:i]][p[i + 1:]] = v
                    break
                i = p.find("/", i + 1)
        bytes1, outside_bytes = {}, {}
        if shard == 0:
            # Every entry's inode number; the entries outside the model
            # folders (the folders themselves, set00/, models.json) read.
            tree_all, inodes, _ = survey(mnt, read=False)
            fset = set(folders)
            outside = {p: v for p, v in tree_all.items() if not inside(p, fset)}
            c.equal(sorted(outside.items(), key=str),
                    sorted(((p, v) for p, v in ls_dir.items() if not inside(p, fset)), key=str),
                    "tree vs modelfs-ls DIR, outside the model folders")
            outside_bytes = {p: sha256_or_none(os.path.join(mnt, p))
                             for p, v in outside.items() if v is not None}
            bytes1.update(outside_bytes)
        # Each model folder: one pass (every entry stat'ed, every file read
        # once), compared with that model alone and with modelfs-ls DIR.
        cache = {}
        for rel in mine:
            tree1, _, sums1 = survey(os.path.join(mnt, rel))
            bytes1.update((rel + "/" + p, v) for p, v in sums1.items())
            # Dicts compared as dicts: sorting their items by str() was a
            # sixth of a shard's time.
            c.equal(tree1, ls_below[rel], "%s: tree vs modelfs-ls DIR" % rel)
            if rel in good:
                tree, sums = oracle(build, os.path.join(zoo, rel),
                                    (os.path.basename(rel), good[rel]), env, cache)
                c.equal(tree1, mfstest.without_view(tree, tree1), "%s: tree as mounted alone" % rel)
                c.equal(sums1, mfstest.without_view(sums, tree1), "%s: bytes as mounted alone" % rel)
    with mfstest.mounted(modelfs, zoo, env=env) as mnt:
        if shard == 0:
            # The same inode numbers (lookups in another order: the names
            # listed first, then stat'ed last to first).
            names = [rel for rel, _ in scan(mnt)]
            again = {p: os.stat(os.path.join(mnt, p)).st_ino
                     for p in sorted(names, reverse=True)}
            c.equal(again, inodes, "inode numbers on a second mount")
            c.check(len(set(inodes.values())) == len(inodes), "inode numbers are distinct")
        # And the same bytes.
        bytes2 = {p: sha256_or_none(os.path.join(mnt, p)) for p in outside_bytes}
        for rel in mine:
            bytes2.update((rel + "/" + p, v) for p, v in files_of(os.path.join(mnt, rel)).items())
        c.equal(bytes2, bytes1, "bytes on a second mount")
    if shard != 0:
        return
    # Lazy: `ls -l` of a folder loads none of its models; a model replaced
    # after that is what its first lookup loads.
    first = sorted(r for r in good if r.startswith("set00/g0/"))[0]
    with mfstest.mounted(modelfs, zoo, env=env) as mnt:
        subprocess.run(["ls", "-l", os.path.join(mnt, "set00", "g0")], capture_output=True)
        victim = os.path.join(zoo, first)
        os.unlink(victim)
        with open(victim, "wb") as o:
            o.write(b"RTEN\x02\x00\x00\x00" + b"\0" * 8)
        with open(os.path.join(mnt, first, "ERROR")) as f:
            text = f.read()
        c.check(first in text and "modelfs:" in text,
                "a model replaced before its first lookup loads as replaced: %r" % text)


def check_swaps(c, build, gen, env, tmp):
    """A model found in DIR is loaded from inside DIR only: a folder on
    its path swapped for a symlink after the mount (before its first
    use), a link of DIR pointed out of it, or a file replaced by a link
    out of it gives an ERROR folder, never the outside file's tree; a
    link pointed at another model inside DIR loads that one."""
    d, out = os.path.join(tmp, "swapdir"), os.path.join(tmp, "outside")
    for sub in ("sub", "sub2", "cf"):
        os.makedirs(os.path.join(d, sub))
    os.makedirs(os.path.join(out, "sub"))
    demo, names = os.path.join(gen, "rten", "demo.rten"), os.path.join(gen, "rten", "names.rten")
    for dst in ("sub/a.rten", "sub2/b.rten", "c.rten"):
        shutil.copy(demo, os.path.join(d, dst))
    shutil.copy(names, os.path.join(d, "sub2", "n.rten"))
    # Outside: models with other tensors (names.rten), so a load through
    # a swapped path would show them.
    for dst in ("sub/a.rten", "secret.rten"):
        shutil.copy(names, os.path.join(out, dst))
    os.symlink(os.path.join("sub", "a.rten"), os.path.join(d, "link.rten"))
    os.symlink(os.path.join("sub2", "b.rten"), os.path.join(d, "link2.rten"))
    unpacked = os.path.join(gen, "carton", "gen_unpacked")
    have_folder = os.path.isdir(unpacked)
    if have_folder:
        shutil.rmtree(os.path.join(d, "cf"))
        def no_fifos(where, names):
            return [n for n in names if stat.S_ISFIFO(os.lstat(os.path.join(where, n)).st_mode)]
        shutil.copytree(unpacked, os.path.join(d, "cf"), symlinks=True, ignore=no_fifos)
        shutil.copytree(unpacked, os.path.join(out, "cf"), symlinks=True, ignore=no_fifos)
    else:
        c.skip("no generated carton folder: the folder-model swap is not checked")
    ls = os.path.join(build, "modelfs-ls")
    with mfstest.mounted(os.path.join(build, "modelfs"), d, env=env) as mnt:
        # Listing folders loads none of the models in them.
        top, sub = sorted(os.listdir(mnt)), sorted(os.listdir(os.path.join(mnt, "sub")))
        c.check({"link.rten", "link2.rten", "c.rten"} <= set(top) and sub == ["a.rten"],
                "swap: the links and models are shown: %r %r" % (top, sub))
        os.rename(os.path.join(d, "sub"), os.path.join(d, "sub.old"))
        os.symlink(os.path.join(out, "sub"), os.path.join(d, "sub"))
        os.unlink(os.path.join(d, "link.rten"))
        os.symlink(os.path.join(out, "secret.rten"), os.path.join(d, "link.rten"))
        os.unlink(os.path.join(d, "c.rten"))
        os.symlink(os.path.join(out, "secret.rten"), os.path.join(d, "c.rten"))
        os.unlink(os.path.join(d, "link2.rten"))
        os.symlink(os.path.join("sub2", "n.rten"), os.path.join(d, "link2.rten"))
        swapped = ["sub/a.rten", "link.rten", "c.rten"]
        if have_folder:
            os.rename(os.path.join(d, "cf"), os.path.join(d, "cf.old"))
            os.symlink(os.path.join(out, "cf"), os.path.join(d, "cf"))
            swapped.append("cf")
        for rel in swapped:
            got = sorted(os.listdir(os.path.join(mnt, rel)))
            c.equal(got, ["ERROR"], "swap: %s now leads out of DIR: only ERROR" % rel)
            if got == ["ERROR"]:
                with open(os.path.join(mnt, rel, "ERROR")) as f:
                    text = f.read()
                c.check(text.startswith("modelfs: ") and "out of" in text,
                        "swap: %s: ERROR says why: %r" % (rel, text))
        c.check(os.path.exists(os.path.join(mnt, "sub2", "b.rten", "model.json")),
                "swap: an untouched model still loads")
        # A model replaced by another format before its first use:
        # models.json says what loaded, not what probing found.
        other = os.path.join(gen, "safetensors", "gen_dtypes.safetensors")
        if os.path.isfile(other):
            shutil.copy(other, os.path.join(d, "sub2", "n.rten"))
            with open(os.path.join(mnt, "models.json")) as f:
                listed = {m["path"]: m for m in json.load(f)}
            got = listed.get("sub2/n.rten", {})
            c.equal((got.get("format"), got.get("size"), got.get("status")),
                    ("safetensors", os.path.getsize(other), "ok"),
                    "swap: models.json gives the format and size of the model that loaded")
        else:
            c.skip("no generated safetensors model: the replaced-model check")
        got = mfstest.walk_tree(os.path.join(mnt, "link2.rten"))
        alone = mfstest.without_view(mfstest.ls_tree(ls, os.path.join(d, "link2.rten"), env), got)
        c.equal(sorted(got.items(), key=str), sorted(alone.items(), key=str),
                "swap: a link pointed at another model inside DIR loads that model")


def check_first_use_race(c, modelfs, models, mnt, env):
    """Many readers look into the same models for the first time at once
    (each model loads once, under its own lock): every reader sees the
    tree and bytes one reader alone sees afterwards."""
    r = subprocess.run([modelfs, *models, mnt], capture_output=True, text=True, env=env,
                       timeout=60)
    if not c.check(r.returncode == 0, "race mount: %s" % r.stderr):
        return
    try:
        results = [None] * 12

        def reader(i):
            try:
                results[i] = files_of(mnt)
            except Exception as e:  # reported below as a mismatch
                results[i] = repr(e)

        threads = [threading.Thread(target=reader, args=(i,)) for i in range(len(results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        alone = files_of(mnt)
        c.check(all(x == alone for x in results),
                "12 readers at a mount's first use saw what one reader sees after")
    finally:
        mfstest.unmount(mnt)


def check_args(c, build, gen, env, tmp):
    modelfs = os.path.join(build, "modelfs")
    ls = os.path.join(build, "modelfs-ls")
    a = os.path.join(gen, "rten", "demo.rten")
    b = os.path.join(gen, "ptd", os.listdir(os.path.join(gen, "ptd"))[0])
    other = os.path.join(tmp, "other")
    os.mkdir(other)
    a2 = os.path.join(other, "demo.rten")
    shutil.copy(a, a2)
    junk = os.path.join(tmp, "junk.bin")
    with open(junk, "wb") as f:
        f.write(b"\x01" * 100)
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    try:
        r = subprocess.run([modelfs, a, b, a2, junk, mnt], capture_output=True, text=True,
                           env=env, timeout=60)
        c.equal(r.returncode, 0, "modelfs A B A2 JUNK MNT: %s" % r.stderr)
        if r.returncode == 0:
            names = sorted(os.listdir(mnt))
            want = sorted(["demo.rten", "demo.rten%~2", os.path.basename(b), "files", "junk.bin",
                           "models.json"])
            c.equal(names, want, "folders named after the files")
            with open(os.path.join(mnt, "models.json")) as f:
                json.load(f)  # its size is known once read
            # Before any stats.tsv is read: its size shows 0 until then.
            c.equal(sorted(mfstest.walk_tree(mnt).items(), key=str),
                    sorted(mfstest.ls_tree_args(ls, [a, b, a2, junk, "--"], env).items(), key=str),
                    "tree vs modelfs-ls A B A2 JUNK --")
            c.equal(files_of(os.path.join(mnt, "demo.rten%~2")), files_of(os.path.join(mnt, "demo.rten")),
                    "two copies of one model, same bytes")
            with open(os.path.join(mnt, "junk.bin", "ERROR")) as f:
                c.check("not a model file of a known format" in f.read(), "junk.bin: ERROR says why")
            mfstest.unmount(mnt)
        check_first_use_race(c, modelfs, [a, b, a2, junk], mnt, env)
        r = subprocess.run([modelfs, a, os.path.join(tmp, "missing.rten"), mnt],
                           capture_output=True, text=True, env=env, timeout=60)
        c.equal(r.returncode, 3, "a missing model is refused")
        c.check("missing.rten" in r.stderr, "the message names it: %r" % r.stderr)
        # 400 models in a folder under a soft limit of 256 open files (a
        # loaded model keeps its file open): every one loads, as the
        # programs raise the soft limit to the hard one (151 were ERROR).
        many = os.path.join(tmp, "many_npy")
        os.mkdir(many)
        for i in range(400):
            with open(os.path.join(many, "a%03d.npy" % i), "wb") as f:
                head = b"{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }"
                head += b" " * (63 - (10 + len(head)) % 64) + b"\n"
                f.write(b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head +
                        i.to_bytes(4, "little"))
        low = lambda: resource.setrlimit(resource.RLIMIT_NOFILE,  # noqa: E731
                                         (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        r = subprocess.run([ls, many], capture_output=True, text=True, env=env, timeout=120,
                           preexec_fn=low)
        c.check(r.returncode == 0 and "ERROR" not in r.stdout,
                "modelfs-ls of 400 models under 256 open files: exit %d, %d ERROR"
                % (r.returncode, r.stdout.count("ERROR")))
        m400 = tempfile.mkdtemp(prefix="modelfs-mnt-")
        r = subprocess.run([modelfs, many, m400], capture_output=True, text=True, env=env,
                           timeout=120, preexec_fn=low)
        if c.equal(r.returncode, 0, "modelfs of 400 models under 256 open files: %s" % r.stderr):
            try:
                got = [(f, read_or_none(os.path.join(m400, f, "tensors", f[:-4])))
                       for f in sorted(os.listdir(m400)) if f.endswith(".npy")]
                c.equal(len(got), 400, "400 model folders")
                c.equal([f for f, b in got if b != int(f[1:4]).to_bytes(4, "little")], [],
                        "models whose tensor does not read (256 open files)")
            finally:
                mfstest.unmount(m400)
        os.rmdir(m400)
        # An empty folder, and one holding only an empty folder: no model,
        # a tree all the same (the sanitizer build once stopped on
        # qsort(NULL, 0) there), dated as the folder is, not 1970.
        for sub in ("empty", "empty_in/inner"):
            os.makedirs(os.path.join(tmp, sub))
            top = os.path.join(tmp, sub.split("/")[0])
            r = subprocess.run([ls, top], capture_output=True, env=env, timeout=60)
            c.equal(r.returncode, 0, "modelfs-ls %s: %r" % (sub, r.stderr[-300:]))
            with mfstest.mounted(modelfs, top, env=env) as m:
                c.equal(sorted(os.listdir(m)), ["files", "models.json"],
                        "modelfs %s: only models.json and the files view" % sub)
                c.equal(os.listdir(os.path.join(m, "files")), [] if sub == "empty" else ["inner"],
                        "modelfs %s: the files view holds its folders" % sub)
                c.check(os.stat(m).st_mtime > 0, "modelfs %s: mount dated %s" % (sub, os.stat(m).st_mtime))
    finally:
        if os.path.ismount(mnt):
            mfstest.unmount(mnt)
        os.rmdir(mnt)


def diff_lines(x, y):
    r = subprocess.run(["diff", "-r", x, y], capture_output=True, text=True)
    return r.returncode, r.stdout.splitlines()


def check_diff(c, build, gen, env, tmp):
    """Two models that differ in one tensor's values."""
    src = os.path.join(gen, "rten", "demo.rten")
    a, b = os.path.join(tmp, "a.rten"), os.path.join(tmp, "b.rten")
    shutil.copy(src, a)
    shutil.copy(src, b)
    ls = os.path.join(build, "modelfs-ls")
    doc = json.loads(subprocess.run([ls, a, "model.json"], capture_output=True, check=True,
                                    env=env).stdout)
    t = max(doc["tensors"], key=lambda t: t["nbytes"])
    with open(b, "r+b") as f:
        f.seek(t["offset"])
        f.write(bytes(x ^ 0xFF for x in f.read(8)))
    fname = t["path"].split("/", 1)[1]
    modelfs = os.path.join(build, "modelfs")

    def check(x, y, how):
        rc, lines = diff_lines(x, y)
        c.equal(rc, 1, "%s: diff -r finds a difference" % how)
        binary = sorted(ln for ln in lines if ln.startswith("Binary files"))
        c.equal(len(binary), 3, "%s: three binary files differ: %s" % (how, binary))
        c.check(any("/tensors/%s " % fname in ln for ln in binary), "%s: the tensor file" % how)
        c.check(any("/npy/%s.npy " % fname in ln for ln in binary), "%s: its .npy" % how)
        c.check(any("/model.safetensors " in ln for ln in binary),
                "%s: model.safetensors" % how)
        changed = [ln for ln in lines if ln[:2] in ("< ", "> ")]
        sums = [ln for ln in changed if ln.endswith("  tensors/" + fname)]
        c.equal(len(sums), 2, "%s: its SHA256SUMS line, old and new" % how)
        # stats.tsv: the changed tensor's line, old and new.
        stats = [ln for ln in changed if ln[2:].startswith(fname + "\t")]
        c.equal(len(stats), 2, "%s: its stats.tsv line, old and new" % how)
        others = [ln for ln in changed if ln not in sums and ln not in stats]
        c.check(others and all("a.rten" in ln or "b.rten" in ln for ln in others),
                "%s: the other changed lines name the model file: %s" % (how, others))
        files = sorted(ln.split()[2] for ln in lines if ln.startswith("diff -r"))
        c.check(all(f.endswith(("/SHA256SUMS", "/model.json", "/model.toml", "/stats.tsv"))
                    for f in files),
                "%s: text files that differ: %s" % (how, files))

    with mfstest.mounted(modelfs, a, env=env) as ma, mfstest.mounted(modelfs, b, env=env) as mb:
        check(ma, mb, "two mounts")
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    try:
        r = subprocess.run([modelfs, a, b, mnt], capture_output=True, text=True, env=env)
        c.equal(r.returncode, 0, "modelfs a.rten b.rten MNT")
        if r.returncode == 0:
            check(os.path.join(mnt, "a.rten"), os.path.join(mnt, "b.rten"), "one mount")
    finally:
        if os.path.ismount(mnt):
            mfstest.unmount(mnt)
        os.rmdir(mnt)


PARTS = {"args": check_args, "diff": check_diff, "zoo": check_zoo, "swaps": check_swaps}


def run(c, t):
    build, gen, env = t.build, t.args[0], t.env
    parts = t.args[1:] or list(PARTS)
    if any(p.split(":")[0] not in PARTS for p in parts):
        mfstest.fail_main(__doc__)
    c.name = "multi-model tests (%s)" % " ".join(parts)
    tmp = mfstest.scratch("modelfs-multi-")
    try:
        for p in parts:
            name, _, shard = p.partition(":")
            args = [int(x) for x in shard.split("/")] if shard else []
            sub = os.path.join(tmp, p.replace("/", "of").replace(":", "-"))
            os.mkdir(sub)
            PARTS[name](c, build, gen, env, sub, *args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(mfstest.main("multi-model tests", run, __doc__, min_args=1))
