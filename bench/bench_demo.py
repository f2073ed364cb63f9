"""Time `framewatch demo --no-serve --fresh` end to end (issue 2: at most 10 minutes on 2 cores).

Model compile and install are excluded (the venv exists); the model load, three cycles over
the sample news with two local Gemma deployments, scoring with MiniLM and the stereo demo
probe are included. Prints JSON with the wall time and the stored counts.

    .venv/bin/python bench/bench_demo.py [--db /tmp/framewatch-bench-demo.db]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 600


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="/tmp/framewatch-bench-demo.db")
    args = parser.parse_args()
    cli = Path(sys.executable).with_name("framewatch")
    started = time.perf_counter()
    proc = subprocess.run([str(cli), "demo", "--no-serve", "--fresh", "--db", args.db], cwd=REPO,
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-4000:], file=sys.stderr)
        return proc.returncode
    conn = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    counts = {t: conn.execute(f"select count(*) from {t}").fetchone()[0]  # noqa: S608 (fixed table names)
              for t in ("batches", "articles", "responses", "cells", "stereo_probe_results")}
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "wall_s": round(wall, 1), "target_s": TARGET_S, "ratio_to_target": round(wall / TARGET_S, 3),
        "counts": counts, "load_average_after": os.getloadavg(),
    }
    print(json.dumps(result, indent=2))
    return 0 if wall <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
