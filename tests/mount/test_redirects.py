#!/usr/bin/python3
"""Redirects, credentials and signed URLs (issue 34, defects 5, 6, 7 and
the Hub's Link loop of 10), against the suite's servers on loopback
(127.0.0.1, and 127.0.0.2 as "another host"):

 - never https -> http: a Hub on https whose resolve redirects to an
   http:// byte host is refused (no request reaches it); a plain https
   URL redirected to http too;
 - no user:password in any redirect: a Hub resolve, or a plain URL,
   redirected to http://u:p@HOST/... is refused, the message names the
   URL without them, and no Basic credentials reach that host;
 - no credential header leaves its host: an S3 object GET signed with a
   session token answered 307 to another host is refused there (neither
   Authorization nor x-amz-security-token reaches it); a 307 to the
   endpoint itself is followed, signed again; the Hub's token goes to the
   Hub only (resolve and bytes hosts' headers checked), also when a file
   the Hub serves itself has its GETs redirected to another host;
 - a presigned URL (?X-Amz-Credential=...&X-Amz-Signature=...) shows its
   query nowhere: /proc/mounts, model.json's file.name, models.json's
   source, error messages; and the same object under a new signature is
   served from the disk cache (one HEAD, no GET);
 - a Hub listing whose pages link A -> B -> A stops at the first page seen
   twice, with a message, after 2 requests.

usage: test_redirects.py BUILD_DIR GEN_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hubserver  # noqa: E402
import mfstest  # noqa: E402
import rangeserver  # noqa: E402
import s3server  # noqa: E402

TOKEN = "hf_modelfsREDIRECTtoken0123456789"
KEY_ID, SECRET, SESSION = "AKIDREDIRECTTEST", "redirect/secret/key", "SESSIONtoken/redirect=="
SIG_A = ("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDPRESIGNED%2F20260101%2Fus-east-1"
         "%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600"
         "&X-Amz-SignedHeaders=host&X-Amz-Signature=")
SECRETS = ("X-Amz", "AKIDPRESIGNED", "Signature", "aaaa1111", "bbbb2222", "u:pw5ecret", "pw5ecret")


def run(args, env, timeout=60):
    r = subprocess.run(args, capture_output=True, env=env, timeout=timeout)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def make_ca(tmp):
    """A test CA and a certificate for 127.0.0.1 and 127.0.0.2: (ca, cert, key)."""
    ca, cakey = os.path.join(tmp, "ca.pem"), os.path.join(tmp, "ca.key")
    cert, key, csr = (os.path.join(tmp, n) for n in ("srv.pem", "srv.key", "srv.csr"))
    ext = os.path.join(tmp, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,IP:127.0.0.2\n")

    def openssl(*a):
        subprocess.run(("openssl",) + a, capture_output=True, check=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", cakey, "-out", ca,
            "-days", "2", "-subj", "/CN=modelfs redirect test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
            "-subj", "/CN=127.0.0.1")
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey, "-CAcreateserial",
            "-out", cert, "-days", "2", "-extfile", ext)
    return ca, cert, key


def no_secret(c, what, *texts):
    found = [s for s in SECRETS for t in texts if s in t]
    c.check(not found, "%s: no secret shown (found %s in %r)" % (what, found, texts))


class Setup:
    def __init__(self, build, gen):
        self.ls = os.path.join(build, "modelfs-ls")
        self.modelfs = os.path.join(build, "modelfs")
        self.tmp = mfstest.scratch("modelfs-redir-")
        self.logdir = mfstest.scratch("modelfs-san-")
        self.base = mfstest.sanitizer_env(self.logdir)
        for k in list(self.base):
            if k.startswith(("AWS_", "HF_", "HUGGING")) or k in ("CURL_CA_BUNDLE",
                                                                 "SSL_CERT_FILE"):
                del self.base[k]
        self.base["HOME"] = self.tmp
        self.base["HF_HOME"] = os.path.join(self.tmp, "hf-home")
        self.root = os.path.join(self.tmp, "root")
        os.makedirs(os.path.join(self.root, "bucket"))
        src = os.path.join(gen, "safetensors", "gen_dtypes.safetensors")
        self.model = os.path.join(self.root, "m.safetensors")
        shutil.copy(src, self.model)
        shutil.copy(src, os.path.join(self.root, "bucket", "m.safetensors"))
        self.ca, self.cert, self.key = make_ca(self.tmp)
        self.n = 0

    def env(self, **kw):
        """Its own disk cache each time (a cached file needs no request)."""
        self.n += 1
        e = dict(self.base, XDG_CACHE_HOME=os.path.join(self.tmp, "cache%d" % self.n))
        e.update(kw)
        return e


def check_hub(c, s):
    """Defect 5 through the Hub, the token's hosts, and the Link loop."""
    tree = run([s.ls, s.model], s.base)[1]
    # An https Hub whose resolve redirects to http://127.0.0.2: refused.
    hub = hubserver.Hub(TOKEN, tls=(s.cert, s.key))
    try:
        hub.add_repo("org/m", {"m.safetensors": s.model})
        env = s.env(HF_ENDPOINT=hub.url, CURL_CA_BUNDLE=s.ca, HF_TOKEN=TOKEN)
        code, out, err = run([s.ls, "hf://org/m/m.safetensors"], env)
        c.check(code == 3 and "https" in err and "http://127.0.0.2" in err,
                "Hub on https redirecting to http: refused naming both (%d %r)" % (code, err))
        c.equal(hub.requests("bytes"), [], "Hub on https redirecting to http: no request there")
    finally:
        hub.stop()

    hub = hubserver.Hub(TOKEN, page=2)
    try:
        # Listed 2 entries a page: "a", "a/m.safetensors" | "m.safetensors".
        hub.add_repo("org/m", {"m.safetensors": s.model, "a/m.safetensors": s.model})
        # The token: to the Hub, never to the byte host it redirects to.
        env = s.env(HF_ENDPOINT=hub.url, HF_TOKEN=TOKEN)
        code, out, err = run([s.ls, "hf://org/m/m.safetensors"], env)
        c.equal((code, out), (0, tree), "Hub with a token: the listing (%s)" % err.strip())
        hub_auth = [h.get("authorization") for role, _, h in hub.headers if role == "hub"]
        byte_auth = [h.get("authorization") for role, _, h in hub.headers if role == "bytes"]
        c.check(hub_auth and all(a == "Bearer " + TOKEN for a in hub_auth),
                "the token went with every request to the Hub: %r" % hub_auth)
        c.check(byte_auth and not any(byte_auth),
                "no Authorization reached the byte host: %r" % byte_auth)

        # A file the Hub serves itself (its token goes with each GET) whose
        # GET the Hub redirects to another host: not followed there.
        hub.own_then_redirect = True
        since = len(hub.headers)
        code, out, err = run([s.ls, "hf://org/m/m.safetensors"], s.env(HF_ENDPOINT=hub.url,
                                                                      HF_TOKEN=TOKEN))
        sent = [h.get("authorization") for role, _, h in hub.headers[since:] if role == "bytes"]
        c.check(code == 3 and "another host" in err and hub.bytes_url in err,
                "a Hub-served file's GET redirected to another host: refused (%d %r)"
                % (code, err))
        c.equal(sent, [], "a Hub-served file's GET redirected: nothing sent to that host")
        c.check(TOKEN not in err, "the token is in no message")
        hub.own_then_redirect = False

        # A resolve redirect with a user and password: refused, not shown.
        host = hub.bytes_url[len("http://"):]
        hub.bytes_base = "http://u:pw5ecret@" + host
        since = len(hub.headers)
        code, out, err = run([s.ls, "hf://org/m/m.safetensors"], s.env(HF_ENDPOINT=hub.url))
        basic = [h.get("authorization") for role, _, h in hub.headers[since:] if role == "bytes"]
        c.check(code == 3 and "user or password" in err and "http://%s/blob/" % host in err,
                "a resolve redirect with u:p@: refused naming the URL (%d %r)" % (code, err))
        no_secret(c, "a resolve redirect with u:p@", err)
        c.equal(basic, [], "a resolve redirect with u:p@: nothing sent to that host")
        hub.bytes_base = None

        # A listing whose last page links back to the first: stopped at once.
        hub.next_wraps = True
        since = len(hub.log)
        t0 = time.time()
        code, out, err = run([s.ls, "hf://org/m"], s.env(HF_ENDPOINT=hub.url), timeout=120)
        pages = [r for r in hub.requests("hub", since) if "/tree/" in r[2]]
        c.check(code == 3 and "twice" in err and len(pages) == 2,
                "a Link loop A -> B -> A: refused after %d pages in %.1f s (%d %r)"
                % (len(pages), time.time() - t0, code, err))
    finally:
        hub.stop()


def check_s3(c, s):
    """Defect 6: the session token stays on the endpoint's host."""
    tree = run([s.ls, s.model], s.base)[1]
    srv = s3server.start({"bucket": os.path.join(s.root, "bucket")},
                         {KEY_ID: (SECRET, SESSION)})
    other = rangeserver.start(s.root, host="127.0.0.2")
    try:
        aws = dict(AWS_ENDPOINT_URL=srv.url, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID=KEY_ID,
                   AWS_SECRET_ACCESS_KEY=SECRET, AWS_SESSION_TOKEN=SESSION)
        env = s.env(**aws)
        url = "s3://bucket/m.safetensors"
        # A 307 to the endpoint itself: followed, signed again there.
        srv.redirect_to = srv.url
        code, out, err = run([s.ls, url], env)
        c.equal((code, out, srv.bad_signatures), (0, tree, 0),
                "S3 307 to the endpoint itself: followed, signed (%s)" % err.strip())
        # A 307 to another host: not followed with the credentials.
        srv.redirect_to = other.url
        code, out, err = run([s.ls, url], s.env(**aws))
        leaked = [(p, sorted(k for k in h if k in ("authorization", "x-amz-security-token",
                                                   "x-amz-date", "x-amz-content-sha256")))
                  for p, h in other.headers]
        c.equal([x for x in leaked if x[1]], [],
                "S3 307 to another host: no credential header reached it")
        c.check(code == 3 and "another host" in err and "127.0.0.2" in err,
                "S3 307 to another host: refused naming it (%d %r)" % (code, err))
        no_secret(c, "S3 307 to another host", err, out)
        c.check(SESSION not in err and SECRET not in err, "S3: no secret in the message")
    finally:
        srv.stop()
        other.stop()


def check_plain(c, s):
    """https -> http and userinfo in a plain URL's redirect."""
    tree = run([s.ls, s.model], s.base)[1]
    plain = rangeserver.start(s.root)
    other = rangeserver.start(s.root, host="127.0.0.2")
    tls = rangeserver.start(s.root, tls=(s.cert, s.key))
    try:
        env = s.env(CURL_CA_BUNDLE=s.ca)
        tls.redirect_base = plain.url
        code, out, err = run([s.ls, tls.url + "/fault/redirect/m.safetensors"], env)
        c.check(code == 3 and "https" in err, "https -> http: refused (%d %r)" % (code, err))
        plain.redirect_base = tls.url
        code, out, err = run([s.ls, plain.url + "/fault/redirect/m.safetensors"], env)
        c.equal((code, out), (0, tree), "http -> https: followed (%s)" % err.strip())
        plain.redirect_base = other.url
        code, out, err = run([s.ls, plain.url + "/fault/redirect/m.safetensors"], env)
        c.equal((code, out), (0, tree), "http -> another host: followed (%s)" % err.strip())
        plain.redirect_base = "http://u:pw5ecret@" + other.url[len("http://"):]
        since = len(other.headers)
        code, out, err = run([s.ls, plain.url + "/fault/redirect/m.safetensors"], env)
        c.check(code == 3 and "user or password" in err and other.url + "/m.safetensors" in err,
                "a redirect with u:p@: refused naming the URL (%d %r)" % (code, err))
        no_secret(c, "a redirect with u:p@", err)
        c.equal([h.get("authorization") for _, h in other.headers[since:]], [],
                "a redirect with u:p@: nothing sent to that host")
    finally:
        plain.stop()
        other.stop()
        tls.stop()


def mount_line(mnt):
    with open("/proc/mounts") as f:
        return [ln for ln in f if (" %s " % mnt) in ln]


def read_all(mnt):
    return {p: mfstest.read_or_errno(os.path.join(mnt, p))
            for p, size in sorted(mfstest.walk_tree(mnt).items()) if size is not None}


def check_presigned(c, s):
    """Defect 7: a presigned URL's query is in no name, and a re-signed URL
    of the same object hits the disk cache."""
    srv = rangeserver.start(s.root)
    try:
        cache = os.path.join(s.tmp, "presigned-cache")
        env = s.env()
        url_a = srv.url + "/m.safetensors?" + SIG_A + "aaaa1111"
        url_b = srv.url + "/m.safetensors?" + SIG_A + "bbbb2222"
        with mfstest.mounted(s.modelfs, url_a, env, ["-o", "cache_dir=" + cache]) as mnt:
            lines = mount_line(mnt)
            c.check(len(lines) == 1, "the mount is in /proc/mounts: %r" % lines)
            no_secret(c, "/proc/mounts", *lines)
            with open(os.path.join(mnt, "model.json")) as f:
                doc = json.load(f)
            c.equal(doc.get("file", {}).get("name"), "m.safetensors", "model.json file.name")
            no_secret(c, "model.json", json.dumps(doc))
            first = read_all(mnt)
        with mfstest.mounted(s.modelfs, s.model, env) as lmnt:
            c.check(first == read_all(lmnt), "signature A: the local file's bytes")
        since = len(srv.log)
        with mfstest.mounted(s.modelfs, url_b, env, ["-o", "cache_dir=" + cache]) as mnt:
            second = read_all(mnt)
        reqs = [r[0] for r in srv.log[since:]]
        c.check(second == first and reqs == ["HEAD"],
                "signature B of the same object: from the disk cache, one HEAD (%r)" % reqs)

        # A query that is not a signature names another object: ?v=1 and
        # ?v=2 keep their own records, and an offline mount of ?v=1 after
        # ?v=2 fetched other bytes still gives ?v=1's.
        path = os.path.join(s.root, "m.safetensors")
        with open(path, "rb") as f:
            orig = f.read()
        def versioned(v):
            return srv.url + "/m.safetensors?v=%d&" % v + SIG_A + "cccc3333"
        try:
            with mfstest.mounted(s.modelfs, versioned(1), env, ["-o", "cache_dir=" + cache]) as mnt:
                v1 = read_all(mnt)
            changed = bytearray(orig)
            changed[-1] ^= 0xff
            rangeserver.replace(path, bytes(changed), os.stat(path).st_mtime + 7)
            with mfstest.mounted(s.modelfs, versioned(2), env, ["-o", "cache_dir=" + cache]) as mnt:
                v2 = read_all(mnt)
            with mfstest.mounted(s.modelfs, versioned(1), env,
                                 ["-o", "cache_dir=" + cache + ",offline"]) as mnt:
                again = read_all(mnt)
            c.check(v1 == first and v2 != v1 and again == v1,
                    "?v=1 and ?v=2 are two objects in the cache: offline, ?v=1 reads its own "
                    "bytes (%s)" % ("as v1" if again == v1 else "as v2" if again == v2 else "other"))
        finally:
            rangeserver.replace(path, orig, os.stat(path).st_mtime + 7)

        # Several models: models.json's source.
        mnt = mfstest.scratch("modelfs-mnt-")
        try:
            subprocess.run([s.modelfs, url_a, s.model, mnt], check=True, env=env, timeout=60)
            with open(os.path.join(mnt, "models.json")) as f:
                listed = f.read()
            c.check('"source": "%s/m.safetensors?<redacted>"' % srv.url in listed
                    or '"source":"%s/m.safetensors?<redacted>"' % srv.url in listed,
                    "models.json: the source with its query redacted: %s" % listed[:300])
            no_secret(c, "models.json", listed, *mount_line(mnt))
        finally:
            mfstest.unmount_and_remove(mnt)

        # Messages: a missing object's, from modelfs-ls and modelfs.
        gone = srv.url + "/gone.safetensors?" + SIG_A + "aaaa1111"
        code, out, err = run([s.ls, gone], env)
        c.check(code == 3 and "gone.safetensors?<redacted>" in err,
                "modelfs-ls: a 404's message names the URL redacted (%d %r)" % (code, err))
        no_secret(c, "modelfs-ls's message", err)
        mnt = mfstest.scratch("modelfs-mnt-")
        try:
            code, out, err = run([s.modelfs, gone, mnt], env)
            c.check(code == 3 and "gone.safetensors?<redacted>" in err,
                    "modelfs: a 404's message names the URL redacted (%d %r)" % (code, err))
            no_secret(c, "modelfs's message", err)
        finally:
            os.rmdir(mnt)
    finally:
        srv.stop()


def main(argv):
    if len(argv) != 3:
        mfstest.fail_main(__doc__)
    c = mfstest.Checker("redirect tests")
    if not mfstest.can_mount():
        c.skip("cannot mount FUSE here")
        return c.finish()
    if shutil.which("openssl") is None:
        c.skip("no openssl to make a test CA")
        return c.finish()
    s = Setup(argv[1], argv[2])
    try:
        for part in (check_plain, check_hub, check_s3, check_presigned):
            t0 = time.time()
            part(c, s)
            print("%s: %.1f s" % (part.__name__, time.time() - t0), flush=True)
        mfstest.check_sanitizer_reports(c, s.logdir)
    finally:
        shutil.rmtree(s.tmp, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
