"""Issue 63's probes from the built wheel in a fresh venv without extras (the wheel and the venv of
``test_packaging``): an agent that exits is one error line and exit code 2, with one worker and with
two; an agent that answers a string forfeits with its reason in the JSON; a journal of another agent
is refused; ``rate()`` refuses a scale of another version than ``ladder``; a value-model file whose
header claims a huge array is refused before numpy allocates it; an SB3 file is refused for the
missing extra without anything in it being run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import error_lines
from tests.venvs import _run

AGENTS = (
    "import os, sys\n"
    "CALLS = [0]\n"
    "def _legal(state):\n"
    "    CALLS[0] += 1\n"
    "    return int(state.legal_actions()[0])\n"
    "def exits(state):  # mid-game: call 1 is the test move before the games\n"
    "    if _legal(state) is not None and CALLS[0] == 3:\n"
    "        sys.exit(0)\n"
    "    return int(state.legal_actions()[0])\n"
    "def ends(state):\n"
    "    if _legal(state) is not None and CALLS[0] == 3:\n"
    "        os._exit(0)\n"
    "    return int(state.legal_actions()[0])\n"
    "def word(state):\n"
    "    return 'advance'\n"
)
MINE = "def act(state):\n    return int(state.legal_actions()[{pick}])\n"

# the library's probes, run by the venv's python in a folder of their own
LIBRARY_PROBES = """
import base64, io, json, pickle, zipfile
from pathlib import Path
import numpy as np
from patchwork_env import rate
from patchwork_env.evaluation.ladder import load_scale
from patchwork_env.players.registry import make_agent
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.value_model import ValueModel, ValueModelError, load_value_model

try:
    rate("greedy", scale=load_scale(version="v2"), ladder="v1")
except ValueError as exc:
    print("rate:", exc)
else:
    print("rate: rated without a word")

rng = np.random.default_rng(0)
shapes = {"w1": (1452, 8), "b1": (8,), "w2": (8, 4), "b2": (4,), "w3": (4, 1), "b3": (1,)}
ValueModel(**{n: rng.normal(0, 0.1, s).astype(np.float32) for n, s in shapes.items()}).save("value.npz")
load_value_model("value.npz")
with zipfile.ZipFile("value.npz") as src:
    entries = {info.filename: src.read(info) for info in src.infolist()}
header = io.BytesIO()
np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
entries["w1.npy"] = header.getvalue()
with zipfile.ZipFile("huge.npz", "w") as out:
    for name, raw in entries.items():
        out.writestr(name, raw)
try:
    load_value_model("huge.npz")
except ValueModelError as exc:
    print("value model:", exc)
else:
    print("value model: loaded")

class MakesMarker:
    def __reduce__(self):
        return (open, (str(Path("marker").resolve()), "w"))

serialized = base64.b64encode(pickle.dumps(MakesMarker())).decode()  # as SB3 stores what JSON cannot hold
data = {"policy_kwargs": {":type:": "<class 'dict'>", ":serialized:": serialized}}
with zipfile.ZipFile("model.zip", "w") as out:
    out.writestr("data", json.dumps(data))
    out.writestr("policy.pth", b"")
try:
    make_agent("sb3:model.zip")
except AgentSpecError as exc:
    print("sb3:", exc)
else:
    print("sb3: loaded")
print("marker made:", Path("marker").exists())
"""


def test_the_library_probes_of_issue_63_pass_from_the_wheel(fresh_env: Path) -> None:
    folder = fresh_env / "faults"
    folder.mkdir(exist_ok=True)
    (folder / "faulty.py").write_text(AGENTS)
    (folder / "mine.py").write_text(MINE.format(pick=-1))
    patchwork = str(fresh_env / "bin" / "patchwork")

    # an agent that exits mid-game: exit code 2 and one line naming it, the game and the move
    for argv, line in (
        (["evaluate", "--agents", "faulty.py:exits", "random", "--pairs", "2", "--workers", "1"],
         ("error: faulty.py:exits exited on game 0 (deal 0, seat ", "sys.exit(0)")),
        (["ladder", "faulty.py:ends", "--budget", "quick", "--workers", "2"],
         ("error: faulty.py:ends exited on game ", "its process ended with exit code 0")),
    ):  # fmt: skip
        proc = _run(fresh_env, patchwork, *argv, "--no-progress", cwd=folder)
        lines = error_lines(proc.stderr)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr[-2000:])
        assert len(lines) == 1 and lines[0].startswith(line[0]) and line[1] in lines[0], lines
        assert " at move " in lines[0] and "Elo" not in proc.stdout

    # an agent that answers a string forfeits each game, the reason in the JSON
    argv = ["evaluate", "--agents", "faulty.py:word", "random", "--pairs", "1", "--workers", "1", "--json", "w.json"]
    proc = _run(fresh_env, patchwork, *argv, "--no-progress", cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    pair = json.loads((folder / "w.json").read_text())["pairs"][0]
    assert pair["illegal_a"] == pair["games"] == len(pair["forfeits"]) == 2
    reason = "action 'advance' is out of range: actions are integers 0..2025"
    assert all(f["reason"] == reason for f in pair["forfeits"]), pair["forfeits"]

    # a journal of another agent: the file edited between two runs of the same command
    argv = ["evaluate", "--agents", "mine.py:act", "random", "--pairs", "1", "--workers", "1", "--journal", "j.jsonl"]
    proc = _run(fresh_env, patchwork, *argv, "--no-progress", cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (folder / "mine.py").write_text(MINE.format(pick=0))
    proc = _run(fresh_env, patchwork, *argv, "--no-progress", cwd=folder)
    lines = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(lines) == 1, (proc.returncode, proc.stderr[-2000:])
    assert lines[0].startswith("error: j.jsonl holds games of another mine.py:act (changed since they were played")
    assert lines[0].endswith("to start afresh, delete j.jsonl, or give another --journal FILE")

    # rate(), value-model files and SB3 files from Python
    (folder / "probes.py").write_text(LIBRARY_PROBES)
    proc = _run(fresh_env, str(fresh_env / "bin" / "python"), "probes.py", cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = dict(line.split(": ", 1) for line in proc.stdout.strip().splitlines())
    assert said["rate"].startswith("scale holds ladder v2, and ladder='v1' asks for v1: give one of them")
    assert said["value model"] == (
        "huge.npz: w1's header claims shape (1000000000000,); the format allows at most (1452, 4096) "
        "(observation 1452, hidden sizes at most 4096)"
    )
    assert said["sb3"].startswith("sb3:model.zip needs stable-baselines3, which is not installed")
    assert said["marker made"] == "False"

    # the value-model file from the command line: one error line, before any game
    proc = _run(fresh_env, patchwork, "ladder", "az:value=huge.npz,sims=8", "--no-progress", cwd=folder)
    lines = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(lines) == 1 and "w1's header claims shape (1000000000000,)" in lines[0], lines
