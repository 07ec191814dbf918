"""The library's layers point one way, in-function imports included: the ``.importlinter``
contract (``make lint``) checks imports between layers, and this checks what that contract cannot
see, an import of the package face ``patchwork_env`` itself (not a layer) from below it, which would
close a cycle ``patchwork_env -> ... -> patchwork_env`` (issue 58: ``evaluation.provenance`` took
``__version__`` that way; it is ``patchwork_env.core.version``'s)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "patchwork_env"


def imports_of_the_face(path: Path) -> list[int]:
    """Lines of ``path`` that import the package face (``import patchwork_env``, ``from patchwork_env
    import X``), at any depth (functions, branches)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(alias.name == "patchwork_env" for alias in node.names):
            lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "patchwork_env" and node.level == 0:
            lines.append(node.lineno)
    return lines


def test_no_module_below_the_face_imports_it() -> None:
    modules = [p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py"]
    assert len(modules) > 50
    found = {str(p.relative_to(ROOT)): lines for p in modules if (lines := imports_of_the_face(p))}
    assert not found, found


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from patchwork_env import __version__\n    return __version__\n")
    assert imports_of_the_face(source) == [2]
