"""Stereotype-probe throughput: the local Gemma log-likelihood probe over the demo seed, the
forced-choice path with an instant fake model (the probe's own overhead: prompt, parse,
one SQLite transaction per result), and the SeeGULL import.

No target is set by the issue; the figures tell how long `framewatch demo` and a scheduled
probe take. The Gemma model is loaded and warmed before the clock starts.

    .venv/bin/python bench/bench_stereo.py [--threads N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "stereotypes"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=None, help="FRAMEWATCH_THREADS for llama.cpp (default: as set)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.threads:
        os.environ["FRAMEWATCH_THREADS"] = str(args.threads)

    from monitor import config as config_mod
    from monitor.stereo.probe import probe
    from monitor.stereo.seed import load_demo_seed
    from monitor.stereo.importers import import_file
    from monitor.stereo.logprobs import LlamaScorer
    from monitor.types import Completion
    from store import open_writer

    out: dict = {"machine": f"{platform.machine()} {os.cpu_count()} cores", "python": platform.python_version(),
                 "load_avg_start": os.getloadavg()[0], "threads": os.environ.get("FRAMEWATCH_THREADS", "default")}
    with tempfile.TemporaryDirectory() as tmp:
        db = open_writer(Path(tmp) / "bench.db")
        n = load_demo_seed(db)
        cfg = config_mod.load(None)
        dep = cfg.deployment("gemma-plain")
        LlamaScorer(dep).score_pair("Hola.", "Buenos días.", "Buenas tardes.")  # load + warm
        t = time.perf_counter()
        probe(db, cfg, ["gemma-plain"], seed=0)
        gemma_s = time.perf_counter() - t
        out["gemma_items"] = n
        out["gemma_s"] = round(gemma_s, 2)
        out["gemma_items_per_s"] = round(n / gemma_s, 2)

        class Instant:
            name = "instant"

            def complete(self, request):
                return Completion(text="A", model_reported="instant")

        chat = config_mod.parse({"deployments": [{"name": "chat", "provider": "scripted", "prompt_style": "chat"}]},
                                where="bench", base=Path(tmp))
        t = time.perf_counter()
        for seed in range(10):
            probe(db, chat, seed=seed, provider_factory=lambda d: Instant())
        out["choice_items_per_s"] = round(10 * n / (time.perf_counter() - t), 1)

        for name in ("seegull-multilingual_es_in_MX.csv", "seegull-multilingual_es_in_ES.csv"):
            if (SHARED / name).exists():
                t = time.perf_counter()
                r = import_file(db, SHARED / name, "seegull")
                out[f"import_{name}_rows_per_s"] = round(r.rows_read / (time.perf_counter() - t))
    out["load_avg_end"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
