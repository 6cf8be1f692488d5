"""docs/tutorial.md, run as a new user would: every command, in order, in an empty folder.

The tutorial is parsed, not copied: every ``$ `` line of its ```console blocks
is run (``mbsim`` as ``sys.executable -m mbsim``), every ```diff block is
applied as an edit of the file it names, and every ```python / ```pycon block
marked ``<!-- tutorial-test: run -->`` is executed (pycon blocks as doctests,
so the outputs they show are checked too). A console block marked
``<!-- tutorial-test: exit N -->`` must exit with N, any other with 0. The
outputs the tutorial shows must match what the commands print, up to the
numbers in them (timings, dates) and the value column of ``label   value``
lines. Plot and animate steps need matplotlib, ``export --vtk`` meshio and
``to_xarray`` xarray: they are skipped without them (the ``test`` extra has
all three, so CI runs everything).

Also checked: the tutorial's scenario block is ``docs/tutorial/tutorial.yaml``
byte for byte, and the committed pictures exist, are small and have the size
the tutorial's commands ask for.
"""
from __future__ import annotations

import doctest
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
SCENARIO = ROOT / "docs" / "tutorial" / "tutorial.yaml"
PICTURES = {"energy.png": 150_000, "motion.gif": 1_500_000}  # committed picture -> largest size in bytes
MARKER = re.compile(r"<!--\s*tutorial-test:\s*(.*?)\s*-->")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@dataclass
class Block:
    lang: str
    lines: list
    line: int                      # line of the opening fence in tutorial.md (1-based)
    marks: list = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def parse(markdown: str) -> list:
    """The fenced code blocks of ``markdown``, with the ``tutorial-test`` marks just above each."""
    blocks, marks, lines, i = [], [], markdown.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.fullmatch(line.strip())
        if m:
            marks.append(m.group(1))
        elif line.startswith("```"):
            lang, start, body = line[3:].strip(), i + 1, []
            i += 1
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            blocks.append(Block(lang, body, start, marks))
            marks = []
        elif line.strip():
            marks = []  # a mark applies to the block right below it
        i += 1
    return blocks


BLOCKS = parse(TUTORIAL.read_text(encoding="utf-8"))


def commands(block: Block) -> list:
    """``[(line, command, shown output lines), ...]`` of a console block."""
    out = []
    for k, line in enumerate(block.lines):
        if line.startswith("$ "):
            out.append((block.line + 1 + k, line[2:], []))
        elif out:
            out[-1][2].append(line)
    return out


def mask(line: str) -> str:
    return " ".join(NUMBER.sub("#", line).split())


def check_shown_output(shown: list, printed: str, where: str, exact: bool = False) -> None:
    """Every line the tutorial shows is printed: word for word if ``exact`` (error messages), else
    up to its numbers, or at least its label (the text before a run of spaces, as in ``steps    1000``)."""
    if exact:
        printed_set = {line.rstrip() for line in printed.splitlines()}
        missing = [line for line in shown if line.strip() not in ("", "…") and line.rstrip() not in printed_set]
        assert not missing, f"{where}: the tutorial shows\n" + "\n".join(missing) + f"\nbut it printed\n{printed}"
        return
    printed_lines = [mask(line) for line in printed.splitlines()]
    printed_set = set(printed_lines)
    for line in shown:
        if not line.strip() or line.strip() == "…":
            continue
        if mask(line) in printed_set:
            continue
        label = re.split(r"\s{2,}", line.strip())[0]
        assert label != line.strip() and any(p.startswith(mask(label)) for p in printed_lines), (
            f"{where}: the tutorial shows\n  {line}\nbut the command printed\n{printed}")


def apply_diff(block: Block, folder: Path) -> None:
    """Apply a ```diff block (``--- SOURCE`` / ``+++ TARGET`` / ``@@`` hunks) as an edit."""
    assert block.lines[0].startswith("--- ") and block.lines[1].startswith("+++ "), f"line {block.line}"
    source, target = block.lines[0][4:].strip(), block.lines[1][4:].strip()
    text = (folder / source).read_text(encoding="utf-8")
    hunks, hunk = [], None
    for line in block.lines[2:]:
        if line.startswith("@@"):
            hunk = ([], [])
            hunks.append(hunk)
            continue
        assert hunk is not None, f"diff at line {block.line}: a change before the first @@"
        kind, body = line[:1], line[1:]
        if kind in " -":
            hunk[0].append(body)
        if kind in " +":
            hunk[1].append(body)
    for old, new in hunks:
        old, new = "\n".join(old) + "\n", "\n".join(new) + "\n"
        assert text.count(old) == 1, f"diff at line {block.line}: its context is not found once in {source}:\n{old}"
        text = text.replace(old, new)
    (folder / target).write_text(text, encoding="utf-8")


def needs(argv: list) -> str | None:
    """The missing optional package a command needs, if any."""
    if argv[:1] in (["plot"], ["animate"]) and not (have("matplotlib") and have("PIL")):
        return "matplotlib"
    if argv[:1] == ["export"] and "--vtk" in argv and not have("meshio"):
        return "meshio"
    return None


def option(argv: list, name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def check_picture(path: Path, argv: list, where: str) -> None:
    from PIL import Image
    assert path.is_file() and path.stat().st_size > 0, f"{where}: {path.name} was not written"
    size = option(argv, "--size")
    with Image.open(path) as im:
        if size:
            assert im.size == tuple(int(v) for v in size.split("x")), f"{where}: {path.name} is {im.size}"
        if path.suffix == ".gif":
            assert im.n_frames > 10, f"{where}: {path.name} has {im.n_frames} frames"


# --------------------------------------------------------------------------
def test_the_checks_catch_drift(tmp_path):
    """The machinery below fails when the tutorial and the program disagree."""
    blocks = parse("<!-- tutorial-test: exit 2 -->\n```console\n$ mbsim validate x.yaml\nx.yaml: 1 problem\n```\n"
                   "text\n```diff\n--- a.yaml\n+++ b.yaml\n@@ -1,2 +1,2 @@\n k: 1\n-m: 2\n+m: 3\n```\n")
    assert [(b.lang, b.marks) for b in blocks] == [("console", ["exit 2"]), ("diff", [])]
    assert commands(blocks[0]) == [(3, "mbsim validate x.yaml", ["x.yaml: 1 problem"])]
    (tmp_path / "a.yaml").write_text("k: 1\nm: 2\nn: 4\n")
    apply_diff(blocks[1], tmp_path)
    assert (tmp_path / "b.yaml").read_text() == "k: 1\nm: 3\nn: 4\n"
    summary = "completed: demo, t = 0 … 4 s\n  steps          1000 (Δt = 0.004 s)\n  wall time      3.4 s\n"
    check_shown_output(["completed: demo, t = 0 … 2 s", "  wall time      9.9 s", "…"], summary, "ok")
    check_shown_output(["  steps          99 (other words)"], summary, "label only")
    for shown in (["completed: other, t = 0 … 4 s"], ["  iterations     1000"]):
        with pytest.raises(AssertionError):
            check_shown_output(shown, summary, "drift")
    with pytest.raises(AssertionError):
        check_shown_output(["x.yaml (line 3): bad"], "x.yaml (line 4): bad\n", "moved error", exact=True)


def test_scenario_block_is_the_committed_file():
    yaml_blocks = [b for b in BLOCKS if b.lang == "yaml"]
    assert len(yaml_blocks) == 1, "the tutorial should show exactly one scenario"
    assert yaml_blocks[0].text == SCENARIO.read_text(encoding="utf-8"), (
        "the YAML block of docs/tutorial.md and docs/tutorial/tutorial.yaml differ: change both")


def test_committed_pictures_are_small_and_shown():
    markdown = TUTORIAL.read_text(encoding="utf-8")
    for name, limit in PICTURES.items():
        path = SCENARIO.parent / name
        assert path.is_file(), f"{path} is missing"
        assert 0 < path.stat().st_size <= limit, f"{path} is {path.stat().st_size} bytes, more than {limit}"
        assert f"](tutorial/{name})" in markdown, f"docs/tutorial.md does not show tutorial/{name}"
    # each picture has the size the tutorial's command asks for
    pytest.importorskip("PIL")
    made = {}
    for block in BLOCKS:
        if block.lang == "console":
            for line, command, _ in commands(block):
                argv = shlex.split(command)
                if option(argv, "-o") in PICTURES:
                    made[option(argv, "-o")] = (argv, line)
    assert set(made) == set(PICTURES), f"the tutorial's commands make {sorted(made)}"
    for name, (argv, line) in made.items():
        check_picture(SCENARIO.parent / name, argv, f"docs/tutorial/{name} (made at tutorial.md line {line})")


def test_readme_shows_the_tutorial():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/tutorial.md" in readme
    assert re.search(r"!\[[^\]]*\]\(docs/tutorial/(motion\.gif|energy\.png)\)", readme)


def test_tutorial_runs_as_written(tmp_path, monkeypatch):
    """Every step of the tutorial, in order, in an empty folder holding only tutorial.yaml."""
    (tmp_path / "tutorial.yaml").write_text(SCENARIO.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MPLBACKEND="Agg", COLUMNS="200")
    session: dict = {"__name__": "__tutorial__"}  # the pycon blocks share one interpreter session
    ran, skipped, timings = 0, [], []

    for block in BLOCKS:
        marks = block.marks
        if block.lang == "console":
            expected = 0
            for mark in marks:
                m = re.fullmatch(r"exit (\d+)", mark)
                assert m, f"tutorial.md line {block.line}: unknown mark {mark!r}"
                expected = int(m.group(1))
            for line, command, shown in commands(block):
                where = f"tutorial.md line {line}: $ {command}"
                argv = shlex.split(command)
                assert argv[0] == "mbsim", f"{where}: the tutorial should only show mbsim commands"
                missing = needs(argv[1:])
                if missing:
                    skipped.append(f"{command} (no {missing})")
                    continue
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, "-m", "mbsim", *argv[1:]], cwd=tmp_path, env=env,
                                      capture_output=True, text=True, timeout=300)
                printed = proc.stdout + proc.stderr
                assert proc.returncode == expected, (
                    f"{where}: exit status {proc.returncode}, the tutorial implies {expected}\n{printed}")
                check_shown_output(shown, printed, where, exact=expected != 0)
                out = option(argv, "-o")
                if argv[1] in ("plot", "animate") and out:
                    check_picture(tmp_path / out, argv, where)
                ran += 1
                timings.append((time.perf_counter() - t0, command))
        elif block.lang == "diff":
            apply_diff(block, tmp_path)
        elif block.lang in ("python", "pycon") and "run" in marks:
            source = block.text
            missing = [m for m, used in (("matplotlib", "matplotlib" in source), ("xarray", "to_xarray" in source))
                       if used and not have(m)]
            if missing:
                skipped.append(f"Python at line {block.line} (no {', '.join(missing)})")
                continue
            t0 = time.perf_counter()
            if block.lang == "python":
                exec(compile(source, f"tutorial.md line {block.line}", "exec"), {"__name__": "__tutorial__"})
            else:
                test = doctest.DocTestParser().get_doctest(source, session, "tutorial", str(TUTORIAL),
                                                            block.line)
                report = io.StringIO()
                runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
                runner.run(test, out=report.write, clear_globs=False)
                session.update(test.globs)  # DocTest works on a copy of the names it is given
                assert runner.failures == 0, f"tutorial.md line {block.line}:\n{report.getvalue()}"
            ran += 1
            timings.append((time.perf_counter() - t0, f"{block.lang} block at line {block.line}"))

    print("\n".join(f"{t:6.1f} s  {what}" for t, what in timings))  # shown with pytest -s
    assert ran >= 10, f"only {ran} tutorial steps ran"
    # what the commands left behind
    assert (tmp_path / "outputs" / "tutorial.h5").is_file()
    for name in ("bodies.csv", "connectors.csv", "energy.csv"):
        assert (tmp_path / "tables" / name).stat().st_size > 0
    if have("matplotlib"):
        assert (tmp_path / "swing.png").stat().st_size > 0
    if skipped:
        import warnings
        warnings.warn("tutorial steps skipped: " + "; ".join(skipped))
