"""Damaged result files (issue 15): every reader command and ``mbsim.load`` refuse them cleanly.

A file-damage fuzzer of our own: from one small result with bodies, connectors and joints, every
OUTPUT.md dataset is deleted, retyped (text where numbers belong, numbers where text belongs),
reshaped, replaced by a group, truncated and resized past its data; every OUTPUT.md root attribute
is deleted and retyped (issue 27: without ``alpha_f`` ``mbsim info`` exited 4); a name is made
non-UTF-8; and random bytes of the file are flipped.  On each damaged copy,
``mbsim info``, ``mbsim export --csv``, ``mbsim compare`` (the copy against the intact file) and
``mbsim plot`` (on a sample: it is the slowest) must end with exit 0 or 2 -- never 4, the
internal error -- and ``mbsim.load`` must return or raise ``ResultFileError``.  The counts of the
outcomes are printed (``pytest -s``).
"""
from __future__ import annotations

import collections
import json
import shutil

import h5py
import numpy as np
import pytest

import mbsim
from mbsim.cli import main
from mbsim.io.reader import ATTRIBUTE_TYPES
from mbsim.io.writer import FRAME_DATASETS, JOINT_DATASETS

MODEL = {
    "mbsim": 1, "name": "damage", "gravity": [0, 0, -9.81], "time": {"end": 0.05, "step": 0.005},
    "bodies": [{"name": "arm", "mass": 1.0, "inertia": [0.01, 0.02, 0.03], "position": [0.5, 0, 0]},
               {"name": "bob", "mass": 0.5, "inertia": [0.01, 0.01, 0.01], "position": [1.0, 0, -0.5]}],
    "connectors": [{"name": "s", "type": "spring", "bodies": ["arm", "bob"], "points": [[1, 0, 0], [1, 0, -0.5]],
                    "stiffness": 100.0},
                   {"name": "t", "type": "torsional_damper", "bodies": ["world", "arm"], "damping": 0.1,
                    "projection": "P1"}],
    "joints": [{"name": "hinge", "type": "revolute", "bodies": ["world", "arm"], "point": [0, 0, 0],
                "axis": [0, 1, 0]}],
}
STATIC = ("scenario", "bodies/name", "bodies/fixed", "bodies/mass", "connectors/name", "connectors/type",
          "connectors/body_a", "connectors/body_b", "joints/name", "joints/type", "joints/body_a", "joints/body_b")
DATASETS = STATIC + tuple(FRAME_DATASETS) + tuple(JOINT_DATASETS)


# what a root attribute may be instead of its OUTPUT.md type (text, a number, a whole number)
WRONG_ATTRIBUTES = {"an array": np.array([1, 2]), "text": "x", "a fraction": 7.5, "a complex number": np.complex128(1j),
                    "an empty attribute": h5py.Empty("f8"), "non-UTF-8 bytes": np.bytes_(b"\xff\xfe")}


def _replace(f, name, data):
    del f[name]
    f.create_dataset(name, data=data)


def _mutations():
    """(label, function of an open writable file) for every damage."""
    out = []
    for name in DATASETS:
        out.append((f"delete {name}", lambda f, n=name: f.__delitem__(n)))
        out.append((f"text in {name}", lambda f, n=name: _replace(f, n, np.array(["x", "y"], dtype=object))))
        out.append((f"number in {name}", lambda f, n=name: _replace(f, n, np.float64(3.0))))
        out.append((f"reshape {name}", lambda f, n=name: _replace(f, n, np.zeros((2, 2, 2, 2)))))
        out.append((f"group for {name}", lambda f, n=name: (f.__delitem__(n), f.create_group(n))))
        if name in FRAME_DATASETS or name in JOINT_DATASETS:
            out.append((f"truncate {name}", lambda f, n=name: f[n].resize(1, axis=0)))
            out.append((f"resize {name} to 10^7 frames", lambda f, n=name: f[n].resize(10 ** 7, axis=0)))
    for attr in ATTRIBUTE_TYPES:  # every root attribute of OUTPUT.md (and `integrator`, which info shows)
        out.append((f"delete attribute {attr}", lambda f, a=attr: f.attrs.__delitem__(a)))
        for what, value in WRONG_ATTRIBUTES.items():
            out.append((f"{what} as attribute {attr}", lambda f, a=attr, v=value: f.attrs.__setitem__(a, v)))
    out.append(("non-UTF-8 body name", lambda f: _replace(f, "bodies/name", np.array([b"\xff\xfe", b"bob"]))))
    out.append(("empty file", None))
    return out


def _flip(path, rng, n):
    data = bytearray(path.read_bytes())
    for i in rng.integers(0, len(data), n):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def intact(tmp_path_factory):
    path = tmp_path_factory.mktemp("damage") / "intact.h5"
    mbsim.simulate(MODEL, output=path)
    return path


def _commands(path, intact, tmp, plot):
    yield "info", ["info", str(path)]
    yield "export", ["export", str(path), "--csv", str(tmp / "csv"), "--quiet"]
    yield "compare", ["compare", str(intact), str(path)]
    if plot:
        yield "plot", ["plot", str(path), "-o", str(tmp / "fig.png"), "--quiet"]


@pytest.mark.filterwarnings("ignore::mbsim.io.reader.UnequalLengthsWarning")  # truncated copies: load says so
def test_every_reader_refuses_damaged_files_cleanly(intact, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(15)
    cases = _mutations() + [(f"flip {n} random bytes #{k}", ("flip", n)) for n in (1, 8, 64) for k in range(6)]
    outcomes = collections.Counter()
    for i, (label, damage) in enumerate(cases):
        path = tmp_path / f"case{i}.h5"
        shutil.copy(intact, path)
        if damage is None:
            path.write_bytes(b"")
        elif isinstance(damage, tuple):
            _flip(path, rng, damage[1])
        else:
            with h5py.File(path, "r+") as f:
                damage(f)
        for cmd, argv in _commands(path, intact, tmp_path, plot=i % 6 == 0):
            code = main(argv)
            err = capsys.readouterr().err
            assert code in (0, 1, 2), f"{label}: mbsim {cmd} exited {code}:\n{err}"
            assert "internal error" not in err and "Traceback" not in err, f"{label}: {cmd}:\n{err}"
            outcomes[f"{cmd} exit {code}"] += 1
        try:
            mbsim.load(path)
            outcomes["load ok"] += 1
        except mbsim.ResultFileError:
            outcomes["load ResultFileError"] += 1
    print(f"\n{len(cases)} damaged files; " + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items())))
    # the damage that matters is refused, not read as something else
    assert outcomes["info exit 2"] > len(cases) // 2


def test_a_dataset_resized_past_its_data_is_refused_without_reading_it(intact, tmp_path):
    """issue 15: a 14 MB file whose per-frame datasets were resized to 10^7 frames cost 3.2 GB in
    mbsim.load; now the reader compares the frames claimed with the chunks really stored."""
    import resource
    path = tmp_path / "resized.h5"
    shutil.copy(intact, path)
    with h5py.File(path, "r+") as f:
        for k in ("time", "bodies/position"):
            f[k].resize(10 ** 7, axis=0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(mbsim.ResultFileError, match="claims 10000000 frames but its storage holds about"):
        mbsim.load(path)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB: no gigabytes


def test_info_says_which_datasets_hold_non_finite_values_and_what_is_missing(intact, tmp_path, capsys):
    path = tmp_path / "nan.h5"
    shutil.copy(intact, path)
    with h5py.File(path, "r+") as f:
        f["energy/kinetic"][2] = np.nan
        f["bodies/velocity"][3, 0, 1] = np.inf
        del f.attrs["wall_time_s"]
    assert main(["info", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "energy drift   not finite" in out
    assert "not finite     bodies/velocity, energy/kinetic hold NaN or inf" in out
    assert "missing        root attributes wall_time_s" in out
    assert err == ""  # no numpy RuntimeWarning on the terminal


def test_info_takes_a_missing_or_wrongly_typed_root_attribute_as_missing(intact, tmp_path, capsys):
    """issue 27: a result with joints whose root attribute alpha_f was missing made `mbsim info` exit 4
    (a TypeError formatting None); the other integrator settings and the counters, missing or of another
    type (an array where a number belongs), did the same to info, plot or export."""
    path = tmp_path / "attrs.h5"
    shutil.copy(intact, path)
    with h5py.File(path, "r+") as f:
        del f.attrs["alpha_f"]
        f.attrs["beta"] = "x"
        f.attrs["steps"] = np.array([1, 2])
        f.attrs["status"] = 3.0
    assert main(["info", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "(α_f = ?, α_m = 0.578947, β = ?, γ = 0.552632)" in out
    assert "status         ?" in out
    assert "missing        root attributes alpha_f (OUTPUT.md has them)" in out
    assert "wrong type     root attributes beta, status, steps" in out
    assert err == ""
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["integrator"]["alpha_f"] is None and info["integrator"]["beta"] is None
    assert info["counters"]["steps"] is None and info["status"] is None
    assert info["missing_attributes"] == ["alpha_f"]
    assert info["wrongly_typed_attributes"] == ["beta", "status", "steps"]
    res = mbsim.load(path)  # every reader takes them as missing
    assert "steps" not in res.attrs and "alpha_f" not in res.attrs and res.attrs["rho_inf"] == 0.9
    for argv in (["plot", str(path), "-o", str(tmp_path / "fig.png"), "--quiet"],
                 ["export", str(path), "--csv", str(tmp_path / "csv"), "--quiet"]):
        if argv[0] == "plot":
            pytest.importorskip("matplotlib")
        assert main(argv) == 0, capsys.readouterr().err
