"""What the test servers (rangeserver.py, s3server.py, hubserver.py) share:
a threaded HTTP/1.1 server on a free port of a loopback address, over TLS
when given a certificate, with a lock, a request log and a stop; and a
request handler with the pieces each of them answers with (a plain
answer, a byte range, a body written to a client that may have gone).

A server is written as a Handler subclass with `serve(head)`, started with
start(HandlerClass, host, tls, name=value...) (the names become attributes
of the server, which the handler reads as self.server.NAME):

    srv = testserver.start(MyHandler, tls=(cert, key), root=folder)
    ... srv.url, srv.log (what the handler recorded), srv.stopped ...
    srv.stop()

Handlers are bounded: those that wait (a stalled body) wait on
srv.stopped, which stop() sets, so a stop ends them at once.
"""
import http.server
import socketserver
import ssl
import threading


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    @property
    def stopping(self):
        return self.stopped.is_set()


def start(handler, host="127.0.0.1", tls=None, **attrs):
    """A Server of `handler` on host:(a free port), over TLS with
    tls=(certfile, keyfile), serving in a thread of its own; `attrs` set
    on it before the first request. It has .url, .lock, .log (a list for
    the handler's records), .stopped (an Event) and .stop()."""
    srv = Server((host, 0), handler)
    if tls is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*tls)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.lock = threading.Lock()
    srv.log = []
    srv.stopped = threading.Event()
    srv.url = "%s://%s:%d" % ("https" if tls else "http", host, srv.server_address[1])
    for k, v in attrs.items():
        setattr(srv, k, v)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    def stop():
        srv.stopped.set()
        srv.shutdown()
        srv.server_close()
    srv.stop = stop
    return srv


class BadRange(Exception):
    """A Range header that is no `bytes=A-B`, `bytes=A-` or `bytes=-N`."""


def byte_range(rng, size):
    """(first, last) of the one range `rng` (a Range header's value) asks
    of `size` bytes, None for no range (or one of another unit); raises
    BadRange for a range that is not a number, and returns (first, last)
    with first > last or first >= size for one that is unsatisfiable
    (416: see satisfiable())."""
    if not rng or not rng.startswith("bytes="):
        return None
    a, _, b = rng[len("bytes="):].partition("-")
    try:
        if a == "":
            return max(0, size - int(b)), size - 1
        return int(a), min(int(b), size - 1) if b else size - 1
    except ValueError:
        raise BadRange(rng) from None


def satisfiable(first, last, size):
    return first < size and first <= last


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: with Nagle on, the body
    # waited for the client's delayed ACK of the headers, 40 ms per answer
    # on a kept-alive connection (modelfs-ls --check of 30 URLs: 1.4 s
    # against 0.2 s).
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.serve(head=True)

    def do_GET(self):
        self.serve(head=False)

    def serve(self, head):
        raise NotImplementedError

    def header_dict(self):
        """Every header of the request, by lower-case name."""
        return {k.lower(): v for k, v in self.headers.items()}

    def send_plain(self, code, headers=(), body=b""):
        """An answer of `code` with `headers` and `body` (not sent to a HEAD)."""
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.write(body)

    def write(self, data):
        """Writes `data`; False (and the connection to be closed) when the
        client has gone."""
        try:
            self.wfile.write(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return False
