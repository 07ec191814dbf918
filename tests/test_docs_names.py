"""Every dotted name of the project that a docstring or a documentation page cites
(``patchwork_env.envs.observation.observe_into``, ``train.run.Run``, ``agents.ppo``) resolves to a
module or an attribute of one: a name that moved or never existed fails here (issue 40).

A module docstring of the library or of ``agents`` may also cite a name relative to where it stands
(``serialize.array_from_dict`` in ``patchwork_env.core.validate``, ``VectorGames.set_state``,
``rules.TOP``): its first part is a name of the module itself, a module of the project by the end of
its dotted path (``serialize``, ``players.inference``) or a class or function of one; the rest must
then be attributes, dataclass fields or attributes an instance sets (``self.name = ...``). A name
whose first part is none of these (``JSON.parse``, ``FILE.py``) is not the project's and is skipped.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"\b((?:patchwork_env|agents|train)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
FILE_SUFFIXES = (".py", ".json", ".pt", ".yaml", ".md", ".zip", ".jsonl")
PLACEHOLDERS = re.compile(r"\.[A-Z]$")  # python -m train.X: "any trainer"
# commands that measured a published results file and have since been retired (the results stay,
# with the command that made them); cited on the results page, in the changelog and in the schema,
# which declares what their files hold, only
RETIRED = {"train.tree_loop", "train.tree_loop_results"}
HISTORY_PAGES = {"docs/results.md", "CHANGELOG.md", "patchwork_env/evaluation/results_file.py"}
# a dotted name in double backquotes, perhaps called: ``serialize.array_from_dict(data)``
QUOTED = re.compile(r"``([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\([^`]*\))?``")
MODULE_DOCS = ("patchwork_env", "agents")  # the packages whose module docstrings cite relative names


def sources() -> list[Path]:
    files = [*(ROOT / "patchwork_env").rglob("*.py"), *(ROOT / "agents").rglob("*.py"), *(ROOT / "train").rglob("*.py")]
    return [*files, *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]


def _has(obj: Any, part: str) -> bool:
    """``obj.part`` exists, or ``obj`` is a class whose instances have it (a dataclass field, an
    annotated attribute, or ``self.part = ...`` in the class or a base)."""
    if hasattr(obj, part):
        return True
    if not inspect.isclass(obj):
        return False
    if part in getattr(obj, "__dataclass_fields__", {}):
        return True
    for cls in obj.__mro__:
        if part in getattr(cls, "__annotations__", {}):
            return True
        try:
            if re.search(rf"\bself\.{part}\s*[:=]", inspect.getsource(cls)):
                return True
        except (OSError, TypeError):
            continue
    return False


def _chain(obj: Any, parts: list[str]) -> bool:
    for part in parts:
        if not _has(obj, part):
            return False
        if not hasattr(obj, part):  # an instance's attribute: what it holds is not known here
            return True
        obj = getattr(obj, part)
    return True


def resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        return _chain(obj, parts[i:])
    return False


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files() -> list[Path]:
    files = [p for package in MODULE_DOCS for p in sorted((ROOT / package).rglob("*.py"))]
    return [p for p in files if p.name != "__main__.py"]  # a __main__ runs when imported


@cache
def project_modules() -> dict[str, ModuleType]:
    return {module_name(p): importlib.import_module(module_name(p)) for p in module_files()}


@cache
def heads() -> dict[str, list[tuple[Any, int]]]:
    """What the first part(s) of a relative name may stand for: a project module by the end of its
    path (``serialize``, ``players.inference``: the parts it takes) or a class or function defined
    in one (one part)."""
    out: dict[str, list[tuple[Any, int]]] = {}
    for name, module in project_modules().items():
        parts = name.split(".")
        for i in range(1, len(parts)):
            out.setdefault(".".join(parts[i:]), []).append((module, len(parts) - i))
        for attr, value in vars(module).items():
            if getattr(value, "__module__", None) == name and (inspect.isclass(value) or inspect.isfunction(value)):
                out.setdefault(attr, []).append((value, 1))
    return out


def resolves_in(name: str, module: ModuleType) -> bool | None:
    """Whether ``name``, cited in ``module``'s docstring, resolves (absolutely or relative to the
    module); None when its first part is nothing of the project's."""
    parts = name.split(".")
    if parts[0] in ("patchwork_env", "agents", "train"):
        return resolves(name)
    candidates = [(getattr(module, parts[0]), 1)] if hasattr(module, parts[0]) else []
    candidates += [c for i in range(len(parts), 0, -1) for c in heads().get(".".join(parts[:i]), [])]
    found = [_chain(obj, parts[taken:]) for obj, taken in candidates]
    try:  # another library by its full name (``numpy.random.SeedSequence``)
        importlib.import_module(parts[0])
        found.append(resolves(name))
    except ImportError:
        pass
    return any(found) if found else None


def cited_names() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in sources():
        for match in NAME.finditer(path.read_text()):
            name = match.group(1)
            if name.endswith(FILE_SUFFIXES) or PLACEHOLDERS.search(name):
                continue
            where = str(path.relative_to(ROOT))
            if name in RETIRED and where in HISTORY_PAGES:
                continue
            out.setdefault(name, set()).add(where)
    return out


def module_docstring_names(path: Path) -> list[str]:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return [m.group(1) for m in QUOTED.finditer(doc) if not m.group(1).endswith(FILE_SUFFIXES)]


def test_every_cited_project_name_resolves() -> None:
    names = cited_names()
    assert len(names) > 100  # the docs and docstrings do cite the code
    broken = {name: sorted(where) for name, where in names.items() if not resolves(name)}
    assert not broken, broken


def test_every_name_a_module_docstring_cites_resolves_where_it_stands() -> None:
    checked, broken = 0, []
    for path in module_files():
        module = project_modules()[module_name(path)]
        for name in module_docstring_names(path):
            found = resolves_in(name, module)
            checked += found is not None
            if found is False:
                broken.append(f"{path.relative_to(ROOT)}: {name}")
    assert checked > 50  # the module docstrings do cite the code, relatively too
    assert not broken, broken


@pytest.mark.parametrize("name", ["patchwork_env.core.observation.observe_into", "train.run.NoSuchThing"])
def test_a_name_that_moved_does_not_resolve(name: str) -> None:
    assert not resolves(name)


@pytest.mark.parametrize(
    ("name", "module", "expected"),
    [
        ("serialize.array_from_dict", "patchwork_env.core.validate", True),
        ("rules.TOP", "patchwork_env.core.validate", True),
        ("VectorGames.set_state", "patchwork_env.core.validate", True),
        ("players.inference.NetInference", "patchwork_env.players.az_network", True),
        ("SearchResult.roots", "patchwork_env.players.batched_search", True),  # a dataclass field
        ("NetEvaluator.fast", "patchwork_env.players.az_network", True),  # set in __init__
        ("np.random.Generator", "patchwork_env.envs.agent", True),
        ("serialize.state_from_dict", "patchwork_env.core.validate", False),
        ("VectorGames.refresh", "patchwork_env.core.validate", False),
        ("rules.NO_SUCH_FIELD", "patchwork_env.core.validate", False),
        ("JSON.parse", "patchwork_env.replay", None),
    ],
)
def test_a_relative_name_resolves_only_where_it_exists(name: str, module: str, expected: bool | None) -> None:
    assert resolves_in(name, importlib.import_module(module)) is expected
