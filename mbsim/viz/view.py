"""``mbsim view``: a result in the browser, as one self-contained page (docs/viewer.md).

:func:`page` makes the page of a trajectory: the viewer's own script (``web/viewer.js``) and the JavaScript
libraries it bundles (``web/vendor.min.js``: three.js and uPlot, built from pinned npm packages by
``web/npm/build.sh`` and committed, so that nothing is fetched at run time), the scene's description as
JSON and the frames as gzip-compressed float32 arrays in base64, all inline: no request leaves the page
(its Content-Security-Policy forbids any).  :func:`serve` serves that page -- and nothing else -- on the
loopback interface.
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
    if nc:
        F = np.linalg.norm(np.asarray(traj["connectors/force"], dtype=float)[idx], axis=2)
        for c, n in enumerate(traj["connectors/name"]):
            data[f"connector_force_{c}"] = F[:, c]
            channels.append({"label": f"{n} |force| [N]", "data": f"connector_force_{c}"})
    if nj:
        F = np.linalg.norm(np.asarray(traj["joints/force"], dtype=float)[idx], axis=2)
        for j, n in enumerate(traj["joints/name"]):
            data[f"joint_force_{j}"] = F[:, j]
            channels.append({"label": f"{n} reaction |force| [N]", "data": f"joint_force_{j}"})
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
                   "axis": [bool(np.all(np.isfinite(jg.axis[0, j]))) for j in range(nj)],
                   "ends": np.column_stack((jg.body_a, jg.body_b)).ravel().tolist() if nj else [],
                   "arms": j_arms.ravel().tolist(), "axes": j_axis.ravel().tolist()},
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


class Live:
    """The frames of a run as they are computed (``mbsim.driver.run(on_frames=live.observe)``), for pages
    served by :func:`serve_live`: the first block (the initial frame) makes the page, every block after it
    is sent to each page as a server-sent event, and :meth:`finish` ends the stream with the run's outcome."""

    def __init__(self, sc):
        import queue
        self.sc = sc
        self.static = static_of(sc)
        self.meta = None
        self.first = None  # the first block's packed arrays (in the page itself)
        self.blocks: list = []  # the later blocks, packed, as JSON texts
        self.done: Optional[str] = None
        self.cond = threading.Condition()
        self._todo: "queue.Queue" = queue.Queue()  # blocks to pack, in order (None: the end)
        threading.Thread(target=self._pack_blocks, daemon=True, name="mbsim-view-pack").start()

    def observe(self, frames: dict) -> None:
        """The driver's frame observer: hands the block (its own copies) to the packing thread, so that the
        time loop goes on at once."""
        self._todo.put(frames)

    def _pack_blocks(self) -> None:
        while True:
            frames = self._todo.get()
            if frames is None or isinstance(frames, str):
                with self.cond:
                    self.done = "not run" if frames is None else frames
                    self.cond.notify_all()
                return
            meta, data = scene(dict(self.static, **frames), sc=self.sc)
            packed = {k: _pack(v) for k, v in data.items()}
            with self.cond:
                if self.meta is None:
                    self.meta, self.first = dict(meta, live=True), packed
                else:
                    self.blocks.append(json.dumps(packed, separators=(",", ":")))
                self.cond.notify_all()

    def finish(self, outcome: str) -> None:
        """The run is over (``outcome`` says how): after the blocks still being packed, the pages are told."""
        self._todo.put(str(outcome))

    def page(self, timeout: float = 600.0) -> str:
        with self.cond:
            self.cond.wait_for(lambda: self.meta is not None or self.done is not None, timeout)
            if self.meta is None:
                raise RuntimeError(f"the run produced no frame ({self.done})")
            return _html(self.meta, self.first, self.sc.name)

    def stream(self, write) -> None:
        """Write the blocks as server-sent events (``data: …``), waiting for new ones, then the outcome
        (``event: end``); returns when the run is over and everything is sent, or the page went away."""
        k = 0
        while True:
            with self.cond:
                self.cond.wait_for(lambda: len(self.blocks) > k or self.done is not None, 5.0)
                new, done = self.blocks[k:], self.done
            k += len(new)
            for text in new:
                write(f"data: {text}\n\n".encode())
            if not new and done is None:
                write(b": waiting\n\n")  # (a comment: a page gone away shows as a broken pipe)
            if done is not None and k == len(self.blocks):
                write(f"event: end\ndata: {json.dumps(done)}\n\n".encode())
                return


def _json_inline(obj) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(obj, separators=(",", ":")).replace("</", "<\\/")


def page(traj: dict, every: int = 1, title: Optional[str] = None) -> str:
    """The self-contained viewer page of a trajectory (module docstring)."""
    meta, data = scene(traj, every)
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
