"""Generate the dashboard's scale-benchmark store: about 1,000,000 responses.

52 weekly batches x 6 deployments x 9 articles x the full grid (7 families x (42 identities
+ 7 placebo labels + 3 identity-free repeats)) = 1,022,112 responses with 384-dimensional
float32 embeddings, 117,936 cells, FTS indexes, runs, feeds and polls. Rows are written
directly (tests/fixtures_store.py), no model involved.

    .venv/bin/python bench/make_store.py [--db data/bench-1m.db] [--batches 52]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from fixtures_store import StoreSpec, build_store  # noqa: E402

DEPLOYMENTS = ("gemma-plain", "gemma-neutral", "hosted-a", "hosted-b", "local-c", "local-d")


def scale_spec(batches: int = 52) -> StoreSpec:
    return StoreSpec(batches=batches, deployments=DEPLOYMENTS, articles_per_batch=9, paraphrases=1,
                     identity_samples=1, repeats=3, placebo=True, bulk=True, hostile_title=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=REPO / "data" / "bench-1m.db")
    ap.add_argument("--batches", type=int, default=52)
    args = ap.parse_args()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{args.db}{suffix}").unlink(missing_ok=True)
    t0 = time.perf_counter()
    counts = build_store(args.db, scale_spec(args.batches),
                         progress=lambda done, total: print(f"\rbatch {done}/{total}", end="", flush=True))
    print()
    size = args.db.stat().st_size / 2**30
    print(f"{counts['responses']:,} responses, {counts['cells']:,} cells, {counts['articles']} articles, "
          f"{counts['prompts']:,} prompts in {time.perf_counter() - t0:.0f} s; {args.db} is {size:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
