"""The one edge policy (``patchwork_env.envs.edge``), pinned for every front-end: GameState, the AEC env,
SingleAgentEnv and the vector env (over VectorGames)."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchwork_env import GameState, IllegalActionError, SingleAgentEnv, env, new_game, raw_env
from patchwork_env.core.actions import GameOverError
from patchwork_env.envs import agent, edge
from patchwork_env.envs.vector import VectorGames
from patchwork_env.envs.vector_env import PatchworkVectorEnv
from patchwork_env.players.random import RandomAgent

PACKAGE = Path(edge.__file__).parent.parent
LAYOUT_MESSAGE = "leather_layout must be one of ('revised', 'original'), got 'x'"


def _illegal(mask: np.ndarray) -> int:
    return int(np.flatnonzero(~mask.astype(bool))[0])


# --- constructors: the leather layout, the reward, the illegal-action mode -----------------------
CONSTRUCTORS: dict[str, Callable[..., Any]] = {
    "GameState": lambda **kw: new_game(0, **kw),
    "VectorGames": lambda **kw: VectorGames(2, 0, **kw),
    "aec": lambda **kw: env(**kw),
    "single": lambda **kw: SingleAgentEnv(**kw),
    "vector": lambda **kw: PatchworkVectorEnv(2, **kw),
}


@pytest.mark.parametrize("front", CONSTRUCTORS)
def test_leather_layout_checked_with_one_message(front: str) -> None:
    with pytest.raises(ValueError) as info:
        CONSTRUCTORS[front](leather_layout="x")
    assert str(info.value) == LAYOUT_MESSAGE


@pytest.mark.parametrize("front", ["aec", "single", "vector"])
def test_reward_and_illegal_action_checked_with_one_message(front: str) -> None:
    with pytest.raises(ValueError) as info:
        CONSTRUCTORS[front](reward="points")
    assert str(info.value) == "reward must be one of ('win', 'score'), got 'points'"
    with pytest.raises(ValueError) as info:
        CONSTRUCTORS[front](illegal_action="ignore")
    assert str(info.value) == "illegal_action must be one of ('lose', 'raise'), got 'ignore'"


@pytest.mark.parametrize("front", [env, SingleAgentEnv, PatchworkVectorEnv])
def test_one_default_for_illegal_actions(front: Callable[..., Any]) -> None:
    assert inspect.signature(front).parameters["illegal_action"].default == edge.DEFAULT_ILLEGAL_ACTION == "lose"


# --- reset options ----------------------------------------------------------------------------
RESETTERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "aec": lambda options: env().reset(seed=0, options=options),
    "single": lambda options: SingleAgentEnv().reset(seed=0, options=options),
    "vector": lambda options: PatchworkVectorEnv(2).reset(seed=0, options=options),
}


@pytest.mark.parametrize("front", RESETTERS)
def test_unknown_reset_option_warns_and_is_ignored(front: str) -> None:
    with pytest.warns(UserWarning, match=r"unknown reset option\(s\) \['bogus'\]: allowed keys are"):
        RESETTERS[front]({"bogus": 1})


@pytest.mark.parametrize("front", RESETTERS)
def test_reset_options_must_be_a_dict(front: str) -> None:
    with pytest.raises(ValueError, match="options must be a dict"):
        RESETTERS[front]([("seat", 0)])  # type: ignore[arg-type]


# --- illegal actions: "lose" ends the offender's episode with -1, "raise" changes nothing ---------
def _aec_illegal(mode: str) -> tuple[float, bool]:
    e = env(illegal_action=mode)
    e.reset(seed=0)
    agent_name = e.agent_selection
    e.step(_illegal(e.observe(agent_name)["action_mask"]))
    return float(e.rewards[agent_name]), bool(e.terminations[agent_name])


def _single_illegal(mode: str) -> tuple[float, bool]:
    e = SingleAgentEnv(illegal_action=mode)  # type: ignore[arg-type]
    _, info = e.reset(seed=0)
    _, reward, terminated, _, _ = e.step(_illegal(info["action_mask"]))
    return float(reward), bool(terminated)


def _vector_illegal(mode: str) -> tuple[float, bool]:
    e = PatchworkVectorEnv(2, illegal_action=mode)  # type: ignore[arg-type]
    e.reset(seed=0)
    masks = e.action_masks()
    actions = np.array([_illegal(masks[0]), int(np.flatnonzero(masks[1])[0])])
    _, rewards, terminated, _, _ = e.step(actions)
    assert not terminated[1]
    return float(rewards[0]), bool(terminated[0])


ILLEGAL: dict[str, Callable[[str], tuple[float, bool]]] = {
    "aec": _aec_illegal,
    "single": _single_illegal,
    "vector": _vector_illegal,
}


@pytest.mark.parametrize("front", ILLEGAL)
def test_illegal_action_lose_mode(front: str) -> None:
    assert ILLEGAL[front]("lose") == (edge.ILLEGAL_ACTION_REWARD, True)


@pytest.mark.parametrize("front", ILLEGAL)
def test_every_front_end_asks_the_one_illegal_action_handler(front: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []

    def handler(mode: str, error: IllegalActionError) -> str:
        calls.append((mode, str(error)))
        return "reason"

    monkeypatch.setattr(edge, "on_illegal_action", handler)
    assert ILLEGAL[front]("lose") == (edge.ILLEGAL_ACTION_REWARD, True)
    assert len(calls) == 1 and calls[0][0] == "lose" and "action" in calls[0][1]


@pytest.mark.parametrize("front", [*ILLEGAL, "GameState"])
def test_illegal_action_raise_mode(front: str) -> None:
    if front == "GameState":  # the rules layer always raises
        s = new_game(0)
        with pytest.raises(IllegalActionError):
            s.step(_illegal(s.legal_action_mask()))
        return
    with pytest.raises(IllegalActionError):
        ILLEGAL[front]("raise")


# --- a finished game --------------------------------------------------------------------------
def _finished_game() -> GameState:
    s, rng = new_game(3), np.random.default_rng(3)
    while not s.is_terminal:
        s = s.step(int(rng.choice(s.legal_actions())))
    return s


def _gamestate_after_end() -> None:
    _finished_game().step(2025)


def _aec_after_end() -> None:
    e = env()
    e.reset(seed=3)
    rng = np.random.default_rng(3)
    while not e.terminations[e.agent_selection]:
        e.step(int(rng.choice(np.flatnonzero(e.observe(e.agent_selection)["action_mask"]))))
    e.step(2025)


def _single_after_end() -> None:
    e = SingleAgentEnv()
    _, info = e.reset(seed=3)
    rng = np.random.default_rng(3)
    terminated = False
    while not terminated:
        _, _, terminated, _, info = e.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    e.step(2025)


@pytest.mark.parametrize("after_end", [_gamestate_after_end, _aec_after_end, _single_after_end])
def test_stepping_a_finished_game_raises_game_over(after_end: Callable[[], None]) -> None:
    with pytest.raises(GameOverError, match="is over") as info:
        after_end()
    assert isinstance(info.value, IllegalActionError) and isinstance(info.value, RuntimeError)


def test_the_aec_dead_step_still_takes_none() -> None:
    e = raw_env()
    e.set_state(new_game(3))
    rng = np.random.default_rng(3)
    while not e.terminations[e.agent_selection]:
        e.step(int(rng.choice(np.flatnonzero(e.observe(e.agent_selection)["action_mask"]))))
    e.step(None)
    e.step(None)
    assert e.agents == []


def test_a_batch_skips_its_finished_games() -> None:
    games = VectorGames(1, 0, auto_reset=False)
    games.set_state(0, _finished_game())
    before = games.states.copy()
    result = games.step(np.array([-1]))
    assert result.actor[0] == -1 and np.array_equal(before, games.states)


# --- the final reward -------------------------------------------------------------------------
@pytest.mark.parametrize("reward", edge.REWARD_KINDS)
def test_final_rewards_of_the_engine_and_the_kernels_agree(reward: str) -> None:
    s = _finished_game()
    a, b = s.scores()
    r0, r1 = edge.final_rewards(s, reward)
    mode = edge.REWARD_KINDS.index(reward)
    assert (r0, r1) == (edge.final_reward(s.winner == 0, a - b, mode), edge.final_reward(s.winner == 1, b - a, mode))
    if reward == "win":
        assert {r0, r1} == {1.0, -1.0} and (r0 == 1.0) == (s.winner == 0)
    else:
        assert r0 == pytest.approx(np.clip((a - b) / edge.SCORE_REWARD_SCALE, -1, 1)) and r1 == -r0


@pytest.mark.parametrize("reward", edge.REWARD_KINDS)
def test_vector_env_rewards_are_the_edge_reward(reward: str) -> None:
    e = PatchworkVectorEnv(8, reward=reward, seed=1)  # type: ignore[arg-type]
    e.reset(seed=1)
    rng = np.random.default_rng(1)
    seen = 0
    while seen < 4:
        masks = e.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        _, rewards, terminated, _, infos = e.step(actions)
        for i in np.flatnonzero(terminated):
            f = infos["final_info"]
            margin = float(f["score"][i] - f["opponent_score"][i])
            expected = edge.final_reward(bool(f["won"][i]), margin, edge.REWARD_KINDS.index(reward))
            assert rewards[i] == pytest.approx(expected)
            seen += 1


# --- structure: thin shells, no sideways imports, no research code ----------------------------------
def _imports(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / "envs" / f"{module}.py").read_text())
    names = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    return names | {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}


@pytest.mark.parametrize("module", ["single_agent", "vector_env", "vector"])
def test_no_sideways_imports_between_env_shells(module: str) -> None:
    assert not _imports(module) & {"patchwork_env.envs.aec", "patchwork_env.envs.single_agent"}


def _in_a_fresh_process(*lines: str) -> None:
    subprocess.run([sys.executable, "-c", "\n".join(lines)], check=True)


def test_the_package_never_imports_the_research_code() -> None:
    _in_a_fresh_process(
        "import sys, patchwork_env, patchwork_env.envs.vector_env, patchwork_env.envs.edge",
        "patchwork_env.SingleAgentEnv(opponent='greedy')",
        "assert not {'agents', 'train', 'benchmarks'} & set(sys.modules), 'patchwork_env imported research code'",
    )
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        names |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        assert not {m for m in names if m.split(".")[0] in ("agents", "train", "benchmarks")}, path


def test_a_spec_works_without_importing_the_players_first() -> None:
    """The envs find the players' registry by name on first use."""
    _in_a_fresh_process(
        "import patchwork_env",
        "env = patchwork_env.SingleAgentEnv(opponent='greedy')",
        "assert type(env.opponent).__name__ == 'GreedyAgent', env.opponent",
    )


def test_a_registered_factory_replaces_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    built = agent.resolve_opponent("greedy")
    assert built.name == "greedy" and type(built).__name__ == "GreedyAgent"
    calls: list[str] = []
    from patchwork_env.core import factory

    monkeypatch.setattr(factory, "_registered", None)
    agent.register_agent_factory(lambda spec: calls.append(spec) or RandomAgent())  # type: ignore[func-returns-value]
    agent.resolve_opponent("anything:x=1")
    assert calls == ["anything:x=1"]
    assert isinstance(agent.resolve_opponent("random"), RandomAgent)  # "random" is never the factory's
    assert calls == ["anything:x=1"]
    with pytest.raises(TypeError, match="an agent factory is a callable"):
        agent.register_agent_factory("greedy")  # type: ignore[arg-type]


def test_random_agent_keeps_its_old_import_path() -> None:
    """``RandomAgent`` moved to the players (``patchwork_env.players.random``); the envs' old name
    is the same class (found by name, as ``"random"`` is), with a ``DeprecationWarning``."""
    with pytest.warns(DeprecationWarning, match="moved from patchwork_env.envs.agent to patchwork_env.players.random"):
        from patchwork_env.envs.agent import RandomAgent as Old
    assert Old is RandomAgent
    with pytest.raises(AttributeError, match="no attribute 'NoSuchAgent'"):
        agent.NoSuchAgent  # noqa: B018
