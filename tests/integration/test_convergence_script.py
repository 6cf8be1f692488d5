"""benchmarks/convergence.py runs end to end on a tiny setting and writes its figure.

The figure's content is not checked (the orders it shows are asserted in
tests/verification/test_convergence.py); only that the script completes (with
``--febio``, whose integrator subclass depends on GeneralizedAlpha's
internals), prints its table and writes a PNG of the documented size.
"""
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "convergence.py"
WIDTH, HEIGHT = 900, 650  # FIGSIZE_IN × DPI in the script


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (bytes 16–24)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", "not a PNG file"
    return struct.unpack(">II", head[16:24])


def test_convergence_script_writes_table_and_figure(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "convergence.png"
    r = subprocess.run([sys.executable, str(SCRIPT), "--steps", "4e-3", "2e-3", "--end", "0.05", "--rho", "0.5", "1",
                        "--febio", "-o", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [ln.split()[:3] for ln in r.stdout.splitlines() if ln.startswith(("mbsim ", "FEBio "))]
    assert rows == [[scheme, rho, dt] for scheme in ("mbsim", "FEBio") for rho in ("0.50", "1.00")
                    for dt in ("4.0e-03", "2.0e-03")]
    assert out.is_file() and out.stat().st_size > 10_000
    assert png_size(out) == (WIDTH, HEIGHT)
    assert out.stat().st_size <= 150_000
