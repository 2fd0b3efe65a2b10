"""Debian's real web servers, started by a test on 127.0.0.1 (a free
unprivileged port, in the foreground, as a child of the test) to serve
one folder, each with a configuration written to a temporary folder that
also holds its pid file, error log and access log. None of the packages'
own services or configuration is used.

    srv = webservers.start("apache", root)   # Unavailable: not installed
    ... srv.url + "/model.safetensors", srv.env(env) (CURL_CA_BUNDLE) ...
    srv.requests()                           # what it was asked, and answered
    srv.stop(keep=failed)                    # the logs kept (and named) on failure

KINDS, and what they send (test_servers.py prints and checks it):
 - nginx: strong ETags of mtime and size; nginx-noetag (`etag off`):
   Last-Modified alone (and 412 for any If-Match);
 - apache: stock `FileETag MTime Size`, weak (W/"...") while the file's
   mtime is less than a second old (or in the future), strong after; it
   ignores If-Unmodified-Since on a range request (206);
 - lighttpd: strong ETags of inode, mtime and size; lighttpd-noetag
   (`static-file.etags = "disable"`): Last-Modified alone; lighttpd-bare:
   neither (mod_setenv blanks Last-Modified, which removes it). lighttpd
   ignores If-Match and If-Unmodified-Since (206). Its stat cache is off:
   with it, a file replaced by rename is served as the old one, old ETag
   and all, for a second or two;
 - caddy: https with HTTP/2 (no HTTP/3), a certificate of a CA made here
   with openssl (srv.ca, which srv.env() gives clients as
   CURL_CA_BUNDLE); strong ETags of mtime and size."""
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mfstest  # noqa: E402

KINDS = ("nginx", "nginx-noetag", "apache", "lighttpd", "lighttpd-noetag", "lighttpd-bare",
         "caddy")

# Each request as one line of tab-separated fields, in this order ("-" for
# a header not there): what a test checks a client sent, and what it got.
FIELDS = ("method", "path", "range", "if_match", "if_unmodified_since", "if_range", "status",
          "etag", "last_modified", "proto")


class Unavailable(Exception):
    """The server's program is not installed: the caller skips, visibly."""


def program(kind):
    """The path of the program that serves `kind`, or None."""
    name = {"nginx": "nginx", "apache": "apache2", "lighttpd": "lighttpd",
            "caddy": "caddy"}[kind.split("-")[0]]
    for p in (shutil.which(name), "/usr/sbin/" + name, "/usr/bin/" + name):
        if p and os.path.exists(p):
            return p
    return None


def make_cert(tmp, host="127.0.0.1"):
    """A CA and a certificate it signed for `host` (an IP address), made
    with openssl in `tmp`: (ca.pem, cert.pem, key.pem)."""
    ca, cakey = os.path.join(tmp, "ca.pem"), os.path.join(tmp, "ca.key")
    cert, key, csr = (os.path.join(tmp, n) for n in ("srv.pem", "srv.key", "srv.csr"))
    ext = os.path.join(tmp, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:%s\n" % host)

    def run(*a):
        subprocess.run(a, capture_output=True, check=True, timeout=60)
    # P-256 keys: made in milliseconds, where RSA's took a few tenths.
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    run("openssl", "req", "-x509", *ec, "-keyout", cakey, "-out", ca, "-days", "2",
        "-subj", "/CN=modelfs test CA")
    run("openssl", "req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=%s" % host)
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey, "-CAcreateserial",
        "-out", cert, "-days", "2", "-extfile", ext)
    return ca, cert, key


def _nginx(srv, exe):
    # Workers as the test's user: the files may be in its private folders.
    conf = os.path.join(srv.tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""%(user)sdaemon off; worker_processes 1; pid %(t)s/nginx.pid;
error_log %(t)s/error.log;
events { worker_connections 64; }
http {
  log_format t escape=none '$request_method\\t$request_uri\\t$http_range\\t$http_if_match\\t'
      '$http_if_unmodified_since\\t$http_if_range\\t$status\\t$sent_http_etag\\t'
      '$sent_http_last_modified\\t$server_protocol';
  access_log %(t)s/access.log t;
  client_body_temp_path %(t)s/body; proxy_temp_path %(t)s/proxy;
  fastcgi_temp_path %(t)s/fastcgi; uwsgi_temp_path %(t)s/uwsgi; scgi_temp_path %(t)s/scgi;
  default_type application/octet-stream;
  server { listen 127.0.0.1:%(p)d; root %(r)s;%(etag)s }
}
""" % {"t": srv.tmp, "p": srv.port, "r": srv.root,
            "user": "user root;\n" if os.geteuid() == 0 else "",
            "etag": " etag off;" if srv.kind == "nginx-noetag" else ""})
    return [exe, "-p", srv.tmp, "-c", conf]


def _apache(srv, exe):
    # The fewest modules that serve files: an MPM, and authz_core, without
    # which every request is a 500 ("couldn't check user"); mod_mime for
    # Content-Type when the system has its types. As root the children
    # must be another user (Apache refuses to serve as root): the served
    # folder must then be readable by everyone.
    mods = "/usr/lib/apache2/modules"
    lines = ["ServerRoot %s" % srv.tmp, "ServerName 127.0.0.1",
             "Listen 127.0.0.1:%d" % srv.port, "PidFile %s/apache.pid" % srv.tmp,
             "DefaultRuntimeDir %s" % srv.tmp, "ErrorLog %s/error.log" % srv.tmp,
             "LoadModule mpm_event_module %s/mod_mpm_event.so" % mods,
             "LoadModule authz_core_module %s/mod_authz_core.so" % mods]
    if os.path.exists("/etc/mime.types"):
        lines += ["LoadModule mime_module %s/mod_mime.so" % mods, "TypesConfig /etc/mime.types"]
    if os.geteuid() == 0:
        lines += ["User nobody", "Group nogroup"]
    lines += ["StartServers 1", "DocumentRoot %s" % srv.root,
              "LogFormat \"%m\\t%U\\t%{Range}i\\t%{If-Match}i\\t%{If-Unmodified-Since}i\\t"
              "%{If-Range}i\\t%>s\\t%{ETag}o\\t%{Last-Modified}o\\t%H\" t",
              "CustomLog %s/access.log t" % srv.tmp,
              "<Directory />", "  Require all granted", "</Directory>"]
    conf = os.path.join(srv.tmp, "apache2.conf")
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    return [exe, "-f", conf, "-DFOREGROUND"]


def _lighttpd(srv, exe):
    # It writes its access log out every 4 s, and at SIGHUP (requests()).
    lines = ['server.document-root = "%s"' % srv.root, 'server.bind = "127.0.0.1"',
             "server.port = %d" % srv.port, 'server.errorlog = "%s/error.log"' % srv.tmp,
             'server.modules = ("mod_setenv", "mod_accesslog")',
             'accesslog.filename = "%s/access.log"' % srv.tmp,
             'accesslog.format = "%m\\t%U\\t%{Range}i\\t%{If-Match}i\\t%{If-Unmodified-Since}i\\t'
             '%{If-Range}i\\t%s\\t%{ETag}o\\t%{Last-Modified}o\\t%H"',
             'mimetype.assign = ("" => "application/octet-stream")',
             # Its stat cache serves a file replaced by rename as the old
             # one (old bytes, old ETag) for a second or two: off, so that
             # a test's change is served at once.
             'server.stat-cache-engine = "disable"']
    if srv.kind in ("lighttpd-noetag", "lighttpd-bare"):
        lines.append('static-file.etags = "disable"')
    if srv.kind == "lighttpd-bare":
        # A blank value removes the header: no validator at all.
        lines.append('setenv.set-response-header = ("Last-Modified" => "")')
    conf = os.path.join(srv.tmp, "lighttpd.conf")
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    return [exe, "-D", "-f", conf]


def _caddy(srv, exe):
    srv.ca, cert, key = make_cert(srv.tmp)
    # No admin endpoint, no HTTP/3 (a UDP port), nothing written outside
    # tmp (its storage, and HOME and XDG_* in _env).
    conf = os.path.join(srv.tmp, "Caddyfile")
    with open(conf, "w") as f:
        f.write("""{
	admin off
	auto_https disable_redirects
	storage file_system %(t)s/data
	servers {
		protocols h1 h2
	}
	log {
		output file %(t)s/error.log
	}
}
https://127.0.0.1:%(p)d {
	tls %(c)s %(k)s
	root * %(r)s
	file_server
	log {
		output file %(t)s/access.log
		format json
	}
}
""" % {"t": srv.tmp, "p": srv.port, "r": srv.root, "c": cert, "k": key})
    srv.proc_env = dict(os.environ, HOME=srv.tmp, XDG_DATA_HOME=srv.tmp + "/data",
                        XDG_CONFIG_HOME=srv.tmp + "/config")
    return [exe, "run", "--config", conf, "--adapter", "caddyfile"]


_MAKE = {"nginx": _nginx, "apache": _apache, "lighttpd": _lighttpd, "caddy": _caddy}


class Server:
    """One running server: kind, url (no trailing /), root, tmp (its
    configuration and logs), ca (the CA file for https, else None)."""

    def __init__(self, kind, root):
        self.kind, self.root = kind, os.path.abspath(root)
        self.port = mfstest.free_port()
        self.tmp = tempfile.mkdtemp(prefix="modelfs-%s-" % kind)
        self.ca = None
        self.proc = None
        self.proc_env = None
        self.https = kind == "caddy"
        self.url = "%s://127.0.0.1:%d" % ("https" if self.https else "http", self.port)
        self._syncs = 0

    def env(self, env):
        """`env` with what a client needs to trust this server."""
        return dict(env, CURL_CA_BUNDLE=self.ca) if self.ca else dict(env)

    def ssl_context(self):
        return ssl.create_default_context(cafile=self.ca) if self.ca else None

    def log_tail(self, n=2000):
        """The end of its error log and of what it wrote to stderr."""
        out = []
        for name in ("error.log", "stderr.log"):
            try:
                with open(os.path.join(self.tmp, name), errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            if text.strip():
                out.append("%s: %s" % (name, text[-n:]))
        return "\n".join(out)

    def _lines(self):
        try:
            with open(os.path.join(self.tmp, "access.log"), errors="replace") as f:
                return f.read().splitlines()
        except OSError:
            return []

    def _parse(self, line):
        if self.kind == "caddy":
            try:
                j = json.loads(line)
            except ValueError:
                return None
            req, resp = j.get("request", {}), j.get("resp_headers", {})
            hd = req.get("headers", {})

            def one(d, k):
                v = d.get(k)
                return v[0] if v else None
            return {"method": req.get("method"), "path": req.get("uri", "").split("?")[0],
                    "range": one(hd, "Range"), "if_match": one(hd, "If-Match"),
                    "if_unmodified_since": one(hd, "If-Unmodified-Since"),
                    "if_range": one(hd, "If-Range"), "status": j.get("status"),
                    "etag": one(resp, "Etag"), "last_modified": one(resp, "Last-Modified"),
                    "proto": req.get("proto")}
        parts = line.split("\t")
        if len(parts) != len(FIELDS):
            return None
        # Apache and lighttpd write a header's " as \" (and \ as \\).
        vals = [None if v in ("-", "") else v.replace('\\"', '"').replace("\\\\", "\\")
                for v in parts]
        r = dict(zip(FIELDS, vals))
        r["path"] = urllib.parse.unquote((r["path"] or "").split("?")[0])
        r["status"] = int(r["status"]) if r["status"] and r["status"].isdigit() else r["status"]
        return r

    def requests(self, timeout=5):
        """Every request it logged so far, oldest first: dicts of FIELDS
        (None for a header that was not there). Asks a marker path first and
        waits (`timeout` s at most) for it to be logged, so that every
        request before it is in (lighttpd writes its log out every 4 s, and
        at SIGHUP, which reopens its logs: sent here)."""
        self._syncs += 1
        marker = "/modelfs-log-sync-%d" % self._syncs
        try:
            urllib.request.urlopen(self.url + marker, timeout=timeout,
                                   context=self.ssl_context()).close()
        except (urllib.error.URLError, OSError):
            pass   # a 404, as meant
        if self.kind.startswith("lighttpd") and self.proc is not None:
            self.proc.send_signal(signal.SIGHUP)
        end = time.time() + timeout
        while True:
            reqs = [r for r in map(self._parse, self._lines()) if r]
            if any(r["path"] == marker for r in reqs) or time.time() > end:
                return [r for r in reqs if not r["path"].startswith("/modelfs-log-sync-")]
            time.sleep(0.05)

    def stop(self, keep=False):
        """Stops it (SIGTERM, then SIGKILL after 10 s); its folder is
        removed, or kept and named when `keep` (a failed check)."""
        if self.proc is not None:
            mfstest.stop_process(self.proc)
            self.proc = None
            self._err.close()
        if keep:
            print("%s: configuration and logs kept in %s" % (self.kind, self.tmp), flush=True)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def start(kind, root, timeout=10):
    """Starts a server of `kind` (KINDS) serving the folder `root`; raises
    Unavailable when its program is not installed, RuntimeError (with its
    log, which is kept) when it does not accept connections within
    `timeout` seconds."""
    if kind not in KINDS:
        raise ValueError("unknown server kind %r" % kind)
    exe = program(kind)
    if exe is None:
        raise Unavailable("%s is not installed" % kind.split("-")[0])
    srv = Server(kind, root)
    args = _MAKE[kind.split("-")[0]](srv, exe)
    srv._err = open(os.path.join(srv.tmp, "stderr.log"), "wb")
    srv.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=srv._err, stderr=srv._err,
                                env=srv.proc_env, cwd=srv.tmp)
    if not mfstest.wait_port(srv.port, timeout, srv.proc):
        why = "exited %s" % srv.proc.returncode if srv.proc.poll() is not None else \
            "not listening after %d s" % timeout
        tail = srv.log_tail()
        srv.stop(keep=True)
        raise RuntimeError("%s on port %d: %s\n%s" % (kind, srv.port, why, tail))
    return srv
