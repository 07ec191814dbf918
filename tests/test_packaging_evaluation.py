"""Issue 59's evaluation findings from the built wheel in fresh venvs (those of ``test_packaging``):
forfeits explained on screen and in the JSON, an agent's exception as one error line, errors a
person can act on, a class rated as an agent, no timed move spent compiling (a fresh install's
kernels), and, with the extras, a plain SB3 PPO that forfeits no game."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import error_lines
from tests.test_clock import COMPILED_DURING_MOVES
from tests.venvs import _run

AGENTS = (
    "CALLS = [0]\n"
    "def word(state):\n"
    "    return 'advance'\n"
    "def late_bug(state):\n"
    "    CALLS[0] += 1\n"
    "    if CALLS[0] > 100:\n"
    "        raise ZeroDivisionError('my bug')\n"
    "    return int(state.legal_actions()[0])\n"
    "class Mine:\n"
    "    name = 'mine'\n"
    "    def act(self, state, rng):\n"
    "        return int(state.legal_actions()[-1])\n"
)


def test_forfeits_and_exceptions_by_one_rule_from_the_command_line(fresh_env: Path) -> None:
    (fresh_env / "myagents.py").write_text(AGENTS)
    patchwork_cmd = str(fresh_env / "bin" / "patchwork")
    argv = ["evaluate", "--agents", "myagents.py:word", "greedy", "--pairs", "2", "--workers", "2", "--json", "e.json"]
    proc = _run(fresh_env, patchwork_cmd, *argv, "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "4 games lost by an illegal or wrong-type action" in proc.stdout
    assert "myagents.py:word lost game 0 (deal 0, seat 0) at move 2 by playing 'advance' (a str)" in proc.stdout
    forfeits = json.loads((fresh_env / "e.json").read_text())["pairs"][0]["forfeits"]
    assert len(forfeits) == 4 and forfeits[0]["reason"].startswith("action 'advance' is out of range")
    proc = _run(fresh_env, patchwork_cmd, "ladder", "myagents.py:word", "--json", "l.json", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((fresh_env / "l.json").read_text())
    assert data["illegal_actions"] == len(data["forfeits"]) == data["games"]
    argv = ["evaluate", "--agents", "greedy", "myagents.py:late_bug", "--pairs", "8", "--json", "x.json"]
    proc = _run(fresh_env, patchwork_cmd, *argv, "--no-progress")
    lines = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert (
        lines[0].startswith("error: myagents.py:late_bug raised on game ") and "ZeroDivisionError: my bug" in lines[0]
    )
    assert (fresh_env / "x.json.partial.jsonl").is_file() and not (fresh_env / "x.json").exists()


def test_errors_a_person_can_act_on(fresh_env: Path) -> None:
    (fresh_env / "myagents.py").write_text(AGENTS)
    patchwork_cmd = str(fresh_env / "bin" / "patchwork")
    for argv, line in (
        (["ladder", "gredy"], "error: unknown agent 'gredy' in spec 'gredy': did you mean 'greedy'?"),
        (["ladder", "mcts:sim=5"], "error: 'mcts:sim=5': mcts has no parameter 'sim': did you mean 'sims'?"),
        (["ladder", "myagents.py"], "error: myagents.py names a file but not the agent in it: give FILE.py:NAME, "
                                    "e.g. myagents.py:word (it defines word, late_bug, Mine, CALLS)"),
    ):  # fmt: skip
        proc = _run(fresh_env, patchwork_cmd, *argv)
        assert proc.returncode == 2 and len(error_lines(proc.stderr)) == 1, proc.stderr
        assert error_lines(proc.stderr)[0].startswith(line), proc.stderr
    (fresh_env / "guarded.py").write_text(
        "import patchwork_env\n"
        "from myagents import Mine\n"
        "if __name__ == '__main__':\n"
        "    print(patchwork_env.rate(Mine, ladder='v1').agent)\n"
        "    def act(state):\n"
        "        return int(state.legal_actions()[0])\n"
        "    patchwork_env.rate(act, workers=2, ladder='v1')\n"
    )
    proc = _run(fresh_env, str(fresh_env / "bin" / "python"), "guarded.py")
    assert proc.returncode == 1 and proc.stdout.strip() == "mine", proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("patchwork_env.evaluation.workers.SpawnError: workers > 1: act is defined inside")


def test_a_timed_move_of_a_fresh_install_compiles_nothing(fresh_env: Path) -> None:
    for spec in ("mcts:time=0.02", "az:time=0.02"):
        proc = _run(fresh_env, str(fresh_env / "bin" / "python"), "-c", COMPILED_DURING_MOVES, spec)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.strip().splitlines()[-1] == "[]", (spec, proc.stdout)


def test_with_the_extras_a_plain_ppo_forfeits_no_game(extras_env: Path) -> None:
    train = (
        "from stable_baselines3 import PPO\n"
        "from patchwork_env import SingleAgentEnv\n"
        "model = PPO('MlpPolicy', SingleAgentEnv(opponent='random'), n_steps=64, batch_size=64, seed=0)\n"
        "model.learn(64)\n"
        "model.save('ppo.zip')\n"
    )
    proc = _run(extras_env, str(extras_env / "bin" / "python"), "-c", train)
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = _run(extras_env, str(extras_env / "bin" / "patchwork"), "ladder", "sb3:ppo.zip", "--json", "ppo.json",
                "--no-progress")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((extras_env / "ppo.json").read_text())
    assert data["illegal_actions"] == 0 and data["forfeits"] == []
    assert data["agent_info"] == {"algorithm": "PPO", "trained_with_masks": False,
                                  "moves": "the most probable legal action"}  # fmt: skip
    assert "algorithm: PPO, trained with masks: False" in proc.stdout
