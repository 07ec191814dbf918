"""The arena: paired games between agents, on both cores, with the numbers that say who is stronger.

Pairing. Deal ``i`` (the circle of patches and the starting seat) is drawn from
``SeedSequence(seed, spawn_key=(i,))`` and played twice: agent A in seat 0 then in seat 1, so both
agents get the same luck of the deal. ``num_pairs`` deals make ``2 * num_pairs`` games. The
generators the agents receive come from the same seed sequence (``spawn_key=(i, game, seat)``), and
agents with a ``reset()`` method are reset before every game, so a game's result depends only on
the seed and the agents, never on the number of workers or the order games finish in (agents with
a time budget are the exception: how far they search depends on the machine). In a round robin
every pair plays the same deals.

Workers. Games run in a pool of spawned processes (``evaluation.workers``: a dead worker or an
agent's ``SystemExit`` is an error, never a hang; ``workers=None`` uses every core), one deal per
task. Agents travel to each worker once, as spec strings (your own agent by its ``FILE.py:NAME``)
or pickled objects; an agent object that cannot be pickled, or that lives in a notebook's
``__main__``, makes the arena play in-process. A worker limits torch to
one thread (the processes already share out the cores). With ``backend=`` (``patchwork_env.evaluation.backend``)
the same deals run as that backend's tasks instead (Ray: on a cluster), with identical results.

Numbers per pair (``PairResult``): games, wins, win rate of A with a 95% Wilson score interval,
mean score margin (A - B), mean scores, mean final empty cells, mean seconds per move of each
agent, and how the deals went (A won both games, split, B won both). ``round_robin`` adds a
maximum-likelihood Elo ladder anchored at ``random`` = 0 (``patchwork_env.evaluation.stats`` documents the method).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from patchwork_env.core.records import Player, Record, record_game
from patchwork_env.core.state import GameState, IllegalActionError, new_game
from patchwork_env.envs.agent import Agent, resolve_opponent
from patchwork_env.evaluation.backend import Backend
from patchwork_env.evaluation.progress import progress_bar
from patchwork_env.evaluation.stats import Rating, fit_elo, wilson_interval
from patchwork_env.evaluation.workers import RunError, check_spawn_safe, in_worker, run_unordered
from patchwork_env.players.registry import make_agent

AgentLike = str | Agent | Callable[[GameState], Any]
_Ref = tuple[str, Any]  # ("spec", text) or ("pickle", bytes): how a worker rebuilds an agent


@dataclass(frozen=True)
class GameRecord:
    """One finished game, seen from agent A."""

    deal: int
    seat_a: int
    a_won: bool
    score_a: int
    score_b: int
    empty_a: int
    empty_b: int
    moves_a: int
    moves_b: int
    seconds_a: float
    seconds_b: float
    actions: tuple[int, ...] = field(default=(), repr=False)  # every decision, for game records
    a_illegal: bool = False  # A lost this game by an illegal action (``forfeit`` mode)


@dataclass
class PairResult:
    """Everything measured for agent ``a`` against agent ``b``."""

    a: str
    b: str
    games: int
    wins_a: int
    wins_b: int
    win_rate_a: float
    ci95_a: tuple[float, float]
    mean_margin_a: float
    mean_score_a: float
    mean_score_b: float
    mean_empty_a: float
    mean_empty_b: float
    mean_time_per_move_a: float
    mean_time_per_move_b: float
    deals_a_won_both: int
    deals_split: int
    deals_b_won_both: int
    wins_a_in_seat0: int
    seed: int
    illegal_a: int = 0  # games A lost by an illegal action (``forfeit`` mode)
    records: list[GameRecord] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready numbers (without the per-game records)."""
        d = asdict(self)
        del d["records"]
        d["ci95_a"] = list(self.ci95_a)
        return d

    def game_records(
        self, specs: tuple[str | None, str | None] = (None, None), limit: int | None = None
    ) -> list[Record]:
        """The first ``limit`` games (all by default) as game records (``patchwork_env.core.records``), in
        deal order, both games of a deal together; ``specs`` are A's and B's agent specs."""
        out = []
        for r in self.records[:limit]:
            a, b = Player(self.a, specs[0]), Player(self.b, specs[1])
            meta = {"source": "arena", "seed": self.seed, "deal": r.deal, "seat_a": r.seat_a}
            out.append(record_game(deal(self.seed, r.deal), r.actions, (a, b) if r.seat_a == 0 else (b, a), meta=meta))
        return out

    @classmethod
    def from_records(cls, a: str, b: str, seed: int, records: list[GameRecord]) -> PairResult:
        n = len(records)
        if n == 0:
            raise ValueError("a pair result needs at least one game")
        wins = sum(r.a_won for r in records)
        per_deal: dict[int, int] = {}
        for r in records:
            per_deal[r.deal] = per_deal.get(r.deal, 0) + int(r.a_won)
        moves_a = sum(r.moves_a for r in records)
        moves_b = sum(r.moves_b for r in records)
        return cls(
            a=a,
            b=b,
            games=n,
            wins_a=wins,
            wins_b=n - wins,
            win_rate_a=wins / n,
            ci95_a=wilson_interval(wins, n),
            mean_margin_a=float(np.mean([r.score_a - r.score_b for r in records])),
            mean_score_a=float(np.mean([r.score_a for r in records])),
            mean_score_b=float(np.mean([r.score_b for r in records])),
            mean_empty_a=float(np.mean([r.empty_a for r in records])),
            mean_empty_b=float(np.mean([r.empty_b for r in records])),
            mean_time_per_move_a=sum(r.seconds_a for r in records) / max(moves_a, 1),
            mean_time_per_move_b=sum(r.seconds_b for r in records) / max(moves_b, 1),
            deals_a_won_both=sum(v == 2 for v in per_deal.values()),
            deals_split=sum(v == 1 for v in per_deal.values()),
            deals_b_won_both=sum(v == 0 for v in per_deal.values()),
            wins_a_in_seat0=sum(r.a_won for r in records if r.seat_a == 0),
            seed=seed,
            illegal_a=sum(r.a_illegal for r in records),
            records=records,
        )


@dataclass
class TournamentResult:
    """A round robin: every pair's result and the Elo ladder (anchor at 0)."""

    agents: list[str]
    pairs: list[PairResult]
    elo: dict[str, Rating]
    anchor: str

    def to_dict(self) -> dict[str, Any]:
        ladder = sorted(self.elo.items(), key=lambda kv: -kv[1].elo)
        return {
            "agents": self.agents,
            "anchor": self.anchor,
            "pairs": [p.to_dict() for p in self.pairs],
            "elo": {name: r.elo for name, r in ladder},
            "elo_ci95": {name: [r.low, r.high] for name, r in ladder},
        }


# --- one game ---------------------------------------------------------------------------------
def deal(seed: int, index: int) -> GameState:
    """The starting position of deal ``index`` of an arena run with ``seed``."""
    return new_game(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,))))


def agent_rng(seed: int, index: int, game: int, seat: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, game + 1, seat)))


class Forfeit(Exception):
    """The agent in the forfeiting seat chose an illegal action: the game ends there, lost by it."""

    def __init__(self, state: GameState, moves: list[int], seconds: list[float], reason: str) -> None:
        super().__init__(reason)
        self.state, self.moves, self.seconds = state, moves, seconds


class AgentError(RunError):
    """An agent under evaluation raised (not an illegal action): the run stops, naming the game."""


def play_game(
    agents: Sequence[Agent],
    start: GameState,
    rngs: Sequence[np.random.Generator],
    actions: list[int] | None = None,
    forfeit_seat: int | None = None,
) -> tuple[GameState, list[int], list[float]]:
    """Play ``start`` to the end, ``agents[seat]`` deciding for each seat; returns the final state,
    the moves and the seconds spent per seat (and appends every action to ``actions`` if given).
    An illegal action raises the engine's error; by the agent in ``forfeit_seat``, ``Forfeit``."""
    for agent in agents:
        reset = getattr(agent, "reset", None)
        if callable(reset):
            reset()
    state = start
    moves = [0, 0]
    seconds = [0.0, 0.0]
    while not state.is_terminal:
        seat = state.current_player
        t0 = time.perf_counter()
        try:
            action = agents[seat].act(state, rngs[seat])
        except IllegalActionError as exc:  # a callable's answer that is not an action (checked in act)
            if seat != forfeit_seat:
                raise
            raise Forfeit(state, moves, seconds, str(exc)) from None
        seconds[seat] += time.perf_counter() - t0
        moves[seat] += 1
        try:
            state = state.step(action)
        except IllegalActionError as exc:
            if seat != forfeit_seat:
                raise
            raise Forfeit(state, moves, seconds, str(exc)) from None
        if actions is not None:
            actions.append(int(action))
    return state, moves, seconds


def play_deal(agent_a: Agent, agent_b: Agent, seed: int, index: int, forfeit: bool = False) -> list[GameRecord]:
    """Both games of deal ``index``: A in seat 0, then A in seat 1. With ``forfeit`` (an agent under
    evaluation), an illegal action of A loses that game (recorded as ``a_illegal``) and anything
    else A raises stops the run as an ``AgentError`` naming the deal and game."""
    start = deal(seed, index)
    out = []
    for game, seat_a in enumerate((0, 1)):
        seated = [agent_a, agent_b] if seat_a == 0 else [agent_b, agent_a]
        rngs = [agent_rng(seed, index, game, seat) for seat in (0, 1)]
        actions: list[int] = []
        illegal = False
        try:
            final, moves, seconds = play_game(seated, start, rngs, actions, seat_a if forfeit else None)
        except Forfeit as lost:
            final, moves, seconds, illegal = lost.state, lost.moves, lost.seconds, True
        except Exception as exc:
            if not forfeit:
                raise
            raise AgentError(
                f"{agent_a.name} raised on deal {index}, game {2 * index + game} ({type(exc).__name__}: {exc})"
            ) from exc
        scores = final.scores()
        sb = 1 - seat_a
        out.append(
            GameRecord(
                deal=index,
                seat_a=seat_a,
                a_won=final.winner == seat_a and not illegal,
                score_a=scores[seat_a],
                score_b=scores[sb],
                empty_a=final.empty_cells(seat_a),
                empty_b=final.empty_cells(sb),
                moves_a=moves[seat_a],
                moves_b=moves[sb],
                seconds_a=seconds[seat_a],
                seconds_b=seconds[sb],
                actions=tuple(actions),
                a_illegal=illegal,
            )
        )
    return out


def warm_up(agent: Agent) -> None:
    """One move that no game keeps, so that no game's time per move includes loading or compiling
    (the first move of a fresh install's process compiles kernels for seconds). An illegal action
    here is left to the games, which count it; any other exception is an ``AgentError`` naming the
    agent, before any game."""
    try:
        agent.act(new_game(0), np.random.default_rng(0))
    except IllegalActionError:
        pass
    except Exception as exc:
        name = getattr(agent, "name", type(agent).__name__)
        raise AgentError(f"{name} raised on a test move, before any game ({type(exc).__name__}: {exc})") from exc
    reset = getattr(agent, "reset", None)
    if callable(reset):
        reset()


# --- workers ------------------------------------------------------------------------------------
_WORKER_REFS: list[_Ref | None] = []
_WORKER_AGENTS: dict[int, Agent] = {}


def _init_worker(refs: list[_Ref | None]) -> None:
    """Runs once in each spawned worker: the agents arrive here once, not with every game. The
    processes already share out the cores, so torch (if an agent uses it) gets one thread each."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    _WORKER_REFS[:] = refs
    _WORKER_AGENTS.clear()


def _build(index: int) -> Agent:
    agent = _WORKER_AGENTS.get(index)
    if agent is None:
        ref = _WORKER_REFS[index]
        assert ref is not None
        kind, payload = ref
        agent = make_agent(payload) if kind == "spec" else pickle.loads(payload)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(1)
        warm_up(agent)
        _WORKER_AGENTS[index] = agent
    return agent


Job = tuple[int, int, int, int, int, bool]  # matchup, agent i, agent j, seed, deal, forfeit


def _task(job: Job) -> tuple[int, list[GameRecord]]:
    matchup, i, j, seed, index, forfeit = job
    return matchup, play_deal(_build(i), _build(j), seed, index, forfeit)


def _backend_task(refs: list[_Ref | None], job: Job) -> tuple[int, list[GameRecord]]:
    """One deal on a backend's worker; the agents are rebuilt only when ``refs`` change."""
    if refs != _WORKER_REFS:
        _init_worker(refs)
    return _task(job)


def _defined_in_interactive_main(agent: object) -> bool:
    """True for an agent (or the function behind it) defined in a ``__main__`` that a spawned
    worker cannot import (Jupyter, the REPL): pickled by reference, it would not load there."""
    target = getattr(agent, "fn", agent)
    module = getattr(target, "__module__", None) or getattr(type(target), "__module__", None)
    return module == "__main__" and getattr(sys.modules.get("__main__"), "__file__", None) is None


def _ref(agent: AgentLike) -> tuple[_Ref | None, Agent, str]:
    """How to send ``agent`` to a worker (None if it cannot travel), the local object, its name."""
    if isinstance(agent, str):
        local = make_agent(agent)  # validates the spec before any worker starts
        warm_up(local)
        return ("spec", agent.strip()), local, local.name
    if not isinstance(agent, Agent):
        if not callable(agent):
            raise TypeError(
                f"an agent must be a spec string, an object with name and act(state, rng), or a callable "
                f"(GameState) -> action; got {agent!r}"
            )
        agent = resolve_opponent(agent)
    warm_up(agent)
    load_path = getattr(agent, "load_path", None)  # an agent loaded from FILE.py:NAME / MODULE:NAME
    if isinstance(load_path, str):
        return ("spec", load_path), agent, agent.name
    if _defined_in_interactive_main(agent):
        return None, agent, agent.name
    try:
        return ("pickle", pickle.dumps(agent)), agent, agent.name
    except (pickle.PicklingError, TypeError, AttributeError):
        return None, agent, agent.name


MAX_PAIRS = 1_000_000  # deals per matchup: a run of the largest already takes days


def resolve_workers(workers: int | None, jobs: int) -> int:
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None (all cores), got {workers!r}")
    if in_worker():
        return 1  # a worker of a pool already: no pool of its own
    return max(1, min(workers or os.cpu_count() or 1, jobs))


def _check_pairs(num_pairs: int) -> None:
    if not isinstance(num_pairs, int) or isinstance(num_pairs, bool) or not 1 <= num_pairs <= MAX_PAIRS:
        raise ValueError(
            f"num_pairs (deals, each played twice) must be an integer in 1..{MAX_PAIRS}, got {num_pairs!r}"
        )


def _run(
    agents: Sequence[AgentLike],
    matchups: list[tuple[int, int]],
    num_pairs: int | Sequence[range],
    seed: int,
    workers: int | None,
    progress: bool,
    backend: Backend | None = None,
    forfeit: bool = False,
    journal: Journal | None = None,
) -> tuple[list[str], list[list[GameRecord]]]:
    """Play the deals of each matchup (indices into ``agents``): ``num_pairs`` deals each, or
    ``num_pairs[m]`` (a range of deal indices) for matchup ``m``. Returns the agents' names and each
    matchup's records ordered by deal (A in seat 0 first). ``journal``: deals it holds are not
    played again, and every deal played is added to it as soon as it ends."""
    if isinstance(num_pairs, int):
        _check_pairs(num_pairs)
        deals: list[range] = [range(num_pairs)] * len(matchups)
    else:
        deals = list(num_pairs)
        if len(deals) != len(matchups):
            raise ValueError(f"one range of deals per matchup: {len(matchups)} matchups, {len(deals)} ranges")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    resolved = [_ref(a) for a in agents]
    names = [name for _, _, name in resolved]
    by_matchup: list[dict[int, list[GameRecord]]] = [{} for _ in matchups]
    if journal is not None:
        for m, (i, j) in enumerate(matchups):
            by_matchup[m] = journal.played(names[i], names[j], seed, forfeit, deals[m])
    jobs = (
        (m, i, j, seed, d, forfeit) for m, (i, j) in enumerate(matchups) for d in deals[m] if d not in by_matchup[m]
    )
    todo = sum(len(r) - len(done) for r, done in zip(deals, by_matchup, strict=True))
    n_workers = resolve_workers(workers, todo)
    refs = [ref for ref, _, _ in resolved]
    if backend is not None and None in refs:
        raise ValueError("every agent must be a spec string or picklable to play on a backend's workers")
    in_process = backend is None and (n_workers == 1 or None in refs)
    if not in_process and backend is None:
        check_spawn_safe("workers")
    bar = _progress_bar(2 * todo, progress)

    def finished(m: int, recs: list[GameRecord]) -> None:
        by_matchup[m][recs[0].deal] = recs
        if journal is not None:
            i, j = matchups[m]
            journal.add(names[i], names[j], seed, forfeit, recs)
        bar(2)

    try:
        if in_process:
            for m, i, j, _, d, _ in jobs:
                finished(m, play_deal(resolved[i][1], resolved[j][1], seed, d, forfeit))
        elif backend is not None:
            for m, recs in backend.map(_backend_task, refs, list(jobs)):
                finished(m, recs)
        else:

            def describe(job: Job) -> str:
                _, i, j, _, d, _ = job
                return f"{names[i]} vs {names[j]}, deal {d} (games {2 * d} and {2 * d + 1})"

            for _, (m, recs) in run_unordered(_task, jobs, n_workers, _init_worker, (refs,), describe):
                finished(m, recs)
    finally:
        bar(0, close=True)
    return names, [[r for d in sorted(recs) for r in recs[d]] for recs in by_matchup]


class Journal:
    """Finished deals on disk, one JSON line each, appended (and flushed) as each deal ends, so
    that an interrupted run keeps its games and a rerun with the same journal continues from them.
    A deal is known by its agents' names, the seed, the forfeit mode and its index."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._known: dict[tuple[str, str, int, bool, int], list[GameRecord]] = {}
        if not os.path.exists(self.path):
            return
        complete = 0  # bytes of whole lines: a last line cut by a kill is dropped (its deal is played again)
        with open(self.path, "rb") as f:
            for number, raw in enumerate(f, 1):
                if not raw.endswith(b"\n"):
                    break
                try:
                    entry = json.loads(raw)
                    key = (entry["a"], entry["b"], entry["seed"], entry["forfeit"], entry["deal"])
                    games = [GameRecord(**{**g, "actions": tuple(g["actions"])}) for g in entry["games"]]
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{self.path}, line {number}: not a journal entry of the arena ({exc})") from None
                self._known[key] = games
                complete += len(raw)
        if complete < os.path.getsize(self.path):
            os.truncate(self.path, complete)

    def played(self, a: str, b: str, seed: int, forfeit: bool, deals: range) -> dict[int, list[GameRecord]]:
        return {d: recs for d in deals if (recs := self._known.get((a, b, seed, forfeit, d))) is not None}

    def add(self, a: str, b: str, seed: int, forfeit: bool, records: list[GameRecord]) -> None:
        deal_index = records[0].deal
        self._known[(a, b, seed, forfeit, deal_index)] = records
        entry = {
            "a": a,
            "b": b,
            "seed": seed,
            "forfeit": forfeit,
            "deal": deal_index,
            "games": [asdict(r) for r in records],
        }
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def __len__(self) -> int:
        return len(self._known)


def _progress_bar(total: int, enabled: bool) -> Callable[..., None]:
    if not enabled:
        return lambda n, close=False: None

    bar = progress_bar(total=total, unit="game", dynamic_ncols=True)

    def update(n: int, close: bool = False) -> None:
        if n:
            bar.update(n)
        if close:
            bar.close()

    return update


# --- public entry points ----------------------------------------------------------------------
def play_pairs(
    agent_a: AgentLike,
    agent_b: AgentLike,
    num_pairs: int,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = False,
    backend: Backend | None = None,
    forfeit: bool = False,
    journal: Journal | None = None,
) -> PairResult:
    """``num_pairs`` deals, each played twice with the seats swapped (``2 * num_pairs`` games);
    ``backend``: play them as its tasks (e.g. ``backend.RayBackend``) instead of ``workers``;
    ``forfeit``: an illegal action of A loses the game instead of raising (see ``play_deal``);
    ``journal``: deals it holds are not played again, and each deal played is added (``Journal``)."""
    names, (records,) = _run(
        [agent_a, agent_b], [(0, 1)], num_pairs, seed, workers, progress, backend, forfeit, journal
    )
    return PairResult.from_records(names[0], names[1], seed, records)


def play_matchups(
    agents: Sequence[AgentLike],
    matchups: Sequence[tuple[int, int]],
    deals: Sequence[range],
    seed: int = 0,
    workers: int | None = None,
    progress: bool = False,
    backend: Backend | None = None,
    journal: Journal | None = None,
) -> list[PairResult]:
    """Each matchup ``(i, j)`` (indices into ``agents``) plays the deals of its range in
    ``deals`` (each twice, seats swapped), all in one pool: how a ladder version is built, the
    matchups of neighbouring rungs playing more deals than the others."""
    names, records = _run(agents, list(matchups), deals, seed, workers, progress, backend, journal=journal)
    return [
        PairResult.from_records(names[i], names[j], seed, recs) for (i, j), recs in zip(matchups, records, strict=True)
    ]


def round_robin(
    specs: Sequence[AgentLike],
    num_pairs: int,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = False,
    anchor: str = "random",
    backend: Backend | None = None,
    journal: Journal | None = None,
) -> TournamentResult:
    """Every pair of agents plays ``num_pairs`` deals (twice each, the same deals for every pair);
    the Elo ladder is anchored at the agent named ``anchor`` (else the first agent)."""
    if len(specs) < 2:
        raise ValueError(f"a round robin needs at least two agents, got {len(specs)}")
    matchups = [(i, j) for i in range(len(specs)) for j in range(i + 1, len(specs))]
    names = [s.strip() if isinstance(s, str) else getattr(s, "name", getattr(s, "__name__", repr(s))) for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"agent names must be distinct in a round robin, repeated: {dupes}")
    names, records = _run(specs, matchups, num_pairs, seed, workers, progress, backend, journal=journal)
    pairs = [
        PairResult.from_records(names[i], names[j], seed, recs) for (i, j), recs in zip(matchups, records, strict=True)
    ]
    anchor_index = names.index(anchor) if anchor in names else 0
    results = [(i, j, p.wins_a, p.wins_b) for (i, j), p in zip(matchups, pairs, strict=True)]
    elo = fit_elo(names, results, anchor=anchor_index)
    return TournamentResult(agents=names, pairs=pairs, elo=elo, anchor=names[anchor_index])
