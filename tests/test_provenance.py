"""Which code a results file names: the checkout's commit, else the one the installed package was built
from (``patchwork_env/_build_info.py``, written into the wheel by setup.py), else "unknown"."""

from __future__ import annotations

import runpy
import subprocess
import sys
import types
from pathlib import Path

import pytest

from patchwork_env.evaluation import provenance

ROOT = Path(__file__).resolve().parent.parent


def test_a_checkout_names_its_commit() -> None:
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    if sha.returncode:
        pytest.skip("not a git checkout")
    assert provenance.commit().removesuffix("+dirty") == sha.stdout.strip()


def test_a_results_file_written_in_the_checkout_leaves_it_clean(tmp_path: Path) -> None:
    """Measurements write their files into ``results/`` of the checkout they run from: the second of
    two measurements from one checkout named a ``+dirty`` commit for the first one's output. A change
    to anything else still makes it dirty."""
    package = tmp_path / "patchwork_env"
    (package / "evaluation").mkdir(parents=True)
    (package / "evaluation" / "provenance.py").write_text(Path(provenance.__file__).read_text())
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a.json").write_text("{}")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run([*git, *args], check=True, capture_output=True, timeout=30)
    copy = runpy.run_path(str(package / "evaluation" / "provenance.py"))
    sha = copy["checkout_commit"]()
    assert sha is not None and not sha.endswith("+dirty")
    (tmp_path / "results" / "a.json").write_text('{"measured": 1}')
    assert copy["checkout_commit"]() == sha
    (package / "evaluation" / "provenance.py").write_text(Path(provenance.__file__).read_text() + "\n# edited\n")
    assert copy["checkout_commit"]() == sha + "+dirty"


def test_an_installed_package_names_the_commit_it_was_built_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provenance, "checkout_commit", lambda: None)  # as installed outside a checkout
    monkeypatch.setitem(sys.modules, provenance.BUILD_INFO_MODULE, types.SimpleNamespace(COMMIT="0123abc+dirty"))
    assert provenance.commit() == "0123abc+dirty"
    assert provenance.provenance("cmd")["commit"] == "0123abc+dirty"
    monkeypatch.setitem(sys.modules, provenance.BUILD_INFO_MODULE, None)  # built without git: no such module
    assert provenance.commit() == provenance.UNKNOWN_COMMIT


def test_the_build_step_writes_the_commit_of_this_checkout_only(tmp_path: Path) -> None:
    setup = runpy.run_path(str(ROOT / "setup.py"), run_name="setup")  # its functions, without running setup()
    assert setup["git_commit"](tmp_path) is None  # not a checkout: nothing to bake
    assert setup["git_commit"](ROOT) in (provenance.checkout_commit(), None)
    namespace: dict[str, object] = {}
    exec(setup["build_info"]("0123abc"), namespace)
    assert namespace["COMMIT"] == "0123abc"
    (tmp_path / "patchwork_env").mkdir()
    setup["write_build_info"](tmp_path)
    written = tmp_path / "patchwork_env" / "_build_info.py"
    assert written.is_file() == (provenance.checkout_commit() is not None)
