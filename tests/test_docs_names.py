"""Every dotted name of the project that a docstring or a documentation page cites
(``patchwork_env.envs.observation.observe_into``, ``train.run.Run``, ``agents.ppo``) resolves to a
module or an attribute of one: a name that moved or never existed fails here (issue 40)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"\b((?:patchwork_env|agents|train)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
FILE_SUFFIXES = (".py", ".json", ".pt", ".yaml", ".md", ".zip", ".jsonl")
PLACEHOLDERS = re.compile(r"\.[A-Z]$")  # python -m train.X: "any trainer"


def sources() -> list[Path]:
    files = [*(ROOT / "patchwork_env").rglob("*.py"), *(ROOT / "agents").rglob("*.py"), *(ROOT / "train").rglob("*.py")]
    return [*files, *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]


def resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    return False


def cited_names() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in sources():
        for match in NAME.finditer(path.read_text()):
            name = match.group(1)
            if name.endswith(FILE_SUFFIXES) or PLACEHOLDERS.search(name):
                continue
            out.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return out


def test_every_cited_project_name_resolves() -> None:
    names = cited_names()
    assert len(names) > 100  # the docs and docstrings do cite the code
    broken = {name: sorted(where) for name, where in names.items() if not resolves(name)}
    assert not broken, broken


@pytest.mark.parametrize("name", ["patchwork_env.core.observation.observe_into", "train.run.NoSuchThing"])
def test_a_name_that_moved_does_not_resolve(name: str) -> None:
    assert not resolves(name)
