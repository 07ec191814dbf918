"""Every name the packages export resolves, and the heavy parts load only on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agents
import patchwork_env


@pytest.mark.parametrize("package", [patchwork_env, agents])
def test_every_exported_name_resolves(package: object) -> None:
    names = package.__all__  # type: ignore[attr-defined]
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(package, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        package.nope  # type: ignore[attr-defined]  # noqa: B018


def test_public_names_include_the_vector_engine_agents_and_arena() -> None:
    assert {"VectorGames", "PatchworkVectorEnv"} <= set(patchwork_env.__all__)
    assert {"GreedyAgent", "MCTSAgent", "PPOAgent", "play_pairs", "round_robin"} <= set(agents.__all__)


def test_importing_patchwork_env_loads_neither_torch_nor_the_vector_engine() -> None:
    heavy = "('torch', 'patchwork_env.vector')"
    code = f"import sys, patchwork_env, agents; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
