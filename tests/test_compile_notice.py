"""The first run's compile notice (``patchwork_env.core.jit.compile_notice``) comes from the call that
compiles, while it compiles: in Jupyter in the cell that compiles, and never over ``patchwork play``'s
board while the game waits for a move. An empty numba cache plays the fresh install."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from patchwork_env import new_game

nbclient = pytest.importorskip("nbclient")


def _compile_lines(cell: nbformat.NotebookNode) -> list[str]:
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    return [line for line in text.splitlines() if line.startswith(("compiling ", "compiled "))]


def test_in_jupyter_the_notice_is_in_the_cell_that_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))  # the kernel's numba cache: empty
    cells = [
        "import numpy as np\nfrom patchwork_env import new_game\nstate = new_game(seed=0)",
        "from patchwork_env.players.greedy import GreedyAgent\nagent = GreedyAgent()  # compiles nothing yet",
        "agent.act(state, np.random.default_rng(0))  # compiles greedy's kernels",
        "import time\ntime.sleep(1.5)\n'later'",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    shown = [_compile_lines(cell) for cell in nb.cells]
    greedy = "the greedy and search kernels"
    assert shown[1] == [] and shown[3] == [], shown
    assert shown[2][0].startswith(f"compiling {greedy}, first run only (5-20 s on 2 cores"), shown
    assert shown[2][-1].startswith(f"compiled {greedy} in "), shown  # the rules' step compiles inside it


def test_play_never_prints_over_the_board_while_it_waits_for_a_move(tmp_path: Path) -> None:
    """On a terminal the seconds tick only while numba compiles: a first game whose player moves
    first waits at its prompt with nothing printed after it (the rules' step is not compiled yet)."""
    seat = new_game(seed=0).current_player  # the person moves first
    environ = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "120"}
    argv = [
        sys.executable,
        "-m",
        "patchwork_env.cli",
        "play",
        "--opponent",
        "random",
        "--seat",
        str(seat),
        "--seed",
        "0",
    ]
    pid, fd = pty.fork()
    if pid == 0:  # the child: patchwork play on the terminal
        os.execve(sys.executable, argv, environ)
    out = b""
    try:
        deadline = time.monotonic() + 300
        prompt = f"P{seat}> ".encode()
        while prompt not in out and time.monotonic() < deadline:
            out += _read(fd, 1.0)
        assert prompt in out, out.decode(errors="replace")[-2000:]
        waiting = b""
        end = time.monotonic() + 3.0  # the person thinks for 3 s
        while time.monotonic() < end:
            waiting += _read(fd, 0.2)
        assert waiting == b"", waiting  # old behaviour: "\r  ... 3 s" over the prompt
        os.write(fd, b"quit\n")
        out += _read(fd, 5.0)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def _read(fd: int, seconds: float) -> bytes:
    ready, _, _ = select.select([fd], [], [], seconds)
    if not ready:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


def test_a_notice_without_a_compile_says_nothing(tmp_path: Path) -> None:
    """Registering a notice prints nothing: only a compile does (a cached kernel never compiles)."""
    code = (
        "import sys\n"
        "from patchwork_env.core import jit\n"
        "def double(x):\n    return 2 * x\n"
        "k = jit.jit(double)\n"
        "jit.compile_notice('the test kernel', k, '1 s')\n"
        "print('registered', file=sys.stderr, flush=True)\n"
        "print(k(21), file=sys.stderr, flush=True)\n"
    )
    script = tmp_path / "notice.py"
    script.write_text(code)
    environ = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(script)], env=environ, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "registered"
    assert lines[1] == "compiling the test kernel, first run only (1 s on 2 cores; later runs load them from disk)"
    assert lines[2].startswith("compiled the test kernel in ") and lines[3] == "42"
