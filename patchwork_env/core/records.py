"""Game records: one game per line of JSON (JSON Lines), so a file holds many games.

Format ``patchwork-record``, version 1. One line, one game::

    {"format": "patchwork-record", "version": 1,
     "deal": {"circle": [12, 5, ..., 0], "first_player": 1, "leather_layout": "revised"},
     "players": [{"name": "greedy", "spec": "greedy"}, {"name": "random", "spec": "random"}],
     "actions": [2025, 1021, 1944, ...],
     "extras": [null, {"sims": 400}, ...],
     "result": {"scores": [12, -20], "winner": 0},
     "meta": {"source": "arena", "seed": 0, "deal": 3}}

=====================  ==================================================================================
field                  meaning
=====================  ==================================================================================
format, version        ``"patchwork-record"`` and ``1``; a reader rejects any other version
deal.circle            the 33 patch ids clockwise from the neutral token, the 1x2 patch (0) last
deal.first_player      0 or 1: the player who moves first
deal.leather_layout    ``"revised"`` or ``"original"`` (see ``new_game``)
players                two objects, index = seat: ``name`` (shown in tables and the viewer) and ``spec``
                       (the agent spec string that rebuilds the agent, or null)
actions                every decision in order, ints 0..2025 (``patchwork_env.core.actions``); the game is
                       replayed from the deal, so every position is derived, never stored
extras (optional)      as long as ``actions``: per decision null or an object from the agent (e.g. a
                       search's visit counts); the viewer shows it as it is
result (optional)      ``{"scores": [s0, s1], "winner": w}`` of the finished game; checked on reading
meta (optional)        an object saying where the game comes from (arena seed, deal, game, update...)
=====================  ==================================================================================

Reading checks everything (types, ranges, unknown fields, the legality of every action by
replaying it through the engine, the stated result) and raises ``RecordError`` (a ``ValueError``)
naming the line and, for an action, the ply (0 = the first decision) and why it is illegal. Text
from a record is data: the viewer (``patchwork_env.replay``) never interprets it as markup.

>>> from patchwork_env import new_game
>>> start = new_game(seed=0)
>>> rec = record_game(start, [2025, 2025], [Player("me"), Player("you")])
>>> line = rec.to_json()
>>> parse_record(line).states()[-1] == start.step(2025).step(2025)
True
>>> try:
...     parse_record(line.replace("2025,2025", "2025,8"), line=4)
... except RecordError as exc:
...     print(exc)
line 4: ply 1: action 8 (slot 0, orientation 0, row 0, col 8): patch 3 does not fit there (it would leave the board)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchwork_env.core import rules
from patchwork_env.core.actions import action_to_str
from patchwork_env.core.files import write_atomic
from patchwork_env.core.state import GameState, IllegalActionError, new_game
from patchwork_env.core.viewer import iframe, page_data, page_html

FORMAT = "patchwork-record"
VERSION = 1
MAX_LINE_CHARS = 8_000_000  # a game with generous extras is well under 100 kB
MAX_TEXT_CHARS = 1_000  # names and specs
MAX_ACTIONS = 1_000  # a game has at most 111 decisions (106 spaces to walk, 5 leather patches)
_FIELDS = ("format", "version", "deal", "players", "actions", "extras", "result", "meta")
_REQUIRED = ("format", "version", "deal", "players", "actions")


class RecordError(ValueError):
    """A record that cannot be read or replayed; ``line`` (1-based) and ``ply`` when known."""

    def __init__(self, message: str, line: int | None = None, ply: int | None = None) -> None:
        where = "".join([f"line {line}: " if line is not None else "", f"ply {ply}: " if ply is not None else ""])
        super().__init__(where + message)
        self.line = line
        self.ply = ply


@dataclass(frozen=True)
class Deal:
    """The starting position: ``new_game(circle=..., first_player=..., leather_layout=...)``."""

    circle: tuple[int, ...]
    first_player: int
    leather_layout: str = "revised"

    def start(self) -> GameState:
        return new_game(circle=self.circle, first_player=self.first_player, leather_layout=self.leather_layout)

    @classmethod
    def of(cls, start: GameState) -> Deal:
        """The deal of a fresh game; ValueError if ``start`` is not one."""
        deal = cls(start.circle, start.top, start.leather_layout)
        if len(start.circle) != 33 or deal.start() != start:
            raise ValueError(f"a record starts from a fresh deal (ply 0, as new_game makes it), got {start!r}")
        return deal


@dataclass(frozen=True)
class Player:
    """Who sat in a seat: a display name and, when it has one, the agent spec that rebuilds it."""

    name: str
    spec: str | None = None


@dataclass(frozen=True)
class Record:
    """One game: the deal, the players by seat, the actions (and optional per-move extras)."""

    deal: Deal
    players: tuple[Player, Player]
    actions: tuple[int, ...]
    extras: tuple[dict[str, Any] | None, ...] | None = None
    scores: tuple[int, int] | None = None  # the result, when the game is finished
    winner: int | None = None
    meta: dict[str, Any] = field(default_factory=dict, hash=False)

    def states(self) -> list[GameState]:
        """Every position from the deal on (``len(actions) + 1``); RecordError naming the ply of an
        illegal action."""
        return replay(self.deal, self.actions)

    def moves(self) -> list[tuple[int, str]]:
        """(mover, human notation) of every action."""
        return [(s.current_player, action_to_str(a)) for s, a in zip(self.states(), self.actions, strict=False)]

    def page_data(self, title: str | None = None) -> dict[str, Any]:
        """What the replay viewer shows of this game (``patchwork_env.core.viewer.page_data``)."""
        states = self.states()
        return page_data(
            states,
            players=[{"name": p.name, "spec": p.spec} for p in self.players],
            moves=[[s.current_player, action_to_str(a)] for s, a in zip(states, self.actions, strict=False)],
            title=title,
            extras=list(self.extras) if self.extras is not None else None,
            meta=self.meta or None,
        )

    def _repr_html_(self) -> str:
        """In Jupyter a record shows as its replay (the page of ``patchwork replay``, in a sandboxed
        iframe): step through the game, its moves and its score chart in the notebook."""
        return iframe(page_html(self.page_data()))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "deal": {
                "circle": list(self.deal.circle),
                "first_player": self.deal.first_player,
                "leather_layout": self.deal.leather_layout,
            },
            "players": [{"name": p.name, "spec": p.spec} for p in self.players],
            "actions": list(self.actions),
        }
        if self.extras is not None:
            out["extras"] = list(self.extras)
        if self.scores is not None:
            out["result"] = {"scores": list(self.scores), "winner": self.winner}
        if self.meta:
            out["meta"] = self.meta
        return out

    def to_json(self) -> str:
        """One line of JSON (no newline), ASCII only."""
        return json.dumps(self.to_dict(), separators=(",", ":"), allow_nan=False)


def replay(deal: Deal, actions: Sequence[int]) -> list[GameState]:
    states = [deal.start()]
    for ply, action in enumerate(actions):
        try:
            states.append(states[-1].step(action))
        except IllegalActionError as exc:
            raise RecordError(str(exc), ply=ply) from None
    return states


def record_game(
    start: GameState,
    actions: Iterable[int],
    players: Sequence[Player],
    *,
    extras: Sequence[dict[str, Any] | None] | None = None,
    meta: dict[str, Any] | None = None,
) -> Record:
    """A checked record of ``actions`` played from the fresh deal ``start`` (the result filled in
    when the game is over)."""
    rec = Record(
        Deal.of(start),
        _players([{"name": p.name, "spec": p.spec} for p in players]),
        tuple(_action(a, k) for k, a in enumerate(actions)),
        None if extras is None else tuple(extras),
        meta=dict(meta or {}),
    )
    return check(rec, None)


def check(rec: Record, line: int | None) -> Record:
    """``rec`` with its result filled in, after replaying it; RecordError if anything disagrees."""
    if rec.extras is not None:
        if len(rec.extras) != len(rec.actions):
            raise RecordError(f"extras has {len(rec.extras)} entries for {len(rec.actions)} actions", line)
        for ply, extra in enumerate(rec.extras):
            if extra is not None and not isinstance(extra, dict):
                raise RecordError(f"extras entry must be an object or null, got {type(extra).__name__}", line, ply)
    try:
        final = rec.states()[-1]
    except RecordError as exc:
        raise RecordError(str(exc).removeprefix(f"ply {exc.ply}: "), line, exc.ply) from None
    if not final.is_terminal:
        if rec.scores is not None:
            raise RecordError(f"a result is given but the game is not over after {len(rec.actions)} actions", line)
        return rec
    scores, winner = final.scores(), final.winner
    if rec.scores is not None and (rec.scores != scores or rec.winner != winner):
        raise RecordError(
            f"result says scores {list(rec.scores)}, winner {rec.winner}; replaying the actions gives "
            f"scores {list(scores)}, winner {winner}",
            line,
        )
    return Record(rec.deal, rec.players, rec.actions, rec.extras, scores, winner, rec.meta)


# --- reading -------------------------------------------------------------------------------------
def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _int(value: Any, what: str, lo: int, hi: int, line: int | None, ply: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{what} must be an integer in {lo}..{hi}, got {_show(value)}", line, ply)
    if not lo <= value <= hi:
        raise RecordError(f"{what} must be in {lo}..{hi}, got {_show(value)}", line, ply)
    return value


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _action(value: Any, ply: int, line: int | None = None) -> int:
    if hasattr(value, "__index__") and not isinstance(value, bool):  # numpy integers from agents
        value = int(value.__index__())
    return _int(value, "action", 0, rules.NUM_ACTIONS - 1, line, ply)


def _text(value: Any, what: str, line: int | None, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise RecordError(f"{what} must be a string{' or null' if optional else ''}, got {_show(value)}", line)
    if len(value) > MAX_TEXT_CHARS:
        raise RecordError(f"{what} has {len(value)} characters, at most {MAX_TEXT_CHARS} are allowed", line)
    return value


def _players(value: Any, line: int | None = None) -> tuple[Player, Player]:
    if not isinstance(value, list) or len(value) != 2:
        raise RecordError(f"players must be a list of 2 objects (seat 0, seat 1), got {_show(value)}", line)
    out = []
    for seat, p in enumerate(value):
        if not isinstance(p, dict) or set(p) - {"name", "spec"} or "name" not in p:
            raise RecordError(f'players[{seat}] must be {{"name": ..., "spec": ... or null}}, got {_show(p)}', line)
        name = _text(p["name"], f"players[{seat}].name", line)
        assert name is not None
        out.append(Player(name, _text(p.get("spec"), f"players[{seat}].spec", line, optional=True)))
    return out[0], out[1]


def _deal(value: Any, line: int | None) -> Deal:
    keys = {"circle", "first_player", "leather_layout"}
    if not isinstance(value, dict) or set(value) != keys:
        raise RecordError(f"deal must be an object with exactly {sorted(keys)}, got {_show(value)}", line)
    circle = value["circle"]
    if not isinstance(circle, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in circle):
        raise RecordError(f"deal.circle must be a list of 33 patch ids, got {_show(circle)}", line)
    first = _int(value["first_player"], "deal.first_player", 0, 1, line)
    layout = value["leather_layout"]
    if not isinstance(layout, str) or layout not in rules.LEATHER_LAYOUTS:
        raise RecordError(
            f"deal.leather_layout must be one of {sorted(rules.LEATHER_LAYOUTS)}, got {_show(layout)}", line
        )
    deal = Deal(tuple(circle), first, layout)
    try:
        deal.start()
    except ValueError as exc:
        raise RecordError(f"deal.{exc}", line) from None
    return deal


def record_from_dict(data: Any, line: int | None = None) -> Record:
    """A checked record from a parsed JSON object (see the module docstring for the fields)."""
    if not isinstance(data, dict):
        raise RecordError(f"a record is a JSON object, got {type(data).__name__}", line)
    if data.get("format") != FORMAT:
        raise RecordError(f"format must be {FORMAT!r}, got {_show(data.get('format'))}", line)
    version = data.get("version")
    if version != VERSION or isinstance(version, bool):
        raise RecordError(f"unknown version {_show(version)}: this reader knows version {VERSION}", line)
    missing = [k for k in _REQUIRED if k not in data]
    unknown = [k for k in data if k not in _FIELDS]
    if missing or unknown:
        raise RecordError(f"missing fields {missing}, unknown fields {unknown} (version 1 has {list(_FIELDS)})", line)
    actions = data["actions"]
    if not isinstance(actions, list):
        raise RecordError(f"actions must be a list of integers 0..{rules.NUM_ACTIONS - 1}, got {_show(actions)}", line)
    if len(actions) > MAX_ACTIONS:
        raise RecordError(f"{len(actions)} actions: a game has at most {MAX_ACTIONS}", line)
    extras = data.get("extras")
    if extras is not None and not isinstance(extras, list):
        raise RecordError(f"extras must be a list (one entry per action) or absent, got {_show(extras)}", line)
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise RecordError(f"meta must be an object, got {_show(meta)}", line)
    scores: tuple[int, int] | None = None
    winner = None
    result = data.get("result")
    if result is not None:
        if not isinstance(result, dict) or set(result) != {"scores", "winner"}:
            raise RecordError(f'result must be {{"scores": [s0, s1], "winner": 0 or 1}}, got {_show(result)}', line)
        s = result["scores"]
        if not isinstance(s, list) or len(s) != 2:
            raise RecordError(f"result.scores must be a pair of integers, got {_show(s)}", line)
        scores = (_int(s[0], "result.scores[0]", -200, 200, line), _int(s[1], "result.scores[1]", -200, 200, line))
        winner = _int(result["winner"], "result.winner", 0, 1, line)
    rec = Record(
        _deal(data["deal"], line),
        _players(data["players"], line),
        tuple(_action(a, ply, line) for ply, a in enumerate(actions)),
        None if extras is None else tuple(extras),
        scores,
        winner,
        meta,
    )
    return check(rec, line)


def parse_record(text: str, line: int | None = None) -> Record:
    """A checked record from one line of JSON; RecordError naming ``line`` (and the ply)."""
    if len(text) > MAX_LINE_CHARS:
        raise RecordError(f"the line has {len(text)} characters, at most {MAX_LINE_CHARS} are allowed", line)
    try:
        data = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; so is int digits limit
        raise RecordError(f"not valid JSON: {exc}", line) from None
    return record_from_dict(data, line)


def _lines(f: Any) -> Iterator[tuple[int, str]]:
    """(line number, text) of an open text file, never reading more than ``MAX_LINE_CHARS + 1``
    characters of one line (a multi-gigabyte file without a newline is refused, not read whole)."""
    number = 0
    while True:
        text = f.readline(MAX_LINE_CHARS + 1)
        if not text:
            return
        number += 1
        if len(text) > MAX_LINE_CHARS:
            raise RecordError(f"the line has more than {MAX_LINE_CHARS} characters (the most allowed)", number)
        yield number, text


def iter_records(path: str | Path) -> Iterator[Record]:
    """The records of a JSON Lines file in order (blank lines skipped), each checked."""
    with open(path, encoding="utf-8") as f:
        for number, text in _lines(f):
            if text.strip():
                yield parse_record(text, number)


def read_records(path: str | Path) -> list[Record]:
    return list(iter_records(path))


def read_record(path: str | Path, index: int) -> Record:
    """Game ``index`` (0-based, blank lines not counted) of a records file; only that line is parsed."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"a game index is an integer >= 0, got {index!r}")
    games = 0
    with open(path, encoding="utf-8") as f:
        for number, text in _lines(f):
            if not text.strip():
                continue
            if games == index:
                return parse_record(text, number)
            games += 1
    if games == 0:
        raise RecordError(f"there is no game {index}: the file holds no games")
    raise RecordError(
        f"there is no game {index}: the file holds {games} game{'s' if games != 1 else ''} (0..{games - 1})"
    )


def write_records(path: str | Path, records: Iterable[Record], append: bool = False) -> Path:
    """Write (or append) one line per record; returns the path. The folder must exist. A new file
    is written atomically (``core.files.write_atomic``: whole or not at all)."""
    path = Path(path)
    if not append:
        write_atomic(path, "".join(rec.to_json() + "\n" for rec in records))
        return path
    with open(path, "a", encoding="utf-8") as f:
        for rec in records:
            f.write(rec.to_json() + "\n")
    return path
