"""The notebooks in git are clean: no outputs, no execution counts, the project's kernel, and no logic of
their own (no ``def`` / ``class``: a notebook calls the packages, it does not extend them).

Clean them with ``.venv/bin/nbstripout notebooks/*.ipynb`` before committing. That they RUN is checked
separately: ``pytest --nbmake notebooks`` (part of ``make test``) executes each one.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = {"01_quickstart.ipynb", "02_train_and_evaluate.ipynb", "03_speed.ipynb"}
KERNEL = "python3"


def notebooks() -> list[Path]:
    """Every notebook git tracks (or, outside a git checkout, every notebook under notebooks/)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=30
        ).stdout
        tracked = [ROOT / line for line in out.splitlines() if line.strip()]
    except (OSError, subprocess.SubprocessError):
        tracked = []
    return sorted(set(tracked) | set((ROOT / "notebooks").glob("*.ipynb")))


def problems(nb: Any) -> list[str]:
    """What makes a notebook unfit to commit (empty if it is clean)."""
    found = []
    kernel = nb.metadata.get("kernelspec", {}).get("name")
    if kernel != KERNEL:
        found.append(f"kernelspec name is {kernel!r}, expected {KERNEL!r}")
    if "widgets" in nb.metadata:
        found.append("metadata holds widget state")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            found.append(f"cell {i} has outputs")
        if cell.get("execution_count") is not None:
            found.append(f"cell {i} has an execution count")
        python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in cell.source.splitlines())
        try:
            tree = ast.parse(python)  # IPython magics (%matplotlib inline) and shell lines are left out
        except SyntaxError as exc:
            found.append(f"cell {i} is not valid Python: {exc.msg}")
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.append(f"cell {i} defines {node.name!r}: notebooks call the packages, logic belongs there")
    return found


def test_the_three_notebooks_exist() -> None:
    names = {p.name for p in notebooks()}
    assert names >= EXPECTED, f"missing notebooks: {sorted(EXPECTED - names)}"


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.name)
def test_notebook_is_clean(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    found = problems(nb)
    assert not found, f"{path.name}: " + "; ".join(found) + " (run .venv/bin/nbstripout on it)"


def test_the_check_catches_a_dirty_notebook() -> None:
    cell = nbformat.v4.new_code_cell("def helper():\n    return 1\nhelper()")
    cell.execution_count = 3
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=3)]
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={"kernelspec": {"name": "other", "display_name": "x"}})
    found = problems(nb)
    assert any("outputs" in p for p in found)
    assert any("execution count" in p for p in found)
    assert any("'helper'" in p for p in found)
    assert any("kernelspec" in p for p in found)
    clean = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("%matplotlib inline\nx = 1")],
        metadata={"kernelspec": {"name": KERNEL, "display_name": "x"}},
    )
    assert problems(clean) == []
