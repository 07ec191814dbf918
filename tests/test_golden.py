"""Golden playthrough: one seeded game written as text, compared exactly.

Any change of behaviour shows up as a reviewable diff. After an intended rules change, regenerate
with ``python -m tests.test_golden`` and review the diff of ``tests/golden/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from patchwork_env import action_to_str, new_game

GOLDEN = Path(__file__).parent / "golden" / "playthrough_seed0.txt"


def playthrough(seed: int = 0) -> str:
    rng = np.random.default_rng(seed + 1000)
    s = new_game(seed)
    lines = [f"# new_game({seed}); actions drawn uniformly with default_rng({seed + 1000})"]
    lines.append("# ply player legal action | position after the action (notation)")
    while not s.is_terminal:
        legal = s.legal_actions()
        a = int(legal[rng.integers(len(legal))])
        player = s.current_player
        s = s.step(a)
        lines.append(f"{s.ply:3d} P{player} {len(legal):4d} {action_to_str(a):18s} | {s.to_notation()}")
    lines.append(f"# scores {s.scores()} winner P{s.winner}")
    lines.append("# legal-move counts at the start (seed: count, sum over children)")
    for start_seed in range(6):
        start = new_game(start_seed)
        children = [start.step(int(a)) for a in start.legal_actions()]
        total = sum(len(c.legal_actions()) for c in children)
        lines.append(f"{start_seed}: {len(children)} {total}")
    return "\n".join(lines) + "\n"


def test_golden_playthrough_is_unchanged() -> None:
    assert playthrough(0) == GOLDEN.read_text()


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(playthrough(0))
    sys.stdout.write(f"wrote {GOLDEN}\n")
