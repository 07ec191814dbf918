"""serialize builds arrays through the rules' writers and does not import GameState back."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

import patchwork_env.core.serialize as serialize
from patchwork_env import new_game

SOURCE = ast.parse(Path(serialize.__file__).read_text())


def _runtime_imports(tree: ast.Module) -> set[str]:
    out = set()
    for node in tree.body:  # module level; ``if TYPE_CHECKING:`` blocks do not run
        if isinstance(node, ast.ImportFrom):
            out.add(node.module or "")
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    for node in ast.walk(tree):  # imports inside functions run too
        if isinstance(node, ast.FunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom):
                    out.add(inner.module or "")
    return out


def test_serialize_does_not_import_state() -> None:
    assert "patchwork_env.core.state" not in _runtime_imports(SOURCE)


def test_serialize_writes_no_state_field_itself() -> None:
    writes = [
        ast.unparse(target)
        for node in ast.walk(SOURCE)
        if isinstance(node, ast.Assign | ast.AugAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for sub in ast.walk(target)
        if isinstance(sub, ast.Subscript)
    ]
    assert writes == []


def test_arrays_round_trip_through_the_rules_writers() -> None:
    s = new_game(4)
    rng = np.random.default_rng(4)
    for _ in range(60):
        if s.is_terminal:
            break
        s = s.step(int(rng.choice(s.legal_actions())))
        assert (serialize.array_from_dict(s.to_dict()) == s.array()).all()
        assert (serialize.array_from_notation(s.to_notation()) == s.array()).all()
