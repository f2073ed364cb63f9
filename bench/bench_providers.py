"""Throughput of the generate stage against a loopback OpenAI-compatible server with fixed latency.

Target (issue 4): at concurrency 32 and 200 ms per request, throughput >= 90% of
concurrency / latency = 160 requests/s. The whole real path is measured: generate_batch,
the openai client over HTTP, retries wrapper, refusal check, one SQLite transaction per
response. Planning (expansion, rendering, prompt upserts, cache lookup) is timed apart.
The server (monitor.testing.fault_server) runs in its own process, as a real endpoint would,
so it does not share the client's interpreter lock.

    .venv/bin/python bench/bench_providers.py [--concurrency 32] [--latency 0.2] [--articles 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor import config  # noqa: E402
from monitor.generate import generate_batch  # noqa: E402
from monitor.testing.processes import free_port  # noqa: E402
from store import open_writer  # noqa: E402


def run(concurrency: int, latency: float, articles: int) -> dict:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "monitor.testing.fault_server", "--port", str(port), "--latency", str(latency)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    try:
        server.stdout.readline()  # "fault server on ...": it is listening
        return _measure(f"http://127.0.0.1:{port}/v1", concurrency, latency, articles)
    finally:
        server.terminate()
        server.wait(timeout=10)


def _measure(url: str, concurrency: int, latency: float, articles: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "framewatch.toml"
        path.write_text(textwrap.dedent(f"""
            [store]
            path = "bench.db"
            [[deployments]]
            name = "loopback"
            provider = "openai"
            model = "bench"
            base_url = "{url}"
            prompt_style = "chat"
            concurrency = {concurrency}
            timeout_s = 30.0
            [grid]
            families = ["all"]
            dimensions = ["all"]
            repeats = 3
            """), encoding="utf-8")
        cfg = config.load(path)
        db = open_writer(cfg.db_path)
        with db.conn:
            db["batches"].insert({"id": "bench", "label": "bench", "status": "closed"}, pk="id")
            for i in range(articles):
                db["articles"].insert({"id": f"a{i}", "batch_id": "bench", "title": f"Bench headline {i}",
                                       "summary": "A summary of typical length for a news item. " * 6, "sampled": 1}, pk="id")
        marks: dict[str, float] = {}

        def progress(done: int, total: int) -> None:
            now = time.perf_counter()
            marks.setdefault("first", now)
            marks["last"] = now

        cpu_before = _cpu_s()
        started = time.perf_counter()
        report = generate_batch(db, cfg, "bench", "bench-run", progress=progress)
        elapsed = time.perf_counter() - started
        cpu = _cpu_s() - cpu_before
        window = marks["last"] - marks["first"]
        ideal = concurrency / latency
        return {
            "requests": report.requested, "errors": report.errors, "client_cpu_ms_per_request": round(cpu / report.requested * 1000, 2),
            "planning_s": round(marks["first"] - started, 2), "generate_s": round(window, 2), "total_s": round(elapsed, 2),
            "throughput_rps": round(report.requested / window, 1), "ideal_rps": round(ideal, 1),
            "ratio": round(report.requested / window / ideal, 3),
        }


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--articles", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="runs; the median ratio is reported")
    args = parser.parse_args()
    results = [run(args.concurrency, args.latency, args.articles) for _ in range(args.repeat)]
    for r in results:
        print(r)
    ratios = sorted(r["ratio"] for r in results)
    median = ratios[len(ratios) // 2]
    print(f"machine: {platform.machine()} {platform.system()} python {platform.python_version()}")
    print(f"concurrency {args.concurrency}, latency {args.latency * 1000:.0f} ms: median ratio {median:.3f} "
          f"(target >= 0.90) over {len(results)} runs; ratios {ratios}")
    sys.exit(0 if median >= 0.90 else 1)


if __name__ == "__main__":
    main()
