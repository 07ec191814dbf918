"""Errors a person can act on: a spec's typo gets one line with the closest name (not the catalogue
of every agent), a class is taken wherever an agent is, ``FILE.py`` without ``:NAME`` names the
agents the file defines, and a function defined inside a script's main guard rated on two workers
gets one line saying why and what to do (not a pickling error from a worker)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import patchwork_env
from patchwork_env import SingleAgentEnv, new_game
from patchwork_env.core.state import GameState
from patchwork_env.evaluation.arena import play_pairs, round_robin
from patchwork_env.players.errors import AgentSpecError
from patchwork_env.players.registry import make_agent
from tests.cli import error_lines, patchwork


@pytest.mark.parametrize(
    ("spec", "line"),
    [
        ("gredy", "unknown agent 'gredy' in spec 'gredy': did you mean 'greedy'?"),
        ("mtcs:sims=5", "unknown agent 'mtcs' in spec 'mtcs:sims=5': did you mean 'mcts'?"),
        ("mcts:sim=5", "'mcts:sim=5': mcts has no parameter 'sim': did you mean 'sims'? (it takes sims, time,"),
        ("az:consider=4", "az has no parameter 'consider': did you mean 'considered'?"),
        (
            "mcts:rollout=gredy",
            "parameter 'rollout' must be one of greedy, random, got 'gredy': did you mean 'greedy'?",
        ),
        ("mcts:sims=many", "parameter 'sims' must be int, got 'many' (sims=int in [1, 100000]"),
        ("alphazero", "unknown agent 'alphazero' in spec 'alphazero': the agents are random, greedy, mcts,"),
    ],
)
def test_a_spec_error_is_one_line_with_the_closest_name(spec: str, line: str) -> None:
    with pytest.raises(AgentSpecError) as info:
        make_agent(spec)
    text = str(info.value)
    assert "\n" not in text and len(text) < 300, text  # not the ~60 lines of every agent
    assert line in text, text


def test_rate_with_a_typo_says_did_you_mean_in_one_line() -> None:
    with pytest.raises(ValueError) as info:
        patchwork_env.rate("gredy")
    assert str(info.value).count("\n") == 0 and "did you mean 'greedy'?" in str(info.value)


class MostlyFirst:
    """An agent class as a user writes one: no constructor arguments."""

    name = "mostly-first"

    def __init__(self) -> None:
        self.moves = 0

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        self.moves += 1
        legal = state.legal_actions()
        return int(legal[rng.integers(len(legal))]) if rng.random() < 0.1 else int(legal[0])


class Unnamed:
    def act(self, state: GameState, rng: np.random.Generator) -> int:
        return int(state.legal_actions()[-1])


def test_a_class_is_taken_wherever_an_agent_is() -> None:
    """``rate(MyAgent)`` failed on a missing ``rng`` (the class's ``act`` called unbound); the
    command line's ``FILE.py:MyAgent`` builds the instance, and so does everything now."""
    result = patchwork_env.rate(MostlyFirst, budget="quick", ladder="v1")
    assert result.agent == "mostly-first" and result.games >= 60 and result.illegal_actions == 0
    assert result.to_dict()["command"].startswith("patchwork_env.rate(MostlyFirst, ")
    pair = play_pairs(Unnamed, MostlyFirst, 1, seed=0, workers=1)
    assert (pair.a, pair.b, pair.games) == ("Unnamed", "mostly-first", 2)
    assert round_robin([MostlyFirst, "random"], 1, seed=0, workers=1).agents == ["mostly-first", "random"]
    env = SingleAgentEnv(opponent=MostlyFirst)
    _, info = env.reset(seed=0)
    assert info["action_mask"].any()


def test_a_class_that_needs_arguments_is_one_clear_error() -> None:
    class NeedsDepth:
        name = "deep"

        def __init__(self, depth: int) -> None:
            self.depth = depth

        def act(self, state: GameState, rng: np.random.Generator) -> int:
            return int(state.legal_actions()[0])

    with pytest.raises(TypeError, match=r"NeedsDepth\(\) could not be built with no arguments .*give an instance"):
        play_pairs(NeedsDepth, "random", 1, workers=1)
    assert play_pairs(NeedsDepth(2), "random", 1, workers=1).a == "deep"


def test_a_file_without_its_name_suggests_the_names_it_defines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "myagent.py").write_text(
        "import numpy as np\nHELPER_TABLE = 3\ndef _private(): pass\n"
        "def act(state):\n    return int(state.legal_actions()[0])\nclass Mine:\n    pass\n"
        "raise SystemExit('the file is not run to find its names')\n"
    )
    for spec in ("myagent.py", "myagent.py:"):
        with pytest.raises(AgentSpecError) as info:
            make_agent(spec)
        assert str(info.value) == (
            "myagent.py names a file but not the agent in it: give FILE.py:NAME, e.g. myagent.py:act "
            "(it defines act, Mine, HELPER_TABLE)"
        )
    assert patchwork("ladder", "myagent.py") == 2
    lines = error_lines(capsys.readouterr().err)
    assert lines == [f"error: {info.value}"]
    with pytest.raises(AgentSpecError, match=r"nothere\.py: no such file"):
        make_agent("nothere.py")


def test_a_misspelt_name_in_a_file_says_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text("def first_legal(state):\n    return int(state.legal_actions()[0])\n")
    with pytest.raises(AgentSpecError, match=r"has no 'frist_legal': did you mean 'first_legal'\?"):
        make_agent(f"{path}:frist_legal")


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_function_under_the_main_guard_on_two_workers_is_one_clear_line(tmp_path: Path) -> None:
    """Pickled by reference, ``__main__.act`` cannot be loaded by a worker, which imports the
    script without running its main guard: the raw error was a pickling error from the pool."""
    script = _script(
        tmp_path,
        """
        import patchwork_env
        if __name__ == "__main__":
            def act(state):
                return int(state.legal_actions()[0])
            patchwork_env.rate(act, workers=2, ladder="v1")
        """,
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        f"patchwork_env.evaluation.workers.SpawnError: workers > 1: act is defined inside the `if __name__ == "
        f'"__main__":` block of {script}, which worker processes skip when they import the script: define it above '
        "that block (at the top level), or use workers=1"
    )
    assert "Pickl" not in proc.stderr and "AttributeError" not in proc.stderr


def test_the_same_function_above_the_guard_or_on_one_worker_rates(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        import patchwork_env
        def above(state):
            return int(state.legal_actions()[0])
        if __name__ == "__main__":
            def under(state):
                return int(state.legal_actions()[-1])
            print(patchwork_env.rate(above, workers=2, ladder="v1").games)
            print(patchwork_env.rate(under, workers=1, ladder="v1").games)
        """,
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [int(n) >= 60 for n in proc.stdout.split()] == [True, True]


def test_unreachable_in_workers_reads_the_script_not_its_run() -> None:
    from patchwork_env.evaluation.workers import unreachable_in_workers

    def local(state: Any) -> int:
        return 0

    assert unreachable_in_workers(local) is None  # not from a script's __main__: nothing to say
    assert unreachable_in_workers(new_game) is None
