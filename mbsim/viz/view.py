"""``mbsim view``: a result in the browser, as one self-contained page (docs/viewer.md).

:func:`page` makes the page of a trajectory: the viewer's own script (``web/viewer.js``) and the JavaScript
libraries it bundles (``web/vendor.min.js``: three.js and uPlot, built from pinned npm packages by
``web/npm/build.sh`` and committed, so that nothing is fetched at run time), the scene's description as
JSON and the frames as gzip-compressed float32 arrays in base64, all inline: no request leaves the page
(its Content-Security-Policy forbids any).  :func:`serve` serves that page -- and nothing else -- on the
loopback interface; :class:`Live` and :func:`serve_live` a run as it computes, :class:`Follow` a file
another process is writing.  A page holds at most :data:`PAGE_BYTES` of frames (decimated beyond).
"""
from __future__ import annotations

import base64
import gzip
import http.server
import json
import threading
from pathlib import Path
from typing import Optional

import numpy as np

from . import geometry as geo

WEB = Path(__file__).resolve().parent / "web"


def _pack(a) -> str:
    """A float array as gzip-compressed little-endian float32 in base64 (what the page decodes)."""
    raw = np.ascontiguousarray(np.asarray(a, dtype="<f4")).tobytes()
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def _box_quaternions(axes: np.ndarray) -> np.ndarray:
    """Quaternions [w, x, y, z] (B, 4) of the box axes (B, 3, 3) (columns, in the body's frame)."""
    from scipy.spatial.transform import Rotation
    out = np.zeros((axes.shape[0], 4))
    out[:, 0] = 1.0
    ok = np.all(np.isfinite(axes), axis=(1, 2))
    if np.any(ok):
        A = axes[ok]
        A = A * np.sign(np.linalg.det(A))[:, None, None]  # proper rotations
        xyzw = Rotation.from_matrix(A).as_quat()
        out[ok] = np.column_stack((xyzw[:, 3], xyzw[:, :3]))
    return out


def scene(traj: dict, every: int = 1, sc=None) -> tuple[dict, dict]:
    """The scene's description (JSON) and its per-frame arrays of a trajectory (OUTPUT.md layout, as read by
    :func:`mbsim.io.reader.read_trajectory`), every ``every``-th stored frame and the last; ``sc`` its
    scenario (default: read from the trajectory's text)."""
    sc = sc if sc is not None else geo.scenario_of(traj)
    idx = geo.frame_indices(traj, every, include_last=True)
    names = [str(n) for n in traj["bodies/name"]]
    fixed = np.asarray(traj["bodies/fixed"], dtype=bool)
    # the frames shown only, from here on (the geometry of every stored frame would cost a long run dearly)
    from ..io.writer import frame_datasets
    T = geo.frame_count(traj)
    traj = {k: (np.asarray(v)[idx] if k in frame_datasets(1) and np.ndim(v) and len(v) >= T else v)
            for k, v in traj.items()}
    idx = np.arange(len(idx))
    pos, R = geo.body_poses(traj)  # (T, B+1, 3), world last
    edges, axes = geo.box_shapes(traj, sc)
    cg, jg = geo.connector_geometry(traj, sc), geo.joint_geometry(traj, sc)
    r = np.asarray(traj["bodies/position"], dtype=float)[idx]
    q = np.asarray(traj["bodies/orientation"], dtype=float)[idx]
    # the scene's extent: where the bodies and the points go over the run
    pts = [r.reshape(-1, 3)]
    if cg.points.size:
        pts.append(cg.points[idx][:, cg.has_points].reshape(-1, 3))
    if jg.points.size:
        pts.append(jg.points[idx].reshape(-1, 3))
    allp = np.concatenate(pts) if pts else np.zeros((1, 3))
    allp = allp[np.all(np.isfinite(allp), axis=1)]
    lo, hi = (allp.min(axis=0), allp.max(axis=0)) if len(allp) else (np.zeros(3), np.zeros(3))
    reach = 0.5 * float(np.max(np.linalg.norm(np.where(np.isfinite(edges), edges, 0.0), axis=1), initial=0.0))
    lo, hi = lo - reach, hi + reach  # (the boxes around the centres)
    size = float(max(np.max(hi - lo), 0.5))
    # a body without a box (fixed, or no inertia given): a small cube
    small = 0.04 * size
    edges = np.where(np.isfinite(edges), edges, small)
    edges = np.maximum(edges, 0.004 * size)
    nc, nj = len(traj["connectors/name"]), len(traj.get("joints/name", ()))
    # the connectors' and joints' points and axes as material vectors of their bodies (the page turns them
    # with the bodies' poses: rigidly carried, exactly; world = body index B), from the first frame shown
    f0 = idx[0]

    def material(points, bodies):
        return np.einsum("nji,nj->ni", R[f0, bodies], np.nan_to_num(points) - pos[f0, bodies])
    c_arms = np.zeros((nc, 2, 3))
    if nc:
        c_arms[:, 0] = material(cg.points[f0, :, 0], cg.body_a)
        c_arms[:, 1] = material(cg.points[f0, :, 1], cg.body_b)
        c_arms[~cg.has_points] = 0.0  # a connector without points: drawn at body B's centre
    j_arms, j_axis = np.zeros((nj, 2, 3)), np.zeros((nj, 3))
    if nj:
        j_arms[:, 0] = material(jg.points[f0, :, 0], jg.body_a)
        j_arms[:, 1] = material(jg.points[f0, :, 1], jg.body_b)
        j_axis = np.einsum("nji,nj->ni", R[f0, jg.body_a], np.nan_to_num(jg.axis[f0]))
    stop_of, stop_arms, needle_of, needle_arms = _stop_marks(jg, f0, size, material)
    velocity = np.asarray(traj["bodies/velocity"], dtype=float)[idx]
    omega = np.asarray(traj["bodies/angular_velocity"], dtype=float)[idx]
    channels = [{"label": f"energy {k} [J]", "data": f"energy_{k}"}
                for k in ("kinetic", "potential", "dissipated", "external_work")]
    data = {"time": np.asarray(traj["time"], dtype=float)[idx], "position": r, "orientation": q,
            "velocity": velocity, "angular_velocity": omega}
    for k in ("kinetic", "potential", "dissipated", "external_work"):
        data[f"energy_{k}"] = np.asarray(traj[f"energy/{k}"], dtype=float)[idx]
    for i, n in enumerate(names):
        if not fixed[i]:
            channels += [{"label": f"{n} {a} [m]", "body": i, "axis": k} for k, a in enumerate("xyz")]
    # the forces and moments on body A (world axes): shown on a click, drawn as an arrow, plotted as |·|
    for group, n, label in (("connectors", nc, "|force| [N]"), ("joints", nj, "reaction |force| [N]")):
        if n:
            for what in ("force", "moment"):
                data[f"{group}_{what}"] = np.asarray(traj[f"{group}/{what}"], dtype=float)[idx]
            for i, name in enumerate(traj[f"{group}/name"]):
                channels.append({"label": f"{name} {label}", "vec": f"{group}_force", "index": i})
    finite_lo = lo if np.all(np.isfinite(lo)) else np.zeros(3)
    meta = {
        "size": size, "centre": ((lo + hi) / 2).tolist(), "ground": float(finite_lo[2]),
        "bodies": {"names": names, "fixed": fixed.tolist(), "edges": edges.ravel().tolist(),
                   "box_q": _box_quaternions(axes).ravel().tolist()},
        "connectors": {"names": [str(n) for n in traj["connectors/name"]],
                       "types": [str(t) for t in traj["connectors/type"]],
                       # drawn as a line between its points (else as a marker at B's point or centre)
                       "points": [bool(b) and d in ("coil", "dashpot", "line")
                                  for b, d in zip(cg.has_points, geo.connector_traits(traj["connectors/type"])[0])]
                       if nc else [],
                       "draw": list(geo.connector_traits(traj["connectors/type"])[0]) if nc else [],
                       "ends": np.column_stack((cg.body_a, cg.body_b)).ravel().tolist() if nc else [],
                       "arms": c_arms.ravel().tolist()},
        "joints": {"names": [str(n) for n in traj.get("joints/name", ())],
                   "types": [str(t) for t in traj.get("joints/type", ())],
                   "axis": [bool(np.all(np.isfinite(jg.axis[0, j]))) for j in range(nj)],
                   "ends": np.column_stack((jg.body_a, jg.body_b)).ravel().tolist() if nj else [],
                   "arms": j_arms.ravel().tolist(), "axes": j_axis.ravel().tolist(),
                   # the stops: segments carried by A (a spoke at an angle bound, a tick across the rail at an
                   # offset bound) and, for an angle, B's needle (its direction at the angle 0) between them
                   "stop_of": stop_of, "stop_arms": stop_arms, "needle_of": needle_of, "needle_arms": needle_arms},
        "channels": channels,
    }
    return meta, data


def static_of(sc) -> dict:
    """What a result file holds of ``sc`` that is not per frame (the writer's static datasets and the
    attributes the page reads), for a scene made from frames as they are computed (:class:`Live`)."""
    bodies, conns, joints = sc.bodies, sc.connectors, sc.joints
    out = {"bodies/name": [b.name for b in bodies], "bodies/fixed": np.array([b.fixed for b in bodies], dtype=bool),
           "bodies/mass": np.array([0.0 if b.fixed else b.mass for b in bodies], dtype=float),
           "connectors/name": [c.name for c in conns], "connectors/type": [c.type for c in conns],
           "connectors/body_a": [c.body_a for c in conns], "connectors/body_b": [c.body_b for c in conns],
           "scenario": sc.text, "attrs": {"scenario_name": sc.name, "status": "running"}}
    if joints:
        out.update({"joints/name": [j.name for j in joints], "joints/type": [j.type for j in joints],
                    "joints/body_a": [j.body_a for j in joints], "joints/body_b": [j.body_b for j in joints]})
    return out


# the frames' data a page holds at most (float32, decoded): beyond it frames are decimated (every n-th and
# the last), so that a long or large result never puts the whole file in the page
PAGE_BYTES = 128 * 1024**2


STOP_SPOKE, STOP_TICK, NEEDLE = 0.1, 0.02, 0.08  # the stop marks' lengths, in the scene's size


def _stop_marks(jg, f0: int, size: float, material) -> tuple:
    """The marks of the joints' stops (:attr:`mbsim.viz.geometry.JointGeometry.stops`) as material arms
    (two points each, 6 floats) of body A, and the needles of the joints with an angle stop as material
    arms of body B: a spoke from A's point at each angle bound (turned about the axis from the direction
    that was B's at the angle 0, the geometry's ``perp``), a tick across the rail at each offset bound, the
    needle along that direction as B carries it (``perp_b``: at any frame ``f0``, the angle 0 being the
    scenario's initial poses).  Returns (joint of each stop mark, their arms, joint of each needle, theirs)."""
    stop_of, stop_arms, needle_of, needle_arms = [], [], [], []
    for i, coordinate, bound in jg.stops:
        if not jg.has_points[i]:
            continue
        pa, n, u = jg.points[f0, i, 0], jg.axis[f0, i], jg.perp[f0, i]
        if coordinate == "angle":
            ends = [pa, pa + STOP_SPOKE * size * (np.cos(bound) * u + np.sin(bound) * np.cross(n, u))]
            if i not in needle_of:
                needle_of.append(i)
                tip = jg.points[f0, i, 1] + NEEDLE * size * jg.perp_b[f0, i]
                needle_arms += material(np.array([jg.points[f0, i, 1], tip]), np.array([jg.body_b[i]] * 2)).ravel().tolist()
        else:
            c = pa + bound * n
            ends = [c - STOP_TICK * size * u, c + STOP_TICK * size * u]
        stop_of.append(i)
        stop_arms += material(np.array(ends), np.array([jg.body_a[i]] * 2)).ravel().tolist()
    return stop_of, stop_arms, needle_of, needle_arms


def frame_floats(bodies: int, connectors: int, joints: int) -> int:
    """The float32 values one frame puts in the page (:func:`scene`'s arrays)."""
    return 1 + 4 + 13 * bodies + 6 * connectors + 6 * joints


def every_for(frames: int, bodies: int, connectors: int, joints: int, budget: int = PAGE_BYTES) -> int:
    """The smallest decimation that keeps ``frames`` frames' data in a page within ``budget`` bytes."""
    return max(1, -(-int(frames) * 4 * frame_floats(bodies, connectors, joints) // int(budget)))


def every_of_run(sc, end: Optional[float] = None) -> int:
    """:func:`every_for` the frames a run of ``sc`` (to ``end``) will store (for a live page)."""
    from ..resources import estimate
    frames = min(estimate(sc, end).frames, 2**53)
    return every_for(frames, len(sc.bodies), len(sc.connectors), len(sc.joints))


class Live:
    """The frames of a run as they are computed (``mbsim.driver.run(on_frames=live.observe)``) or read from
    a file being written (:class:`Follow`), for pages served by :func:`serve_live`: the first block (the
    initial frame) makes the page, every block after it is sent to each page as a server-sent event, and
    :meth:`finish` ends the stream with the run's outcome.  Every ``every``-th frame is kept (and the last,
    at the end): what a page holds stays within :data:`PAGE_BYTES` however long the run."""

    def __init__(self, sc, every: int = 1):
        import queue
        self.sc = sc
        self.static = static_of(sc)
        self.every = max(1, int(every))
        self.meta = None
        self.first = None  # the first block's packed arrays (in the page itself)
        self.blocks: list = []  # the later blocks, packed, as JSON texts
        self.done: Optional[str] = None
        self.reload = False  # the pages are to load again (what they were sent was replaced: Follow)
        self.cond = threading.Condition()
        self._seen = 0  # frames observed
        self._tail = None  # the last frame observed, when the decimation did not keep it
        self._todo: "queue.Queue" = queue.Queue()  # blocks to pack, in order (None: the end)
        threading.Thread(target=self._pack_blocks, daemon=True, name="mbsim-view-pack").start()

    def observe(self, frames: dict) -> None:
        """The driver's frame observer: hands the block (its own copies) to the packing thread, so that the
        time loop goes on at once."""
        self._todo.put(frames)

    def _keep(self, frames: dict) -> Optional[dict]:
        """The frames of a block the decimation keeps (None: none), remembering the block's last frame."""
        m = len(frames["time"])
        if m == 0:
            return None
        idx = np.flatnonzero((self._seen + np.arange(m)) % self.every == 0)
        last = m - 1
        self._tail = None if (self._seen + last) % self.every == 0 else {k: v[last:] for k, v in frames.items()}
        self._seen += m
        return {k: v[idx] for k, v in frames.items()} if len(idx) else None

    def _add(self, frames: dict) -> None:
        meta, data = scene(dict(self.static, **frames), sc=self.sc)
        packed = {k: _pack(v) for k, v in data.items()}
        with self.cond:
            if self.meta is None:
                self.meta, self.first = dict(meta, live=True), packed
            else:
                self.blocks.append(json.dumps(packed, separators=(",", ":")))
            self.cond.notify_all()

    def _pack_blocks(self) -> None:
        while True:
            frames = self._todo.get()
            if frames is None or isinstance(frames, str):
                if self._tail is not None:
                    self._add(self._tail)  # the last frame, always
                with self.cond:
                    self.done = "not run" if frames is None else frames
                    self.cond.notify_all()
                return
            kept = self._keep(frames)
            if kept is not None:
                self._add(kept)

    def finish(self, outcome: str) -> None:
        """The run is over (``outcome`` says how): after the blocks still being packed, the pages are told."""
        self._todo.put(str(outcome))

    def replace(self, traj: dict, outcome: str) -> None:
        """Make the pages anew from a whole trajectory (the file once its run is over, when what was sent
        while it was written differs from it) and end the stream with ``outcome``: the pages load again."""
        meta, data = scene(traj, self.every, sc=self.sc)
        with self.cond:
            self.meta, self.first = dict(meta, live=True), {k: _pack(v) for k, v in data.items()}
            self.blocks, self.reload, self.done = [], True, str(outcome)
            self.cond.notify_all()

    def page(self, timeout: float = 600.0) -> str:
        with self.cond:
            self.cond.wait_for(lambda: self.meta is not None or self.done is not None, timeout)
            if self.meta is None:
                raise RuntimeError(f"the run produced no frame ({self.done})")
            return _html(self.meta, self.first, self.sc.name)

    def stream(self, write) -> None:
        """Write the blocks as server-sent events (``data: …``), waiting for new ones, then the outcome
        (``event: end``, or ``event: reload`` when the pages are to load again); returns when the run is
        over and everything is sent, or the page went away."""
        k = 0
        while True:
            with self.cond:
                self.cond.wait_for(lambda: len(self.blocks) > k or self.done is not None, 5.0)
                new, done, reload = self.blocks[k:], self.done, self.reload
            if reload:
                write(f"event: reload\ndata: {json.dumps(done)}\n\n".encode())
                return
            k += len(new)
            for text in new:
                write(f"data: {text}\n\n".encode())
            if not new and done is None:
                write(b": waiting\n\n")  # (a comment: a page gone away shows as a broken pipe)
            if done is not None and k == len(self.blocks):
                write(f"event: end\ndata: {json.dumps(done)}\n\n".encode())
                return


class Follow:
    """Follows a result file that a run in another process is writing: reads the frames it has flushed
    every ``poll`` seconds and hands them to ``live`` (:class:`Live`), until the file's ``status`` is no
    longer ``running`` and its writer has closed it.  A read between the writer's flushes could, rarely,
    catch a block half written: a block is taken only when two reads agree and its times go on from the
    last; and once the run is over the whole file is read again and compared with what was sent -- if
    they differ, the pages are made anew from the file (:meth:`Live.replace`)."""

    def __init__(self, path: str, live: Live, start: dict, poll: float = 0.5):
        self.path, self.live, self.poll = str(path), live, float(poll)
        self.sent = {"time": [np.asarray(start["time"])], "bodies/position": [np.asarray(start["bodies/position"])]}
        self.frames = len(start["time"])
        self.stop = threading.Event()
        live.observe(start)
        self.thread = threading.Thread(target=self._run, daemon=True, name="mbsim-view-follow")
        self.thread.start()

    def _read(self) -> tuple[dict, Optional[dict]]:
        from ..io.reader import ResultFileError, read_frames
        try:
            attrs, a = read_frames(self.path, self.frames)
            if len(a.get("time", ())) == 0:
                return attrs, None
            _, b = read_frames(self.path, self.frames)
        except ResultFileError:
            return {"status": "running"}, None  # (caught mid-flush: the next poll reads it again)
        n = min(len(a["time"]), len(b.get("time", ())))
        same = n > 0 and all(np.array_equal(a[k][:n], b[k][:n], equal_nan=True) for k in a)
        t = a["time"][:n]
        last = self.sent["time"][-1][-1] if self.frames else -np.inf
        if not same or not (np.all(np.isfinite(t)) and t[0] > last and np.all(np.diff(t) > 0)):
            return attrs, None
        return attrs, {k: v[:n] for k, v in a.items() if not k.startswith("solver/")}

    def _run(self) -> None:
        from ..io.reader import being_written
        while not self.stop.wait(self.poll):
            attrs, new = self._read()
            if new is not None:
                self.sent["time"].append(new["time"])
                self.sent["bodies/position"].append(new["bodies/position"])
                self.frames += len(new["time"])
                self.live.observe(new)
            status = attrs.get("status", "running")
            if status != "running" and not being_written(self.path):
                self._end(status, str(attrs.get("message") or ""))
                return

    def _end(self, status: str, message: str) -> None:
        """The run is over: the frames it left, checked against those sent (module docstring)."""
        from ..io.reader import read_trajectory
        outcome = message if message.startswith(status) else f"{status}: {message}" if message else status
        traj = read_trajectory(self.path, common_length=True)
        n = self.frames
        sent_ok = len(traj["time"]) >= n and all(
            np.array_equal(np.concatenate(v), np.asarray(traj[k][:n]), equal_nan=True) for k, v in self.sent.items())
        if not sent_ok:
            self.live.replace(traj, outcome)
            return
        rest = {k: np.asarray(traj[k][n:]) for k in self.sent_keys(traj)}
        if len(rest["time"]):
            self.live.observe(rest)
        self.live.finish(outcome)

    @staticmethod
    def sent_keys(traj: dict) -> list:
        from ..io.writer import frame_datasets
        return [k for k in frame_datasets(1) if k in traj and not k.startswith("solver/")]


def _json_inline(obj) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(obj, separators=(",", ":")).replace("</", "<\\/")


def every_of(traj: dict) -> int:
    """The decimation that keeps a trajectory's frames in a page within :data:`PAGE_BYTES`."""
    return every_for(len(traj["time"]), len(traj["bodies/name"]), len(traj["connectors/name"]),
                     len(traj.get("joints/name", ())))


def page(traj: dict, every: Optional[int] = None, title: Optional[str] = None) -> str:
    """The self-contained viewer page of a trajectory (module docstring), of every ``every``-th frame and
    the last (default: :func:`every_of`)."""
    meta, data = scene(traj, every_of(traj) if every is None else every)
    title = title or str(traj.get("attrs", {}).get("scenario_name") or "result")
    return _html(meta, {k: _pack(v) for k, v in data.items()}, title)


def _html(meta: dict, packed: dict, title: str) -> str:
    html = (WEB / "viewer.html").read_text(encoding="utf-8")
    esc = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    parts = {
        "__TITLE__": esc,
        "__META__": _json_inline(meta),
        "__DATA__": _json_inline(packed),
        "/*UPLOT_CSS*/": (WEB / "uPlot.min.css").read_text(encoding="utf-8"),
        "/*VENDOR*/": (WEB / "vendor.min.js").read_text(encoding="utf-8").replace("</script", "<\\/script"),
        "/*VIEWER*/": (WEB / "viewer.js").read_text(encoding="utf-8"),
    }
    for k, v in parts.items():
        html = html.replace(k, v)
    return html


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves the page at ``/`` and nothing else (no listing, no file of the disk)."""

    body: bytes = b""
    server_version = "mbsim-view"

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/favicon.ico":  # (what a browser asks for first: nothing, not an error)
            self.send_response(204)
            self.end_headers()
            return
        if self.path.split("?", 1)[0] not in ("/", "/index.html"):
            self.send_error(404, "mbsim view serves its one page only")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(self.body)

    def do_HEAD(self):  # noqa: N802
        self.do_GET()

    def log_message(self, *args):  # quiet
        pass


class _LiveHandler(_Handler):
    """A live run's page at ``/`` (made from its first frame) and its frames at ``/events``."""

    live: Live = None

    def do_GET(self):  # noqa: N802
        path = self.path.split("?", 1)[0]
        if path == "/events":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()

            def write(b):
                self.wfile.write(b)
                self.wfile.flush()
            try:
                self.live.stream(write)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        if path in ("/", "/index.html"):
            self.body = self.live.page().encode("utf-8")
        super().do_GET()


def serve_live(live: Live, port: int = 0) -> http.server.ThreadingHTTPServer:
    """As :func:`serve`, for a run being computed (:class:`Live`)."""
    handler = type("LiveHandler", (_LiveHandler,), {"live": live})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True, name="mbsim-view").start()
    return server


def serve(html: str, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server of ``html`` on 127.0.0.1 (``port`` 0: a free one), serving in a daemon thread; its URL is
    ``f"http://127.0.0.1:{server.server_address[1]}/"``.  ``server.shutdown()`` stops it."""
    handler = type("Handler", (_Handler,), {"body": html.encode("utf-8")})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="mbsim-view").start()
    return server
