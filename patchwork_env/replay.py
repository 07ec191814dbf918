"""A replay viewer in ONE self-contained HTML file: no server, no network, opens from disk.

``replay_html(game)`` takes a ``Record`` (``patchwork_env.core.records``) or a list of positions and
returns the page; ``write_replay(path, game)`` writes it; ``Replay(game)`` shows it inline in
Jupyter (an isolated iframe), as a ``Record`` does by itself as a cell's value. ``patchwork replay
RECORDS.jsonl --game K -o game.html`` is the command line. The page, what it shows and why it is
safe with any record: ``patchwork_env.core.viewer``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from patchwork_env.core.actions import action_to_str
from patchwork_env.core.files import write_atomic
from patchwork_env.core.records import Record
from patchwork_env.core.state import GameState
from patchwork_env.core.viewer import CONTENT_SECURITY_POLICY, embed_json, iframe, page_data, page_html

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "Replay",
    "embed_json",
    "infer_action",
    "replay_data",
    "replay_html",
    "write_replay",
]


def infer_action(before: GameState, after: GameState) -> int | None:
    """The legal action that leads from ``before`` to ``after``, or None if no single one does."""
    if after.ply != before.ply + 1:
        return None
    for a in before.legal_actions():
        if before.step(int(a)) == after:
            return int(a)
    return None


def replay_data(game: Record | Sequence[GameState], title: str | None = None) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data (``patchwork_env.core.viewer.page_data``)."""
    if isinstance(game, Record):
        return game.page_data(title)
    states = list(game)
    if not states or not all(isinstance(s, GameState) for s in states):
        raise ValueError("a replay needs a Record or a non-empty list of GameState positions")
    players: list[dict[str, Any]] = [{"name": f"player {p}", "spec": None} for p in (0, 1)]
    moves = []
    for before, after in itertools.pairwise(states):
        action = infer_action(before, after)
        moves.append([before.current_player, "?" if action is None else action_to_str(action)])
    return page_data(states, players, moves, title)


def replay_html(game: Record | Sequence[GameState], title: str | None = None) -> str:
    """The whole page (a Record, or positions in order) as one HTML string."""
    return page_html(replay_data(game, title))


def write_replay(path: str | Path, game: Record | Sequence[GameState], title: str | None = None) -> Path:
    path = Path(path)
    write_atomic(path, replay_html(game, title))
    return path


class Replay:
    """The replay inline in Jupyter: ``Replay(record)`` or ``Replay(states)`` as a cell's value.
    The page runs in a sandboxed iframe (scripts only, no access to the notebook)."""

    def __init__(
        self, game: Record | Sequence[GameState], title: str | None = None, width: int = 960, height: int = 900
    ) -> None:
        self.html = replay_html(game, title)
        self.width = width
        self.height = height

    def _repr_html_(self) -> str:
        return iframe(self.html, self.width, self.height)
