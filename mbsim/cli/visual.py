"""``mbsim plot RESULT.h5`` and ``mbsim animate RESULT.h5``: pictures of a result
(:mod:`mbsim.viz.plot`, :mod:`mbsim.viz.animate`)."""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from ._util import EXIT_INVALID, EXIT_OK, _err, _g, _isatty, _out, _positive_float, _positive_int

WHATS = ("dashboard", "energy", "motion", "forces", "joints", "solver")

PLOT_EPILOG = """what (--what):
  dashboard  everything on one page (default): energy budget and balance drift,
             body positions and 3D paths, connector forces and moments, joint
             reaction forces, Newton iterations, step sizes and residuals
  energy     kinetic, potential, dissipated energy, external work; drift of
             the balance K + V + D - W
  motion     x, y, z of the body centres over time and their 3D paths
  forces     |F| of springs and dampers, |M| of torsional dampers, lengths
  joints     |F| and |M| of the joint reactions (on body A, drives included),
             constraint errors (position [m], angle [rad]) on a log axis
  solver     Newton iterations, step size and final residual per frame

With many bodies, connectors or joints the plots show a selection (6 bodies
spread over the scenario order, the 8 connectors and the 8 joints with the
largest peaks) unless --bodies / --connectors / --joints name them. The format follows the extension of -o
(png, pdf, svg, ...); an existing file is replaced. No display is needed.

exit codes: 0 written, 2 missing or unreadable result, bad options, unknown
body, connector or joint name, matplotlib not installed, output not writable

A study folder (written by mbsim sweep) gives one figure of each metric against
each parameter: lines for a grid over one parameter, heat maps for a grid over
two, scatter plots for samples; units on the axes (--what and the name
selections do not apply).

examples:
  mbsim plot out/pendulum.h5                          dashboard -> out/pendulum-dashboard.png
  mbsim plot outputs/mass_spring_damper_study         a study -> outputs/mass_spring_damper_study/summary.png
  mbsim plot out/pendulum.h5 --what energy -o energy.png --size 1200x800
  mbsim plot out/chain.h5 --what motion --bodies link00 link49
  mbsim plot out/crank.h5 --what joints --joints crank-drive
"""

ANIMATE_EPILOG = """Bodies are drawn as the uniform boxes with their mass and inertia, with their
axes (x red, y green, z blue); fixed bodies and world as small grey cubes;
springs as coils, dampers as cylinders with a rod, torsional dampers as arcs
about their joint axis around body B; joints at their point: a hinge as a
short thick line along its axis, a slider as its rail with a carriage, a
cylindrical joint as rail and sleeve, a universal joint as the cross of its
axes, a planar joint as a square in its plane, a ball joint as a round
marker, a lock as a square one, a distance joint as a rod. The view and its
limits stay fixed.
An existing file is replaced. No display is needed.

--mode K animates mode K of a file written by `mbsim modes`, numbered from 1
as `mbsim info` lists them: one period of the mode about the state it was
linearized about, in 36 frames of phase (the clock shows the phase; a GIF
loops), each body displaced by amplitude x Re(shape e^(i phase)) and turned by
that rotation vector. The title gives the mode's frequency and damping ratio.
The shape's largest entry is 1; the amplitude multiplies it (metres for
translations, radians for rotations) and by default makes the largest
translation 10 % of the model's size and the largest rotation at most
0.3 rad; --amplitude sets it.

exit codes: 0 written, 2 missing or unreadable result, bad options, an
extension other than .gif or .mp4, MP4 without ffmpeg, matplotlib or Pillow
not installed, output not writable, --mode on a file without modes (or a
damaged /modes, or a mode it does not have)

examples:
  mbsim animate out/pendulum.h5                         -> out/pendulum.gif, real time at 25 fps
  mbsim animate out/pendulum.h5 -o swing.mp4 --fps 30   (needs ffmpeg)
  mbsim animate out/chain.h5 --every 2 --elev 10 --azim 0 --size 640x480
  mbsim animate out/chain-modes.h5 --mode 2             -> out/chain-modes-mode2.gif
  mbsim animate out/chain-modes.h5 --mode 1 --amplitude 0.05 -o first.gif
"""


def register(sub, common, fmt) -> None:
    """Add ``plot`` and ``animate`` to ``sub``."""
    p = sub.add_parser("plot", parents=[common], formatter_class=fmt,
                       help="plot a result: energy, motion, forces, joints, solver (PNG, PDF, SVG)",
                       description="Plot a trajectory file written by `mbsim run`: by default a dashboard of "
                                   "energy, motion, connector forces, joint reactions and solver work. Needs "
                                   "matplotlib "
                                   "(pip install 'mbsim[plot]').",
                       epilog=PLOT_EPILOG)
    p.add_argument("result", metavar="RESULT", help="result file (.h5), or the folder of a study (mbsim sweep)")
    p.add_argument("-o", "--output", metavar="FIG",
                   help="figure file; default: RESULT without .h5 plus -WHAT.png, beside it (a study folder: "
                        "DIR/summary.png)")
    p.add_argument("--what", choices=WHATS, help="which figure (default: dashboard)")
    p.add_argument("--bodies", nargs="+", metavar="NAME", help="bodies to show (dashboard, motion)")
    p.add_argument("--connectors", nargs="+", metavar="NAME", help="connectors to show (dashboard, forces)")
    p.add_argument("--joints", nargs="+", metavar="NAME", help="joints to show (dashboard, joints)")
    p.add_argument("--size", type=_size_arg, metavar="WxH",
                   help="figure size in pixels, e.g. 1200x800 (default depends on --what: dashboard "
                        "1800x1200, at least 1000x680; energy 1200x800, motion 1400x800, forces, joints "
                        "and solver 1200x900, each at least 480x360)")
    p.add_argument("--quiet", action="store_true", help="print only errors")
    p.set_defaults(handler=_cmd_plot)

    a = sub.add_parser("animate", parents=[common], formatter_class=fmt,
                       help="3D animation of a result (GIF, or MP4 with ffmpeg)",
                       description="Animate a trajectory file written by `mbsim run` in 3D, with a clock, "
                                   "or (--mode K) one mode of a file written by `mbsim modes`. "
                                   "GIF through Pillow, MP4 through ffmpeg. Needs matplotlib "
                                   "(pip install 'mbsim[plot]').",
                       epilog=ANIMATE_EPILOG)
    a.add_argument("result", metavar="RESULT", help="result file (.h5)")
    a.add_argument("-o", "--output", metavar="ANIM",
                   help="animation file, .gif or .mp4; default: RESULT with .gif instead of .h5 (with --mode K: "
                        "-modeK.gif), beside it")
    a.add_argument("--fps", type=_fps_arg, default=25.0, metavar="N",
                   help="frames per second of the animation (default 25)")
    a.add_argument("--every", type=_positive_int, metavar="N",
                   help="use every N-th stored frame, and always the last (default: the N that plays the motion "
                        "in real time)")
    a.add_argument("--elev", type=_angle_arg, default=20.0, metavar="DEG",
                   help="view elevation above the x-y plane in degrees (default 20)")
    a.add_argument("--azim", type=_angle_arg, default=-60.0, metavar="DEG",
                   help="view azimuth about z in degrees (default -60)")
    a.add_argument("--size", type=_size_arg, default=(800, 600), metavar="WxH",
                   help="size in pixels (default 800x600; even numbers for MP4)")
    a.add_argument("--mode", type=_positive_int, metavar="K",
                   help="animate mode K (from 1, as `mbsim info` numbers them) of a file written by `mbsim modes`: "
                        "one period of its shape about the stored state")
    a.add_argument("--amplitude", type=_positive_float, metavar="A",
                   help="with --mode: the factor on the mode's shape, whose largest entry is 1 (m for "
                        "translations, rad for rotations); default: the largest translation 10 %% of the "
                        "model's size, the largest rotation at most 0.3 rad")
    a.add_argument("--quiet", action="store_true", help="print only errors")
    a.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it is shown only when stderr is a terminal anyway)")
    a.set_defaults(handler=_cmd_animate)

    v = sub.add_parser("view", parents=[common], formatter_class=fmt,
                       help="interactive 3D view of a result in the browser (orbit, scrub, click, plot)",
                       description="Show a trajectory file written by `mbsim run` in the browser: orbit, pan "
                                   "and zoom; play, pause, scrub, speed, loop; a click on a body shows its "
                                   "values; a plot of a chosen channel with a cursor at the time shown. Served "
                                   "on 127.0.0.1 only, until Ctrl-C; with --html written as one self-contained "
                                   "page instead (nothing it needs is fetched: send it, attach it). Needs no "
                                   "extra package (docs/viewer.md).")
    v.add_argument("result", metavar="RESULT", help="result file (.h5)")
    v.add_argument("--html", metavar="OUT", help="write the page to OUT (.html) and serve nothing")
    v.add_argument("--every", type=_positive_int, default=None, metavar="N",
                   help="use every N-th stored frame, and always the last (default: all of them, or as few "
                        "as keep the page's frames within 128 MiB)")
    v.add_argument("--port", type=int, default=0, metavar="N",
                   help="serve on port N of 127.0.0.1 (default: a free one)")
    v.add_argument("--no-browser", action="store_true", help="only print the URL; do not open a browser")
    v.add_argument("--mode", type=_positive_int, metavar="K",
                   help="show mode K (from 1, as `mbsim info` numbers them) of a file written by `mbsim modes`: "
                        "one looping period of its shape about the stored state")
    v.add_argument("--amplitude", type=_positive_float, metavar="A",
                   help="with --mode: the factor on the mode's shape (default as for `mbsim animate --mode`)")
    v.add_argument("--quiet", action="store_true", help="print only errors")
    v.set_defaults(handler=_cmd_view)


# --------------------------------------------------------------------------
# argument types

def _size_arg(text: str):
    w, sep, h = text.lower().partition("x")
    try:
        size = (int(w), int(h)) if sep else None
    except ValueError:
        size = None
    if size is None:
        raise argparse.ArgumentTypeError(f"must be WIDTHxHEIGHT in pixels, e.g. 1200x800, got {text!r}")
    if not all(50 <= s <= 10000 for s in size):
        raise argparse.ArgumentTypeError(f"width and height must be 50 ... 10000 pixels, got {text!r}")
    return size


def _fps_arg(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of frames per second, got {text!r}") from None
    if not 0.1 <= x <= 100:  # GIF frame times are whole hundredths of a second
        raise argparse.ArgumentTypeError(f"must be 0.1 ... 100 frames per second, got {text!r}")
    return x


def _angle_arg(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an angle in degrees, got {text!r}") from None
    if not abs(x) <= 360:
        raise argparse.ArgumentTypeError(f"must be an angle in degrees, -360 ... 360, got {text!r}")
    return x


# --------------------------------------------------------------------------
# shared steps

def need(*packages) -> bool:
    """Import the optional ``packages``; print the install hint and return False when one is missing."""
    from ..viz import MissingDependency, require
    try:
        for p in packages:
            require(p)
    except MissingDependency as exc:
        _err(str(exc))
        return False
    return True


def load(path, quiet: bool = False):
    """The trajectory dict of the result at ``path``, or None after saying what is wrong.

    A result of a run that did not finish (status ``failed``, ``interrupted`` or
    ``running``) is used as far as it goes, with a note unless ``quiet``.
    """
    from ..viz.geometry import frame_count
    from .compare import _read_result
    traj, problem = _read_result(path)
    if problem:
        _err(problem)
        return None
    T = frame_count(traj)
    status = traj["attrs"].get("status")
    if T == 0:
        _err(f"{path}: holds no frames (status {status!r}); nothing to show")
        return None
    if status != "completed" and not quiet:
        _err(f"note: {path} has status {status!r}: using the {T} frames it holds, t = 0 … "
             f"{_g(traj['time'][T - 1])} s (`mbsim info {path}` says why the run stopped)")
    return traj


def beside(result: str, suffix: str) -> str:
    """``out/run.h5`` → ``out/run<suffix>``."""
    stem, ext = os.path.splitext(result)
    return (stem if ext.lower() in (".h5", ".hdf5") else result) + suffix


def check_extension(out: str) -> bool:
    """Whether matplotlib can write a figure with the extension of ``out`` (else say so)."""
    from ..viz import plot
    ext = os.path.splitext(out)[1].lower().lstrip(".")
    formats = plot.supported_formats()
    if ext not in formats:
        _err(f"cannot write {out!r}: the extension must be one of {', '.join(formats)} (e.g. .png)")
        return False
    return True


def save_figure(fig, out: str) -> bool:
    """Write ``fig`` to ``out`` (its folder made); False after saying why it could not be."""
    from ..viz import plot
    if not make_parent(out):
        return False
    try:
        plot.save(fig, out)
    except OSError as exc:
        _err(f"cannot write {out} ({exc.strerror or exc}); choose another -o path")
        return False
    return True


def make_parent(path: str) -> bool:
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        _err(f"cannot create the directory {parent} ({exc.strerror or exc}); choose another -o path")
        return False
    return True


# --------------------------------------------------------------------------
# commands

def _cmd_plot(args) -> int:
    if os.path.isdir(args.result):
        return _plot_study(args)
    args.what = args.what or "dashboard"
    if not need("matplotlib"):
        return EXIT_INVALID
    from ..viz import plot
    out = args.output or beside(args.result, f"-{args.what}.png")
    if not check_extension(out):
        return EXIT_INVALID
    traj = load(args.result, args.quiet)
    if traj is None:
        return EXIT_INVALID
    try:
        fig = plot.make(args.what, traj, bodies=args.bodies, connectors=args.connectors, joints=args.joints,
                        size=args.size)
    except plot.UnknownName as exc:
        _err(f"{exc}; check the names with `mbsim info {args.result}`")
        return EXIT_INVALID
    except plot.FigureTooSmall as exc:
        _err(f"{exc}; give a larger --size" + (" or plot one part (--what energy, motion, forces, joints or solver)"
                                               if args.what == "dashboard" else ""))
        return EXIT_INVALID
    if not save_figure(fig, out):
        return EXIT_INVALID
    if not args.quiet:
        w, h = fig.get_size_inches() * fig.dpi
        _out(f"wrote {out} ({args.what}, {round(w)}x{round(h)} px)")
        if args.what == "joints" and not plot.joint_names(traj):
            _err(f"note: {args.result} has no joints (its scenario has no joints: section); the figure says so")
    return EXIT_OK


def _plot_study(args) -> int:
    """``mbsim plot STUDY_DIR``: each metric of a study against each parameter (:mod:`mbsim.viz.study`)."""
    given = [f"--{k}" for k in ("what", "bodies", "connectors", "joints") if getattr(args, k)]
    if given:
        _err(f"{' and '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to a result file; {args.result} is a "
             f"folder, whose figure is each metric of the study against each parameter")
        return EXIT_INVALID
    if not need("matplotlib", "xarray", "h5netcdf"):
        return EXIT_INVALID
    from ..study import table
    from ..viz import plot, study
    summary = os.path.join(args.result, table.H5_NAME)
    if not os.path.isfile(summary):
        _err(f"{args.result}: a folder without {table.H5_NAME}; give a result file (.h5), or the folder "
             f"`mbsim sweep` wrote (it holds {table.H5_NAME} and {table.CSV_NAME})")
        return EXIT_INVALID
    out = args.output or os.path.join(args.result, "summary.png")
    if not check_extension(out):
        return EXIT_INVALID
    try:
        ds = table.read(summary)
    except (OSError, ValueError) as exc:
        _err(f"{summary}: cannot be read as the table of a study ({exc})")
        return EXIT_INVALID
    if "status" not in ds or "parameters" not in ds.attrs:
        _err(f"{summary}: not the table of an mbsim study (no status or parameters)")
        return EXIT_INVALID
    try:
        fig = study.plot_study(ds, size=args.size)
    except plot.FigureTooSmall as exc:
        _err(f"{exc}; give a larger --size")
        return EXIT_INVALID
    if not save_figure(fig, out):
        return EXIT_INVALID
    if not args.quiet:
        w, h = fig.get_size_inches() * fig.dpi
        _out(f"wrote {out} (study {ds.attrs.get('study', '')}, {round(w)}x{round(h)} px)")
    return EXIT_OK


def _cmd_view(args) -> int:
    traj = load(args.result, quiet=args.quiet)
    if traj is None:
        return EXIT_INVALID
    from ..io.reader import being_written
    from ..viz import view
    title = traj["attrs"].get("scenario_name") or None
    if args.mode is None and args.amplitude is not None:
        _err("--amplitude scales a mode's shape: give --mode K too (`mbsim info RESULT` lists the modes)")
        return EXIT_INVALID
    if args.mode is not None:  # one period of the mode, its time the phase over the frequency
        motion, modes = mode_motion_of(args, traj, "shows")
        if motion is None:
            return EXIT_INVALID
        f = float(modes["frequency"][args.mode - 1])
        period = 1.0 / f if f > 0 and not modes["rigid_body"][args.mode - 1] else 1.0
        traj = dict(motion.traj, time=motion.phases / (2.0 * np.pi) * period)
        title = motion.title
    every = args.every if args.every is not None else view.every_of(traj)
    if args.every is None and every > 1 and not args.quiet:
        print(f"mbsim view: showing every {every}th of the {len(traj['time'])} frames (and the last), to keep "
              f"the page within {view.PAGE_BYTES // 1024**2} MiB; --every N chooses", flush=True)
    if args.mode is None and not args.html and traj["attrs"].get("status") == "running" and being_written(args.result):
        return _follow(args, traj, every)
    html = view.page(traj, every=every, title=title)
    if args.html:
        if not check_html(args.html) or not make_parent(args.html):
            return EXIT_INVALID
        with open(args.html, "w", encoding="utf-8") as fh:
            fh.write(html)
        if not args.quiet:
            print(f"wrote {args.html} ({len(html.encode('utf-8')) / 1e6:.1f} MB, self-contained: open it in a browser)")
        return EXIT_OK
    started = start_server(lambda port: view.serve(html, port), args, f"mbsim view: {args.result} at {{url}} "
                                                                        f"(this machine only; Ctrl-C to stop)")
    if started is None:
        return EXIT_INVALID
    serve_until_interrupted(started[0])
    return EXIT_OK


def _follow(args, traj, every: int) -> int:
    """``mbsim view`` of a file a run is writing: a live page that follows it (view.Follow)."""
    from ..viz import geometry as geo
    from ..viz import view
    sc = geo.scenario_of(traj)
    if sc is None:
        _err(f"{args.result}: its /scenario cannot be read: cannot follow it")
        return EXIT_INVALID
    # (decimated for the frames the scenario's run stores: a run to another --end is not in the file)
    live = view.Live(sc, every=every if args.every is not None else view.every_of_run(sc))
    start = {k: np.asarray(v) for k, v in traj.items() if k in view.Follow.sent_keys(traj)}
    n = min(len(v) for v in start.values())
    if n == 0:
        _err(f"{args.result}: the run writing it has flushed no frame yet; try again in a moment")
        return EXIT_INVALID
    follow = view.Follow(args.result, live, {k: v[:n] for k, v in start.items()})
    started = start_server(lambda port: view.serve_live(live, port), args,
                           f"mbsim view: {args.result}, being written, followed at {{url}} "
                           f"(this machine only; Ctrl-C to stop)")
    if started is None:
        follow.stop.set()
        return EXIT_INVALID
    serve_until_interrupted(started[0])
    follow.stop.set()
    return EXIT_OK


def start_server(make, args, line: str):
    """``make(port)``'s server on ``args.port``, its URL printed (``line`` with ``{url}``) and opened in the
    browser unless ``args.no_browser``: (server, url), or None after saying what is wrong."""
    if not 0 <= args.port <= 65535:
        _err(f"--port must be 0 … 65535, got {args.port}")
        return None
    try:
        server = make(args.port)
    except OSError as exc:
        _err(f"cannot serve on 127.0.0.1:{args.port}: {exc.strerror or exc}")
        return None
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(line.format(url=url), flush=True)
    if not args.no_browser:
        import webbrowser
        webbrowser.open(url)
    return server, url


def serve_until_interrupted(server) -> None:
    """Serve until Ctrl-C, then stop the server."""
    import time
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()


def check_html(out: str) -> bool:
    if not out.lower().endswith((".html", ".htm")):
        _err(f"--html writes an HTML page: name it .html, not {out!r}")
        return False
    return True


def _cmd_animate(args) -> int:
    if args.mode is None and args.amplitude is not None:
        _err("--amplitude scales a mode's shape: give --mode K too (`mbsim info RESULT` lists the modes)")
        return EXIT_INVALID
    if args.mode is not None and args.every is not None:
        _err(f"--every picks stored frames of a motion; --mode animates one period of a mode in "
             f"{_mode_frames()} frames of phase: leave out --every (--fps sets the speed)")
        return EXIT_INVALID
    if not need("matplotlib", "PIL"):
        return EXIT_INVALID
    from ..viz import animate
    out = args.output or beside(args.result, ".gif" if args.mode is None else f"-mode{args.mode}.gif")
    try:
        writer = animate.check_writer(out)
    except animate.WriterUnavailable as exc:
        _err(str(exc))
        return EXIT_INVALID
    if writer == "ffmpeg" and (args.size[0] % 2 or args.size[1] % 2):
        _err(f"MP4 (H.264) needs an even width and height, got {args.size[0]}x{args.size[1]}; "
             f"e.g. --size {args.size[0] + args.size[0] % 2}x{args.size[1] + args.size[1] % 2}")
        return EXIT_INVALID
    traj = load(args.result, args.quiet)
    if traj is None:
        return EXIT_INVALID
    if args.mode is not None:
        return _animate_mode(args, traj, out)
    if "modes/frequency" in traj and not args.quiet:
        _err(f"note: {args.result} holds modes; this animates its one stored frame (--mode K animates mode K, "
             f"`mbsim info {args.result}` lists them)")
    every = args.every or animate.default_every(traj, args.fps)
    from ..viz.geometry import frame_indices
    n = len(frame_indices(traj, every))
    if not args.quiet:
        _err(f"rendering {n} frames ({_every_words(every)} at {_g(args.fps)} fps) to {out}")
    if not make_parent(out):
        return EXIT_INVALID
    bar = None
    if not args.quiet and not args.no_progress and _isatty(sys.stderr):
        from tqdm import tqdm
        bar = tqdm(total=n, unit="frame", file=sys.stderr, leave=False)
    try:
        info = animate.animate(traj, out, fps=args.fps, every=every, elev=args.elev, azim=args.azim,
                               size=args.size, progress=(lambda i, total: bar.update(1)) if bar else None)
    except OSError as exc:
        _err(f"cannot write {out} ({exc.strerror or exc}); choose another -o path")
        return EXIT_INVALID
    finally:
        if bar is not None:
            bar.close()
    if not args.quiet:
        _out(f"wrote {info.path} ({info.frames} frames, {args.size[0]}x{args.size[1]} px, {_g(info.fps)} fps, "
             f"t = {_g(info.t_first)} … {_g(info.t_last)} s)")
    return EXIT_OK


def _mode_frames() -> int:
    from ..viz.animate import MODE_FRAMES
    return MODE_FRAMES


def mode_motion_of(args, traj, verb: str = "animates"):
    """One period of mode ``args.mode`` of the modes file ``args.result`` (:func:`mbsim.viz.animate.mode_motion`
    with ``args.amplitude``), or None after saying what is wrong; and the modes."""
    from ..io.reader import ResultFileError, read_modes
    from ..viz import animate
    try:
        modes = read_modes(args.result)
    except ResultFileError as exc:
        _err(f"{exc}: its modes are damaged; run `mbsim modes` again to rewrite the file")
        return None, None
    if modes is None:
        kind = traj["attrs"].get("analysis", "dynamics")
        _err(f"{args.result} holds no modes (no /modes: it is a {kind} result); --mode {verb} a file written by "
             f"`mbsim modes SCENARIO -o OUT.h5`, or leave out --mode to show this one")
        return None, None
    K = len(modes["frequency"])
    if args.mode > K:
        _err(f"{args.result} has {K} mode{'s' if K != 1 else ''}" + (f": give --mode 1 … {K}" if K else "")
             + f" (`mbsim info {args.result}` lists them)")
        return None, None
    return animate.mode_motion(traj, modes, args.mode, args.amplitude), modes


def _animate_mode(args, traj, out: str) -> int:
    """``mbsim animate RESULT --mode K``: one period of mode K of a modes file
    (:func:`mbsim.viz.animate.mode_motion`)."""
    from ..viz import animate
    motion, _ = mode_motion_of(args, traj)
    if motion is None:
        return EXIT_INVALID
    n = len(motion.phases)
    if not args.quiet:
        _err(f"rendering {n} frames (one period of mode {args.mode}, amplitude {motion.amplitude:.3g}) to {out}")
    if not make_parent(out):
        return EXIT_INVALID
    bar = None
    if not args.quiet and not args.no_progress and _isatty(sys.stderr):
        from tqdm import tqdm
        bar = tqdm(total=n, unit="frame", file=sys.stderr, leave=False)
    try:
        info = animate.animate(motion.traj, out, fps=args.fps, every=1, elev=args.elev, azim=args.azim,
                               size=args.size, progress=(lambda i, total: bar.update(1)) if bar else None,
                               title=motion.title, labels=motion.labels)
    except OSError as exc:
        _err(f"cannot write {out} ({exc.strerror or exc}); choose another -o path")
        return EXIT_INVALID
    finally:
        if bar is not None:
            bar.close()
    if not args.quiet:
        _out(f"wrote {info.path} ({info.frames} frames, {args.size[0]}x{args.size[1]} px, {_g(info.fps)} fps, "
             f"{motion.description}; one period in {_g(info.frames / info.fps)} s)")
    return EXIT_OK


def _every_words(n: int) -> str:
    """1 → "every stored frame", 4 → "every 4th stored frame"."""
    if n == 1:
        return "every stored frame"
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"every {n}{suffix} stored frame"
