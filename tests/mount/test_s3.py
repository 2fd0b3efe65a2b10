#!/usr/bin/python3
"""s3:// models, from S3 servers on 127.0.0.1 started here:

 - s3server.py (ours), which checks every request's SigV4 signature with
   botocore's signer, refuses wrong keys and expired tokens, answers
   If-Match with 412 and pages listings at 1,000 keys:
   - one model per format mounted from s3://BUCKET/KEY for real: every
     file's bytes and every xattr equal to the local file's mount; every
     request signed, every GET after the first of an object with If-Match;
   - a prefix of several models (one below a sub-folder, among 1,100
     filler keys that are no model: two pages) mounts as the same tree as
     the local folder; s3://BUCKET (the whole bucket) too;
   - credentials from the environment, from AWS_PROFILE with the
     credentials and config files (region and endpoint_url from the
     profile), with a session token;
   - refused at mount, exit 3 and one line naming the URL and the reason:
     a wrong secret, an expired token, no credentials for a private
     bucket, a missing key (NoSuchKey) and bucket (NoSuchBucket), nothing
     listening; no secret and no token in any message, log line,
     models.json, model.json or xattr;
   - an object replaced after the mount: its reads give EIO;
   - -o no_sign_request (modelfs-ls --no-sign-request) reads a public
     bucket with no credentials, and sends nothing signed;
   - modelfs-ls on s3:// URLs: listing, --check with the local exit codes;
   - an ONNX model with external data (when the shared fixtures are
     there): its weights fetched from the key beside it, every file's
     sha256 as the local model's;
 - s3rver 3.7.1 (npm; skipped, visibly, when the registry cannot be
   reached): the API surface of a second implementation, its objects
   uploaded with botocore: a model and a prefix listed and read the same.

usage: test_s3.py BUILD_DIR DIR...
"""
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mfstest  # noqa: E402
try:
    import s3server  # noqa: E402 (needs Debian's python3-botocore)
except ImportError as e:
    print("SKIP: %s (scripts/install-deps.sh installs python3-botocore)" % e)
    sys.exit(mfstest.SKIP)

REGION = "eu-test-1"
KEY_ID, SECRET = "AKIDMODELFSTEST", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzSECRETKEY"
TOKEN_ID, TOKEN_SECRET, TOKEN = "ASIAMODELFSTEST", "tokSECRETsecret/42", "FwoGZXIvYXdzSESSIONTOKENxyz"
OLD_ID, OLD_SECRET, OLD_TOKEN = "ASIAOLD", "oldSECRETsecret", "FwoGZXIvYXdzEXPIREDTOKENabc"
SECRETS = (SECRET, TOKEN_SECRET, TOKEN, OLD_SECRET, OLD_TOKEN, "WRONGSECRETwrong")


def run(args, env, timeout=120):
    r = subprocess.run(args, capture_output=True, env=env, timeout=timeout)
    return r.returncode, r.stdout.decode("utf-8", "surrogateescape"), \
        r.stderr.decode("utf-8", "replace")


def xattrs(path):
    try:
        return {k: os.getxattr(path, k) for k in sorted(os.listxattr(path))}
    except OSError as e:
        return "errno %d" % e.errno


def no_secret(c, what, text):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for s in SECRETS:
        c.check(s not in text, "%s: a secret or token (%s...) appears" % (what, s[:6]))


def tree_of(ls, args, env):
    """modelfs-ls ARGS --: {path: size} without models.json (it names
    each model's source), exit code, stderr."""
    code, out, err = run([ls] + args + ["--"], env)
    tree = {}
    for line in out.splitlines():
        kind, size, path = line.split(None, 2)
        if path != "models.json":
            tree[path.rstrip("/")] = size
    return tree, code, err


def log_of(srv, before, *paths):
    """The server's log since `before`, of requests for one of `paths`
    (/BUCKET/KEY or /BUCKET, the query aside) only: a daemon of an earlier
    check may still be fetching ahead for a moment after its unmount."""
    return [r for r in srv.log[before:]
            if urllib.parse.unquote(r[1].split("?", 1)[0]) in paths]


def check_mounted(c, build, url, path, srv, env):
    """The URL mounted for real against the file mounted for real: tree,
    bytes, xattrs; the requests it made signed and pinned."""
    name = os.path.basename(path)
    modelfs = os.path.join(build, "modelfs")
    # A cache of its own: blocks the listings kept would be read from disk
    # (then no GET, and no If-Match to look at).
    env = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="modelfs-cache-",
                                                    dir=env["XDG_CACHE_HOME"]))
    before = len(srv.log)
    try:
        with mfstest.mounted(modelfs, url, env) as rmnt, mfstest.mounted(modelfs, path, env) as lmnt:
            tree_l = mfstest.walk_tree(lmnt)
            c.equal(mfstest.walk_tree(rmnt), tree_l, "%s: tree, s3 vs local mount" % name)
            for p, size in sorted(tree_l.items()):
                rp, lp = os.path.join(rmnt, p), os.path.join(lmnt, p)
                got = xattrs(rp)
                c.equal(got, xattrs(lp), "%s: %s xattrs" % (name, p))
                no_secret(c, "%s: %s xattrs" % (name, p), repr(got))
                if size is not None:
                    c.equal(mfstest.read_or_errno(rp), mfstest.read_or_errno(lp),
                            "%s: %s bytes" % (name, p))
    except RuntimeError as e:
        c.check(False, "%s: mount: %s" % (name, e))
        return
    log = log_of(srv, before, "/" + url[len("s3://"):])
    c.check(log and all(signed for _, _, signed, _, _ in log),
            "%s: every request signed: %s" % (name, log[:3]))
    c.check(all(im for method, _, _, im, _ in log[1:] if method == "GET"),
            "%s: every GET after the first carries If-Match" % name)
    shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)


def refused(c, build, url, wants, env, extra=()):
    """modelfs URL MNT exits 3 with one line naming the URL and each of
    `wants`, and no secret."""
    mnt = tempfile.mkdtemp(prefix="modelfs-mnt-")
    try:
        code, out, err = run([os.path.join(build, "modelfs"), *extra, url, mnt], env)
        c.equal(code, 3, "%s: exit code (%s)" % (url, err.strip()))
        lines = err.strip().splitlines()
        c.check(len(lines) == 1 and url in lines[0] and all(w in lines[0] for w in wants),
                "%s: one line naming it and %r: %r" % (url, wants, err))
        no_secret(c, "%s: refusal message" % url, out + err)
    finally:
        if os.path.ismount(mnt):
            mfstest.unmount(mnt)
        os.rmdir(mnt)


def pick_models(c, ls, dirs, env):
    """The first model of each format in `dirs` modelfs-ls loads:
    [(path, format)]. One of a pair (OpenVINO's X.bin and X.xml, named
    in model.json's "xml" or "bin") is uploaded with the other beside it."""
    seen, out = set(), []
    for d in dirs:
        if not os.path.isdir(d):
            c.skip("%s is absent: its models are not checked" % d)
            continue
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            if (not os.path.isfile(p) or f.endswith((".json", ".links")) or f.startswith(".")):
                continue
            code, out_json, _ = run([ls, p, "model.json"], env)
            fmt = json.loads(out_json)["format"] if code == 0 else None
            if fmt and fmt not in seen:
                seen.add(fmt)
                out.append((p, fmt))
    return out


def pair_of(p):
    """The other file of an OpenVINO pair beside p (X.xml for X.bin and
    the reverse), or none."""
    stem, ext = os.path.splitext(p)
    other = stem + {".bin": ".xml", ".xml": ".bin"}.get(ext, "")
    return [other] if ext in (".bin", ".xml") and os.path.isfile(other) else []


def main(argv):
    build, dirs = argv[1], argv[2:]
    c = mfstest.Checker("s3 tests")
    # Its daemons and modelfs-ls ask this test's own server, one request at
    # a time, with nothing timed: all on one CPU (see there).
    mfstest.stay_on_one_cpu()
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    base_env = mfstest.sanitizer_env(logdir)
    for k in list(base_env):
        if k.startswith("AWS_"):
            del base_env[k]   # the runner's own AWS settings never reach the tests
    root = mfstest.scratch("modelfs-s3-")
    home = os.path.join(root, "home")
    os.makedirs(os.path.join(home, ".aws"))
    base_env["HOME"] = home
    base_env["XDG_CACHE_HOME"] = os.path.join(root, "cache")
    os.mkdir(base_env["XDG_CACHE_HOME"])
    ls = os.path.join(build, "modelfs-ls")
    t0 = time.time()

    # The buckets: "models" (private) holds one model per format, a zoo/
    # prefix of a few models among 1,100 filler keys, and a model that
    # changes; "open" (public) one model; "versions" (versioned) one model.
    models = pick_models(c, ls, dirs, base_env)
    bucket = os.path.join(root, "models")
    public = os.path.join(root, "open")
    os.makedirs(os.path.join(bucket, "zoo", "sub deep"))
    os.makedirs(os.path.join(bucket, "zoo", "filler"))
    os.makedirs(public)
    keys = []
    for i, (p, fmt) in enumerate(models):
        key = "one/%d-%s/%s" % (i, fmt, os.path.basename(p))
        os.makedirs(os.path.dirname(os.path.join(bucket, key)), exist_ok=True)
        shutil.copy(p, os.path.join(bucket, key))
        keys.append((key, p))
        for other in pair_of(p):
            shutil.copy(other, os.path.dirname(os.path.join(bucket, key)))
    for i, (p, fmt) in enumerate(models[:3]):
        # One below a folder whose name needs encoding (a space, '&', '+').
        sub = "sub deep/R&D+%d" % i if i == 0 else ""
        os.makedirs(os.path.join(bucket, "zoo", sub), exist_ok=True)
        shutil.copy(p, os.path.join(bucket, "zoo", sub, os.path.basename(p)))
    for i in range(1100):
        open(os.path.join(bucket, "zoo", "filler", "%04d.txt" % i), "wb").close()
    if models:
        shutil.copy(models[0][0], public)
    mfstest.write_safetensors(os.path.join(bucket, "changing.safetensors"),
                      {"near": bytes(range(256)) * 16, "far": os.urandom(2 << 20)})
    versions = os.path.join(root, "versions")
    os.makedirs(versions)
    mfstest.write_safetensors(os.path.join(versions, "v.safetensors"),
                      {"near": bytes(range(256)) * 16, "far": os.urandom(2 << 20)})
    # "clash": a key "m/model" and, as S3 allows, keys below "m/model/".
    clash = os.path.join(root, "clash")
    if models:
        name = os.path.basename(models[0][0])
        os.makedirs(os.path.join(clash, "m", name))
        shutil.copy(models[0][0], os.path.join(clash, "m", name, name))
    aliases = {("clash", "m/" + name): models[0][0]} if models else {}
    srv = s3server.start({"models": bucket, "open": public, "versions": versions, "clash": clash},
                         {KEY_ID: (SECRET, None), TOKEN_ID: (TOKEN_SECRET, TOKEN),
                          OLD_ID: (OLD_SECRET, OLD_TOKEN)},
                         public=["open"], expired=[OLD_TOKEN], region=REGION,
                         versioned=["versions"], aliases=aliases)
    env = dict(base_env, AWS_ENDPOINT_URL=srv.url, AWS_REGION=REGION,
               AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET)
    try:
        check_listing(c, ls, bucket, srv, env)
        if models:
            check_clash(c, ls, os.path.basename(models[0][0]), env)
        check_credentials(c, ls, keys, srv, env, base_env, home)
        check_external(c, ls, dirs, bucket, env)
        bad = srv.bad_signatures
        check_refusals(c, build, keys, srv, env, base_env)
        wrong_secret = srv.bad_signatures - bad
        c.check(wrong_secret > 0, "the wrong secret's requests were refused as such")
        if mfstest.can_mount():
            for key, p in keys:
                check_mounted(c, build, "s3://models/" + key, p, srv, env)
            present = len([d for d in dirs if os.path.isdir(d)])
            c.check(len(keys) >= min(5, present), "mounted one model of each of %s"
                    % [k for k, _ in keys])
            check_no_leak(c, build, srv, env)
            check_changed(c, build, bucket, srv, env)
            check_versioned(c, build, versions, srv, env)
            check_public(c, build, ls, models, srv, base_env)
        else:
            c.skip("no /dev/fuse: the mount half of this test")
        c.equal(srv.bad_signatures, wrong_secret, "requests whose signature the server "
                "refused: only the wrong secret's")
    finally:
        srv.stop()
    print("s3server part: %.1f s" % (time.time() - t0), flush=True)
    check_s3rver(c, build, ls, models[:2], root, base_env)
    mfstest.check_sanitizer_reports(c, logdir)
    shutil.rmtree(root, ignore_errors=True)
    return c.finish()


def check_listing(c, ls, bucket, srv, env):
    """A prefix of several models among filler keys: two pages, the same
    tree as the local folder; the whole bucket too; --check per model."""
    pages = srv.list_pages
    local, lcode, lerr = tree_of(ls, [os.path.join(bucket, "zoo")], env)
    remote, rcode, rerr = tree_of(ls, ["s3://models/zoo/"], env)
    c.equal((rcode, rerr), (0, ""), "modelfs-ls s3://models/zoo/ --")
    c.check(lcode == 0 and local, "the local folder lists: %s" % lerr)
    c.equal(remote, local, "the tree of s3://models/zoo/, s3 vs local folder")
    c.check(any(p.startswith("sub deep/R&D+0/") for p in remote),
            "a model below an encoded folder name: %s" % sorted(remote)[:5])
    c.check(srv.list_pages - pages >= 2, "a listing of 1,100 keys took %d pages"
            % (srv.list_pages - pages))
    whole, code, err = tree_of(ls, ["s3://models"], env)
    c.equal(code, 0, "modelfs-ls s3://models -- (%s)" % err)
    view = "files/"
    c.check(set("zoo/" + p for p in remote if p != "files" and not p.startswith(view)) <= set(whole),
            "s3://models holds zoo/'s models: %s" % sorted(whole)[:5])
    c.check(set(view + "zoo/" + p[len(view):] for p in remote if p.startswith(view)) <= set(whole),
            "s3://models: its files view holds zoo/'s files")
    # Two folder URLs: each in a folder of its last part.
    both, code, err = tree_of(ls, ["s3://models/zoo/", "s3://open/"], env)
    c.check(code == 0 and any(p.startswith("zoo/") for p in both) and
            any(p.startswith("open/") for p in both),
            "two folder URLs side by side: %s %s" % (sorted(both)[:4], err))


def check_clash(c, ls, name, env):
    """S3 keys are names, not paths: "m/NAME" is a model and "m/NAME/NAME"
    another, which NAME's folder would hide. The first mounts; the second
    is skipped with a line naming it, not hidden without a word."""
    tree, code, err = tree_of(ls, ["s3://clash/"], env)
    c.equal(code, 0, "a key and keys below it: modelfs-ls s3://clash/ -- (%s)" % err)
    c.check("m/%s/model.json" % name in tree, "a key and keys below it: the key's model: %s"
            % sorted(tree)[:4])
    c.check(not any(p.startswith("m/%s/%s" % (name, name)) for p in tree),
            "a key and keys below it: nothing of the other model inside the first's folder")
    c.check("s3://clash/m/%s/%s" % (name, name) in err and "skipped" in err,
            "a key and keys below it: the other model is skipped with a line naming it: %r"
            % err)


def check_external(c, ls, dirs, bucket, env):
    """ONNX external data: the file beside the model's key, opened the
    same way (signed, its key encoded), gives the local model's bytes."""
    ext = [d for d in dirs if d.rstrip("/").endswith("onnx/external") and os.path.isdir(d)]
    if not ext:
        c.skip("no onnx/external fixture: external data over s3:// is not checked")
        return
    dst = os.path.join(bucket, "ext data")
    shutil.copytree(ext[0], dst)
    model = os.path.join(ext[0], "model.onnx")
    url = "s3://models/ext data/model.onnx"
    _, want, _ = run([ls, model], env)
    paths = [l.split(None, 2)[2] for l in want.splitlines() if l.startswith("f ")]
    w, wcode, _ = mfstest.ls_sums(ls, model, paths, env)
    g, gcode, err = mfstest.ls_sums(ls, url, paths, env)
    c.check(wcode == 0 and w, "the local external-data model reads (%d)" % wcode)
    c.equal((gcode, g), (wcode, w), "%s: sha256 of every file, s3 vs local (%s)" % (url, err))
    shutil.rmtree(dst)


def check_credentials(c, ls, keys, srv, env, base_env, home):
    """The environment's keys (above), a profile from the files, a session
    token; --check on each model equals the local exit code."""
    urls = ["s3://models/" + k for k, _ in keys]
    _, want, _ = run([ls, "--check"] + [p for _, p in keys], env)
    _, got, err = run([ls, "--check"] + urls, env)
    c.equal([l.split()[0] for l in got.splitlines()], [l.split()[0] for l in want.splitlines()],
            "--check of every s3:// URL: the local exit codes (%s)" % err[-300:])
    url, path = urls[0], keys[0][1]
    _, want_tree, _ = run([ls, path], env)
    # A profile: keys in the credentials file, region and endpoint in the
    # config file; the default profile's keys are not taken instead.
    creds = os.path.join(home, "creds")
    with open(creds, "w") as f:
        f.write("[default]\naws_access_key_id = NOTTHIS\naws_secret_access_key = nope\n\n"
                "[dev]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (KEY_ID, SECRET))
    with open(os.path.join(home, ".aws", "config"), "w") as f:
        f.write("[default]\nregion = us-west-2\n\n[profile dev]\nregion = %s\n"
                "endpoint_url = %s\n" % (REGION, srv.url))
    prof = dict(base_env, AWS_PROFILE="dev", AWS_SHARED_CREDENTIALS_FILE=creds)
    code, out, err = run([ls, url], prof)
    c.equal((code, out == want_tree, err), (0, True, ""), "AWS_PROFILE=dev from the files")
    # The same from ~/.aws/credentials, the config's [default] region
    # overridden by AWS_REGION.
    shutil.copy(creds, os.path.join(home, ".aws", "credentials"))
    code, out, err = run([ls, url], dict(prof, AWS_SHARED_CREDENTIALS_FILE="",
                                         AWS_REGION=REGION))
    c.equal((code, out == want_tree), (0, True), "AWS_PROFILE=dev from ~/.aws (%s)" % err)
    os.unlink(os.path.join(home, ".aws", "credentials"))
    # AWS_CONFIG_FILE names the config; AWS_ENDPOINT_URL_S3 wins over
    # AWS_ENDPOINT_URL (here a port nothing listens on).
    moved = os.path.join(home, "conf")
    os.rename(os.path.join(home, ".aws", "config"), moved)
    code, out, err = run([ls, url], dict(prof, AWS_CONFIG_FILE=moved))
    c.equal((code, out == want_tree, err), (0, True, ""), "AWS_CONFIG_FILE")
    nowhere = "http://127.0.0.1:%d" % mfstest.free_port()
    code, out, err = run([ls, url], dict(prof, AWS_CONFIG_FILE=moved, AWS_ENDPOINT_URL_S3=srv.url,
                                         AWS_ENDPOINT_URL=nowhere))
    c.equal((code, out == want_tree, err), (0, True, ""), "AWS_ENDPOINT_URL_S3 first")
    code, _, err = run([ls, url], dict(prof, AWS_CONFIG_FILE=moved, AWS_ENDPOINT_URL=nowhere))
    c.check(code == 3 and url in err, "AWS_ENDPOINT_URL before the profile's: %d %r" % (code, err))
    os.rename(moved, os.path.join(home, ".aws", "config"))
    # The wrong region signs for another one: refused.
    code, _, err = run([ls, url], dict(env, AWS_REGION="us-east-1"))
    c.check(code == 3 and "AuthorizationHeaderMalformed" in err and "AWS_REGION" in err,
            "a wrong region: exit 3 and a hint: %d %r" % (code, err))
    # A profile that is not there.
    code, _, err = run([ls, url], dict(base_env, AWS_PROFILE="ghost", AWS_ENDPOINT_URL=srv.url))
    c.check(code == 2 and "ghost" in err, "AWS_PROFILE=ghost: exit 2 naming it: %d %r" % (code, err))
    # A session token, from the environment and from a profile.
    tok = dict(env, AWS_ACCESS_KEY_ID=TOKEN_ID, AWS_SECRET_ACCESS_KEY=TOKEN_SECRET,
               AWS_SESSION_TOKEN=TOKEN)
    code, out, err = run([ls, url], tok)
    c.equal((code, out == want_tree, err), (0, True, ""), "AWS_SESSION_TOKEN")
    with open(creds, "w") as f:
        f.write("[tok]\naws_access_key_id=%s\naws_secret_access_key=%s\naws_session_token=%s\n"
                % (TOKEN_ID, TOKEN_SECRET, TOKEN))
    code, out, err = run([ls, url], dict(base_env, AWS_PROFILE="tok", AWS_SHARED_CREDENTIALS_FILE=creds,
                                         AWS_ENDPOINT_URL=srv.url, AWS_REGION=REGION))
    c.equal((code, out == want_tree, err), (0, True, ""), "aws_session_token in a profile")
    code, out, err = run([ls, url], dict(tok, AWS_SESSION_TOKEN=""))
    c.check(code == 3 and "InvalidToken" in err, "a key that needs a token, sent without: %r" % err)


def check_refusals(c, build, keys, srv, env, base_env):
    url = "s3://models/" + keys[0][0]
    ls = os.path.join(build, "modelfs-ls")
    wrong = dict(env, AWS_SECRET_ACCESS_KEY="WRONGSECRETwrong")
    if mfstest.can_mount():
        refused(c, build, url, ["403 Forbidden", "SignatureDoesNotMatch", "AWS_ACCESS_KEY_ID"],
                wrong)
        refused(c, build, url, ["403", "ExpiredToken"],
                dict(env, AWS_ACCESS_KEY_ID=OLD_ID, AWS_SECRET_ACCESS_KEY=OLD_SECRET,
                     AWS_SESSION_TOKEN=OLD_TOKEN))
        refused(c, build, url, ["403", "no AWS credentials found"],
                dict(base_env, AWS_ENDPOINT_URL=srv.url, AWS_REGION=REGION))
        refused(c, build, url, ["403", "not public"], env, extra=["-o", "no_sign_request"])
        refused(c, build, "s3://models/one/absent.safetensors", ["404", "NoSuchKey"], env)
        refused(c, build, "s3://nobucket/a.safetensors", ["404", "NoSuchBucket"], env)
        refused(c, build, "s3://models/zoo/", ["403", "SignatureDoesNotMatch"], wrong)
        refused(c, build, url, [],
                dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:%d" % mfstest.free_port()))
    # modelfs-ls too: the listing's refusal.
    code, out, err = run([ls, "s3://models/zoo/", "--"], wrong)
    c.check(code == 3 and "s3://models/zoo/" in err and "SignatureDoesNotMatch" in err,
            "modelfs-ls of a prefix, wrong secret: %d %r" % (code, err))
    no_secret(c, "modelfs-ls refusal", out + err)


def check_no_leak(c, build, srv, env):
    """A folder mount with a session token, in the foreground: neither the
    secret nor the token in its log, /proc cmdline, models.json, any
    model.json or xattr."""
    tok = dict(env, AWS_ACCESS_KEY_ID=TOKEN_ID, AWS_SECRET_ACCESS_KEY=TOKEN_SECRET,
               AWS_SESSION_TOKEN=TOKEN)
    fg = mfstest.Foreground(os.path.join(build, "modelfs"), "s3://models/zoo/", env=tok)
    try:
        if not c.check(fg.mounted, "s3://models/zoo/ mounted: %s" % fg.text()):
            return
        seen = []
        for d, dirs, files in os.walk(fg.mnt):
            for n in dirs + files:
                p = os.path.join(d, n)
                seen.append(repr(xattrs(p)))
                if n.endswith(".json"):
                    with open(p, "rb") as f:
                        seen.append(f.read().decode("utf-8", "replace"))
        c.check(any("s3://models/zoo/" in s for s in seen), "models.json names the URLs")
        with open("/proc/%d/cmdline" % fg.p.pid, "rb") as f:
            seen.append(f.read().decode("utf-8", "replace"))
        no_secret(c, "a mount's files, xattrs and command line", "\n".join(seen))
    finally:
        fg.close()
        no_secret(c, "the daemon's log", fg_text(fg))


def fg_text(fg):
    try:
        return fg.text()
    except ValueError:   # closed
        return ""


def check_changed(c, build, bucket, srv, env):
    """An object replaced after the mount: reads past what was fetched
    give EIO (the server's 412), never the new bytes; the daemon answers."""
    path = os.path.join(bucket, "changing.safetensors")
    with open(path, "rb") as f:
        old = f.read()
    env = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="modelfs-cache-",
                                                    dir=env["XDG_CACHE_HOME"]))
    # (its own cache, removed with the scratch folder's parent below)
    with mfstest.mounted(os.path.join(build, "modelfs"), "s3://models/changing.safetensors",
                         env) as mnt:
        near, _ = mfstest.read_or_errno(os.path.join(mnt, "tensors", "near"))
        hlen = 8 + int.from_bytes(old[:8], "little")
        with open(path, "wb") as f:
            f.write(old[:hlen] + bytes(b ^ 0xff for b in old[hlen:]))
        os.utime(path, ns=(1, 1))
        before = len(srv.log)
        got, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "far"))
        c.equal((got is None, err), (True, errno.EIO), "a changed object: a read gives EIO")
        c.check(any(status == 412 for _, _, _, _, status in srv.log[before:]),
                "a changed object: the GET's If-Match answered 412: %s" % srv.log[before:])
        c.equal(near, bytes(range(256)) * 16, "a changed object: bytes read before it changed")
        c.check(os.path.exists(os.path.join(mnt, "model.json")), "changed object: the daemon answers")
    with open(path, "wb") as f:
        f.write(old)


def check_versioned(c, build, root, srv, env):
    """A versioned bucket: the version the mount's first answer named
    (x-amz-version-id) is pinned; the object replaced after the mount
    still reads as it was, every later GET asking ?versionId=."""
    path = os.path.join(root, "v.safetensors")
    with open(path, "rb") as f:
        old = f.read()
    env = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="modelfs-cache-",
                                                    dir=env["XDG_CACHE_HOME"]))
    before = len(srv.log)
    with mfstest.mounted(os.path.join(build, "modelfs"), "s3://versions/v.safetensors",
                         env) as mnt:
        hlen = 8 + int.from_bytes(old[:8], "little")
        with open(path, "wb") as f:
            f.write(old[:hlen] + bytes(b ^ 0xff for b in old[hlen:]))
        os.utime(path, ns=(1, 1))
        got, err = mfstest.read_or_errno(os.path.join(mnt, "tensors", "far"))
        want = old[len(old) - (2 << 20):]
        c.equal((got == want, err), (True, 0),
                "a versioned object replaced after the mount: the pinned version's bytes")
    gets = [r for r in log_of(srv, before, "/versions/v.safetensors") if r[0] == "GET"]
    c.check(len(gets) >= 2 and "versionId=" not in gets[0][1] and
            all("versionId=" in r[1] for r in gets[1:]),
            "versioned: every GET after the first asks the pinned version: %s"
            % [r[1] for r in gets])
    with open(path, "wb") as f:
        f.write(old)


def check_public(c, build, ls, models, srv, base_env):
    """-o no_sign_request on a public bucket: no credentials looked up
    (wrong ones in the environment do not matter), nothing signed."""
    if not models:
        return
    name = os.path.basename(models[0][0])
    env = dict(base_env, AWS_ENDPOINT_URL=srv.url, AWS_REGION=REGION,
               AWS_ACCESS_KEY_ID="NOBODY", AWS_SECRET_ACCESS_KEY="WRONGSECRETwrong")
    before = len(srv.log)
    _, want, _ = run([ls, models[0][0]], env)
    code, out, err = run([ls, "--no-sign-request", "s3://open/" + name], env)
    c.equal((code, out == want, err), (0, True, ""), "modelfs-ls --no-sign-request")
    code, out, err = run([ls, "--no-sign-request", "s3://open", "--"], env)
    c.check(code == 0 and name in out, "--no-sign-request listing of s3://open: %r" % err)
    try:
        with mfstest.mounted(os.path.join(build, "modelfs"), "s3://open/" + name, env,
                             extra=["-o", "no_sign_request"]) as mnt:
            c.check(os.path.exists(os.path.join(mnt, "model.json")), "-o no_sign_request mounts")
    except RuntimeError as e:
        c.check(False, "-o no_sign_request: %s" % e)
    log = log_of(srv, before, "/open", "/open/" + name)
    c.check(log and not any(signed for _, _, signed, _, _ in log),
            "no_sign_request: nothing signed: %s" % log[:3])


def check_s3rver(c, build, ls, models, root, env):
    """s3rver (npm, installed by scripts/fetch_s3rver.sh into BUILD_DIR):
    the same models read through a second implementation of the API."""
    if not models:
        return
    fetch = os.path.join(HERE, "..", "..", "scripts", "fetch_s3rver.sh")
    r = subprocess.run([fetch, os.path.join(build, "npm-s3rver")], capture_output=True, text=True,
                       timeout=400)
    if r.returncode != 0:
        c.skip("s3rver not available (%s): its part is not run" % r.stderr.strip()[-200:])
        return
    bin_path = r.stdout.strip()
    data = os.path.join(root, "s3rver")
    os.makedirs(data)
    port = mfstest.free_port()
    p = subprocess.Popen([bin_path, "--directory", data, "--address", "127.0.0.1", "--port",
                          str(port), "--silent", "--configure-bucket", "rver"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = "http://127.0.0.1:%d" % port
        mfstest.wait_port(port, 20, p)
        if not c.check(p.poll() is None, "s3rver is up: %s" % (p.stderr.read()[-300:]
                                                                if p.poll() is not None else "")):
            return
        import botocore.session  # noqa: E402 (Debian's python3-botocore)
        s3 = botocore.session.get_session().create_client(
            "s3", region_name="us-east-1", endpoint_url=url, aws_access_key_id="S3RVER",
            aws_secret_access_key="S3RVER")
        for path, fmt in models:
            with open(path, "rb") as f:
                s3.put_object(Bucket="rver", Key="m/%s/%s" % (fmt, os.path.basename(path)),
                              Body=f.read())
        renv = dict(env, AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="S3RVER",
                    AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1")
        for path, fmt in models:
            u = "s3://rver/m/%s/%s" % (fmt, os.path.basename(path))
            _, want, _ = run([ls, path], renv)
            code, out, err = run([ls, u], renv)
            c.equal((code, out == want, err), (0, True, ""), "s3rver: modelfs-ls %s" % u)
            paths = [l.split(None, 2)[2] for l in want.splitlines() if l.startswith("f ")][:50]
            w, _, _ = mfstest.ls_sums(ls, path, paths, renv)
            g, _, err = mfstest.ls_sums(ls, u, paths, renv)
            c.equal(g, w, "s3rver: %s: sha256 of its files (%s)" % (u, err))
        print("s3rver: %d models read through it" % len(models), flush=True)
        tree, code, err = tree_of(ls, ["s3://rver/m/"], renv)
        c.check(code == 0 and len([p for p in tree if p.count("/") == 1]) >= len(models),
                "s3rver: the listing of s3://rver/m/: %s %s" % (sorted(tree)[:4], err))
    finally:
        mfstest.stop_process(p)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
