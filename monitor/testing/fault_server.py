"""A fault-injecting OpenAI-compatible HTTP server on 127.0.0.1, shipped for tests and benchmarks.

It answers ``POST /v1/chat/completions`` and ``POST /v1/completions`` (and ``GET /v1/models``)
with deterministic text, and a *plan* decides per request whether to misbehave: 429 with
Retry-After, 500, a slow answer, malformed JSON, empty content, a dropped connection, a
rejected key, or a request held open until the test releases it. It counts what it saw,
including how many times each distinct request body was *paid for* (answered 200 with a
completion), which is how tests prove that a resumed cycle repeats no paid request.

    with FaultServer(first_attempt_faults(["429", "500", "drop"])) as server:
        ... deployment base_url = server.url ...
        server.stats.paid   # Counter: request-body hash -> answered completions

Also runnable: ``python -m monitor.testing.fault_server --port 8099 --latency 0.2``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KINDS = ("ok", "429", "500", "slow", "malformed", "empty", "refusal", "drop", "hang", "401")
REFUSAL_TEXT = "I'm sorry, but I can't help with that request."


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str = "ok"
    retry_after: float | None = 0.05
    """Seconds sent in Retry-After with a 429 (None: no header)."""
    delay_s: float = 2.0
    """How long a ``slow`` answer takes (make it longer than the client's timeout to force one)."""


@dataclass(frozen=True, slots=True)
class Seen:
    """What a plan knows about one incoming request."""

    n: int
    """0-based index of the request among all requests the server received."""
    body_hash: str
    attempt: int
    """0 for the first time this exact body arrives, 1 for the first repeat, ..."""
    body: dict


Plan = Callable[[Seen], "Fault | str"]


def always(kind: str, **kw) -> Plan:
    fault = Fault(kind, **kw)
    return lambda seen: fault


def first_attempt_faults(kinds: Sequence[str], **kw) -> Plan:
    """The k-th distinct body to arrive gets ``kinds[k % len(kinds)]`` on its first attempt; every repeat is answered.

    So any run with at least ``len(kinds)`` distinct requests meets every kind at least once.
    """
    faults = [Fault(k, **kw) for k in kinds]
    counter = itertools.count()
    lock = threading.Lock()

    def plan(seen: Seen) -> Fault:
        if seen.attempt:
            return Fault("ok")
        with lock:
            k = next(counter)
        return faults[k % len(faults)]

    return plan


def sequence(kinds: Sequence[str], **kw) -> Plan:
    """The n-th request overall gets ``kinds[n]``; later requests are answered."""
    faults = [Fault(k, **kw) for k in kinds]
    return lambda seen: faults[seen.n] if seen.n < len(faults) else Fault("ok")


@dataclass
class Stats:
    requests: int = 0
    answered: int = 0
    """200 responses with a completion (including empty content)."""
    by_kind: Counter = field(default_factory=Counter)
    paid: Counter = field(default_factory=Counter)
    """body hash -> completions answered for it."""
    attempts: Counter = field(default_factory=Counter)
    """body hash -> times received."""
    max_in_flight: int = 0
    auth_headers: set = field(default_factory=set)
    """Authorization headers received, so a test can prove the key really was sent."""


class FaultServer:
    def __init__(self, plan: Plan | None = None, *, latency_s: float = 0.0, model: str = "fault-model-v1",
                 echo_key_in_errors: bool = False, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the fault server binds loopback only")
        self.plan = plan or always("ok")
        self.latency_s = latency_s
        self.model = model
        self.echo_key_in_errors = echo_key_in_errors
        self.stats = Stats()
        self._lock = threading.Lock()
        self._in_flight = 0
        self._hold_after: int | None = None
        self._release = threading.Event()
        self._held = 0
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.request_queue_size = 256
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FaultServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def hold_after(self, answered: int) -> None:
        """Once ``answered`` completions were paid, hold every later request open (never answered)."""
        self._release.clear()
        self._hold_after = answered

    def drop_held(self) -> None:
        """Close the held requests without an answer (they are not paid) and stop holding."""
        self._hold_after = None
        self._release.set()

    @property
    def held(self) -> int:
        return self._held

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    # -- request handling (called from handler threads) --

    def _decide(self, body: dict, raw: bytes) -> tuple[Fault, str]:
        digest = hashlib.sha256(raw).hexdigest()[:16]
        with self._lock:
            n = self.stats.requests
            self.stats.requests += 1
            attempt = self.stats.attempts[digest]
            self.stats.attempts[digest] += 1
            self._in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
            hold = self._hold_after is not None and self.stats.answered >= self._hold_after
        fault = Fault("hang") if hold else self.plan(Seen(n, digest, attempt, body))
        fault = Fault(fault) if isinstance(fault, str) else fault
        with self._lock:
            self.stats.by_kind[fault.kind] += 1
        return fault, digest

    def _done(self, digest: str, paid: bool) -> None:
        with self._lock:
            self._in_flight -= 1
            if paid:
                self.stats.answered += 1
                self.stats.paid[digest] += 1

    def _hang(self) -> None:
        with self._lock:
            self._held += 1
        self._release.wait()


def answer_text(body: dict) -> str:
    """Deterministic, plausible answer for a request body."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    moods = ("This matters to me because it changes my costs.", "I feel hopeful about this news.",
             "It worries me and my neighbours.", "It has little effect on my daily life.")
    return f"{moods[int(digest[:4], 16) % len(moods)]} (ref {digest[:6]})"


def _completion(server: FaultServer, path: str, body: dict, content: str) -> dict:
    prompt = body.get("prompt") or " ".join(m.get("content", "") for m in body.get("messages", []))
    usage = {"prompt_tokens": max(1, len(str(prompt)) // 4), "completion_tokens": len(content.split())}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    base = {"id": "cmpl-fault", "created": int(time.time()), "model": server.model, "usage": usage,
            "system_fingerprint": "fp_fault"}
    if path.endswith("/chat/completions"):
        return {**base, "object": "chat.completion", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}
    return {**base, "object": "text_completion", "choices": [
        {"index": 0, "finish_reason": "stop", "text": content, "logprobs": None}]}


def _handler_for(server: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real APIs do; every reply sets Content-Length
        disable_nagle_algorithm = True  # headers and body go out in two writes: Nagle would add ~40 ms to each reply

        def log_message(self, *args) -> None:  # quiet: tests read stats, not access logs
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.endswith(("/chat/completions", "/completions")):
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, {"error": {"message": "request body is not JSON"}})
                return
            auth = self.headers.get("Authorization")
            if auth:
                with server._lock:
                    server.stats.auth_headers.add(auth)
            fault, digest = server._decide(body, raw)
            paid = False
            try:
                paid = self._serve(fault, body, auth or "")
            finally:
                server._done(digest, paid)

        def _serve(self, fault: Fault, body: dict, auth: str) -> bool:
            if server.latency_s:
                time.sleep(server.latency_s)
            kind = fault.kind
            echo = f" (received Authorization: {auth})" if server.echo_key_in_errors else ""
            if kind == "hang":
                server._hang()
                kind = "drop"
            if kind == "drop":
                self.close_connection = True
                return False
            if kind == "429":
                headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
                self._json(429, {"error": {"message": "Rate limit reached, slow down", "type": "rate_limit"}}, headers)
                return False
            if kind == "500":
                self._json(500, {"error": {"message": f"internal error{echo}", "type": "server_error"}})
                return False
            if kind == "401":
                key = auth.removeprefix("Bearer ").strip()
                shown = key if server.echo_key_in_errors else "***"
                self._json(401, {"error": {"message": f"Incorrect API key provided: {shown}", "type": "invalid_request_error"}})
                return False
            if kind == "malformed":
                self._send(200, b'{"id": "cmpl-broken", "choices": [{"index": 0, "message": {"content": "tru', "application/json")
                return False
            if kind == "slow":
                time.sleep(fault.delay_s)
            content = {"empty": "", "refusal": REFUSAL_TEXT}.get(kind) if kind in ("empty", "refusal") else answer_text(body)
            return self._json(200, _completion(server, self.path, body, content))

        def _json(self, status: int, payload: dict, headers: dict | None = None) -> bool:
            return self._send(status, json.dumps(payload).encode(), "application/json", headers)

        def _send(self, status: int, data: bytes, ctype: str, headers: dict | None = None) -> bool:
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                return True
            except OSError:  # the client went away (timed out or was killed): nothing was delivered
                self.close_connection = True
                return False

    return Handler


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - manual use
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    parser.add_argument("--faults", default="", help="comma-separated kinds for first attempts, e.g. 429,500,drop")
    args = parser.parse_args(argv)
    plan = first_attempt_faults(args.faults.split(",")) if args.faults else None
    server = FaultServer(plan, latency_s=args.latency, port=args.port)
    print(f"fault server on {server.url}", flush=True)
    server.start()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
