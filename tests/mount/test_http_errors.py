#!/usr/bin/python3
"""What a remote model's failures say (issue 34, defects 10 and 12, the
HTTP part), through modelfs-ls (exit 3, one line naming the URL):

 - a certificate no trusted CA signed: which CA file it was checked
   against (CURL_CA_BUNDLE's, SSL_CERT_FILE's, or the system's) and the
   variables that choose it;
 - a response header of 1 MB (one line, or 1,000 lines): that the header
   was too large, not curl's "Out of memory";
 - nothing listening: the host and port tried.

usage: test_http_errors.py BUILD_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mfstest  # noqa: E402
import rangeserver  # noqa: E402


def refused(c, ls, url, env, wants, what):
    """modelfs-ls URL exits 3 with one line naming the URL and each of `wants`."""
    r = subprocess.run([ls, url, "model.json"], capture_output=True, text=True, env=env,
                       timeout=60)
    lines = r.stderr.strip().splitlines()
    c.check(r.returncode == 3 and len(lines) == 1 and url in lines[0] and
            all(w in lines[0] for w in wants),
            "%s: exit 3, one line naming the URL and %r: %d %r" % (what, wants, r.returncode,
                                                                   r.stderr))


def make_cert(tmp):
    """A self-signed certificate for 127.0.0.1 (cert, key), and another
    CA that did not sign it."""
    cert, key = os.path.join(tmp, "srv.pem"), os.path.join(tmp, "srv.key")
    other, okey = os.path.join(tmp, "other.pem"), os.path.join(tmp, "other.key")
    for crt, k, cn, ext in ((cert, key, "127.0.0.1", ["-addext", "subjectAltName=IP:127.0.0.1"]),
                            (other, okey, "modelfs other CA", [])):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", k,
                        "-out", crt, "-days", "2", "-subj", "/CN=" + cn, *ext],
                       capture_output=True, check=True)
    return cert, key, other


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    c = mfstest.Checker("test_http_errors")
    ls = os.path.join(argv[1], "modelfs-ls")
    tmp = tempfile.mkdtemp(prefix="modelfs-http-errors-")
    logdir = tempfile.mkdtemp(prefix="modelfs-san-")
    env = {k: v for k, v in mfstest.sanitizer_env(logdir).items()
           if k not in ("CURL_CA_BUNDLE", "SSL_CERT_FILE")}
    mfstest.write_safetensors(os.path.join(tmp, "m.safetensors"), {"t": b"\1" * 4096})
    srv = rangeserver.start(tmp)
    tls = None
    try:
        refused(c, ls, srv.url + "/fault/bigline/m.safetensors", env,
                ["response header is too large"], "a 1 MB header line")
        refused(c, ls, srv.url + "/fault/bigheader/m.safetensors", env,
                ["response header is larger than"], "1 MB of header lines")
        port = mfstest.free_port()
        refused(c, ls, "http://127.0.0.1:%d/m.safetensors" % port, env,
                ["127.0.0.1 port %d" % port], "nothing listening")
        if shutil.which("openssl") is None:
            c.skip("no openssl: the certificate checks")
        else:
            cert, key, other = make_cert(tmp)
            tls = rangeserver.start(tmp, tls=(cert, key))
            url = tls.url + "/m.safetensors"
            refused(c, ls, url, dict(env, CURL_CA_BUNDLE=other),
                    ["CA file %s (from CURL_CA_BUNDLE)" % other, "SSL_CERT_FILE"],
                    "wrong CA in CURL_CA_BUNDLE")
            refused(c, ls, url, dict(env, SSL_CERT_FILE=other),
                    ["CA file %s (from SSL_CERT_FILE)" % other, "CURL_CA_BUNDLE"],
                    "wrong CA in SSL_CERT_FILE")
            refused(c, ls, url, env, ["system's CA file", "CURL_CA_BUNDLE", "SSL_CERT_FILE"],
                    "no CA set: the system's")
            r = subprocess.run([ls, url, "model.json"], capture_output=True, text=True,
                               env=dict(env, CURL_CA_BUNDLE=cert), timeout=60)
            c.equal(r.returncode, 0, "the right CA: read (%s)" % r.stderr.strip())
    finally:
        srv.stop()
        if tls is not None:
            tls.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    mfstest.check_sanitizer_reports(c, logdir)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
