"""``mbsim export RESULT.h5 --csv DIR --vtk DIR``: a result as tidy CSV tables and as a
ParaView time series (:mod:`mbsim.export`)."""
from __future__ import annotations

import os

from ._util import EXIT_INVALID, EXIT_OK, _count, _err, _out, _positive_int
from .visual import load, need

EXPORT_EPILOG = """CSV (--csv DIR): bodies.csv (one row per frame x body), connectors.csv (one row
per frame x connector), energy.csv (one row per frame), and for a result with
joints joints.csv (one row per frame x joint: reaction force and moment on
body A, position and angle errors). One header row whose
column names end in the unit (x_m, vx_m_s, fx_N, mx_N_m, kinetic_J; no
suffix: dimensionless), numbers exact to the last bit, nan where a value does
not exist; pandas.read_csv reads them as they are.

VTK (--vtk DIR): RESULT_000000.vtu ... (one per frame, written with meshio:
body centres as vertices with their axes and velocity, connectors and joints
as lines with force and moment, joints with their axis and constraint errors)
and RESULT.pvd, the time series to open in ParaView.
Needs meshio (pip install 'mbsim[vtk]').

Directories are created if needed; files of the same names are replaced.

exit codes: 0 written, 2 missing or unreadable result, no --csv or --vtk,
meshio not installed, a directory that cannot be written

examples:
  mbsim export out/pendulum.h5 --csv out/pendulum-csv
  mbsim export out/chain.h5 --vtk out/chain-vtk --every 5
  mbsim export out/chain.h5 --csv tables --vtk paraview
"""


def register(sub, common, fmt) -> None:
    """Add ``export`` to ``sub``."""
    e = sub.add_parser("export", parents=[common], formatter_class=fmt,
                       help="export a result as CSV tables or a ParaView (VTK) time series",
                       description="Export a trajectory file written by `mbsim run`: tidy CSV tables "
                                   "(--csv) and/or a ParaView time series of body frames and connector "
                                   "and joint lines (--vtk). Give at least one of them.",
                       epilog=EXPORT_EPILOG)
    e.add_argument("result", metavar="RESULT", help="result file (.h5)")
    e.add_argument("--csv", metavar="DIR", help="write bodies.csv, connectors.csv, energy.csv (and joints.csv "
                                                "with joints) into DIR")
    e.add_argument("--vtk", metavar="DIR", help="write one .vtu per frame and a .pvd collection into DIR")
    e.add_argument("--every", type=_positive_int, default=1, metavar="N",
                   help="keep every N-th stored frame: 0, N, 2N, ... (default 1: all)")
    e.add_argument("--quiet", action="store_true", help="print only errors")
    e.set_defaults(handler=_cmd_export)


def _cmd_export(args) -> int:
    if not args.csv and not args.vtk:
        _err("nothing to export: give --csv DIR, --vtk DIR or both (mbsim export --help)")
        return EXIT_INVALID
    if args.vtk and not need("meshio"):
        return EXIT_INVALID
    traj = load(args.result, args.quiet)
    if traj is None:
        return EXIT_INVALID
    from .. import export
    from ..viz.geometry import frame_indices
    n = len(frame_indices(traj, args.every))
    try:
        if args.csv:
            paths = export.export_csv(traj, args.csv, every=args.every)
            if not args.quiet:
                B, C = len(traj["bodies/name"]), len(traj["connectors/name"])
                J = len(traj.get("joints/name", ()))
                joints = f", {paths['joints'].name} ({n * J} rows)" if "joints" in paths else ""
                _out(f"wrote {_count(n, 'frame')} to {args.csv}: {paths['bodies'].name} ({n * B} rows), "
                     f"{paths['connectors'].name} ({n * C} rows), {paths['energy'].name} ({n} rows){joints}")
        if args.vtk:
            pvd = export.export_vtk(traj, args.vtk, every=args.every, stem=export.default_stem(args.result))
            if not args.quiet:
                _out(f"wrote {_count(n, 'frame')} to {args.vtk}: {n} .vtu files and {pvd.name} "
                     f"(open {os.path.join(args.vtk, pvd.name)} in ParaView)")
    except OSError as exc:
        where = exc.filename or (args.vtk if args.vtk else args.csv)
        _err(f"cannot write {where} ({exc.strerror or exc}); choose another directory")
        return EXIT_INVALID
    return EXIT_OK
