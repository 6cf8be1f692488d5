#!/usr/bin/env python3
"""Size of mbsim's result files against the raw data they hold (issue 15, item 6).

Each case runs the chain of ``benchmarks/chain.py`` (N bodies, each with a spring, a damper and a
torsional damper) for the given number of frames and writes the HDF5 file as ``mbsim run`` does;
the table gives the file's size on disk, the raw bytes of its per-frame datasets (frames × the
bytes of one frame, ``mbsim.resources.frame_bytes``), and their ratio.  Figures only.

Usage::

    python benchmarks/filesize.py                       # 3 frames of 1 body, 1000 frames of 100 bodies, …
    python benchmarks/filesize.py --case 10 500
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from chain import DT, chain_dict  # noqa: E402

from mbsim import driver  # noqa: E402
from mbsim.resources import frame_bytes  # noqa: E402
from mbsim.scenario import scenario_from_dict  # noqa: E402

CASES = ((1, 3), (1, 1000), (100, 3), (100, 1000), (1000, 100))


def measure(n: int, frames: int, folder: str) -> dict:
    """Run the N-body chain storing ``frames`` frames (a frame every step) and size its file."""
    d = chain_dict(n, frames - 1)
    d["output"]["interval"] = DT
    sc = scenario_from_dict(d)
    path = os.path.join(folder, f"chain-{n}-{frames}.h5")
    s = driver.run(sc, path, write=True, overwrite=True)
    if s.status != "completed" or s.frames != frames:
        raise SystemExit(f"N = {n}: run {s.status}, {s.frames} frames: {s.message}")
    raw = frames * frame_bytes(len(sc.bodies), len(sc.connectors), len(sc.joints))
    return {"n": n, "frames": frames, "file": os.path.getsize(path), "raw": raw, "wall_s": s.wall_time_s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", type=int, nargs=2, action="append", metavar=("N", "FRAMES"),
                    help="bodies and frames of a case (repeatable; default: " +
                         ", ".join(f"{n} x {f}" for n, f in CASES) + ")")
    args = ap.parse_args(argv)
    cases = [tuple(c) for c in args.case] if args.case else CASES
    print(f"{'N':>6} {'frames':>7} {'file kB':>10} {'raw kB':>10} {'file/raw':>9}")
    with tempfile.TemporaryDirectory() as folder:
        for n, frames in cases:
            r = measure(n, frames, folder)
            print(f"{r['n']:>6} {r['frames']:>7} {r['file'] / 1e3:>10.1f} {r['raw'] / 1e3:>10.1f} "
                  f"{r['file'] / r['raw']:>9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
