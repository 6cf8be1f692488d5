"""The first run on a machine (issue 12 item 6, issue 27 item 4): plain Python while a background
process compiles, decided per run.

With an empty numba cache a run executes the kernels as plain Python (the same source, the same
arithmetic) and starts one background compilation for the next runs (mbsim/compiling.py); its
results must be the compiled run's.  The choice is the run's own (a context variable the driver sets
for the run, mbsim.kernels.PLAIN): a simulation in another thread of the process runs compiled at the
same time, and no module's globals and no sys.modules entry are changed.  The test session itself
compiles in the foreground (tests/conftest.py); these tests ask for the first-run path explicitly, and
for the default policy (``auto``) where the machine has the two CPUs it needs.
"""
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import h5py
import numpy as np

from mbsim.cli import main
from tests import fresh

ROOT = Path(__file__).resolve().parents[2]

PENDULUM = (ROOT / "scenarios" / "pendulum.yaml").read_text()
assert "end: 5.0" in PENDULUM  # the short version below must really be short
SHORT = PENDULUM.replace("end: 5.0", "end: 0.3")
KEYS = ("bodies/position", "bodies/orientation", "bodies/velocity", "bodies/angular_velocity",
        "connectors/force", "energy/kinetic", "energy/dissipated")


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# the default policy interprets on a cold cache given a second CPU for the background compilation
COLD = "auto" if _cpus() >= 2 else "interpret"


def _datasets(path):
    out = {}
    with h5py.File(path) as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.dtype.kind == "f" and not name.startswith("solver/wall"):
                out[name] = obj[()]
        f.visititems(visit)
    return out


def _stop_background(cache):
    """The background compilation is not the tests' business: stop it."""
    for lock in Path(cache).rglob("mbsim-compiling-*"):
        try:
            os.kill(int(lock.read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def _env(cache, **more):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               **more)
    if more.get("MBSIM_FIRST_RUN") == "auto":
        del env["MBSIM_FIRST_RUN"]  # the default, as users have it
    return env


def _same(a, b, keys=KEYS):
    for k in keys:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        assert x.shape == y.shape, k
        scale = np.abs(x).max(initial=1.0)
        assert np.allclose(x, y, rtol=1e-12, atol=1e-12 * scale), (k, np.abs(x - y).max())


def test_a_first_run_is_interpreted_and_its_results_are_the_compiled_ones_bit_for_bit(tmp_path):
    scen = tmp_path / "short.yaml"
    scen.write_text(SHORT)
    compiled = tmp_path / "compiled.h5"
    assert main(["run", str(scen), "-o", str(compiled), "--quiet"]) == 0  # the session's warm cache
    cache = tmp_path / "empty-cache"
    first = tmp_path / "first.h5"
    try:
        done = subprocess.run([sys.executable, "-m", "mbsim", "run", str(scen), "-o", str(first)],
                              capture_output=True, text=True, env=_env(cache, MBSIM_FIRST_RUN=COLD), timeout=300)
        assert done.returncode == 0, done.stderr
        assert "running uncompiled while the numerical kernels compile in the background" in done.stdout + done.stderr
        locks = list(cache.rglob("mbsim-compiling-*"))
        assert locks or list(cache.rglob("mbsim-ready-*")), "no background compilation was started"
    finally:
        _stop_background(cache)
    a, b = _datasets(compiled), _datasets(first)
    assert a.keys() == b.keys()
    for k in a:
        if k.startswith("solver/"):
            continue
        assert np.array_equal(a[k], b[k], equal_nan=True), k


TWO_THREADS = "two-threads"  # the fresh process's files: TWO_THREADS.yaml (the scenario), .npz (the frames)


def two_threads(folder) -> dict:
    """In the fresh process of the test session (tests/fresh.py: mbsim not compiled yet, a numba cache of
    its own), before anything else compiles: a run that goes plain Python on the cold cache (the default
    policy) in one thread, and, once it has chosen, a run that compiles the kernels in the foreground in
    another; their frames into ``folder``/TWO_THREADS.npz.  Returns the runs' notices and any faked
    sys.modules entry."""
    import pathlib

    from mbsim import compiling, kernels
    from mbsim.driver import run
    from mbsim.integrators import step as stepper
    from mbsim.scenario import load_scenario

    folder = pathlib.Path(folder)
    scen = folder / f"{TWO_THREADS}.yaml"
    scen.write_text(PENDULUM.replace("end: 5.0", "end: 1.0"))
    sc = load_scenario(str(scen))
    results, notes, errors = {}, {"cold": [], "compiled": []}, []
    decided = threading.Event()  # the cold thread's run has chosen plain Python: the other may start compiling

    def simulate(name, policy):
        def notify(text):
            notes[name].append(text)
            decided.set()
        try:
            with compiling.policy(policy):
                results[name] = run(sc, write=False, keep_frames=True, notify=notify).frames_data
        except BaseException as exc:  # noqa: BLE001
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            decided.set()

    cache = os.environ["NUMBA_CACHE_DIR"]
    try:
        cold = threading.Thread(target=simulate, args=("cold", COLD))
        cold.start()
        decided.wait(300)
        # the background compilation the cold run started is not this test's business: the foreground one
        # here is (two compilations on two CPUs would each take twice as long); the cold run goes on as
        # plain Python until the foreground compilation marks the cache ready
        _stop_background(cache)
        compiled = threading.Thread(target=simulate, args=("compiled", "compile"))
        compiled.start()
        cold.join()
        compiled.join()
    finally:
        _stop_background(cache)
    assert not errors, errors
    assert vars(stepper)["run"] is stepper.run and isinstance(stepper.run, kernels.Kernel)  # globals as they were
    assert not kernels.PLAIN.get()
    assert stepper.run._dispatcher is not None and stepper.run._dispatcher.signatures  # compiled in this process
    faked = [k for k, v in sys.modules.items() if v is None]
    np.savez(folder / f"{TWO_THREADS}.npz", **{f"{n}:{k}": v for n, d in results.items() for k, v in d.items()})
    return {"notes": notes, "faked": faked}


def test_two_simulations_in_two_threads_one_on_a_cold_cache_both_give_the_compiled_answer(fresh_folder):
    """Issue 27 item 4: in one process on a cold cache, one thread's run goes plain Python (and starts the
    background compilation) while the other compiles the kernels in the foreground meanwhile, and runs
    them; numba compiling in one thread must see the kernels, not the other thread's plain functions,
    and both runs give the compiled numbers.  In a process of its own with a numba cache of its own, so
    that the test session's state is not touched: the session's fresh process (tests/fresh.py), whose
    first compilation this is (:func:`two_threads`)."""
    report = fresh.result(fresh_folder, "two_threads")
    assert "error" not in report, report
    assert any("running uncompiled" in n for n in report["notes"]["cold"]), report
    assert report["notes"]["compiled"] and all("compiling the numerical kernels" in n
                                               for n in report["notes"]["compiled"]), report
    assert report["faked"] == []
    frames = np.load(fresh_folder / f"{TWO_THREADS}.npz")
    cold = {k.split(":", 1)[1]: v for k, v in frames.items() if k.startswith("cold:")}
    compiled = {k.split(":", 1)[1]: v for k, v in frames.items() if k.startswith("compiled:")}
    assert len(compiled["bodies/position"]) == 101
    _same(compiled, cold)
    # and the compiled answer of the test session's own process (its warm cache)
    from mbsim.driver import run
    from mbsim.scenario import load_scenario
    _same(run(load_scenario(str(fresh_folder / f"{TWO_THREADS}.yaml")), write=False, keep_frames=True).frames_data,
          compiled)


def test_a_plain_run_and_compiled_runs_step_at_the_same_time_in_two_threads():
    """On the session's warm cache: while one thread runs the kernels as plain Python, the other runs
    them compiled, again and again (a compiled run is tens of times faster); each thread's runs keep
    their own kernels, with the same numbers."""
    import time

    from mbsim import kernels
    from mbsim.driver import run
    from mbsim.scenario import parse_scenario
    sc = parse_scenario(PENDULUM.replace("end: 5.0", "end: 0.5"))
    reference = run(sc, write=False, keep_frames=True).frames_data  # compiled (and warm)
    plain, compiled, walls, errors = {}, [], [], []
    done = threading.Event()

    def slow():
        try:
            with kernels.plain_python():
                t0 = time.perf_counter()
                plain.update(run(sc, write=False, keep_frames=True).frames_data)
                plain["wall"] = time.perf_counter() - t0
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            done.set()

    def fast():
        try:
            while not done.is_set() or not compiled:
                t0 = time.perf_counter()
                compiled.append(run(sc, write=False, keep_frames=True).frames_data)
                walls.append(time.perf_counter() - t0)
                assert not kernels.PLAIN.get()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=slow), threading.Thread(target=fast)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(compiled) >= 2, "the compiled runs did not overlap the plain one"
    assert 3 * sorted(walls)[len(walls) // 2] < plain["wall"], (walls, plain["wall"])  # (not plain Python too)
    _same(reference, plain)
    for c in compiled:
        _same(reference, c)


def test_the_default_policy_on_a_warm_cache_runs_compiled_and_starts_nothing(tmp_path):
    """``auto`` (what users get) on the session's cache, which a compiled warm-up has marked ready:
    compiled from the start, no background compilation, no notice."""
    from mbsim import compiling
    from mbsim.driver import run
    from mbsim.scenario import parse_scenario
    sc = parse_scenario(SHORT)
    with compiling.policy("compile"):
        run(sc, write=False)  # warm, and marked so
    notes = []
    with compiling.policy("auto"):
        first = compiling.FirstRun()
        with first:
            assert first.start(sc) is False and not first.plain
        r = run(sc, write=False, notify=notes.append)
    assert r.status == "completed" and notes == []
    paths = compiling._paths()
    if paths is not None:
        assert paths[0].exists() and not compiling._compiling(paths[1])


def test_poll_switches_a_plain_run_back_to_the_compiled_kernels_in_its_own_context_only(tmp_path):
    from mbsim import compiling, kernels
    from mbsim.integrators import bodies
    from mbsim.integrators import step as stepper
    run = stepper.run  # the Kernel
    marker = tmp_path / "mbsim-ready-x"
    first = compiling.FirstRun()
    seen = []
    with first:
        first._marker = marker
        first._plain(True)  # what start() does on a cold cache
        assert kernels.PLAIN.get() and first.plain
        other = threading.Thread(target=lambda: seen.append(kernels.PLAIN.get()))
        other.start()
        other.join()
        assert seen == [False]  # another thread: compiled
        assert vars(stepper)["run"] is run and isinstance(vars(stepper)["matrices"], kernels.Kernel)  # globals kept
        assert first.poll() is False  # no marker yet
        marker.write_text("")
        assert first.poll() is False  # looked at most every POLL_S
        first._last_poll = 0.0
        assert first.poll() is True and not kernels.PLAIN.get() and not first.plain
    assert not kernels.PLAIN.get()
    assert isinstance(vars(bodies)["kinematics"], kernels.Kernel)


def test_a_plain_kernel_calls_the_plain_kernels_and_leaves_the_modules_alone():
    """Under plain_python a kernel runs its plain twin: py_func's code over a copy of its module's
    globals in which the kernels it calls are plain twins too (no call through numba, no module
    global rebound)."""
    from mbsim import kernels
    from mbsim.integrators import step as stepper
    from mbsim.kernels import vec as connectors
    with kernels.plain_python():
        kernels._plain_twin(stepper.run)
    twin = stepper.run._plain
    assert twin.__code__ is stepper.run.py_func.__code__ and twin.__globals__ is not vars(stepper)
    for name, value in vars(stepper).items():
        if isinstance(value, kernels.Kernel):
            assert twin.__globals__[name] is value._plain, name
            assert value._plain.__globals__ is kernels._plain_spaces[id(value.py_func.__globals__)][1], name
    assert isinstance(vars(stepper)["run"], kernels.Kernel) and isinstance(vars(connectors)["mv"], kernels.Kernel)
    R, z = np.array([[[1.0, 2, 3], [4, 5, 6], [7, 8, 10]]]), (1.0, -1.0, 2.0)
    with kernels.plain_python():
        plain = connectors.mv(R, 0, z)
    assert plain == connectors.mv(R, 0, z) == (5.0, 11.0, 19.0)


def test_an_interpreted_run_of_a_closed_loop_of_joints_equals_the_compiled_one():
    """joint_kinds (loops: the block sparse LU, its symbolic structure from a kernel) runs interpreted,
    as on a first run, to the same numbers as compiled (it once failed there: a kernel's ``py_func``
    asked of the plain function)."""
    import dataclasses

    from mbsim import kernels
    from mbsim.driver import run
    from mbsim.scenario import load_scenario
    sc = load_scenario(str(Path(__file__).parents[2] / "scenarios" / "joint_kinds.yaml"))
    sc = dataclasses.replace(sc, time=dataclasses.replace(sc.time, end=0.01), output=dataclasses.replace(
        sc.output, interval=0.005))
    compiled = run(sc, write=False, keep_frames=True)
    with kernels.plain_python():
        first = run(sc, write=False, keep_frames=True)
    for k in ("bodies/position", "bodies/orientation", "joints/force", "joints/moment"):
        assert np.array_equal(compiled.frames_data[k], first.frames_data[k]), k
