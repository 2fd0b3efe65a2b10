"""A small S3 server for the s3:// tests, on loopback only, that checks
what a real S3 checks and s3rver does not:

 - every signed request's SigV4 signature, recomputed with botocore's own
   signer (python3-botocore) over the headers the request says it signed;
   a wrong secret, an unknown key id, a session token that is missing,
   wrong or expired, a missing x-amz-content-sha256 or an x-amz-date more
   than 15 minutes off: 403 with an S3 XML <Error>;
 - unsigned requests only to buckets made public;
 - GET and HEAD of objects: ranges (206 + Content-Range; 416 past the
   end), the ETag S3 gives an object not uploaded in parts (the MD5 of
   its bytes), If-Match (412 when it does not match); in a versioned
   bucket x-amz-version-id, and ?versionId= serving the bytes that
   version had;
 - ListObjectsV2 (list-type=2: prefix, delimiter with CommonPrefixes,
   continuation-token (opaque), start-after, encoding-type=url, max-keys
   up to 1,000 per page) and ListObjects v1 (marker, NextMarker), each
   key's ETag as GET gives it; path-style only (ENDPOINT/BUCKET/KEY);
 - 404 NoSuchBucket / NoSuchKey.

Buckets are folders: every file below one is a key (its path). It records
each request (method, path, query, signed or not, status) in .log.
With .redirect_to set (a base URL), an object's GET or HEAD without
`hop=1` in its query is answered 307 to redirect_to + its path + hop=1
(S3's TemporaryRedirect; the base may be this server or another host).
"""
import base64
import datetime
import hashlib
import os
import sys
import urllib.parse
from xml.sax.saxutils import escape

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testserver  # noqa: E402


class _Verifier(SigV4Auth):
    """botocore's SigV4 over the headers the request names, S3's way (the
    path as sent, not normalised)."""

    def __init__(self, creds, region, signed):
        super().__init__(creds, "s3", region)
        self._signed = signed

    def headers_to_sign(self, request):
        out = super().headers_to_sign(request)
        for name in list(out.keys()):
            if name not in self._signed:
                del out[name]
        return out

    def _normalize_url_path(self, path):
        return path


def md5_etag(path, memo={}):
    """S3's ETag of an object put in one part: the MD5 of its bytes,
    quoted (kept per size, mtime and inode: files here change by rewrite)."""
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in memo:
        h = hashlib.md5()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        memo[key] = '"%s"' % h.hexdigest()
    return memo[key]


def _error(code, message):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
            '<Message>%s</Message></Error>' % (code, escape(message))).encode()


class Handler(testserver.Handler):
    def send_body(self, status, body, headers=()):
        self.send_plain(status, headers, body)

    def fail(self, status, code, message):
        self.record(status)
        self.send_body(status, _error(code, message), [("Content-Type", "application/xml")])

    def record(self, status):
        srv = self.server
        with srv.lock:
            srv.log.append((self.command, self.path, "Authorization" in self.headers,
                            self.headers.get("If-Match"), status))

    def auth_error(self):
        """None when the request may go on, else (code, message)."""
        srv = self.server
        auth = self.headers.get("Authorization")
        if auth is None:
            return None if self.bucket in srv.public else (
                "AccessDenied", "Access Denied (an unsigned request to a private bucket)")
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return ("InvalidRequest", "not SigV4")
        fields = {}
        for part in auth[len("AWS4-HMAC-SHA256 "):].split(","):
            k, _, v = part.strip().partition("=")
            fields[k] = v
        try:
            key_id, date, region, service, term = fields["Credential"].split("/")
            signed = fields["SignedHeaders"].split(";")
            got = fields["Signature"]
        except (KeyError, ValueError):
            return ("AuthorizationHeaderMalformed", "malformed Authorization")
        if key_id not in srv.users:
            return ("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist")
        secret, token = srv.users[key_id]
        if service != "s3" or term != "aws4_request" or region != srv.region:
            return ("AuthorizationHeaderMalformed", "the region is wrong; expecting '%s'" % srv.region)
        if "host" not in signed or "x-amz-date" not in signed:
            return ("AccessDenied", "host and x-amz-date must be signed")
        if self.headers.get("x-amz-content-sha256") is None:
            return ("InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
        sent_token = self.headers.get("x-amz-security-token")
        if token is not None or sent_token is not None:
            if sent_token in srv.expired:
                return ("ExpiredToken", "The provided token has expired.")
            if sent_token != token:
                return ("InvalidToken", "The provided token is malformed or otherwise invalid.")
            if "x-amz-security-token" not in signed:
                return ("AccessDenied", "the token must be signed")
        amz_date = self.headers.get("x-amz-date", "")
        try:
            when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(
                tzinfo=datetime.timezone.utc)
        except ValueError:
            return ("AccessDenied", "bad x-amz-date")
        now = datetime.datetime.now(datetime.timezone.utc)
        if abs((now - when).total_seconds()) > 900 or date != amz_date[:8]:
            return ("RequestTimeTooSkewed", "The difference between the request time and the "
                    "current time is too large.")
        headers = {k: v for k, v in self.headers.items() if k.lower() in signed}
        req = AWSRequest(method=self.command, url="http://%s%s" % (self.headers.get("Host"), self.path),
                         headers=headers)
        req.context["timestamp"] = amz_date
        v = _Verifier(Credentials(key_id, secret, token), region, set(signed))
        canonical = v.canonical_request(req)
        want = v.signature(v.string_to_sign(req, canonical), req)
        if want != got:
            with srv.lock:
                srv.bad_signatures += 1
            return ("SignatureDoesNotMatch", "The request signature we calculated does not "
                    "match the signature you provided. Check your key and signing method.")
        return None

    def serve(self, head):
        srv = self.server
        parts = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parts.path)
        bucket, _, key = path.lstrip("/").partition("/")
        self.bucket = bucket
        if bucket not in srv.buckets:
            return self.fail(404, "NoSuchBucket", "The specified bucket does not exist")
        query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        if srv.redirect_to and key != "" and "hop" not in query:
            self.record(307)
            return self.send_body(307, b"", [("Location", srv.redirect_to + self.path +
                                              ("&" if parts.query else "?") + "hop=1")])
        why = self.auth_error()
        if why is not None:
            return self.fail(403, *why)
        if key == "":
            return self.list_objects(bucket, query)
        self.get_object(bucket, key, query)

    def get_object(self, bucket, key, query):
        srv = self.server
        root = srv.buckets[bucket]
        full = srv.aliases.get((bucket, key), os.path.join(root, key))
        vid = query.get("versionId", [None])[0]
        if vid is not None:
            # A versioned bucket: the bytes as they were when that version
            # was first given out.
            with srv.lock:
                kept = srv.versions.get((bucket, key, vid))
            if kept is None:
                return self.fail(404, "NoSuchVersion", "The specified version does not exist.")
            body_all, etag, mtime = kept
        else:
            if (bucket, key) not in srv.aliases and (
                    ".." in key.split("/") or not os.path.isfile(full) or
                    not os.path.realpath(full).startswith(root + os.sep)):
                return self.fail(404, "NoSuchKey", "The specified key does not exist.")
            st = os.stat(full)
            etag = md5_etag(full)
            mtime = st.st_mtime
            body_all = None
        base = [("ETag", etag), ("Accept-Ranges", "bytes"),
                ("Last-Modified", self.date_time_string(mtime))]
        if bucket in srv.versioned:
            if vid is None:
                vid = etag.strip('"')[:16]
                with open(full, "rb") as f:
                    data = f.read()
                with srv.lock:
                    srv.versions.setdefault((bucket, key, vid), (data, etag, mtime))
            base.append(("x-amz-version-id", vid))
        im = self.headers.get("If-Match")
        if im is not None and im != etag:
            return self.fail(412, "PreconditionFailed", "At least one of the pre-conditions you "
                             "specified did not hold")
        size = len(body_all) if body_all is not None else os.path.getsize(full)
        rng = self.headers.get("Range")
        first, last, status = 0, size - 1, 200
        try:
            asked = testserver.byte_range(rng, size)
        except testserver.BadRange:
            asked = None   # ignored, as S3 does
        if asked is not None:
            first, last = asked
            if not testserver.satisfiable(first, last, size):
                self.record(416)
                return self.send_body(416, _error("InvalidRange", "The requested range is not "
                                                  "satisfiable"),
                                      base + [("Content-Range", "bytes */%d" % size)])
            status = 206
            base.append(("Content-Range", "bytes %d-%d/%d" % (first, last, size)))
        self.record(status)
        if body_all is not None:
            body = body_all[first:last + 1]
        else:
            with open(full, "rb") as f:
                f.seek(first)
                body = f.read(last - first + 1)
        self.send_body(status, body, base)

    def list_objects(self, bucket, query):
        """ListObjectsV2 (list-type=2) or ListObjects (v1): keys in UTF-8
        byte order, those with `delimiter` after the prefix rolled up
        into one CommonPrefixes each; max-keys counts both."""
        srv = self.server
        root = srv.buckets[bucket]

        def arg(name, default=""):
            return query.get(name, [default])[0]
        v2 = arg("list-type") == "2"
        prefix, delim = arg("prefix"), arg("delimiter")
        enc = arg("encoding-type")
        if enc not in ("", "url"):
            return self.fail(400, "InvalidArgument", "Invalid Encoding Method specified in Request")
        try:
            max_keys = min(int(arg("max-keys", "1000")), 1000)
        except ValueError:
            max_keys = -1
        if max_keys < 0:
            return self.fail(400, "InvalidArgument", "Provided max-keys not an integer or within "
                             "integer range")
        token = arg("continuation-token")
        if v2 and token:
            try:
                after = base64.b64decode(token, validate=True).decode()
            except ValueError:
                return self.fail(400, "InvalidArgument", "The continuation token provided is "
                                 "incorrect")
        else:
            after = arg("start-after") if v2 else arg("marker")
        with srv.lock:
            srv.list_pages += 1
        keys = []
        for d, _, files in os.walk(root):
            for f in files:
                k = os.path.relpath(os.path.join(d, f), root)
                if k.startswith(prefix) and k.encode() > after.encode():
                    keys.append(k)
        keys += [k for (b, k) in srv.aliases if b == bucket and k.startswith(prefix) and
                 k.encode() > after.encode()]
        keys.sort(key=lambda k: k.encode())
        page, more = [], False   # [(key or common prefix, is a prefix)]
        for k in keys:
            cut = k.find(delim, len(prefix)) if delim else -1
            name = k[:cut + len(delim)] if cut >= 0 else k
            if cut >= 0 and (name.encode() <= after.encode() or (page and page[-1][0] == name)):
                continue   # rolled up into a common prefix already given
            if len(page) == max_keys:
                more = max_keys > 0   # (max-keys=0: an empty page, not truncated)
                break
            page.append((name, cut >= 0))

        def text(v):
            v = urllib.parse.quote_plus(v, safe="/") if enc else v
            return escape(v, {'"': "&quot;", "'": "&apos;"})
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
               "<Name>%s</Name><Prefix>%s</Prefix>" % (bucket, text(prefix))]
        if delim:
            out.append("<Delimiter>%s</Delimiter>" % text(delim))
        out.append("<MaxKeys>%d</MaxKeys>" % max_keys)
        if enc:
            out.append("<EncodingType>url</EncodingType>")
        if v2:
            out.append("<KeyCount>%d</KeyCount>" % len(page))
            if token:
                out.append("<ContinuationToken>%s</ContinuationToken>" % escape(token))
            if arg("start-after"):
                out.append("<StartAfter>%s</StartAfter>" % text(arg("start-after")))
            if more:
                # Opaque to clients, as S3's are (base64: '+', '/', '='
                # to be encoded in the next request's query).
                out.append("<NextContinuationToken>%s</NextContinuationToken>"
                           % base64.b64encode(page[-1][0].encode()).decode())
        else:
            out.append("<Marker>%s</Marker>" % text(arg("marker")))
            if more and delim:   # without a delimiter clients go on from the last key
                out.append("<NextMarker>%s</NextMarker>" % text(page[-1][0]))
        out.append("<IsTruncated>%s</IsTruncated>" % ("true" if more else "false"))
        for k, is_prefix in page:
            if is_prefix:
                continue
            full = srv.aliases.get((bucket, k), os.path.join(root, k))
            st = os.stat(full)
            mtime = datetime.datetime.fromtimestamp(int(st.st_mtime), datetime.timezone.utc)
            out.append("<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>%s</ETag>"
                       "<Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>"
                       % (text(k), mtime.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                          escape(md5_etag(full), {'"': "&quot;"}), st.st_size))
        for k, is_prefix in page:
            if is_prefix:
                out.append("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % text(k))
        out.append("</ListBucketResult>")
        self.record(200)
        self.send_body(200, "".join(out).encode(), [("Content-Type", "application/xml")])


def start(buckets, users, public=(), expired=(), region="us-east-1", versioned=(), aliases=None):
    """Serves `buckets` ({name: folder}) on 127.0.0.1:(a free port) to
    `users` ({key id: (secret, session token or None)}); `public`: buckets
    unsigned requests may read; `expired`: session tokens refused as
    expired. Returns the server (.url, .log, .bad_signatures, .stop())."""
    # {(bucket, key): file}: keys no folder could hold, e.g. "m.gguf" beside
    # "m.gguf/inner.gguf" (S3 keys are names, not paths).
    return testserver.start(
        Handler, buckets={k: os.path.realpath(v) for k, v in buckets.items()},
        users=dict(users), public=set(public),
        versioned=set(versioned),   # x-amz-version-id, ?versionId= (bytes kept per version)
        versions={}, aliases=dict(aliases or {}), expired=set(expired), region=region,
        redirect_to=None, bad_signatures=0, list_pages=0)
