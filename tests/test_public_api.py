"""Every name the packages export resolves, and the heavy parts load only on first use."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import patchwork_env
import patchwork_env.evaluation
import patchwork_env.players


@pytest.mark.parametrize("package", [patchwork_env, patchwork_env.players, patchwork_env.evaluation])
def test_every_exported_name_resolves(package: ModuleType) -> None:
    names = package.__all__
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(package, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        package.nope  # noqa: B018


def test_public_names_include_the_engine_envs_players_and_arena() -> None:
    assert {"GameState", "new_game", "env", "SingleAgentEnv", "VectorGames", "PatchworkVectorEnv"} <= set(
        patchwork_env.__all__
    )
    assert {"make_agent", "describe_agents", "AgentSpecError"} <= set(patchwork_env.players.__all__)
    # what a wrapper for another framework needs (OpenSpiel's, patchwork_env.openspiel): the agent
    # factory, the game's bounds and a search agent's statistics, from the package face
    assert {"make_agent", "GAME_INFO", "GameInfo", "SearchStats", "search_stats"} <= set(patchwork_env.__all__)
    assert patchwork_env.make_agent is patchwork_env.players.make_agent
    assert {"play_pairs", "round_robin", "wilson_interval"} <= set(patchwork_env.evaluation.__all__)


def _loaded_after(statement: str, modules: tuple[str, ...]) -> list[str]:
    code = f"import sys; {statement}; print(sorted(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return list(eval(out))


def test_importing_patchwork_env_loads_neither_torch_nor_numba() -> None:
    assert _loaded_after("import patchwork_env", ("torch", "numba", "patchwork_env.envs.vector")) == []


def test_the_engine_loads_without_torch_or_the_vector_engine() -> None:
    loaded = _loaded_after(
        "import patchwork_env; patchwork_env.new_game(seed=0)", ("torch", "patchwork_env.envs.vector")
    )
    assert loaded == []


def test_the_evaluation_package_loads_its_modules_on_first_use() -> None:
    """``BACKENDS`` (read by the command lines and the trainer configs) comes without the engine."""
    modules = ("numba", "torch", "patchwork_env.evaluation.arena")
    assert _loaded_after("from patchwork_env.evaluation.backend import BACKENDS", modules) == []


@pytest.mark.parametrize("name", ["MAX_SEED", "MAX_ARENA_SEED", "BACKENDS", "VIRTUAL_DRAWS", "ELO_SCALE"])
def test_a_shared_setting_is_defined_once(name: str) -> None:
    """One definition in the library and the research code; every other place imports it."""
    root = Path(__file__).resolve().parent.parent
    files = [p for d in ("patchwork_env", "agents", "train") for p in sorted((root / d).rglob("*.py"))]
    defined = [str(p.relative_to(root)) for p in files if re.search(rf"^{name}\b[^=]*=", p.read_text(), re.M)]
    assert len(defined) == 1, defined
