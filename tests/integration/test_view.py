"""``mbsim view``: the page of a result in a real browser (Debian's chromium driven by playwright, software
WebGL), and its server (loopback only, its one page, nothing of the disk, stopped by Ctrl-C).

The page exposes its scene state as ``window.VIEWER`` (mbsim/viz/web/viewer.js): the tests read the
matrices it drew and compare them with the HDF5 file."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from mbsim.cli import main
from mbsim.io.reader import read_trajectory

from ._examples_util import REPO

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("view") / "joint_kinds.h5"
    assert main(["run", str(REPO / "scenarios" / "joint_kinds.yaml"), "-o", str(out), "--quiet", "--end", "0.5"]) == 0
    return out


@pytest.fixture(scope="module")
def html(result):
    out = result.with_suffix(".html")
    assert main(["view", str(result), "--html", str(out), "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")  # the test extra installs it
    if CHROMIUM is None:
        pytest.skip("no chromium (.ci/run installs Debian's with apt-get)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--enable-unsafe-swiftshader", "--use-angle=swiftshader"])
        yield b
        b.close()


def _open(browser, url):
    # (bypass_csp: playwright's wait_for_function evaluates strings, which the page's policy forbids; the
    # requests are watched all the same)
    page = browser.new_page(viewport={"width": 1100, "height": 750}, bypass_csp=True)
    problems, requests = [], []
    page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url)
    page.wait_for_function("window.VIEWER && window.VIEWER.ready && window.VIEWER.rendered > 0", timeout=30000)
    return page, problems, requests


def _quat_matrix(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_the_page_draws_the_files_poses_offline(browser, html, result):
    page, problems, requests = _open(browser, html.as_uri())
    assert problems == []
    assert [u for u in requests if not u.startswith(("data:", "blob:"))] == [html.as_uri()]  # nothing leaves
    traj = read_trajectory(str(result))
    T = len(traj["time"])
    assert page.evaluate("VIEWER.nframes") == T
    from mbsim.viz.geometry import box_shapes
    edges, axes = box_shapes(traj)
    for k in (0, T // 3, T - 1):
        page.evaluate(f"VIEWER.setFrame({k})")
        for i, name in enumerate(page.evaluate("VIEWER.bodies")):
            m = np.array(page.evaluate(f"VIEWER.boxMatrix({i})")).reshape(4, 4).T  # (column-major)
            np.testing.assert_allclose(m[:3, 3], traj["bodies/position"][k, i], atol=1e-6)
            if np.all(np.isfinite(axes[i])):  # the box: the body's rotation times its box axes
                A = _quat_matrix(traj["bodies/orientation"][k, i]) @ axes[i]
                drawn = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
                np.testing.assert_allclose(np.abs(drawn), np.abs(A), atol=1e-5, err_msg=name)
                if np.all(edges[i] > 0.1):  # (much thinner ones are drawn thicker, to be seen)
                    np.testing.assert_allclose(np.linalg.norm(m[:3, :3], axis=0), edges[i], rtol=1e-5)
    # the connectors drawn between their points as the file's geometry has them (the page carries the
    # points with the bodies' poses)
    from mbsim.viz.geometry import connector_geometry, connector_traits
    cg = connector_geometry(traj)
    lines = [c for c, d in enumerate(connector_traits(traj["connectors/type"])[0])
             if cg.has_points[c] and d in ("coil", "dashpot", "line")]
    assert lines
    for k in (0, T - 1):
        page.evaluate(f"VIEWER.setFrame({k})")
        for c in lines:
            np.testing.assert_allclose(page.evaluate(f"VIEWER.connectorEnds({c})"), cg.points[k, c], atol=1e-5)
        # each drawn between them: a spring as a coil whose first and last points are its ends
        seg = np.array(page.evaluate("VIEWER.segments()")).reshape(-1, 2, 3)
        assert np.allclose(seg[0, 0], cg.points[k, lines[0], 0], atol=1e-5)
    # the canvas is not blank
    shot = page.screenshot()
    from io import BytesIO
    PIL = pytest.importorskip("PIL.Image")
    img = np.asarray(PIL.open(BytesIO(shot)).convert("RGB"), dtype=float)
    assert img[:600].std() > 5.0 and len(np.unique(img[:600].reshape(-1, 3), axis=0)) > 50
    page.close()


def test_play_advances_a_click_names_a_body_and_the_plot_cursor_follows(browser, html, result):
    page, problems, _ = _open(browser, html.as_uri())
    page.evaluate("VIEWER.setFrame(0)")
    page.click("#play")
    page.wait_for_function("VIEWER.frame > 3", timeout=10000)
    page.click("#play")  # pause
    k = page.evaluate("VIEWER.frame")
    assert page.evaluate("VIEWER.playing") is False
    # the plot's cursor at the time shown
    t = page.evaluate(f"VIEWER.time[{k}]")
    assert page.evaluate("VIEWER.plotCursor()") == pytest.approx(page.evaluate(f"VIEWER.plotX({t})"), abs=1.0)
    # a click on a body's centre names it
    names = page.evaluate("VIEWER.bodies")
    x, y = page.evaluate("VIEWER.screen(1)")
    page.mouse.click(x, y)
    page.wait_for_function("VIEWER.picked !== null", timeout=5000)
    picked = page.evaluate("VIEWER.picked")
    assert picked in names and picked in page.inner_text("#info")
    # a click on a joint's ball names the joint and gives its reaction at the time shown
    joints, hits = page.evaluate("VIEWER.joints"), []
    for j in range(len(joints)):
        x, y = page.evaluate(f"VIEWER.jointScreen({j})")
        page.mouse.click(x, y)
        if page.evaluate("VIEWER.picked") == joints[j]:
            hits.append(j)
            text = page.inner_text("#info")
            assert joints[j] in text and "reaction force on A" in text and "reaction moment on A" in text
            # its reaction force, drawn as an arrow from its point on A along the file's force at that frame
            F = read_trajectory(str(result))["joints/force"][k, j]
            arrow = np.array(page.evaluate("VIEWER.arrow()")).reshape(2, 3)
            d = arrow[1] - arrow[0]
            assert np.allclose(d / np.linalg.norm(d), F / np.linalg.norm(F), atol=1e-5), (d, F)
            assert f"{np.linalg.norm(F):.4g}" in text.replace("e+", "e")
    assert len(hits) >= len(joints) // 2, hits  # (the others' balls lie inside a body's box)
    assert problems == []
    page.close()


def test_the_server_serves_its_page_on_loopback_only_and_nothing_of_the_disk(result):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "mbsim", "view", str(result), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split("at ", 1)[1].split(" ", 1)[0]
        with urllib.request.urlopen(url, timeout=10) as r:
            body = r.read().decode()
        assert r.status == 200 and "mbsim view" in body and "VIEWER" in body
        port = int(url.rsplit(":", 1)[1].strip("/"))
        for path in ("/etc/passwd", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", f"/{result.name}",
                     "/mbsim/viz/view.py", "/?dir"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
                    assert path == "/?dir" and r.read().decode() == body  # (the page, whatever the query)
            except urllib.error.HTTPError as e:
                assert e.code == 404, path
        # bound to loopback only: the machine's other addresses refuse
        import socket
        s = socket.socket()
        s.settimeout(2)
        other = socket.gethostbyname(socket.gethostname())
        if not other.startswith("127."):
            assert s.connect_ex((other, port)) != 0
        s.close()
        proc.send_signal(signal.SIGINT)  # Ctrl-C stops it
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_html_needs_an_html_name_and_every_keeps_the_last_frame(result, tmp_path, capsys):
    assert main(["view", str(result), "--html", str(tmp_path / "x.txt")]) == 2
    assert "name it .html" in capsys.readouterr().err
    from mbsim.viz.view import scene
    traj = read_trajectory(str(result))
    _, data = scene(traj, every=7)
    T = len(traj["time"])
    assert data["time"][-1] == traj["time"][T - 1] and len(data["time"]) == len(range(0, T, 7)) + ((T - 1) % 7 != 0)


def test_a_run_is_watched_live_and_the_page_ends_with_the_files_frames(browser, tmp_path):
    """``mbsim run --view``: the page opens on the run's first frame, receives the others as they are
    computed (server-sent events from the driver's frame observer), follows the newest, and ends with the
    run's outcome and as many frames as the file; the viewer then serves on until Ctrl-C."""
    out = tmp_path / "live.h5"
    proc = subprocess.Popen([sys.executable, "-m", "mbsim", "run", str(REPO / "scenarios" / "chain50.yaml"),
                             "-o", str(out), "--view", "--no-browser", "--quiet", "--end", "1.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO),
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split(": ", 1)[1].split(" ", 1)[0]
        page, problems, requests = _open(browser, url)
        page.wait_for_function("VIEWER.ended !== null", timeout=120000)
        assert page.evaluate("VIEWER.ended").startswith("completed")
        n = page.evaluate("VIEWER.nframes")
        assert n == len(read_trajectory(str(out))["time"]) and page.evaluate("VIEWER.frame") == n - 1
        assert page.evaluate("VIEWER.blocks") >= 1  # frames came after the page opened
        assert problems == [] and all(u.startswith(url) for u in requests)
        page.close()
        assert "still serving" in proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def _frames_flushed(path, read_frames) -> int:
    """How many frames a file being written holds; 0 while it cannot be read (a flush in progress)."""
    from mbsim.io.reader import ResultFileError
    try:
        return len(read_frames(str(path))[1]["time"])
    except ResultFileError:
        return 0


def test_a_file_being_written_is_followed_and_read_by_other_commands(browser, tmp_path):
    """``mbsim view`` of a file that a run in another process is writing: the page opens on the frames
    flushed so far, receives the others as the run flushes them, and ends with the run's outcome (here:
    stopped by Ctrl-C) and as many frames as the file it left (checked against it); meanwhile ``mbsim
    info`` reads the file and ``mbsim run -o`` the same path refuses, saying a run is writing it."""
    from mbsim.io.reader import being_written, read_frames
    out = tmp_path / "followed.h5"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # (a run far longer than the test: stopped with Ctrl-C once the page has received frames as they came)
    run = subprocess.Popen([sys.executable, "-m", "mbsim", "run", str(REPO / "scenarios" / "chain50.yaml"),
                            "-o", str(out), "--quiet", "--end", "600"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, cwd=str(REPO), env=env)
    view = None
    try:
        deadline = time.monotonic() + 60
        while not (out.exists() and _frames_flushed(out, read_frames) > 0):
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read()
            time.sleep(0.1)
        assert being_written(str(out))
        info = subprocess.run([sys.executable, "-m", "mbsim", "info", str(out)], capture_output=True, text=True,
                              cwd=str(REPO), env=env)
        assert info.returncode == 0 and "running" in info.stdout, info.stderr
        again = subprocess.run([sys.executable, "-m", "mbsim", "run", str(REPO / "scenarios" / "chain50.yaml"),
                                "-o", str(out), "--quiet"], capture_output=True, text=True, cwd=str(REPO), env=env)
        assert again.returncode == 2 and "a run is writing it now" in again.stderr
        view = subprocess.Popen([sys.executable, "-m", "mbsim", "view", str(out), "--no-browser", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO), env=env)
        line = view.stdout.readline()
        assert "being written, followed at http://127.0.0.1:" in line, line + view.stderr.read()
        url = line.split("at ", 1)[1].split(" ", 1)[0]
        page, problems, requests = _open(browser, url)
        first = page.evaluate("VIEWER.nframes")
        page.wait_for_function("VIEWER.blocks >= 1", timeout=60000)  # frames flushed after the page opened
        run.send_signal(signal.SIGINT)
        assert run.wait(timeout=60) == 130
        page.wait_for_function("VIEWER.ended !== null", timeout=60000)
        assert page.evaluate("VIEWER.ended").startswith("interrupted")
        traj = read_trajectory(str(out))
        n = page.evaluate("VIEWER.nframes")
        assert n == len(traj["time"]) > first and page.evaluate("VIEWER.blocks") >= 1
        assert np.allclose(page.evaluate("Array.from(VIEWER.time)"), traj["time"], rtol=1e-6, atol=1e-6)
        page.evaluate("VIEWER.setFrame(VIEWER.nframes - 1)")
        r, q = page.evaluate("VIEWER.pose(7)")
        assert np.allclose(r, traj["bodies/position"][-1, 7], atol=1e-5)
        assert problems == [] and all(u.startswith(url) for u in requests)
        page.close()
        view.send_signal(signal.SIGINT)
        assert view.wait(timeout=20) == 0
    finally:
        for p in (run, view):
            if p is not None and p.poll() is None:
                p.kill()


def test_live_pages_keep_every_nth_frame_and_the_last_and_a_followed_file_that_differs_reloads(result):
    """A live page's frames are decimated to its budget (every n-th and the last); a followed file whose
    frames, once its run is over, differ from those sent (a block read half flushed) makes the pages load
    again from the file."""
    from mbsim.viz import geometry as geo
    from mbsim.viz.view import Follow, Live, every_for
    traj = read_trajectory(str(result))
    sc = geo.scenario_of(traj)
    keys = Follow.sent_keys(traj)
    T = len(traj["time"])
    live = Live(sc, every=3)
    for a, b in ((0, 2), (2, 4), (4, T)):  # blocks of 2, 2 and the rest, as a run hands them
        live.observe({k: np.asarray(traj[k][a:b]) for k in keys})
    live.finish("completed")
    sent = []
    live.stream(sent.append)
    import base64
    import gzip
    import json
    times = [np.frombuffer(gzip.decompress(base64.b64decode(live.first["time"])), "<f4")]
    for m in sent[:-1]:
        text = m.decode()
        if text.startswith("data: "):
            times.append(np.frombuffer(gzip.decompress(base64.b64decode(json.loads(text[6:])["time"])), "<f4"))
    want = traj["time"][sorted(set(range(0, T, 3)) | {T - 1})]
    assert np.allclose(np.concatenate(times), want, rtol=1e-6) and sent[-1].startswith(b"event: end")
    assert every_for(2001, 1000, 1000, 0) == 2 and every_for(1001, 100, 100, 0) == 1
    # a follower that sent other positions than the (finished) file holds
    live = Live(sc)
    start = {k: np.asarray(traj[k][:5]) for k in keys}
    start["bodies/position"] = start["bodies/position"] + 1e-3
    f = Follow(str(result), live, start, poll=0.01)
    f.thread.join(30)
    sent = []
    live.stream(sent.append)
    assert live.reload and sent == [b'event: reload\ndata: "completed: ' + sent[0].split(b'"completed: ', 1)[1]]
    assert live.page().count("VIEWER") >= 1


def test_a_hinges_stops_are_drawn_with_the_needle_that_turns_between_them(browser, tmp_path):
    """The door (a hinge with stops at -0.011 and 0.785 rad, SCENARIO.md joints: limits): a spoke from the
    hinge's point at each bound, turned about the axis from the direction that was the leaf's at the angle
    0 (the geometry's ``perp``, as mbsim animate draws them); the needle carried by the leaf, which at every
    frame points where the leaf turned that direction to (its rotation since the first frame): so it lies
    on the upper spoke when the door is at its stop."""
    from mbsim.viz.geometry import joint_geometry
    out = tmp_path / "door.h5"
    assert main(["run", str(REPO / "scenarios" / "door.yaml"), "-o", str(out), "--quiet", "--end", "1.0"]) == 0
    page_file = tmp_path / "door.html"
    assert main(["view", str(out), "--html", str(page_file), "--quiet"]) == 0
    traj = read_trajectory(str(out))
    jg = joint_geometry(traj)
    assert sorted(b for _, _, b in jg.stops) == [-0.011, 0.785]
    page, problems, _ = _open(browser, page_file.as_uri())
    assert problems == []
    n, u = jg.axis[0, 0], jg.perp[0, 0]
    leaf = list(traj["bodies/name"]).index("leaf")
    T = len(traj["time"])
    # the frame nearest the upper stop
    angle = np.array([np.arctan2(np.cross(u, _quat_matrix(q) @ _quat_matrix(traj["bodies/orientation"][0, leaf]).T @ u) @ n,
                                 u @ _quat_matrix(q) @ _quat_matrix(traj["bodies/orientation"][0, leaf]).T @ u)
                      for q in traj["bodies/orientation"][:, leaf]])
    k_stop = int(np.argmax(angle))
    assert 0.785 < angle[k_stop] < 0.9  # (into the stop: its penalty lets it in 0.08 rad)
    for k in (0, T // 2, k_stop, T - 1):
        page.evaluate(f"VIEWER.setFrame({k})")
        stops = np.array(page.evaluate("VIEWER.stops()"))
        assert stops.shape == (2, 2, 3)
        for (p0, p1), (_, _, bound) in zip(stops, jg.stops):
            np.testing.assert_allclose(p0, jg.points[k, 0, 0], atol=1e-5)
            d = (p1 - p0) / np.linalg.norm(p1 - p0)
            np.testing.assert_allclose(d, np.cos(bound) * u + np.sin(bound) * np.cross(n, u), atol=1e-5)
        (p0, p1), = np.array(page.evaluate("VIEWER.needles()"))
        np.testing.assert_allclose(p0, jg.points[k, 0, 1], atol=1e-5)
        d = (p1 - p0) / np.linalg.norm(p1 - p0)
        np.testing.assert_allclose(d, np.cos(angle[k]) * u + np.sin(angle[k]) * np.cross(n, u), atol=1e-5)
    page.close()


def test_a_mode_is_shown_as_one_period_of_its_shape(browser, tmp_path):
    """``mbsim view MODES.h5 --mode K``: the page plays the frames of mbsim.viz.animate.mode_motion (one period
    of the shape about the stored state), its time the phase over the frequency."""
    from mbsim.io.reader import read_modes
    from mbsim.viz.animate import mode_motion
    modes_file = tmp_path / "modes.h5"
    assert main(["modes", str(REPO / "scenarios" / "double_pendulum_3d.yaml"), "-o", str(modes_file)]) == 0
    modes = read_modes(str(modes_file))
    K = len(modes["frequency"])  # the highest: not a rigid-body mode
    assert not modes["rigid_body"][K - 1]
    out = tmp_path / "mode.html"
    assert main(["view", str(modes_file), "--mode", str(K), "--html", str(out), "--quiet"]) == 0
    traj = read_trajectory(str(modes_file))
    motion = mode_motion(traj, modes, K)
    page, problems, _ = _open(browser, out.as_uri())
    n = page.evaluate("VIEWER.nframes")
    assert n == len(motion.phases) and problems == []
    period = 1.0 / modes["frequency"][K - 1]
    assert page.evaluate(f"VIEWER.time[{n - 1}]") == pytest.approx(period * (n - 1) / n, rel=1e-6)
    k = n // 4
    page.evaluate(f"VIEWER.setFrame({k})")
    for i in range(2):
        r, q = page.evaluate(f"VIEWER.pose({i})")
        np.testing.assert_allclose(r, motion.traj["bodies/position"][k, i], atol=1e-6)
        np.testing.assert_allclose(q, motion.traj["bodies/orientation"][k, i], atol=1e-6)
    page.close()
    assert main(["view", str(REPO / "scenarios" / "pendulum.yaml"), "--mode", "1", "--html", str(out)]) == 2


def test_the_readme_screenshot(browser, tmp_path):
    """The picture of README.md and docs/viewer.md (docs/viewer.png), taken here: the 3D double pendulum at
    t = 1.2 s, its upper body clicked, the kinetic energy plotted.  ``MBSIM_VIEW_SCREENSHOT=docs/viewer.png
    pytest tests/integration/test_view.py -k screenshot -p no:xdist`` writes it there."""
    res = tmp_path / "dp.h5"
    assert main(["run", str(REPO / "scenarios" / "double_pendulum_3d.yaml"), "-o", str(res), "--quiet"]) == 0
    html = tmp_path / "dp.html"
    assert main(["view", str(res), "--html", str(html), "--quiet"]) == 0
    page = browser.new_page(viewport={"width": 1200, "height": 700}, bypass_csp=True)
    page.goto(html.as_uri())
    page.wait_for_function("window.VIEWER && window.VIEWER.ready && window.VIEWER.rendered > 0", timeout=30000)
    page.select_option("#channel", "0")
    page.evaluate("VIEWER.setFrame(120)")
    x, y = page.evaluate("VIEWER.screen(0)")
    page.mouse.click(x, y)
    page.wait_for_function("VIEWER.picked === 'upper'", timeout=5000)
    out = os.environ.get("MBSIM_VIEW_SCREENSHOT") or str(tmp_path / "viewer.png")
    page.wait_for_timeout(200)
    page.screenshot(path=out)
    from PIL import Image
    img = np.asarray(Image.open(out).convert("RGB"), dtype=float)
    assert img.shape == (700, 1200, 3) and img.std() > 5.0
    page.close()


def test_a_rails_stops_are_ticks_across_it_at_their_offsets(tmp_path):
    """A prismatic joint's stops (joint_kinds' rail with limits added): each a tick across the rail, centred
    at A's point plus the bound along the axis, perpendicular to it (the page carries the scene's arms with
    body A: here the world)."""
    import yaml
    from mbsim.viz.view import STOP_TICK, scene
    d = yaml.safe_load((REPO / "scenarios" / "joint_kinds.yaml").read_text())
    rail = next(j for j in d["joints"] if j["name"] == "rail")
    rail["limits"] = {"lower": -0.05, "upper": 0.3, "stiffness": 1e4}
    d["time"]["end"] = 0.05
    path = tmp_path / "rail.yaml"
    path.write_text(yaml.safe_dump(d))
    out = tmp_path / "rail.h5"
    assert main(["run", str(path), "-o", str(out), "--quiet"]) == 0
    meta, _ = scene(read_trajectory(str(out)))
    j = meta["joints"]["names"].index("rail")
    assert meta["joints"]["stop_of"] == [j, j] and meta["joints"]["needle_of"] == []
    arms = np.array(meta["joints"]["stop_arms"]).reshape(-1, 2, 3)  # world-carried: world points
    n = np.array([0.8, 0, -0.6])
    for (p0, p1), bound in zip(arms, (-0.05, 0.3)):
        np.testing.assert_allclose((p0 + p1) / 2, np.array([4.0, 0, 0]) + bound * n, atol=1e-12)
        assert abs((p1 - p0) @ n) < 1e-12
        assert np.linalg.norm(p1 - p0) == pytest.approx(2 * STOP_TICK * meta["size"])


def test_a_hinges_needle_shows_its_angle_from_any_first_frame(tmp_path):
    """The needle's arm in B comes from the scenario's initial poses, not from the first frame shown: a page
    of the door's frames from the middle of its swing on (as a mode's page, whose frames are about another
    state) draws the needle at the hinge's angle there."""
    from mbsim.viz.geometry import frame_count, joint_geometry
    from mbsim.viz.view import scene
    out = tmp_path / "door.h5"
    assert main(["run", str(REPO / "scenarios" / "door.yaml"), "-o", str(out), "--quiet", "--end", "0.5"]) == 0
    traj = read_trajectory(str(out))
    T = frame_count(traj)
    k0 = T // 2
    jg = joint_geometry(traj)
    n, u, ub = jg.axis[k0, 0], jg.perp[k0, 0], jg.perp_b[k0, 0]
    angle = np.arctan2(np.cross(u, ub) @ n, u @ ub)
    assert angle > 0.3
    from mbsim.io.writer import frame_datasets
    later = {k: (v[k0:] if k in frame_datasets(1) and np.ndim(v) and len(v) == T else v) for k, v in traj.items()}
    meta, data = scene(later)
    j = meta["joints"]
    (a0, a1), = np.array(j["needle_arms"]).reshape(-1, 2, 3)
    leaf = j["ends"][2 * j["needle_of"][0] + 1]
    R = _quat_matrix(data["orientation"][0, leaf])
    d = R @ (a1 - a0)
    d /= np.linalg.norm(d)
    np.testing.assert_allclose(d, np.cos(angle) * u + np.sin(angle) * np.cross(n, u), atol=1e-9)
