#!/usr/bin/python3
"""The suite's own test servers against the real clients of the services
they stand for, so that what passes against them would pass against the
real ones; every answer compared with ground truth computed here from the
files:

 - s3server.py with Debian's awscli (`aws --endpoint-url`): `s3 ls` with
   and without --recursive (folders as PRE, from CommonPrefixes; 1,005
   keys below one prefix, two pages; keys with a space, '&' and '+', url-
   encoded), `s3api list-objects-v2 --delimiter /` (CommonPrefixes, every
   ETag the MD5 of the object), `s3api head-object` (ETag, size), `s3 cp
   --recursive` of a 9 MB object (ranged parts) and the other keys;
 - s3server.py with rclone (an S3 remote from environment variables):
   `lsf` (folders), `lsjson -R --hash` with ListObjects v1 and v2 (sizes
   and MD5s from the listing's ETags), `md5sum`, `cat`, `copy`, and
   `check` of the copy against the bucket (hashes checked, none missing);
 - hubserver.py with @huggingface/hub from npm (scripts/fetch_hfhub.sh;
   skipped, visibly, when npm cannot fetch it): `listFiles` (recursive,
   one level, a folder; paths, sizes, git oids, LFS sha256s), `downloadFile`
   (bytes, a range, the raw LFS pointer), `fileExists` (/raw/),
   `parseSafetensorsMetadata` (a single file found by itself, a sharded
   index: every header as the files hold it), `modelInfo` (revision HEAD:
   the commit, the files; a gated repository's info without a token);
 - modelfs against the same faithful servers: a folder of s3:// keys (a
   mount; modelfs-ls of the whole bucket, two pages), a mount of
   hf://ORG/REPO@HEAD and modelfs-ls of hf://ORG/REPO@HEAD/FILE read as
   the clients above and the local files do.

usage: test_real_clients.py BUILD_DIR GEN_DIR
"""
import hashlib
import json
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
try:
    import s3server  # noqa: E402 (needs Debian's python3-botocore)
except ImportError as e:
    s3server = None
    S3_MISSING = str(e)

REGION = "eu-test-1"
KEY_ID, SECRET = "AKIDREALCLIENTS", "realclientsSECRET/0123456789abcdefghij"
TOKEN = "hf_realclientsTESTtoken0123456789"
AWS = "/usr/bin/aws"   # Debian's awscli (another `aws` may come first in PATH)


def run(args, env, timeout=60, text=True):
    r = subprocess.run(args, capture_output=True, env=env, timeout=timeout)
    out = r.stdout.decode("utf-8", "surrogateescape") if text else r.stdout
    return r.returncode, out, r.stderr.decode("utf-8", "replace")


def md5_of(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def keys_of(root):
    """{key: (size, md5)} of every file below `root`."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = (os.path.getsize(p), md5_of(p))
    return out


def level(keys, prefix):
    """What a listing with delimiter '/' shows below `prefix`: the folders
    (PRE) and {name: size} of the keys right there."""
    pres, files = set(), {}
    for k, (size, _) in keys.items():
        if not k.startswith(prefix):
            continue
        rest = k[len(prefix):]
        if "/" in rest:
            pres.add(rest.split("/", 1)[0] + "/")
        else:
            files[rest] = size
    return pres, files


def make_bucket(root, gen):
    """A bucket's folder: models at the top and below folders, a key with
    a space, '&' and '+', 9 MB of random bytes, 1,005 small keys."""
    b = os.path.join(root, "models")
    os.makedirs(os.path.join(b, "zoo", "sub deep", "R&D+1"))
    os.makedirs(os.path.join(b, "many"))
    shutil.copy(os.path.join(gen, "safetensors", "gen_many.safetensors"),
                os.path.join(b, "model.safetensors"))
    shutil.copy(os.path.join(gen, "gguf", "gen_all.gguf"), os.path.join(b, "zoo", "a.gguf"))
    shutil.copy(os.path.join(gen, "safetensors", "gen_names.safetensors"),
                os.path.join(b, "zoo", "sub deep", "R&D+1", "b.safetensors"))
    with open(os.path.join(b, "zoo", "big.bin"), "wb") as f:
        f.write(os.urandom(9 << 20))
    with open(os.path.join(b, "top.txt"), "w") as f:
        f.write("top\n")
    for i in range(1005):
        with open(os.path.join(b, "many", "%04d.txt" % i), "w") as f:
            f.write("%d\n" % i)
    return b


# ---- awscli ------------------------------------------------------------

def parse_s3_ls(out):
    """`aws s3 ls` lines: (PRE folders, {name: size})."""
    pres, files = set(), {}
    for line in out.splitlines():
        if line.strip().startswith("PRE "):
            pres.add(line.strip()[4:])
        elif line.strip():
            _, _, size, name = line.split(None, 3)
            files[name] = int(size)
    return pres, files


def check_awscli(c, srv, keys, tmp):
    if not os.access(AWS, os.X_OK):
        c.skip("%s is not installed (scripts/install-deps.sh installs awscli)" % AWS)
        return
    env = aws_env(tmp)
    aws = [AWS, "--endpoint-url", srv.url, "--region", REGION]
    special = "zoo/sub deep/R&D+1/b.safetensors"
    dst = os.path.join(tmp, "aws-cp")
    calls = [["s3", "ls", "s3://models/"], ["s3", "ls", "--recursive", "s3://models/"],
             ["s3api", "list-objects-v2", "--bucket", "models", "--prefix", "zoo/",
              "--delimiter", "/"],
             ["s3api", "head-object", "--bucket", "models", "--key", special],
             # 9 MB: ranged GETs of 8 MB parts; a key with ' ', '&', '+'.
             ["s3", "cp", "--only-show-errors", "--recursive", "s3://models/zoo/", dst]]
    # All in one Python (aws_many.py: awscli's own main, a new driver a
    # command, as /usr/bin/aws runs it): five `aws` were a Python and a
    # botocore import each, 0.7-1 CPU-s apiece.
    ls_top, ls_all, lov2, head, cp = run_aws(aws[1:], calls, env, tmp)

    def err(r):
        return r[2].strip()[-300:]
    c.equal((ls_top[0], parse_s3_ls(ls_top[1])), (0, level(keys, "")),
            "aws s3 ls s3://models/: the folders and keys at the top (%s)" % err(ls_top))
    c.equal((ls_all[0], parse_s3_ls(ls_all[1])[1]), (0, {k: s for k, (s, _) in keys.items()}),
            "aws s3 ls --recursive: every key and size, over two pages (%s)" % err(ls_all))
    try:
        doc = json.loads(lov2[1])
    except ValueError:
        doc = {}
    c.equal(sorted(p["Prefix"] for p in doc.get("CommonPrefixes", [])), ["zoo/sub deep/"],
            "s3api list-objects-v2 --delimiter /: CommonPrefixes, url-encoded and decoded (%s)"
            % err(lov2))
    c.equal({o["Key"]: (o["Size"], o["ETag"]) for o in doc.get("Contents", [])},
            {k: (s, '"%s"' % m) for k, (s, m) in keys.items()
             if k.startswith("zoo/") and "/" not in k[4:]},
            "s3api list-objects-v2: sizes, and ETags the objects' MD5s")
    try:
        h = json.loads(head[1])
    except ValueError:
        h = {}
    c.equal((head[0], h.get("ETag"), h.get("ContentLength")),
            (0, '"%s"' % keys[special][1], keys[special][0]),
            "s3api head-object %s: ETag the MD5, the size (%s)" % (special, err(head)))
    c.equal((cp[0], keys_of(dst) if os.path.isdir(dst) else {}),
            (0, {k[4:]: v for k, v in keys.items() if k.startswith("zoo/")}),
            "aws s3 cp --recursive s3://models/zoo/: every object's bytes (%s)" % err(cp))


def run_aws(opts, calls, env, tmp):
    """(exit code, stdout, stderr) of `aws OPTS CALL` for each call, run by
    aws_many.py in one Debian python3 (the interpreter of /usr/bin/aws)."""
    out = os.path.join(tmp, "aws-many.json")
    r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "aws_many.py"), out,
                        json.dumps([opts + a for a in calls])],
                       capture_output=True, env=env, timeout=120)
    try:
        with open(out) as f:
            return [tuple(x) for x in json.load(f)]
    except (OSError, ValueError):
        why = "aws_many.py exited %d: %s" % (r.returncode,
                                            r.stderr.decode("utf-8", "replace")[-300:])
        return [(r.returncode or 1, "", why)] * len(calls)


def aws_env(tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=tmp, AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET,
               AWS_DEFAULT_REGION=REGION, AWS_CONFIG_FILE=os.path.join(tmp, "no-aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "no-aws-credentials"),
               AWS_PAGER="", AWS_EC2_METADATA_DISABLED="true")
    return env


# ---- rclone ------------------------------------------------------------

def rclone_env(srv, tmp, list_version=None):
    conf = os.path.join(tmp, "rclone.conf")
    open(conf, "a").close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RCLONE_"))}
    env.update(HOME=tmp, RCLONE_CONFIG=conf, RCLONE_CONFIG_S3T_TYPE="s3",
               RCLONE_CONFIG_S3T_PROVIDER="Other", RCLONE_CONFIG_S3T_ACCESS_KEY_ID=KEY_ID,
               RCLONE_CONFIG_S3T_SECRET_ACCESS_KEY=SECRET, RCLONE_CONFIG_S3T_ENDPOINT=srv.url,
               RCLONE_CONFIG_S3T_REGION=REGION)
    if list_version:
        env["RCLONE_CONFIG_S3T_LIST_VERSION"] = str(list_version)
    return env


def check_rclone(c, srv, keys, bucket, tmp):
    rclone = shutil.which("rclone")
    if rclone is None:
        c.skip("rclone is not installed (scripts/install-deps.sh installs it)")
        return
    env = rclone_env(srv, tmp)
    for prefix in ("", "zoo/"):
        code, out, err = run([rclone, "lsf", "s3t:models/" + prefix], env)
        pres, files = level(keys, prefix)
        c.equal((code, sorted(out.splitlines())), (0, sorted(pres | set(files))),
                "rclone lsf s3t:models/%s: the folders and keys at that level (%s)"
                % (prefix, err.strip()[-300:]))
    for version in (1, 2):
        code, out, err = run([rclone, "lsjson", "-R", "--files-only", "--hash", "s3t:models"],
                             rclone_env(srv, tmp, version))
        try:
            got = {e["Path"]: (e["Size"], e.get("Hashes", {}).get("md5")) for e in json.loads(out)}
        except (ValueError, KeyError, TypeError):
            got = out[:300]
        c.equal((code, got), (0, keys),
                "rclone lsjson -R --hash, ListObjects v%d: every key, size and MD5 (%s)"
                % (version, err.strip()[-300:]))
    code, out, err = run([rclone, "md5sum", "s3t:models/zoo"], env)
    got = dict(reversed(line.split("  ", 1)) for line in out.splitlines() if "  " in line)
    c.equal((code, got), (0, {k[4:]: m for k, (_, m) in keys.items() if k.startswith("zoo/")}),
            "rclone md5sum s3t:models/zoo (%s)" % err.strip()[-300:])
    key = "zoo/sub deep/R&D+1/b.safetensors"
    code, out, err = run([rclone, "cat", "s3t:models/" + key], env, text=False)
    c.equal((code, hashlib.md5(out).hexdigest()), (0, keys[key][1]),
            "rclone cat s3t:models/%s: its bytes (%s)" % (key, err.strip()[-300:]))
    dst = os.path.join(tmp, "rclone-copy")
    code, _, err = run([rclone, "copy", "s3t:models/zoo", dst], env)
    c.equal((code, keys_of(dst)), (0, {k[4:]: v for k, v in keys.items() if k.startswith("zoo/")}),
            "rclone copy s3t:models/zoo: every object's bytes (%s)" % err.strip()[-300:])
    code, _, err = run([rclone, "check", os.path.join(bucket, "zoo"), "s3t:models/zoo"], env)
    c.check(code == 0 and "0 differences found" in err and "could not be checked" not in err,
            "rclone check of the folder against the bucket, MD5s from the ETags: %d %s"
            % (code, err.strip()[-400:]))


# ---- @huggingface/hub ----------------------------------------------------

def git_blob_oid(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(data):
    return ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n"
            % (hashlib.sha256(data).hexdigest(), len(data))).encode()


def safetensors_header(path):
    data = read(path)
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + n])


def hub_files(gen, tmp):
    """The repository org/zoo: {path: local file}, each file a copy at
    that path (a model's own name is in its model.json)."""
    sharded = os.path.join(gen, "safetensors_sharded", "sharded")
    src = {"model.safetensors": os.path.join(gen, "safetensors", "gen_many.safetensors"),
           "gguf/a.gguf": os.path.join(gen, "gguf", "gen_all.gguf"),
           "deep/er/names.safetensors": os.path.join(gen, "safetensors", "gen_names.safetensors")}
    for f in sorted(os.listdir(sharded)):
        src["sharded/" + f] = os.path.join(sharded, f)
    root = os.path.join(tmp, "hub-zoo")
    files = {}
    for p, f in src.items():
        files[p] = os.path.join(root, p)
        os.makedirs(os.path.dirname(files[p]), exist_ok=True)
        shutil.copy(f, files[p])
    files["config.json"] = os.path.join(root, "config.json")
    with open(files["config.json"], "w") as f:
        json.dump({"model_type": "test", "architectures": ["Test"]}, f)
    return files


def tree_truth(files, below="", recursive=True):
    """The Hub's tree of `files` below folder `below`: {path: entry}."""
    out = {}
    for p, local in files.items():
        if below and not p.startswith(below + "/"):
            continue
        rest = p[len(below) + 1:] if below else p
        parts = rest.split("/")
        for i in range(1, len(parts) if recursive else min(len(parts), 2)):
            d = "/".join(([below] if below else []) + parts[:i])
            out[d] = {"type": "directory", "path": d}
        if recursive or len(parts) == 1:
            data = read(local)
            lfs = not p.endswith(".json")
            out[p] = {"type": "file", "path": p, "size": len(data),
                      "oid": git_blob_oid(lfs_pointer(data) if lfs else data),
                      "lfs": {"oid": hashlib.sha256(data).hexdigest(), "size": len(data)}
                      if lfs else None}
    return out


def tree_got(entries):
    out = {}
    for e in entries:
        if e["type"] == "directory":
            out[e["path"]] = {"type": "directory", "path": e["path"]}
        else:
            out[e["path"]] = e
    return out


def check_hfhub(c, build, files, hub):
    fetch = os.path.join(HERE, "..", "..", "scripts", "fetch_hfhub.sh")
    r = subprocess.run([fetch, os.path.join(build, "npm-hfhub")], capture_output=True, text=True,
                       timeout=400)
    if r.returncode != 0:
        c.skip("npm: @huggingface/hub not available (%s): its part is not run"
               % r.stderr.strip()[-200:])
        return
    node = shutil.which("node")
    if node is None:
        c.skip("node is not installed: @huggingface/hub's part is not run")
        return
    pkg = r.stdout.strip()
    commit = hub.repos[("models", "org/zoo")].refs["main"]
    gated = {"model.safetensors": files["model.safetensors"]}
    gated_commit = hub.add_repo("org/gated", gated, gated=True)
    ops = [
        {"op": "listFiles", "repo": "org/zoo", "recursive": True},
        {"op": "listFiles", "repo": "org/zoo"},
        {"op": "listFiles", "repo": "org/zoo", "path": "sharded"},
        {"op": "listFiles", "repo": "org/zoo", "recursive": True, "revision": "HEAD"},
        {"op": "listFiles", "repo": "org/zoo", "path": "nowhere"},
        {"op": "downloadFile", "repo": "org/zoo", "path": "gguf/none.gguf"},
        {"op": "fileExists", "repo": "org/zoo", "path": "gguf/a.gguf"},
        {"op": "fileExists", "repo": "org/zoo", "path": "gguf/none.gguf"},
        {"op": "parseSafetensorsMetadata", "repo": "org/zoo"},
        {"op": "parseSafetensorsMetadata", "repo": "org/zoo",
         "path": "sharded/model.safetensors.index.json"},
        {"op": "modelInfo", "repo": "org/zoo"},
        {"op": "modelInfo", "repo": "org/gated"},
        {"op": "downloadFile", "repo": "org/gated", "path": "model.safetensors"},
        {"op": "downloadFile", "repo": "org/zoo", "path": "model.safetensors", "raw": True},
    ]
    order = sorted(files)
    for i, p in enumerate(order):
        ops.append({"op": "downloadFile", "repo": "org/zoo", "path": p, "from": 8, "to": 8 + 40,
                    "revision": ["main", "HEAD", commit][i % 3]})
    job = {"hubUrl": hub.url, "ops": ops}
    code, out, err = run([node, os.path.join(HERE, "hfhub_client.mjs"), pkg, json.dumps(job)],
                         dict(os.environ), timeout=120)
    try:
        res = json.loads(out)
    except ValueError:
        c.check(False, "@huggingface/hub: the driver's output: %d %s %s" % (code, out[:300],
                                                                          err[-600:]))
        return
    res = iter(res)

    def ok(what):
        r = next(res)
        if "error" in r:
            c.check(False, "@huggingface/hub %s: %s" % (what, r["error"]))
            return None
        return r["ok"]

    for what, want in (("listFiles recursive", tree_truth(files)),
                       ("listFiles (one level)", tree_truth(files, recursive=False)),
                       ("listFiles path=sharded", tree_truth(files, "sharded", recursive=False)),
                       ("listFiles revision=HEAD", tree_truth(files))):
        got = ok(what)
        if got is not None:
            c.equal(tree_got(got), want, "@huggingface/hub %s: paths, sizes, oids, LFS" % what)
    r = next(res)
    c.check("error" in r and "404" in r["error"],
            "@huggingface/hub listFiles of a folder that is not there: 404: %s" % r)
    c.equal(next(res), {"ok": None},
            "@huggingface/hub downloadFile of no file: null (404 EntryNotFound)")
    c.equal(ok("fileExists gguf/a.gguf"), True, "@huggingface/hub fileExists of a file")
    c.equal(ok("fileExists gguf/none.gguf"), False, "@huggingface/hub fileExists of no file")
    got = ok("parseSafetensorsMetadata")
    if got is not None:
        c.equal((got["sharded"], got["header"]),
                (False, safetensors_header(files["model.safetensors"])),
                "@huggingface/hub parseSafetensorsMetadata: model.safetensors' header")
    got = ok("parseSafetensorsMetadata sharded")
    if got is not None:
        shards = {p.split("/", 1)[1]: safetensors_header(f) for p, f in files.items()
                  if p.startswith("sharded/") and p.endswith("-of-00002.safetensors")}
        index = json.loads(read(files["sharded/model.safetensors.index.json"]))
        c.equal((got["sharded"], got["headers"], got["index"]["weight_map"]),
                (True, shards, index["weight_map"]),
                "@huggingface/hub parseSafetensorsMetadata: the index and every shard's header")
    got = ok("modelInfo")
    if got is not None:
        c.equal((got["name"], got["sha"], sorted(got["filePaths"] or []), got["updatedAt"] is None),
                ("org/zoo", commit, order, False),
                "@huggingface/hub modelInfo (revision HEAD): name, commit, files, date")
    got = ok("modelInfo of a gated repository, no token")
    if got is not None:
        c.equal((got["name"], got["sha"], got["gated"] not in (False, None)),
                ("org/gated", gated_commit, True),
                "@huggingface/hub modelInfo of a gated repository: public, says gated")
    r = next(res)
    c.check("error" in r and "401" in r["error"],
            "@huggingface/hub downloadFile of a gated file, no token: refused: %s" % r)
    got = ok("downloadFile raw")
    if got is not None:
        ptr = lfs_pointer(read(files["model.safetensors"]))
        c.equal((got["size"], got["sha256"]), (len(ptr), hashlib.sha256(ptr).hexdigest()),
                "@huggingface/hub downloadFile raw: the LFS pointer")
    for p in order:
        got = ok("downloadFile " + p)
        if got is not None:
            data = read(files[p])
            c.equal((got["size"], got["sha256"], got["slice"]),
                    (len(data), hashlib.sha256(data).hexdigest(), data[8:48].hex()),
                    "@huggingface/hub downloadFile %s: size, bytes, a range" % p)
    print("@huggingface/hub: %d operations" % len(ops), flush=True)


# ---- modelfs over the same servers ------------------------------------

def check_modelfs(c, build, files, srv, hub, keys, tmp):
    """modelfs reads the faithful listings as the clients above do."""
    ls = os.path.join(build, "modelfs-ls")
    modelfs = os.path.join(build, "modelfs")
    logdir = tempfile.mkdtemp(prefix="modelfs-san-", dir=tmp)
    env = mfstest.sanitizer_env(logdir)
    for k in list(env):
        if k.startswith(("AWS_", "HF_")):
            del env[k]
    env.update(HOME=tmp, XDG_CACHE_HOME=os.path.join(tmp, "cache"), HF_HOME=os.path.join(tmp, "hf"),
               HF_ENDPOINT=hub.url)
    local = files["model.safetensors"]
    want = run([ls, local], env)
    c.equal(run([ls, "hf://org/zoo@HEAD/model.safetensors"], env), want,
            "modelfs-ls hf://org/zoo@HEAD/model.safetensors: the local file's listing")
    if srv is not None:
        env.update(AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION=REGION,
                   AWS_ENDPOINT_URL=srv.url, AWS_CONFIG_FILE=os.path.join(tmp, "none"),
                   AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "none"))
        # The whole bucket: its models come after the 1,000 keys of many/,
        # on the second page (an opaque token sent back encoded).
        code, out, err = run([ls, "s3://models/", "--"], env)
        got = sorted(line.split(None, 2)[2][:-len("/model.json")] for line in out.splitlines()
                     if line.endswith("/model.json"))
        c.equal((code, got), (0, sorted(k for k in keys if k.endswith((".safetensors", ".gguf")))),
                "modelfs-ls s3://models/: every model key, over two pages (%s)" % err.strip()[-300:])
    if not mfstest.can_mount():
        c.skip("no /dev/fuse: the mounts")
        return
    mounts = [("hf://org/zoo@HEAD", {p: f for p, f in files.items()
                                     if p.endswith((".safetensors", ".gguf")) and
                                     "-of-" not in p})]
    if srv is not None:
        mounts.append(("s3://models/zoo/", {k[4:]: os.path.join(srv.buckets["models"], k)
                                            for k in keys if k.startswith("zoo/") and
                                            k.endswith((".safetensors", ".gguf"))}))
    for url, models in mounts:
        try:
            with mfstest.mounted(modelfs, url, env) as mnt:
                for p, path in sorted(models.items()):
                    with mfstest.mounted(modelfs, path, env) as lmnt:
                        got = mfstest.walk_tree(os.path.join(mnt, p))
                        c.equal(got, mfstest.without_view(mfstest.walk_tree(lmnt), got),
                                "%s: %s as the local file" % (url, p))
                        c.equal(mfstest.sha256_file(os.path.join(mnt, "files", p)),
                                mfstest.sha256_file(path), "%s: files/%s" % (url, p))
                        c.equal(mfstest.read_or_errno(os.path.join(mnt, p, "SHA256SUMS")),
                                mfstest.read_or_errno(os.path.join(lmnt, "SHA256SUMS")),
                                "%s: %s/SHA256SUMS" % (url, p))
        except RuntimeError as e:
            c.check(False, "%s: mount: %s" % (url, e))
    mfstest.check_sanitizer_reports(c, logdir)


def main(argv):
    build, gen = argv[1], argv[2]
    c = mfstest.Checker("real clients")
    t0 = time.time()
    tmp = mfstest.scratch("modelfs-clients-")
    srv = None
    hub = hubserver.Hub(TOKEN, page=2)
    try:
        if s3server is None:
            c.skip("%s (scripts/install-deps.sh installs python3-botocore)" % S3_MISSING)
        else:
            bucket = make_bucket(tmp, gen)
            keys = keys_of(bucket)
            srv = s3server.start({"models": bucket}, {KEY_ID: (SECRET, None)}, region=REGION)
            t = time.time()
            check_awscli(c, srv, keys, tmp)
            print("awscli: %.1f s" % (time.time() - t), flush=True)
            t = time.time()
            check_rclone(c, srv, keys, bucket, tmp)
            print("rclone: %.1f s" % (time.time() - t), flush=True)
        files = hub_files(gen, tmp)
        hub.add_repo("org/zoo", files)
        t = time.time()
        check_hfhub(c, build, files, hub)
        print("@huggingface/hub: %.1f s" % (time.time() - t), flush=True)
        check_modelfs(c, build, files, srv, hub, keys if srv else {}, tmp)
    finally:
        hub.stop()
        if srv is not None:
            srv.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    print("real clients: %.1f s" % (time.time() - t0))
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
