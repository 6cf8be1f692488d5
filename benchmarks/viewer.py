#!/usr/bin/env python3
"""``mbsim view``'s page: its size and how fast it plays, for chains of 10, 100 and 1000 bodies.

Each chain (``benchmarks/chain.py``) runs 1000 steps with a frame at every step (1001 frames); its page
(``mbsim.viz.view.page``) is written and opened in headless Chromium (Debian's ``chromium``, driven by
playwright, software WebGL: a laptop's GPU draws faster), played at full speed for ``--seconds``; printed:
the page's size, the time to make it, the time until the page has drawn its first frame, and the frames
drawn per second while playing (each a new pose of every body).

Usage::

    python benchmarks/viewer.py [--n 10 100 1000] [--steps 1000] [--seconds 3]

A page holds at most ``mbsim.viz.view.PAGE_BYTES`` of frames: "in page" is how many it shows.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MBSIM_FIRST_RUN", "compile")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import mbsim  # noqa: E402
from mbsim.io.reader import read_trajectory  # noqa: E402
from mbsim.viz.view import page  # noqa: E402

from chain import chain_dict  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--steps", type=int, default=1000, help="steps of each run, a frame at each (default 1000)")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("no chromium: apt-get install chromium")
        return 2
    work = Path(tempfile.mkdtemp())
    print(f"{'bodies':>7} {'frames':>7} {'in page':>8} {'page MB':>8} {'make s':>7} {'first draw s':>13} {'frames/s playing':>17}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium,
                                    args=["--enable-unsafe-swiftshader", "--use-angle=swiftshader"])
        for n in args.n:
            d = chain_dict(n, args.steps)
            d["output"] = {"interval": d["time"]["step"]}
            out = work / f"chain{n}.h5"
            mbsim.simulate(d, output=out, overwrite=True).raise_for_status()
            traj = read_trajectory(str(out))
            t0 = time.perf_counter()
            html = page(traj)
            make = time.perf_counter() - t0
            path = work / f"chain{n}.html"
            path.write_text(html, encoding="utf-8")
            tab = browser.new_page(viewport={"width": 1280, "height": 800}, bypass_csp=True)
            t0 = time.perf_counter()
            tab.goto(path.as_uri())
            tab.wait_for_function("window.VIEWER && window.VIEWER.ready && window.VIEWER.rendered > 0", timeout=120000)
            first = time.perf_counter() - t0
            tab.select_option("#speed", "10")
            before = tab.evaluate("VIEWER.rendered")
            tab.click("#play")
            t0 = time.perf_counter()
            tab.wait_for_timeout(1000 * args.seconds)
            drawn = tab.evaluate("VIEWER.rendered") - before
            shown = tab.evaluate("VIEWER.nframes")
            fps = drawn / (time.perf_counter() - t0)
            tab.close()
            print(f"{n:>7} {len(traj['time']):>7} {shown:>8} {len(html.encode()) / 1e6:>8.2f} {make:>7.2f} {first:>13.2f} {fps:>17.1f}")
        browser.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
