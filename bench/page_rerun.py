"""Rerun time of each page on the sample: what a reviewer waits for after every click.

Each page runs once in Streamlit's AppTest on a fresh workspace holding the sample (the first run computes and
stores what the page needs: evidence, caches), then ``--reruns`` more times unchanged; printed per page: the first
run and the median rerun, in seconds. Compare two commits by running this on each, one after the other, on the
same machine (the figures are this machine's, with whatever else it runs).

    python bench/page_rerun.py [--reruns 5] [--pages case evidence agreement review judge]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("SUMCHECK_EMBEDDED_MODEL", "gemma3-270m")

PAGES = ("case", "evidence", "agreement", "review", "judge")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reruns", type=int, default=5)
    ap.add_argument("--pages", nargs="*", default=list(PAGES))
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sumcheck-rerun-"))
    os.environ["SUMCHECK_WORKSPACE"] = str(tmp / "ws.sqlite")
    os.environ["SUMCHECK_CONFIG"] = str(tmp / "settings.json")
    os.environ["SUMCHECK_CACHE_DIR"] = str(tmp / "cache")
    from streamlit.testing.v1 import AppTest

    print(f"{'page':<12} {'first run s':>12} {'median rerun s':>15}")
    for page in a.pages:
        at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=600)
        t0 = time.perf_counter()
        at.run()
        first = time.perf_counter() - t0
        if at.exception:
            print(f"{page:<12} exception: {at.exception[0].value}")
            continue
        times = []
        for _ in range(a.reruns):
            t0 = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t0)
        print(f"{page:<12} {first:>12.2f} {statistics.median(times):>15.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
