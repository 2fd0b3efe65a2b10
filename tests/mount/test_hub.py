#!/usr/bin/python3
"""Hugging Face Hub models (hf://), against a test Hub on loopback
(hubserver.py: the Hub on 127.0.0.1, the host its resolves redirect to
on 127.0.0.2, reached through HF_ENDPOINT):

 - one model per format from hf://ORG/REPO/PATH, mounted for real, is
   the local file's mount: the same tree, the bytes of every file, every
   xattr; one resolve per mount;
 - a repository mounted whole (hf://org/zoo, listed 2 entries a page):
   its model files at their nested paths, README.md, config.json and a
   sharded model's shards not among them, the sharded model one model
   equal to its local folder's mount; the branch resolved once
   (/revision/main) and every file resolved once at that commit, also
   after the branch moved on;
 - the token goes to the Hub's host only, never where it redirects; it
   is in no message, model.json, models.json, xattr or command line;
 - a gated repository: without a token exit 3 and one line naming the
   URL, "401" and "set HF_TOKEN"; with HF_TOKEN, HF_TOKEN_PATH or
   $HF_HOME/token it loads; 404s name the file or the revision;
 - a signed URL that expired (403) is resolved again and the read works;
 - a file complete in the Hub's cache (snapshots/COMMIT/PATH ->
   ../../blobs/SHA) is read from there with no request to the byte host,
   and with HF_HUB_OFFLINE=1 with no request at all (a repository too);
   a blob shorter than the Hub says is not used;
 - a revision with a '/' (refs/pr/1, written %2F), a dataset, and
   modelfs-ls on hf:// URLs (the local file's listing);
 - a renamed repository (a relative redirect on the Hub) is followed; a
   size other than the Hub said, and a next page on another host (the
   token would go with it), are refused.

usage: test_hub.py BUILD_DIR GEN_DIR
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hubserver  # noqa: E402
import mfstest  # noqa: E402

TOKEN = "hf_modelfsTESTtoken0123456789"
FORMATS = ["safetensors", "gguf", "onnx", "pytorch", "numpy", "tflite"]


def run(args, env, timeout=60):
    r = subprocess.run(args, capture_output=True, env=env, timeout=timeout)
    return r.returncode, r.stdout.decode("utf-8", "surrogateescape"), \
        r.stderr.decode("utf-8", "replace")


class Setup:
    """The models, the test Hub, and an environment per check (its own
    disk cache: a cached file would be read with no request)."""

    def __init__(self, build, gen):
        self.build, self.gen = build, gen
        self.ls = os.path.join(build, "modelfs-ls")
        self.modelfs = os.path.join(build, "modelfs")
        self.tmp = tempfile.mkdtemp(prefix="modelfs-hub-")
        self.logdir = tempfile.mkdtemp(prefix="modelfs-san-")
        self.base = mfstest.sanitizer_env(self.logdir)
        for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE",
                  "HF_HUB_OFFLINE"):
            self.base.pop(k, None)
        self.base["HF_HOME"] = os.path.join(self.tmp, "hf-home")   # no token file there
        self.hub = hubserver.Hub(TOKEN, page=2)
        self.base["HF_ENDPOINT"] = self.hub.url
        self.n = 0

    def env(self, **kw):
        self.n += 1
        e = dict(self.base, XDG_CACHE_HOME=os.path.join(self.tmp, "cache%d" % self.n))
        e.update(kw)
        return e

    def pick(self, fmt):
        """The first model of a generated folder that loads locally."""
        d = os.path.join(self.gen, fmt)
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            p = os.path.join(d, f)
            if (os.path.isfile(p) and not f.endswith(".json") and not f.startswith("bad") and
                    run([self.ls, p, "model.json"], self.base)[0] == 0):
                return p
        return None


def resolves(s, since):
    """The resolves asked of the Hub since log entry `since` (HEADs: a
    GET of /resolve/ is the bytes of a small file the Hub serves)."""
    return [r for r in s.hub.requests("hub", since) if r[1] == "HEAD" and "/resolve/" in r[2]]


def check_formats(c, s, files):
    """One model per format mounted from the Hub against the local file."""
    for path, local in sorted(files.items()):
        if "/" not in path or path.split("/")[0] not in FORMATS:
            continue
        url = "hf://org/zoo/" + path
        since = len(s.hub.log)
        try:
            env = s.env(HF_TOKEN=TOKEN)
            with mfstest.mounted(s.modelfs, url, env) as rmnt, \
                    mfstest.mounted(s.modelfs, local, env) as lmnt:
                mfstest.same_mounts(c, url, rmnt, lmnt)
        except RuntimeError as e:
            c.check(False, "%s: mount: %s" % (url, e))
            continue
        c.equal(len(resolves(s, since)), 1, "%s: resolves per mount" % url)


def check_repo(c, s, files, sharded):
    """hf://org/zoo mounted whole."""
    want = sorted(p for p in files if not p.endswith((".md", "config.json")) and
                  not (p.startswith("sharded/") and p.endswith("-of-00002.safetensors")))
    since = len(s.hub.log)
    env = s.env(HF_TOKEN=TOKEN)
    try:
        with mfstest.mounted(s.modelfs, "hf://org/zoo", env) as mnt:
            listed = sorted(os.path.relpath(os.path.join(d, n), mnt) for d, dirs, fs in
                            os.walk(mnt) for n in dirs
                            if os.path.exists(os.path.join(d, n, "model.json")) and
                            os.path.relpath(d, mnt).count("/") < 4)
            c.equal([p for p in listed if p in files or p.startswith("sharded/")], want,
                    "hf://org/zoo: its model files")
            with open(os.path.join(mnt, "models.json"), "rb") as f:
                models_json = f.read()
            c.check(TOKEN.encode() not in models_json, "models.json holds the token")
            # The branch moves on: files not loaded yet are still read at
            # the commit listed (the GGUF's path now names other bytes).
            old = s.hub.repos[("models", "org/zoo")].refs["main"]
            moved = dict(files)
            gguf = next((p for p in files if p.startswith("gguf/")), None)
            if gguf:
                moved[gguf] = files["safetensors/" + os.path.basename(
                    next(p for p in files if p.startswith("safetensors/")))]
            s.hub.add_repo("org/zoo", moved)
            if gguf:
                with mfstest.mounted(s.modelfs, files[gguf], env) as lmnt:
                    mfstest.same_mounts(c, "hf://org/zoo (branch moved): " + gguf,
                                os.path.join(mnt, gguf), lmnt)
            with mfstest.mounted(s.modelfs, sharded, env) as lmnt:
                mfstest.same_mounts(c, "hf://org/zoo: the sharded model",
                            os.path.join(mnt, "sharded", "model.safetensors.index.json"), lmnt)
            pid = mfstest.daemon_pid(mnt)
            if pid:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    c.check(TOKEN.encode() not in f.read(), "the daemon's command line has the token")
            s.hub.add_repo("org/zoo", files)   # main back where it was
    except RuntimeError as e:
        c.check(False, "hf://org/zoo: mount: %s" % e)
        return
    log = s.hub.requests("hub", since)
    revs = [r for r in log if "/revision/" in r[2]]
    c.equal([r[2] for r in revs], ["/api/models/org/zoo/revision/main"], "revision asked once")
    pages = [r for r in log if "/tree/" in r[2]]
    c.check(len(pages) >= 3 and all(old in r[2] for r in pages),
            "the tree listed page by page at the commit: %s" % [r[2] for r in pages][:3])
    asked = [r[2] for r in resolves(s, since)]
    c.check(all("/resolve/%s/" % old in r for r in asked),
            "every file resolved at the commit listed: %s" % asked[:3])
    c.check(len(asked) == len(set(asked)) and len(asked) >= len(want) + 2,
            "every file resolved once: %s" % sorted(asked))


def check_token(c, s):
    """Over everything so far: the token went to the Hub only."""
    hub = s.hub.requests("hub")
    byte = s.hub.requests("bytes")
    c.check(any(r[4] for r in hub), "the token went to the Hub's host")
    c.check(byte and not any(r[4] for r in byte),
            "%d of %d requests to the byte host carried the token" %
            (sum(1 for r in byte if r[4]), len(byte)))


def refused(c, s, url, wants, env):
    """modelfs URL MNT: exit 3, one line naming the URL and each of `wants`."""
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    try:
        code, _, err = run([s.modelfs, url, mnt], env)
        c.equal(code, 3, "%s: exit code (%s)" % (url, err.strip()))
        lines = err.strip().splitlines()
        c.check(len(lines) == 1 and url in lines[0] and all(w in lines[0] for w in wants),
                "%s: one line naming it and %r: %r" % (url, wants, err))
        c.check(TOKEN not in err, "%s: the token in a message" % url)
    finally:
        if os.path.ismount(mnt):
            mfstest.unmount(mnt)
        os.rmdir(mnt)


def check_gated(c, s, model):
    url = "hf://org/gated/" + model
    refused(c, s, url, ["401", "set HF_TOKEN"], s.env())
    code, _, err = run([s.ls, url, "model.json"], s.env(HF_TOKEN="hf_wrong"))
    c.check(code == 3 and "401" in err and "hf_wrong" not in err,
            "gated with a wrong token: exit %d: %s" % (code, err.strip()))
    code, out, err = run([s.ls, url, "model.json"], s.env(HF_TOKEN=TOKEN))
    c.check(code == 0 and TOKEN not in out, "gated with HF_TOKEN: exit %d: %s" % (code, err.strip()))
    code, _, err = run([s.ls, url, "model.json"], s.env(HUGGING_FACE_HUB_TOKEN=TOKEN))
    c.equal(code, 0, "gated with HUGGING_FACE_HUB_TOKEN: %s" % err.strip())
    tf = os.path.join(s.tmp, "token-file")
    with open(tf, "w") as f:
        f.write("  %s \n" % TOKEN)
    code, _, err = run([s.ls, url, "model.json"], s.env(HF_TOKEN_PATH=tf))
    c.equal(code, 0, "gated with HF_TOKEN_PATH: %s" % err.strip())
    home = os.path.join(s.tmp, "home-with-token")
    os.makedirs(home)
    shutil.copy(tf, os.path.join(home, "token"))
    env = s.env(HF_HOME=home)
    code, _, err = run([s.ls, url, "model.json"], env)
    c.equal(code, 0, "gated with $HF_HOME/token: %s" % err.strip())
    try:
        with mfstest.mounted(s.modelfs, url, env) as mnt:
            found = [p for p, size in mfstest.walk_tree(mnt).items()
                     if TOKEN.encode() in repr(mfstest.xattrs_of(os.path.join(mnt, p))).encode() or
                     (size is not None and p.endswith((".json", ".toml")) and
                      TOKEN.encode() in mfstest.read_or_errno(os.path.join(mnt, p))[0])]
            c.check(not found, "the token in the mount's files or xattrs: %s" % found)
    except RuntimeError as e:
        c.check(False, "gated with $HF_HOME/token: mount: %s" % e)
    refused(c, s, "hf://org/zoo/nope/missing.safetensors", ["404", "nope/missing.safetensors"],
            s.env(HF_TOKEN=TOKEN))
    refused(c, s, "hf://org/zoo@nobranch/" + model, ["404", "nobranch"], s.env())
    refused(c, s, "hf://org/none/" + model, ["404", "org/none"], s.env())


def check_expired(c, s, big, path):
    """A signed URL that expires after the mount: a read past what the
    mount fetched is resolved again, and works."""
    url = "hf://org/zoo/" + path
    since = len(s.hub.log)
    expired = s.hub.expired
    try:
        with mfstest.mounted(s.modelfs, url, s.env()) as mnt, \
                mfstest.mounted(s.modelfs, big, s.env()) as lmnt:
            s.hub.skew = 10 ** 7
            far = os.path.join("tensors", "far")
            got, err = mfstest.read_or_errno(os.path.join(mnt, far))
            want, _ = mfstest.read_or_errno(os.path.join(lmnt, far))
            c.check(got == want, "expired URL: the read: errno %d" % err)
            s.hub.skew = 0
    except RuntimeError as e:
        s.hub.skew = 0
        c.check(False, "%s: mount: %s" % (url, e))
        return
    c.equal(len(resolves(s, since)), 2, "expired URL: resolves (at mount, after the 403)")
    c.check(s.hub.expired > expired, "expired URL: the byte host refused it")


def make_cache(root, commit, path, blob_src, truncate=False):
    """A Hub cache as huggingface_hub leaves it for org/zoo@main."""
    repo = os.path.join(root, "models--org--zoo")
    digest = hubserver.sha256_of(blob_src)
    os.makedirs(os.path.join(repo, "blobs"), exist_ok=True)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    blob = os.path.join(repo, "blobs", digest)
    with open(blob_src, "rb") as f, open(blob, "wb") as g:
        data = f.read()
        g.write(data[:len(data) // 2] if truncate else data)
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(commit)
    snap = os.path.join(repo, "snapshots", commit, path)
    os.makedirs(os.path.dirname(snap), exist_ok=True)
    os.symlink(os.path.relpath(blob, os.path.dirname(snap)), snap)


def check_hub_cache(c, s, files, path):
    commit = s.hub.repos[("models", "org/zoo")].refs["main"]
    cache = os.path.join(s.tmp, "hub-cache")
    make_cache(cache, commit, path, files[path])
    url = "hf://org/zoo/" + path
    for what, extra, role in (("from the Hub's cache", {}, "bytes"),
                              ("HF_HUB_OFFLINE=1", {"HF_HUB_OFFLINE": "1"}, None)):
        since = len(s.hub.log)
        try:
            with mfstest.mounted(s.modelfs, url, s.env(HF_HUB_CACHE=cache, **extra)) as rmnt, \
                    mfstest.mounted(s.modelfs, files[path], s.env()) as lmnt:
                mfstest.same_mounts(c, "%s: %s" % (url, what), rmnt, lmnt)
        except RuntimeError as e:
            c.check(False, "%s: %s: mount: %s" % (url, what, e))
        c.equal(len(s.hub.requests(role, since)), 0,
                "%s: requests to %s" % (what, role or "any host"))
    # A sharded model in the cache: the index and its shards from there.
    for p in files:
        if p.startswith("sharded/"):
            make_cache(cache, commit, p, files[p])
    offline = s.env(HF_HUB_CACHE=cache, HF_HUB_OFFLINE="1")
    code, out, err = run([s.ls, "hf://org/zoo", "--"], offline)
    c.check(code == 0 and (" %s/SHA256SUMS" % path) in out and
            " sharded/model.safetensors.index.json/model.json" in out,
            "HF_HUB_OFFLINE=1: the repository from the cache: %s" % err.strip())
    sharded = os.path.dirname(files["sharded/model.safetensors.index.json"])
    c.equal(run([s.ls, "hf://org/zoo/sharded/model.safetensors.index.json", "model.json"], offline),
            run([s.ls, sharded, "model.json"], offline),
            "HF_HUB_OFFLINE=1: the sharded model from the cache, as its folder")
    # A blob cut short (a crash while huggingface_hub wrote it): fetched.
    short = os.path.join(s.tmp, "hub-cache-short")
    make_cache(short, commit, path, files[path], truncate=True)
    since = len(s.hub.log)
    code, _, err = run([s.ls, url, "model.json"], s.env(HF_HUB_CACHE=short))
    c.check(code == 0 and s.hub.requests("bytes", since),
            "a blob shorter than the Hub says is fetched instead: %s" % err.strip())


def check_ls(c, s, files, path):
    """modelfs-ls of hf:// URLs: the local file's listing; a revision
    with '/' (quoted whole in requests); a dataset."""
    env = s.env()
    want = run([s.ls, files[path]], env)
    c.equal(run([s.ls, "hf://org/zoo/" + path], env), want, "modelfs-ls hf://org/zoo/" + path)
    since = len(s.hub.log)
    c.equal(run([s.ls, "hf://org/zoo@refs%2Fpr%2F1/" + path], env), want,
            "modelfs-ls of a revision refs/pr/1")
    c.check(any("/resolve/refs%2Fpr%2F1/" in r[2] for r in s.hub.requests("hub", since)),
            "refs/pr/1 quoted whole in the resolve URL")
    c.equal(run([s.ls, "hf://datasets/org/data/" + path], env), want, "modelfs-ls of a dataset")
    code, out, err = run([s.ls, "hf://org/zoo"], env)
    c.check(code == 0 and (" %s/model.json" % path) in out,
            "modelfs-ls hf://org/zoo lists its models: %s" % err.strip())


def check_faults(c, s, path):
    env = s.env(HF_TOKEN=TOKEN)
    s.hub.renamed["old/zoo"] = "org/zoo"
    since = len(s.hub.log)
    code, out, err = run([s.ls, "hf://old/zoo/" + path, "model.json"], env)
    c.check(code == 0 and any("/org/zoo/resolve/" in r[2] and r[4]
                              for r in s.hub.requests("hub", since)),
            "a renamed repository: followed on the Hub, with the token: %s" % err.strip())
    s.hub.size_lie = 1
    code, _, err = run([s.ls, "hf://org/zoo/" + path, "model.json"], s.env())
    s.hub.size_lie = 0
    c.check(code == 3 and "the Hub says" in err, "a size the Hub lied about: %d %s" % (code, err))
    s.hub.foreign_next = True
    since = len(s.hub.log)
    code, _, err = run([s.ls, "hf://org/zoo", "--"], env)
    s.hub.foreign_next = False
    c.check(code == 3 and "not on the Hub's host" in err and
            not s.hub.requests("bytes", since),
            "a next page on another host: refused, not asked: %d %s" % (code, err))


def main(argv):
    build, gen = argv[1], argv[2]
    c = mfstest.Checker("hub tests")
    # Its daemons and modelfs-ls ask this test's own server, one request at
    # a time, with nothing timed: all on one CPU (see there).
    mfstest.stay_on_one_cpu()
    s = Setup(build, gen)
    t0 = time.time()
    try:
        files = {}
        for fmt in FORMATS:
            p = s.pick(fmt)
            if p is None:
                c.skip("no %s model in %s" % (fmt, gen))
                continue
            files["%s/%s" % (fmt, os.path.basename(p))] = p
        sharded = os.path.join(gen, "safetensors_sharded", "sharded")
        for f in sorted(os.listdir(sharded)):
            files["sharded/" + f] = os.path.join(sharded, f)
        big = os.path.join(s.tmp, "big.safetensors")
        mfstest.write_safetensors(big, {"near": b"n" * 1024,
                                "far": hashlib.sha256(b"x").digest() * (1 << 15)})
        files["deep/er/big.safetensors"] = big
        readme = os.path.join(s.tmp, "README.md")
        with open(readme, "w") as f:
            f.write("# a model card\n")
        files["README.md"] = readme
        files["config.json"] = readme
        s.hub.add_repo("org/zoo", files)
        first = next(p for p in sorted(files) if p.startswith("safetensors/"))
        s.hub.add_repo("org/zoo", {first: files[first]}, ref="refs/pr/1")
        s.hub.add_repo("org/data", {first: files[first]}, kind="datasets")
        s.hub.add_repo("org/gated", {first: files[first]}, gated=True)
        check_ls(c, s, files, first)
        check_gated(c, s, first)
        check_hub_cache(c, s, files, first)
        check_faults(c, s, first)
        if mfstest.can_mount():
            check_formats(c, s, files)
            check_repo(c, s, files, sharded)
            check_expired(c, s, big, "deep/er/big.safetensors")
        else:
            c.skip("no /dev/fuse: the mounts")
        check_token(c, s)
    finally:
        s.hub.stop()
    mfstest.check_sanitizer_reports(c, s.logdir)
    shutil.rmtree(s.tmp, ignore_errors=True)
    print("hub tests: %.1f s" % (time.time() - t0))
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
