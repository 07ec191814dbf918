"""``patchwork compare`` and ``patchwork_env.compare`` from the built wheel in a fresh venv without
extras (the wheel and the venv of ``test_packaging``): a function agent and a ``FILE.py:NAME``
agent, on the command line and from Python, with workers and a journal."""

from __future__ import annotations

import json
from pathlib import Path

from tests.venvs import _run

AGENT_FILE = (
    "import numpy as np\n"
    "from patchwork_env import observation_and_mask\n"
    "def act(state):\n"
    "    obs, mask = observation_and_mask(state)\n"
    "    return int(np.flatnonzero(mask)[-1])\n"
    "print('loaded myagent')  # top-level code, no main guard\n"
)


def test_the_command_compares_an_agent_file_with_workers_and_a_journal(fresh_env: Path) -> None:
    (fresh_env / "myagent.py").write_text(AGENT_FILE)
    patchwork_cmd = str(fresh_env / "bin" / "patchwork")
    argv = [patchwork_cmd, "compare", "greedy", "myagent.py:act", "--workers", "2", "--seed", "1", "--json", "c.json"]
    proc = _run(fresh_env, *argv)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "\nA is better: greedy (A) against myagent.py:act (B)\n" in proc.stdout, proc.stdout  # after its prints
    data = json.loads((fresh_env / "c.json").read_text())
    assert data["kind"] == "comparison" and data["decision"] == "better" and data["pairs"] < 200
    assert data["elo"] > 0 and data["score_a"] > 0.5 and data["wins_a"] > data["pairs"]
    assert [Path(p).name for p in data["identities"]["b"]["files"]] == ["myagent.py"]
    assert "A scores" in proc.stderr and "LLR" in proc.stderr  # the live line, without tqdm
    assert not (fresh_env / "c.json.partial.jsonl").exists()
    proc = _run(fresh_env, patchwork_cmd, "compare", "greedy", "nope")
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("error: unknown agent 'nope'")


def test_the_python_function_compares_a_function_and_an_agent_file(fresh_env: Path) -> None:
    (fresh_env / "myagent.py").write_text(AGENT_FILE)
    (fresh_env / "use.py").write_text(
        "import patchwork_env\n"
        "def first_legal(state):\n"
        "    return int(state.legal_actions()[0])\n"
        "r = patchwork_env.compare(first_legal, 'myagent.py:act', max_pairs=6, seed=0, journal='j.jsonl')\n"
        "print(r.decision, r.pairs, r.provenance['commit'])\n"
        "print(repr(r))\n"
        "again = patchwork_env.compare(first_legal, 'myagent.py:act', max_pairs=6, journal='j.jsonl')\n"
        "print(again.pentanomial == r.pentanomial, again.seed)\n"
    )
    proc = _run(fresh_env, str(fresh_env / "bin" / "python"), "use.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the agent file's own print runs whenever a call loads it (each call reads the file afresh)
    lines = [line for line in proc.stdout.strip().splitlines() if line != "loaded myagent"]
    from patchwork_env.evaluation.provenance import checkout_commit

    assert lines[-3] == f"undecided 6 {checkout_commit()}"  # the commit the wheel was built from
    assert lines[-2].startswith("<CompareResult undecided: A='first_legal' against B='myagent.py:act', Elo ")
    assert lines[-1] == "True 0"  # the second call read the six deals and the seed from the journal
