"""A misbehaving news-feed HTTP server on 127.0.0.1, shipped for tests and benchmarks.

Each path is a ``Route``: a body with a status and headers, optionally with conditional
GET (ETag / Last-Modified -> 304), or a misbehaviour that real feed servers show:
hanging before the headers, dripping one byte at a time forever, streaming forever,
announcing a huge body, redirecting (loops included), or gzip that inflates past a cap.
It records each request's path and headers so tests can check the User-Agent and the
validators that were sent.

    with FeedServer({"/feed.xml": Route(body=xml, etag='"v1"')}) as srv:
        fetch(srv.url("/feed.xml"), cfg)
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BEHAVIOURS = ("ok", "hang", "drip", "endless", "announce_big", "redirect", "gzip", "drop")


@dataclass(frozen=True, slots=True)
class Route:
    body: bytes = b""
    status: int = 200
    content_type: str = "application/rss+xml; charset=utf-8"
    behaviour: str = "ok"
    """One of BEHAVIOURS."""
    delay_s: float = 0.1
    """hang: seconds before anything is sent; drip: seconds between bytes."""
    location: str = ""
    """redirect: the Location header (absolute or relative)."""
    etag: str | None = None
    last_modified: str | None = None
    headers: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Seen:
    path: str
    headers: dict


class FeedServer:
    def __init__(self, routes: dict[str, Route] | None = None) -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        self.seen: list[Seen] = []
        self.stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="feed-server", daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def requests_to(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]

    def start(self) -> FeedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FeedServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _handler(server: FeedServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the body ends when the connection closes: no length needed to stream

        def log_message(self, *args) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            server.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}))
            route = server.routes.get(self.path)
            if route is None:
                return self._send(404, b"<html><body>not found</body></html>", "text/html")
            try:
                self._serve(route)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up, which is what the test wanted

        def _serve(self, r: Route) -> None:
            if r.behaviour == "hang":
                server.stopping.wait(r.delay_s)
                return self._send(r.status, r.body, r.content_type)
            if r.behaviour == "drop":
                self.close_connection = True
                return
            if r.behaviour == "redirect":
                return self._send(r.status if 300 <= r.status < 400 else 302, b"", "text/plain", {"Location": r.location})
            if _not_modified(self.headers, r):
                return self._send(304, b"", None, _validators(r))
            if r.behaviour == "announce_big":
                self.send_response(r.status)
                self.send_header("Content-Type", r.content_type)
                self.send_header("Content-Length", str(10**10))
                self.end_headers()
                self.wfile.write(r.body)
                return
            if r.behaviour in ("drip", "endless"):
                self.send_response(r.status)
                self.send_header("Content-Type", r.content_type)
                self.end_headers()
                self.wfile.write(b'<?xml version="1.0"?><rss version="2.0"><channel><title>never ends</title>')
                chunk = b" " if r.behaviour == "drip" else b"<!-- padding -->" * 4096
                while not server.stopping.is_set():
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    if r.behaviour == "drip":
                        server.stopping.wait(r.delay_s)
                return
            body, extra = r.body, dict(r.headers)
            if r.behaviour == "gzip":
                body = gzip.compress(body)
                extra["Content-Encoding"] = "gzip"
            self._send(r.status, body, r.content_type, {**_validators(r), **extra})

        def _send(self, status: int, body: bytes, content_type: str | None, headers: dict | None = None) -> None:
            self.send_response(status)
            if content_type:
                self.send_header("Content-Type", content_type)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)

    return Handler


def _validators(r: Route) -> dict:
    out = {}
    if r.etag:
        out["ETag"] = r.etag
    if r.last_modified:
        out["Last-Modified"] = r.last_modified
    return out


def _not_modified(headers, r: Route) -> bool:
    if r.etag and headers.get("If-None-Match") == r.etag:
        return True
    return bool(r.last_modified and not r.etag and headers.get("If-Modified-Since") == r.last_modified)

