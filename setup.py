"""The one build step pyproject.toml cannot declare: the commit is baked into the package.

A wheel (and an sdist) built from a git checkout carries ``patchwork_env/_build_info.py`` naming
the commit it was built from (``+dirty`` when tracked files had uncommitted changes), so that a
results file written by an installed package names its code
(``patchwork_env.evaluation.provenance.commit``). Built from an sdist, the wheel keeps the sdist's
file; built where git cannot name the commit, it has none and the commit reads "unknown". Needs
nothing but setuptools and, when it is there, the ``git`` command: the build works offline.
Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
BUILD_INFO = Path("patchwork_env", "_build_info.py")


def git_commit(source: Path) -> str | None:
    """The commit of the checkout whose top level is ``source`` (``+dirty`` with uncommitted changes
    to tracked files), or None: no git, not a checkout, or ``source`` inside another repository."""
    try:
        git = ["git", "--no-optional-locks", "-C", str(source)]
        top = subprocess.run([*git, "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=30)
        if top.returncode or Path(top.stdout.strip()).resolve() != source.resolve():
            return None
        sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30, check=True)
        status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                text=True, timeout=120, check=True)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return sha.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def build_info(commit: str) -> str:
    """The text of ``patchwork_env/_build_info.py``."""
    return (
        '"""Written by the build (setup.py): the commit of the repository this package was built from."""\n\n'
        f"COMMIT = {commit!r}\n"
    )


def write_build_info(root: Path) -> None:
    """``root/patchwork_env/_build_info.py`` for the commit of this checkout; nothing outside one
    (a build from an sdist keeps the sdist's file)."""
    commit = git_commit(HERE)
    if commit is not None and (root / BUILD_INFO.parent).is_dir():
        (root / BUILD_INFO).unlink(missing_ok=True)  # in an sdist's tree, files are links to the checkout's
        (root / BUILD_INFO).write_text(build_info(commit))


class BuildPy(build_py):
    """setuptools' build_py, then the build info into the wheel's copy of the package (never into
    the checkout; an editable install reads the commit from git as it runs)."""

    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            write_build_info(Path(self.build_lib))


class Sdist(sdist):
    """setuptools' sdist, with the build info in the archive (its wheel is built without git)."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        write_build_info(Path(base_dir))


if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
