"""A small HTTP/1.1 server for the remote-model tests, on loopback only:
serves the files of one folder with byte ranges (`Range: bytes=A-B`,
one range), a strong ETag per file, `If-Match` (412 when it does not
match), `Last-Modified`; and, under /fault/KIND/PATH, the same file
served wrongly on purpose:

  norange    200 and the whole body for a range request
  badrange   206 with a Content-Range other than the one asked
  etagflip   a different ETag from the second request on
  short      206 whose body stops halfway (Content-Length says all)
  slow       from the second request on, the body trickles out (a byte
             every 0.2 s), bounded to 30 s
  throttle   bodies at about 4 MB/s (64 KiB every 16 ms)
  stall      from the second request on, the headers and then nothing
             (until the server stops, or 30 s)
  503once    503 with Retry-After: 0 for every first request of a range
  status404  404 for everything
  late404    404 from the second request on (a server that fails after
             the mount)
  longetag   an ETag of 400 bytes
  redirect   302 to srv.redirect_base + PATH (another server)
  loop       302 to itself, for ever

and with other validators than the strong ETag and Last-Modified (VALIDATORS
below; If-Match compared strongly, so a weak ETag never matches it, and
If-Unmodified-Since honoured, as Apache and nginx do):

  weak       a weak ETag W/"..." (a compressing proxy), and Last-Modified
  apache     W/"..." while the file is younger than srv.weak_for seconds
             (1: Apache's rule), the same tag strong afterwards
  lastmod    Last-Modified, no ETag (nginx with etag off)
  none       neither (a minimal server): the size is all there is

and with a response header curl refuses:

  bigline    one header line of 1 MB
  bigheader  1,000 header lines of 1 KB

replace(path, data, mtime) swaps a served file for new bytes the way a
deploy does (a new file renamed over it).

It records every request (method, path, Range, If-Match, Accept-Encoding,
If-Unmodified-Since) for the tests to look at, and in .headers (path,
{lower-case name: value}) every header each request carried (which
credentials reached which host). Started in a thread by the test
(testserver.py); stops when told.
"""
import calendar
import email.utils
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testserver  # noqa: E402


class Handler(testserver.Handler):
    def serve(self, head):
        srv = self.server
        path = self.path.split("?", 1)[0]
        kind = None
        if path.startswith("/fault/"):
            kind, _, path = path[len("/fault/"):].partition("/")
            path = "/" + path
        rng = self.headers.get("Range")
        with srv.lock:
            srv.log.append((self.command, self.path, rng, self.headers.get("If-Match"),
                            self.headers.get("Accept-Encoding"),
                            self.headers.get("If-Unmodified-Since")))
            srv.headers.append((self.path, self.header_dict()))
            n_req = srv.counts.get(self.path, 0)
            srv.counts[self.path] = n_req + 1
        if kind == "status404" or (kind == "late404" and n_req >= 1):
            return self.send_plain(404)
        if kind == "redirect":
            return self.send_plain(302, [("Location", srv.redirect_base + path)])
        if kind == "loop":
            return self.send_plain(302, [("Location", self.path)])
        full = os.path.realpath(os.path.join(srv.root, path.lstrip("/")))
        if not full.startswith(srv.root + os.sep) or not os.path.isfile(full):
            return self.send_plain(404)
        # Validators and body from one open file: a file renamed over it
        # between a stat and an open would pair the old ETag with new bytes.
        try:
            f = open(full, "rb")
        except OSError:
            return self.send_plain(404)
        with f:
            return self.answer(f, head, kind, rng, n_req)

    def answer(self, f, head, kind, rng, n_req):
        srv = self.server
        st = os.fstat(f.fileno())
        size = st.st_size
        etag = '"%s"' % hashlib.sha256(("%d:%d:%d" % (st.st_ino, st.st_size, st.st_mtime_ns))
                                       .encode()).hexdigest()[:32]
        if kind == "longetag":
            etag = '"%s"' % ("e" * 398)
        if kind == "etagflip" and n_req >= 1:
            etag = '"flipped-%d"' % n_req
        etag, lastmod = validators(kind, etag, st, srv.weak_for)
        tags = [("ETag", etag)] if etag else []
        im = self.headers.get("If-Match")
        if im is not None and im != "*" and (etag is None or etag.startswith("W/") or im != etag):
            return self.send_plain(412, tags)
        if lastmod is not None and unmodified_since_fails(self.headers, st):
            return self.send_plain(412, tags)
        if kind in ("503once", "429once") and rng and self.first_time(rng):
            if kind == "429once":
                return self.send_plain(429, [("Retry-After", "1")])
            return self.send_plain(503, [("Retry-After", "0")])
        first, last, partial = 0, size - 1, False
        if rng and kind != "norange":
            try:
                asked = testserver.byte_range(rng, size)
            except testserver.BadRange:
                asked = None
            if asked is None:   # (another unit than bytes, too)
                return self.send_plain(400)
            first, last = asked
            if not testserver.satisfiable(first, last, size):
                return self.send_plain(416, [("Content-Range", "bytes */%d" % size)] + tags)
            partial = True
        self.send_response(206 if partial else 200)
        if kind == "bigline":
            self.send_header("X-Big", "a" * (1 << 20))
        if kind == "bigheader":
            for i in range(1000):
                self.send_header("X-Big-%d" % i, "b" * 1000)
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        if lastmod:
            self.send_header("Last-Modified", lastmod)
        if partial:
            shown_first, shown_last = (first + 1, last + 1) if kind == "badrange" else (first, last)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (shown_first, shown_last, size))
        if kind == "endless":
            # The range's Content-Range, no length, and a body that goes
            # on past it (up to 16 MiB, then the connection closes).
            self.end_headers()
            self.close_connection = True
            for _ in range(256):
                if srv.stopping or not self.write(b"\0" * 65536):
                    break
            return
        self.send_header("Content-Length", str(last - first + 1))
        self.end_headers()
        if head:
            return
        f.seek(first)
        body = f.read(last - first + 1)
        BODIES.get(kind, Handler.body_whole)(self, body, rng, n_req)

    def first_time(self, rng):
        """Whether this path and range are asked for the first time."""
        srv = self.server
        with srv.lock:
            if (self.path, rng) in srv.seen503:
                return False
            srv.seen503.add((self.path, rng))
            return True

    # How a fault kind sends the body it answers with (after the headers).
    def body_whole(self, body, rng, n_req):
        self.write(body)

    def body_cutlong(self, body, rng, n_req):
        # A long GET cut at 60% the first time it is asked.
        if len(body) <= (1 << 20) or not self.first_time(rng):
            return self.write(body)
        self.write(body[:len(body) * 6 // 10])
        self.close_connection = True

    def body_cutonce(self, body, rng, n_req):
        # Any GET of more than 64 KiB cut at 60% the first time it is asked.
        if len(body) <= (64 << 10) or not self.first_time(rng):
            return self.write(body)
        self.write(body[:len(body) * 6 // 10])
        self.close_connection = True

    def body_short(self, body, rng, n_req):
        self.write(body[:len(body) // 2])
        self.close_connection = True

    def body_throttle(self, body, rng, n_req):
        for i in range(0, len(body), 65536):
            if not self.write(body[i:i + 65536]) or self.server.stopped.wait(0.016):
                break

    def body_stall(self, body, rng, n_req):
        if n_req < 1:
            return self.write(body)
        self.wfile.flush()
        self.server.stopped.wait(30)
        self.close_connection = True

    def body_slow(self, body, rng, n_req):
        if n_req < 1:
            return self.write(body)
        deadline = time.time() + 30
        for i in range(len(body)):
            if time.time() > deadline or not self.write(body[i:i + 1]):
                break
            self.wfile.flush()
            if self.server.stopped.wait(0.2):
                break
        self.close_connection = True


BODIES = {"cutlong": Handler.body_cutlong, "cutonce": Handler.body_cutonce,
          "short": Handler.body_short,
          "throttle": Handler.body_throttle, "stall": Handler.body_stall,
          "slow": Handler.body_slow}


VALIDATORS = ("weak", "apache", "lastmod", "none")


def validators(kind, etag, st, weak_for):
    """The ETag (None for none) and Last-Modified (None) a fault kind
    serves for a file of stat `st` whose strong ETag is `etag`."""
    lastmod = email.utils.formatdate(st.st_mtime, usegmt=True)
    if kind == "weak" or (kind == "apache" and time.time() - st.st_mtime < weak_for):
        return "W/" + etag, lastmod
    if kind == "lastmod":
        return None, lastmod
    if kind == "none":
        return None, None
    return etag, lastmod


def unmodified_since_fails(headers, st):
    """Whether an If-Unmodified-Since the file was modified after fails."""
    ius = headers.get("If-Unmodified-Since")
    parsed = email.utils.parsedate(ius) if ius else None
    return parsed is not None and int(st.st_mtime) > calendar.timegm(parsed)


def replace(path, data, mtime=None):
    """Replaces the file at `path` by `data` (a new file renamed over it),
    its time `mtime` (seconds) when given."""
    tmp = path + ".replacing"
    with open(tmp, "wb") as f:
        f.write(data)
    if mtime is not None:
        os.utime(tmp, (mtime, mtime))
    os.rename(tmp, path)


def start(root, host="127.0.0.1", tls=None):
    """Serves `root` on host:(a free port), over TLS with tls=(certfile,
    keyfile); returns the server (.url, .log, .headers, .counts, .stop())."""
    return testserver.start(Handler, host, tls, root=os.path.realpath(root), headers=[],
                            counts={}, seen503=set(), redirect_base="", weak_for=1.0)
