"""Journals: a run's finished deals on disk, and who played them.

A journal keeps every finished deal of the arena as it ends (one JSON line, appended and flushed),
so that an interrupted run keeps its games and the same run with the same journal continues from
them. A deal is known by its agents' names, the seed and its index; a journal reuses a deal only
for the agents that played it, at the state they played it in. So the journal also records, the
first time an agent plays in it (as A or as B), that agent's identity (``agent_identity``: its
spec and the sha256 of every file the spec names, such as your agent's ``FILE.py`` or the source
file of ``MODULE`` (that file, not the modules it imports); for an object from Python its qualified
name and the sha256 of its source and of its pickled state; and the version and commit of this
package, which plays the built-in agents), and refuses a later run in which an agent of the same
name is another agent: a file edited, a spec or a setting changed, another version of the package.
The refusal names the agent and what changed, and says how to start afresh (``restart``: delete
the journal, or give another).

The file::

    {"journal": "patchwork arena journal", "format": 2}
    {"agent": "my_agent.py:act", "as": "a", "identity": {"spec": ..., "files": ..., "fingerprint": ...}}
    {"a": "my_agent.py:act", "b": "greedy", "seed": 20261201, "deal": 0, "games": [...]}

A last line cut by a kill is dropped (its deal is played again). A journal written before the
agents' identities were recorded (format 1: deal lines only) is refused: nothing in it says which
agents played its deals. So is a deal line whose games are not as the arena writes them (a field
missing, of another type or out of its range: ``deal_records``), as any garbled line is: one line
naming the file and the line, before any game (not a ``TypeError`` as the results are summed).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import inspect
import json
import os
import pickle
import weakref
from collections.abc import Callable, Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Protocol

from patchwork_env.core.bitboard import CELLS
from patchwork_env.core.files import check_output_path
from patchwork_env.core.rules import BONUS_POINTS, MAX_BUTTONS, NUM_ACTIONS
from patchwork_env.core.version import __version__
from patchwork_env.evaluation.games import Forfeited, GameRecord
from patchwork_env.evaluation.provenance import commit
from patchwork_env.players.registry import USER_AGENT, canonical_spec, parse_spec
from patchwork_env.players.user import loaded_spec

JOURNAL_KIND = "patchwork arena journal"
JOURNAL_FORMAT = 2  # 1: deal lines only, without the agents' identities (refused)
RESTART = "delete it, or give another journal file"
_PACKAGE = __name__.partition(".")[0]
_DEAL_KEYS = frozenset({"a", "b", "seed", "deal", "games"})
Identity = dict[str, Any]
# the ranges of a game's numbers in a journal: what a game can give, and bounds far above any game's
# (a player decides about 60 times at most), so that no sum or mean of a run's games overflows
SCORES = (-2 * CELLS, MAX_BUTTONS + BONUS_POINTS)  # buttons (0..400) + the bonus - 2 per empty cell
MAX_MOVES = 1_000  # one player's decisions in one game
MAX_SECONDS = 1e9  # one player's time in one game (30 years)
# the fields of a game that a deal line may leave out (the game record's defaults: a journal written
# before forfeits were recorded); ``actions`` has a default too, but every journal has written it
_DEFAULTED = frozenset({"a_illegal", "b_illegal", "forfeit"})


# --- who played: an agent's identity --------------------------------------------------------------
def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def code_identity() -> str:
    """The package that plays the built-in agents: its version and commit (without ``+dirty``), as
    this process loaded it (read once: a commit made while a run plays changes none of its code)."""
    return f"patchwork-env {__version__}, commit {commit().removesuffix('+dirty')}"


def _file_hashes(paths: list[str]) -> dict[str, str]:
    out = {}
    for path in paths:
        try:
            out[os.path.abspath(path)] = _sha256(Path(path).read_bytes())
        except OSError as exc:
            raise ValueError(f"cannot read {path} to know the agent's state ({exc.strerror or exc})") from None
    return out


def _spec_files(spec: str) -> list[str]:
    """The files a spec names: your own agent's file (or module), a checkpoint or model, a value
    model (any parameter whose value is an existing file)."""
    entry, given = parse_spec(spec)
    if entry is USER_AGENT:
        head = given["spec"].rpartition(":")[0].strip()
        if head.endswith(".py"):
            return [head] if os.path.isfile(head) else []  # a missing file: building the agent says so
        try:
            found = importlib.util.find_spec(head)
        except (ImportError, ValueError):
            found = None
        origin = getattr(found, "origin", None)
        return [origin] if isinstance(origin, str) and os.path.isfile(origin) else []
    return [v for v in given.values() if isinstance(v, str) and os.path.isfile(v)]


def _fingerprinted(ident: Identity) -> Identity:
    ident["fingerprint"] = "sha256:" + _sha256(json.dumps(ident, sort_keys=True).encode())
    return ident


def spec_identity(spec: str) -> Identity:
    """The identity of the agent a spec names: the spec (canonical), the sha256 of every file it
    names, the package's version and commit (``code_identity``)."""
    return _fingerprinted(
        {"spec": canonical_spec(spec), "files": _file_hashes(_spec_files(spec)), "code": code_identity()}
    )


def object_identity(agent: object, pickled: bytes | None = None) -> Identity:
    """The identity of an agent object, class or function from Python: its qualified name, the
    sha256 of its source (a function's or class's own, an object's class's) and, for an object, of
    its pickled state (``pickled``, else pickled now; None if it does not pickle), the package's code."""
    code_only = inspect.isfunction(agent) or inspect.ismethod(agent) or inspect.isclass(agent)
    target = agent if code_only else type(agent)
    try:
        source: str | None = _sha256(inspect.getsource(target).encode())  # type: ignore[arg-type]
    except (OSError, TypeError):
        source = None
    state = _sha256(pickled) if pickled is not None else None
    if state is None and not code_only:
        try:
            state = _sha256(pickle.dumps(agent))
        except Exception:  # an object that does not pickle: its state is not known
            state = None
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(target).__name__)}"
    return _fingerprinted({"object": name, "source": source, "state": state, "code": code_identity()})


def behind(agent: object) -> object:
    """The object of yours behind one of this package's wrappers (the agent made of a function, an
    agent played in a process of its own: their ``fn``), else ``agent`` itself: what its identity is
    taken of, as the wrapper's own code and state say nothing of yours."""
    for _ in range(4):  # wrappers of wrappers, never a loop
        inner = getattr(agent, "fn", None)
        if inner is None or type(agent).__module__.partition(".")[0] != _PACKAGE:
            break
        agent = inner
    return agent


def agent_identity(agent: object) -> Identity:
    """What makes ``agent`` (a spec, an agent loaded from ``FILE.py:NAME``, any other object or
    function) the agent it is, for a journal to recognise it: ``spec_identity`` or
    ``object_identity`` (of the object behind a wrapper: ``behind``); ``fingerprint`` hashes it all."""
    spec = agent if isinstance(agent, str) else loaded_spec(agent)
    return spec_identity(spec) if spec is not None else object_identity(behind(agent))


def unknowable(ident: Identity) -> bool:
    """True for an object whose source and state are both unknown: nothing tells it from another."""
    return "object" in ident and ident["source"] is None and ident["state"] is None


def differences(old: Identity, new: Identity) -> str:
    """What changed between two identities, in words."""
    said = []
    words = {"spec": "its spec", "object": "the object", "source": "its source code", "state": "its state",
             "code": "the version of patchwork-env"}  # fmt: skip
    for key, what in words.items():
        if old.get(key) != new.get(key):
            said.append(what)
    old_files, new_files = old.get("files") or {}, new.get("files") or {}
    for path in sorted(set(old_files) | set(new_files)):
        if old_files.get(path) != new_files.get(path):
            said.append(f"the file {path}")
    return ", ".join(said) or "its identity"


class Player(Protocol):
    """An agent as the arena plays it (``arena.Entrant``): its name, how a worker rebuilds it (a
    spec or the pickled object, or None) and the object built here, if any."""

    @property
    def name(self) -> str: ...

    @property
    def ref(self) -> tuple[str, Any] | None: ...

    @property
    def built(self) -> object: ...


def player_identity(player: Player) -> Identity:
    """The identity of an agent as the arena plays it: by its spec when workers rebuild it from one,
    else by the object (``object_identity``: of yours behind a wrapper; its state the pickle the
    workers receive, taken before any game)."""
    ref = player.ref
    if ref is not None and ref[0] == "spec":
        return spec_identity(str(ref[1]))
    inner = behind(player.built)
    if inner is not player.built:  # yours, in a wrapper: its own identity (the wrapper's pickle may only name it)
        return object_identity(inner)
    return object_identity(player.built, ref[1] if ref is not None else None)


# --- the journal -----------------------------------------------------------------------------------
class JournalRefused(ValueError):
    """A journal that cannot continue this run: it holds games of another agent under a name of
    this run, or it predates the agents' identities. The message says how to start afresh."""


class Journal:
    """Finished deals on disk and the identities of the agents that played them (module docstring).
    ``restart``: how to start afresh, said when the journal is refused (default: ``RESTART``; a
    command line names its options). The arena calls ``admit`` with a run's matchups before any
    deal is read or added: an agent that is not the one the journal knows by its name is refused."""

    def __init__(self, path: str | os.PathLike[str], restart: str = RESTART) -> None:
        self.path = os.fspath(path)
        self.restart = restart
        self._known: dict[tuple[str, str, int, int], list[GameRecord]] = {}
        self._identities: dict[tuple[str, str], Identity] = {}  # (name, "a" or "b") -> identity
        self._admitted: dict[int, tuple[weakref.ref[Any], Identity]] = {}  # each player's identity, taken once
        self._started = False  # the header is on disk
        if os.path.exists(self.path) and not os.path.isfile(self.path):
            raise ValueError(f"journal {self.path} is not a regular file; give the path of a file")
        if not os.path.exists(self.path) or os.path.getsize(self.path) == 0:
            check_output_path(self.path, "journal")
            return
        self._read()

    def _read(self) -> None:
        read_whole_lines(self.path, self._entry, "not a journal entry of the arena", keep=(JournalRefused,))

    def _entry(self, number: int, entry: dict[str, Any]) -> None:
        if number == 1:
            self._header(entry)
        elif "identity" in entry:
            self._identity_line(entry)
        else:
            self._deal_line(entry)

    def _header(self, entry: dict[str, Any]) -> None:
        if entry.get("journal") != JOURNAL_KIND and entry.keys() >= _DEAL_KEYS:
            with open(self.path, "rb") as f:
                deals = sum(1 for line in f if line.endswith(b"\n"))
            raise JournalRefused(
                f"{self.path} was written before journals recorded who played their deals: nothing in it says "
                f"that its {deals} deals were played by the agents of this run; to start afresh, {self.restart}"
            )
        if entry.get("journal") != JOURNAL_KIND:
            raise ValueError("its first line is not the header of an arena journal")
        if entry.get("format") != JOURNAL_FORMAT:
            raise ValueError(f"format {entry.get('format')!r}, this version reads format {JOURNAL_FORMAT}")
        self._started = True

    def _identity_line(self, entry: dict[str, Any]) -> None:
        name, role, ident = entry["agent"], entry["as"], entry["identity"]
        if not isinstance(name, str) or role not in ("a", "b") or not isinstance(ident, dict):
            raise ValueError("an identity line holds an agent's name, its side (a or b) and its identity")
        self._identities[(name, role)] = ident

    def _deal_line(self, entry: dict[str, Any]) -> None:
        missing = sorted(_DEAL_KEYS - entry.keys())
        if missing:
            raise ValueError(f"a deal line without {', '.join(missing)} (it holds {', '.join(sorted(_DEAL_KEYS))})")
        a, b, seed, deal_index = entry["a"], entry["b"], entry["seed"], entry["deal"]
        if not isinstance(a, str) or not isinstance(b, str):
            raise ValueError(f"a deal line's agents are names (strings), got {_shown(a)} and {_shown(b)}")
        if not _is_int(seed) or seed < 0:
            raise ValueError(f"a deal line's seed is an integer >= 0, got {_shown(seed)}")
        if (a, "a") not in self._identities or (b, "b") not in self._identities:
            raise ValueError(f"a deal of {a} against {b}, whose identities come before it in a journal")
        self._known[(a, b, seed, deal_index)] = deal_records(entry["games"], deal_index)

    def admit(self, matchups: Iterable[tuple[Player, Player]]) -> None:
        """Check the agents of a run's matchups (A, B) against the identities the journal holds for
        their names, and record those of the agents new to it: an agent of a known name that is
        another agent is refused (``ValueError`` naming it and what changed), before anything is
        written. An agent's identity is taken at its first admission and kept for the later
        stages of the run (the state of an object that plays here changes as it plays)."""
        new: dict[tuple[str, str], Identity] = {}
        for pair in matchups:
            for role, player in zip("ab", pair, strict=True):
                ident, key = self._identity_of(player), (player.name, role)
                held = self._identities.get(key)
                if held is not None and held.get("fingerprint") != ident["fingerprint"]:
                    raise JournalRefused(self._mismatch(player.name, held, ident))
                if new.setdefault(key, ident)["fingerprint"] != ident["fingerprint"]:
                    raise ValueError(
                        f"two different agents are named {player.name} in this run, and a journal tells agents by "
                        "name: give them distinct names"
                    )
        new = {key: ident for key, ident in new.items() if key not in self._identities}
        if new:
            self._write([{"agent": name, "as": role, "identity": ident} for (name, role), ident in new.items()])
            self._identities.update(new)

    def _identity_of(self, player: Player) -> Identity:
        """``player``'s identity, taken at its first admission (held by a weak reference: a journal
        keeps no agent, nor the process it may play in, alive)."""
        kept = self._admitted.get(id(player))
        if kept is not None and kept[0]() is player:
            return kept[1]
        ident = player_identity(player)
        if unknowable(ident):
            raise ValueError(
                f"a journal must know each agent's state, and {player.name} ({ident['object']}) has neither source "
                "code nor a state that pickles: give it as FILE.py:NAME, or run without a journal"
            )
        with contextlib.suppress(TypeError):  # an object without weak references: taken again at each stage
            self._admitted[id(player)] = (weakref.ref(player), ident)
        return ident

    def _mismatch(self, name: str, held: Identity, ident: Identity) -> str:
        return (
            f"{self.path} holds games of another {name} (changed since they were played: {differences(held, ident)}); "
            f"continuing would mix two agents' games: to start afresh, {self.restart}"
        )

    def _check_admitted(self, a: str, b: str) -> None:
        if (a, "a") not in self._identities or (b, "b") not in self._identities:
            raise RuntimeError(f"the journal has not admitted {a} against {b}: call admit() with the matchup first")

    def played(self, a: str, b: str, seed: int, deals: range) -> dict[int, list[GameRecord]]:
        """The deals of ``deals`` that the journal holds for ``a`` against ``b`` (both admitted)."""
        self._check_admitted(a, b)
        return {d: recs for d in deals if (recs := self._known.get((a, b, seed, d))) is not None}

    def add(self, a: str, b: str, seed: int, records: list[GameRecord]) -> None:
        """A finished deal of ``a`` against ``b`` (both admitted), on disk before this returns."""
        self._check_admitted(a, b)
        deal_index = records[0].deal
        self._known[(a, b, seed, deal_index)] = records
        self._write([{"a": a, "b": b, "seed": seed, "deal": deal_index, "games": [asdict(r) for r in records]}])

    def _write(self, entries: list[dict[str, Any]]) -> None:
        if not self._started:
            entries = [{"journal": JOURNAL_KIND, "format": JOURNAL_FORMAT}, *entries]
        text = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        self._started = True

    def __len__(self) -> int:
        """The deals the journal holds."""
        return len(self._known)


# --- a deal's games, read back ----------------------------------------------------------------------
def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer(game: dict[str, Any], name: str, low: int, high: int, label: str = "") -> int:
    value = game[name]
    if not _is_int(value) or not low <= value <= high:
        raise ValueError(f"{label or name} is an integer in {low}..{high}, got {_shown(value)}")
    return int(value)


def _flag(game: dict[str, Any], name: str) -> bool:
    value = game[name]
    if not isinstance(value, bool):
        raise ValueError(f"{name} is true or false, got {_shown(value)}")
    return value


def _seconds(game: dict[str, Any], name: str) -> float:
    value = game[name]
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= MAX_SECONDS:
        raise ValueError(f"{name} is a number of seconds in 0..{MAX_SECONDS:g}, got {_shown(value)}")
    return float(value)


def _actions(game: dict[str, Any], moves: int) -> tuple[int, ...]:
    """A game's actions: each one a move played (a forfeit's illegal answer is a move without one)."""
    value = game["actions"]
    if not isinstance(value, list) or not all(_is_int(x) and 0 <= x < NUM_ACTIONS for x in value):
        raise ValueError(f"actions is a list of actions (integers 0..{NUM_ACTIONS - 1}), got {_shown(value)}")
    if len(value) > moves:
        raise ValueError(f"{len(value)} actions in a game of {moves} moves (moves_a + moves_b)")
    return tuple(value)


def _forfeit(value: object, deal: int, seat_a: int, a_illegal: bool, b_illegal: bool) -> Forfeited | None:
    """A game's forfeit: None, or the record of who forfeited, where and why; there is one exactly
    when one agent (``a_illegal`` or ``b_illegal``, not both) lost the game by an illegal answer."""
    if a_illegal and b_illegal:
        raise ValueError("a game is forfeited by one agent, and both a_illegal and b_illegal are true")
    if value is None:
        if a_illegal or b_illegal:
            raise ValueError(f"{'a' if a_illegal else 'b'}_illegal is true, and forfeit says nothing of it")
        return None
    if not isinstance(value, dict):
        raise ValueError(f"forfeit is null or the record of a forfeit (an object), got {_shown(value)}")
    _check_keys(value, [f.name for f in fields(Forfeited)], [], "forfeit")
    if not (a_illegal or b_illegal):
        raise ValueError("a forfeit in a game that neither a_illegal nor b_illegal says was forfeited")
    seat = seat_a if a_illegal else 1 - seat_a
    _integer(value, "seat", seat, seat, "the forfeit's seat")
    _integer(value, "deal", deal, deal, "the forfeit's deal")
    _integer(value, "game", 2 * deal + seat_a, 2 * deal + seat_a, "the forfeit's game")
    _integer(value, "move", 1, 2 * MAX_MOVES, "the forfeit's move")
    if value["action"] is not None:
        _integer(value, "action", 0, NUM_ACTIONS - 1, "the forfeit's action")
    for name in ("agent", "played", "reason"):
        if not isinstance(value[name], str):
            raise ValueError(f"the forfeit's {name} is a string, got {_shown(value[name])}")
    return Forfeited(**value)


def _check_keys(value: dict[str, Any], required: list[str], optional: list[str], what: str) -> None:
    missing = [k for k in required if k not in value]
    unknown = sorted(str(k) for k in value.keys() - {*required, *optional})
    if missing or unknown:
        said = [f"without {', '.join(missing)}"] if missing else []
        said += [f"with {', '.join(unknown)}, not a field of it"] if unknown else []
        raise ValueError(f"a {what} {' and '.join(said)}")


def _game(game: object, deal: int, seat_a: int) -> GameRecord:
    """One game of a deal line (``asdict`` of a ``GameRecord``), checked (``deal_records``)."""
    if not isinstance(game, dict):
        raise ValueError(f"a game is an object, got {_shown(game)}")
    optional = [f.name for f in fields(GameRecord) if f.name in _DEFAULTED]
    _check_keys(game, [f.name for f in fields(GameRecord) if f.name not in optional], optional, "game")
    _integer(game, "deal", deal, deal)
    _integer(game, "seat_a", seat_a, seat_a)
    a_won = _flag(game, "a_won")
    a_illegal, b_illegal = (_flag(game, n) if n in game else False for n in ("a_illegal", "b_illegal"))
    if (a_illegal and a_won) or (b_illegal and not a_won):
        raise ValueError("a_won is false when A forfeited the game and true when B did")
    moves_a, moves_b = _integer(game, "moves_a", 0, MAX_MOVES), _integer(game, "moves_b", 0, MAX_MOVES)
    return GameRecord(
        deal=deal,
        seat_a=seat_a,
        a_won=a_won,
        score_a=_integer(game, "score_a", *SCORES),
        score_b=_integer(game, "score_b", *SCORES),
        empty_a=_integer(game, "empty_a", 0, CELLS),
        empty_b=_integer(game, "empty_b", 0, CELLS),
        moves_a=moves_a,
        moves_b=moves_b,
        seconds_a=_seconds(game, "seconds_a"),
        seconds_b=_seconds(game, "seconds_b"),
        actions=_actions(game, moves_a + moves_b),
        a_illegal=a_illegal,
        b_illegal=b_illegal,
        forfeit=_forfeit(game.get("forfeit"), deal, seat_a, a_illegal, b_illegal),
    )


def deal_records(games: object, deal: int) -> list[GameRecord]:
    """The games of deal ``deal`` as a journal line holds them (``asdict`` of each ``GameRecord``)
    back as records, checked as the arena wrote them, so that a line edited or garbled is refused
    here (``ValueError`` saying which game and field, and what it may be) rather than mid-run, as a
    sum of a string: two games, A in seat 0 then seat 1, each with every field of its type and
    range; a forfeit exactly where ``a_illegal`` or ``b_illegal`` says, its loser not the winner."""
    if not _is_int(deal) or deal < 0:
        raise ValueError(f"a deal is an integer >= 0, got {_shown(deal)}")
    if not isinstance(games, list) or len(games) != 2:
        raise ValueError(f"a deal is a list of its two games (A in seat 0, then in seat 1), got {_shown(games)}")
    out = []
    for seat_a, game in enumerate(games):
        try:
            out.append(_game(game, deal, seat_a))
        except ValueError as exc:
            raise ValueError(f"game {seat_a} of deal {deal}: {exc}") from None
    return out


def read_whole_lines(
    path: str | os.PathLike[str],
    handle: Callable[[int, dict[str, Any]], None],
    what: str,
    keep: tuple[type[Exception], ...] = (),
) -> None:
    """Each whole line of the journal at ``path`` (a JSON object) to ``handle(number, entry)``; a
    last line cut by a kill is dropped from the file (its deal is played again). A line ``handle``
    rejects (ValueError, KeyError, TypeError; ``keep`` passes through) is one ``ValueError`` saying
    ``path, line N: <what> (why)``."""
    complete = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                break
            try:
                entry = json.loads(raw)
                if not isinstance(entry, dict):
                    raise TypeError("a line is a JSON object")
                handle(number, entry)
            except keep:
                raise
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}, line {number}: {what} ({exc})") from None
            complete += len(raw)
    if complete < os.path.getsize(path):
        os.truncate(path, complete)
