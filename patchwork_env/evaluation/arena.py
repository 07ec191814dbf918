"""The arena: paired games between agents, on both cores, with the numbers that say who is stronger.

Pairing. Deal ``i`` (the circle of patches and the starting seat) is drawn from
``SeedSequence(seed, spawn_key=(i,))`` and played twice: agent A in seat 0 then in seat 1, so both
agents get the same luck of the deal. ``num_pairs`` deals make ``2 * num_pairs`` games. The
generators the agents receive come from the same seed sequence (``spawn_key=(i, game, seat)``), and
agents with a ``reset()`` method are reset before every game, so a game's result depends only on
the seed and the agents, never on the number of workers or the order games finish in (agents with
a time budget are the exception: how far they search depends on the machine). In a round robin
every pair plays the same deals. Illegal actions and exceptions follow one rule
(``patchwork_env.evaluation.games``): an illegal or wrong-type action forfeits that game, with its
reason recorded (``PairResult.forfeits``); an exception stops the run (``AgentError``), the games
finished before it kept.

Workers. Games run in a pool of spawned processes (``evaluation.workers``: a dead worker or an
agent's ``SystemExit`` is an error, never a hang), one deal per task, or in this process
(``workers=1``); ``workers=None`` plays here until the games left would take longer than
``START_WORKERS_AFTER`` here, then on every core (a short run does not win back the processes'
start); ``pool=`` (``open_pool``) keeps the processes for several calls, as a command of several
stages does. Agents travel to the workers as spec strings (your own agent by its ``FILE.py:NAME``)
or pickled objects, and each worker builds each agent once and keeps it; an agent object that
cannot be pickled, or that lives in a notebook's ``__main__``, makes the arena play in-process; a
function defined inside a script's ``if __name__ == "__main__":`` block, which no worker can load,
is refused in one line. A worker limits torch to one thread (the processes already share out the
cores). With ``backend=`` (``patchwork_env.evaluation.backend``) the same deals run as that
backend's tasks instead (Ray: on a cluster), with identical results.

Numbers per pair (``PairResult``): games, wins, win rate of A with a 95% Wilson score interval,
mean score margin (A - B), mean scores, mean final empty cells, mean seconds per move of each
agent, how the deals went (A won both games, split, B won both) and the forfeits. ``round_robin``
adds a maximum-likelihood Elo ladder anchored at ``random`` = 0 (``patchwork_env.evaluation.stats``
documents the method).
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import os
import pickle
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from patchwork_env.core.records import Player, Record, record_game
from patchwork_env.core.state import GameState
from patchwork_env.envs.agent import Agent, resolve_opponent
from patchwork_env.evaluation.backend import Backend
from patchwork_env.evaluation.games import AgentError as AgentError
from patchwork_env.evaluation.games import Forfeit as Forfeit
from patchwork_env.evaluation.games import Forfeited as Forfeited
from patchwork_env.evaluation.games import GameRecord as GameRecord
from patchwork_env.evaluation.games import agent_rng as agent_rng
from patchwork_env.evaluation.games import deal as deal
from patchwork_env.evaluation.games import play_deal as play_deal
from patchwork_env.evaluation.games import play_game as play_game
from patchwork_env.evaluation.games import warm_up as warm_up
from patchwork_env.evaluation.journal import Journal as Journal
from patchwork_env.evaluation.progress import progress_bar
from patchwork_env.evaluation.stats import Rating, fit_elo, wilson_interval
from patchwork_env.evaluation.workers import (
    SpawnError,
    WorkerPool,
    check_spawn_safe,
    in_worker,
    unreachable_in_workers,
)
from patchwork_env.players.contained import build_agent, contain
from patchwork_env.players.registry import parse_spec
from patchwork_env.players.user import loaded_spec

AgentLike = str | Agent | Callable[[GameState], Any] | type
_Ref = tuple[str, Any]  # ("spec", text) or ("pickle", bytes): how a worker rebuilds an agent


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
    illegal_a: int = 0  # games A lost by an illegal or wrong-type action
    records: list[GameRecord] = field(default_factory=list, repr=False)
    illegal_b: int = 0  # and B

    @property
    def forfeits(self) -> list[Forfeited]:
        """Every game lost by an illegal or wrong-type action, in deal order: who, where, what, why."""
        return [r.forfeit for r in self.records if r.forfeit is not None]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready numbers (without the per-game records), with every forfeit."""
        d = asdict(self)
        del d["records"]
        d["ci95_a"] = list(self.ci95_a)
        d["forfeits"] = [asdict(f) for f in self.forfeits]
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
            illegal_b=sum(r.b_illegal for r in records),
        )


@dataclass
class TournamentResult:
    """A round robin: every pair's result and the Elo ladder (anchor at 0)."""

    agents: list[str]
    pairs: list[PairResult]
    elo: dict[str, Rating]
    anchor: str
    agent_info: dict[str, dict[str, Any]] = field(default_factory=dict)  # what agents say of themselves

    @property
    def forfeits(self) -> list[Forfeited]:
        return [f for p in self.pairs for f in p.forfeits]

    def to_dict(self) -> dict[str, Any]:
        ladder = sorted(self.elo.items(), key=lambda kv: -kv[1].elo)
        return {
            "agents": self.agents,
            "anchor": self.anchor,
            "pairs": [p.to_dict() for p in self.pairs],
            "elo": {name: r.elo for name, r in ladder},
            "elo_ci95": {name: [r.low, r.high] for name, r in ladder},
            "agent_info": self.agent_info,
        }


# --- the agents: here and on workers ---------------------------------------------------------------
def agent_info(agent: object) -> dict[str, Any]:
    """What an agent says of itself for the results files: its ``agent_info()``, if it has one
    (an SB3 model: its algorithm and whether it was trained with masks), else nothing."""
    method = getattr(agent, "agent_info", None)
    info = method() if callable(method) else None
    return dict(info) if isinstance(info, dict) else {}


@dataclass
class Entrant:
    """An agent as the arena plays it: its name; how a worker rebuilds it (``ref``: a spec, or the
    pickled object; None: it plays in this process only, silently if it cannot be pickled, refused
    on workers with ``refusal`` if it would fail there); and the agent built here (``agent()``:
    built on first use, so that a rung played on workers only is never built in this process)."""

    name: str
    ref: _Ref | None
    built: Agent | None = None
    refusal: str | None = None

    def agent(self) -> Agent:
        if self.built is None:
            assert self.ref is not None and self.ref[0] == "spec"
            self.built = build_agent(self.ref[1])
            warm_up(self.built)
        return self.built

    @property
    def info(self) -> dict[str, Any]:
        return agent_info(self.built) if self.built is not None else {}


def _name(agent: object) -> str:
    return str(getattr(agent, "name", None) or type(agent).__name__)


def resolve_agent(agent: AgentLike | Entrant, build: bool = True) -> Entrant:
    """``agent`` (a spec, an agent object or class, a function ``GameState -> action``) ready to
    play, validated before any game: built and warmed up here (one move that no game keeps), but a
    spec with ``build=False`` only parsed (built when it first plays in this process)."""
    if isinstance(agent, Entrant):
        return agent
    if isinstance(agent, str):
        if not build:
            parse_spec(agent)
            return Entrant(agent.strip(), ("spec", agent.strip()))
        local = build_agent(agent)  # validates the spec before any worker starts
        warm_up(local)
        return Entrant(local.name, ("spec", agent.strip()), local)
    agent = contain(agent)  # yours: built and played in a process of its own (players.contained)
    if inspect.isclass(agent) or not isinstance(agent, Agent):
        if not callable(agent) and not callable(getattr(agent, "act", None)):
            raise TypeError(
                f"an agent must be a spec string, an object with name and act(state, rng), an agent class or a "
                f"callable (GameState) -> action; got {agent!r}"
            )
        agent = resolve_opponent(agent)
    warm_up(agent)
    name = _name(agent)
    load_path = loaded_spec(agent)  # an agent loaded from FILE.py:NAME / MODULE:NAME: workers load it so
    if load_path is not None:
        return Entrant(name, ("spec", load_path), agent)
    target = getattr(agent, "fn", agent)  # a function behind its agent wrapper
    if _defined_in_interactive_main(agent):
        return Entrant(name, None, agent)
    refusal = unreachable_in_workers(target)
    if refusal is not None:
        return Entrant(name, None, agent, refusal)
    try:
        return Entrant(name, ("pickle", pickle.dumps(agent)), agent)
    except Exception:  # pickling runs others' code: a module's __getattr__ may raise anything (ImportError)
        return Entrant(name, None, agent)


def _ref(agent: AgentLike) -> tuple[_Ref | None, Agent, str]:
    """How to send ``agent`` to a worker (None if it cannot travel), the local object, its name."""
    entrant = resolve_agent(agent)
    return entrant.ref, entrant.agent(), entrant.name


def _defined_in_interactive_main(agent: object) -> bool:
    """True for an agent (or the function behind it) defined in a ``__main__`` that a spawned
    worker cannot import (Jupyter, the REPL): pickled by reference, it would not load there."""
    target = getattr(agent, "fn", agent)
    module = getattr(target, "__module__", None) or getattr(type(target), "__module__", None)
    return module == "__main__" and getattr(sys.modules.get("__main__"), "__file__", None) is None


_WORKER_REFS: list[_Ref | None] = []  # ``_task``'s agents: the refs its pool's initializer gave
_WORKER_AGENTS: dict[tuple[int, str, str], Agent] = {}  # every agent a worker built, by place and ref


def _init_worker(refs: list[_Ref | None] | None = None) -> None:
    """Runs once in each spawned worker. The processes already share out the cores, so torch (if
    an agent uses it) gets one thread each; ``refs``: the agents of ``_task``'s jobs."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    if refs is not None:
        _WORKER_REFS[:] = refs
        _WORKER_AGENTS.clear()


def _agent_for(index: int, ref: _Ref | None) -> Agent:
    """The agent of ``ref`` at place ``index`` of its run, built (and warmed up) once per worker:
    a pool kept for several stages builds the rated agent once. (Two places holding the same spec
    get two agents, as in-process play does: a search's kept tree belongs to one seat.)"""
    assert ref is not None
    kind, payload = ref
    key = (index, kind, payload if kind == "spec" else hashlib.sha1(payload).hexdigest())
    agent = _WORKER_AGENTS.get(key)
    if agent is None:
        agent = build_agent(payload) if kind == "spec" else pickle.loads(payload)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(1)
        warm_up(agent)
        _WORKER_AGENTS[key] = agent
    return agent


Job = tuple[int, int, int, int, int, bool]  # matchup, agent i, agent j, seed, deal, (forfeit: always)
_Seated = tuple[_Ref | None, _Ref | None, Job]  # a job with the refs of its two agents


def _task(job: Job) -> tuple[int, list[GameRecord]]:
    """One deal, its agents from the refs of the pool's initializer (``_init_worker``)."""
    matchup, i, j, seed, index, _ = job
    return matchup, play_deal(_agent_for(i, _WORKER_REFS[i]), _agent_for(j, _WORKER_REFS[j]), seed, index)


def _seated_task(item: _Seated) -> tuple[int, list[GameRecord]]:
    """One deal, its agents' refs sent with it (a pool kept across stages has no fixed agents)."""
    ref_a, ref_b, (matchup, i, j, seed, index, _) = item
    return matchup, play_deal(_agent_for(i, ref_a), _agent_for(j, ref_b), seed, index)


def _backend_task(refs: list[_Ref | None], job: Job) -> tuple[int, list[GameRecord]]:
    """One deal on a backend's worker; each agent is built once per worker."""
    _init_worker()
    return _seated_task((refs[job[1]], refs[job[2]], job))


MAX_PAIRS = 1_000_000  # deals per matchup: a run of the largest already takes days


#: ``workers=None``: the games are played in this process until those left would take longer than
#: this here (at the pace of the games played so far); then on every core. Starting a worker costs
#: 1-5 s of CPU (numba's kernels; torch and SB3 for their agents), 3-15 s on a busy machine, which a
#: shorter run does not win back (``benchmarks.bench_ladder``, ``benchmarks/results/ladder-workers.json``).
START_WORKERS_AFTER = 60.0


def resolve_workers(workers: int | None, jobs: int) -> int:
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None (as many as pay), got {workers!r}")
    if in_worker():
        return 1  # a worker of a pool already: no pool of its own
    return max(1, min(workers or os.cpu_count() or 1, jobs))


def _check_pairs(num_pairs: int) -> None:
    if not isinstance(num_pairs, int) or isinstance(num_pairs, bool) or not 1 <= num_pairs <= MAX_PAIRS:
        raise ValueError(
            f"num_pairs (deals, each played twice) must be an integer in 1..{MAX_PAIRS}, got {num_pairs!r}"
        )


def open_pool(workers: int | None = None) -> WorkerPool:
    """Worker processes for the games of a whole command (``workers``; None: every core, started
    only once the games left are worth it: ``START_WORKERS_AFTER``), to give
    as ``pool=`` to every call of it and close at its end (a ``with`` block): they start at the
    first games that need them, and each builds an agent once for all the calls."""
    return WorkerPool(resolve_workers(workers, MAX_PAIRS), _init_worker)


def _run(
    agents: Sequence[AgentLike | Entrant],
    matchups: list[tuple[int, int]],
    num_pairs: int | Sequence[range],
    seed: int,
    workers: int | None,
    progress: bool,
    backend: Backend | None = None,
    journal: Journal | None = None,
    pool: WorkerPool | None = None,
) -> tuple[list[str], list[list[GameRecord]]]:
    """Play the deals of each matchup (indices into ``agents``): ``num_pairs`` deals each, or
    ``num_pairs[m]`` (a range of deal indices) for matchup ``m``. Returns the agents' names and each
    matchup's records ordered by deal (A in seat 0 first). ``journal``: deals it holds are not
    played again, and every deal played is added to it as soon as it ends. ``pool``: play on its
    processes (``workers`` is then its size), which stay for the caller's next call."""
    if isinstance(num_pairs, int):
        _check_pairs(num_pairs)
        deals: list[range] = [range(num_pairs)] * len(matchups)
    else:
        deals = list(num_pairs)
        if len(deals) != len(matchups):
            raise ValueError(f"one range of deals per matchup: {len(matchups)} matchups, {len(deals)} ranges")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    entrants = [resolve_agent(a) for a in agents]
    names = [e.name for e in entrants]
    by_matchup: list[dict[int, list[GameRecord]]] = [{} for _ in matchups]
    if journal is not None:
        journal.admit([(entrants[i], entrants[j]) for i, j in matchups])  # refuses another agent's journal
        for m, (i, j) in enumerate(matchups):
            by_matchup[m] = journal.played(names[i], names[j], seed, deals[m])
    jobs = _interleaved(matchups, deals, by_matchup, seed)
    todo = sum(len(r) - len(done) for r, done in zip(deals, by_matchup, strict=True))
    refs = [e.ref for e in entrants]
    if backend is not None and None in refs:
        raise ValueError("every agent must be a spec string or picklable to play on a backend's workers")
    auto = workers is None  # as many as pay (``START_WORKERS_AFTER``): none for a short run
    parallel = backend is None and resolve_workers(pool.workers if pool else workers, max(todo, 1)) > 1 and todo > 1
    if parallel and not auto:
        for e in entrants:
            if e.refusal is not None:
                raise SpawnError(f"workers > 1: {e.refusal}")
        parallel = None not in refs  # an agent that cannot be pickled plays in this process
        if parallel:
            check_spawn_safe("workers")
    elif parallel:  # not asked for: processes only where they can start and every agent can travel
        parallel = None not in refs and _spawn_safe()
    bar = _progress_bar(2 * todo, progress)

    def finished(m: int, recs: list[GameRecord]) -> None:
        by_matchup[m][recs[0].deal] = recs
        if journal is not None:
            i, j = matchups[m]
            journal.add(names[i], names[j], seed, recs)
        bar(2)

    def describe(item: _Seated) -> str:
        _, i, j, _, d, _ = item[2]
        return f"{names[i]} vs {names[j]}, deal {d} (games {2 * d} and {2 * d + 1})"

    try:
        if backend is not None:
            for m, recs in backend.map(_backend_task, refs, list(jobs)):
                finished(m, recs)
        elif not parallel:
            for m, i, j, _, d, _ in jobs:
                finished(m, play_deal(entrants[i].agent(), entrants[j].agent(), seed, d))
        else:
            left = todo
            if auto and not (pool is not None and pool.started):  # here, while the games left are few
                started = time.perf_counter()
                for m, i, j, _, d, _ in jobs:
                    finished(m, play_deal(entrants[i].agent(), entrants[j].agent(), seed, d))
                    left -= 1
                    spent = time.perf_counter() - started
                    if spent / (todo - left) * left > START_WORKERS_AFTER:
                        break
            own = pool is None
            use = pool if pool is not None else WorkerPool(resolve_workers(workers, left), _init_worker)
            try:
                seated = ((refs[job[1]], refs[job[2]], job) for job in jobs)
                if left:
                    for _, (m, recs) in use.run_unordered(_seated_task, seated, describe):
                        finished(m, recs)
            finally:
                if own:
                    use.close()
    except AgentError as exc:  # the run stops: the games finished before it go with the error
        exc.finished = [
            PairResult.from_records(names[i], names[j], seed, [r for d in sorted(done) for r in done[d]])
            for (i, j), done in zip(matchups, by_matchup, strict=True)
            if done
        ]
        raise
    finally:
        bar(0, close=True)
    return names, [[r for d in sorted(recs) for r in recs[d]] for recs in by_matchup]


def _interleaved(
    matchups: list[tuple[int, int]], deals: list[range], done: list[dict[int, list[GameRecord]]], seed: int
) -> Iterator[Job]:
    """The deals to play, a deal of each matchup in turn (so that the first ones played tell the pace
    of the whole run), drawn lazily: a run of a million deals lists none of them up front."""

    def of(m: int) -> Iterator[Job]:
        i, j = matchups[m]
        return ((m, i, j, seed, d, True) for d in deals[m] if d not in done[m])

    for batch in itertools.zip_longest(*(of(m) for m in range(len(matchups)))):
        yield from (job for job in batch if job is not None)


def _spawn_safe() -> bool:
    try:
        check_spawn_safe("workers")
    except SpawnError:
        return False
    return True


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
    forfeit: bool = True,
    journal: Journal | None = None,
    pool: WorkerPool | None = None,
) -> PairResult:
    """``num_pairs`` deals, each played twice with the seats swapped (``2 * num_pairs`` games);
    ``backend``: play them as its tasks (e.g. ``backend.RayBackend``) instead of ``workers``;
    ``journal``: deals it holds are not played again, and each deal played is added (``Journal``);
    ``pool``: play on these processes (``open_pool``), kept for the caller's next call. An illegal
    action forfeits its game and an exception stops the run (``patchwork_env.evaluation.games``;
    ``forfeit`` is kept for old callers and changes nothing)."""
    names, (records,) = _run([agent_a, agent_b], [(0, 1)], num_pairs, seed, workers, progress, backend, journal, pool)
    return PairResult.from_records(names[0], names[1], seed, records)


def play_matchups(
    agents: Sequence[AgentLike | Entrant],
    matchups: Sequence[tuple[int, int]],
    deals: Sequence[range],
    seed: int = 0,
    workers: int | None = None,
    progress: bool = False,
    backend: Backend | None = None,
    journal: Journal | None = None,
    pool: WorkerPool | None = None,
) -> list[PairResult]:
    """Each matchup ``(i, j)`` (indices into ``agents``) plays the deals of its range in
    ``deals`` (each twice, seats swapped), all at once: how a ladder version is built, the
    matchups of neighbouring rungs playing more deals than the others, and how an agent is rated
    against several rungs."""
    names, records = _run(agents, list(matchups), deals, seed, workers, progress, backend, journal, pool)
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
    pool: WorkerPool | None = None,
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
    entrants = [resolve_agent(s) for s in specs]
    names, records = _run(entrants, matchups, num_pairs, seed, workers, progress, backend, journal, pool)
    pairs = [
        PairResult.from_records(names[i], names[j], seed, recs) for (i, j), recs in zip(matchups, records, strict=True)
    ]
    anchor_index = names.index(anchor) if anchor in names else 0
    results = [(i, j, p.wins_a, p.wins_b) for (i, j), p in zip(matchups, pairs, strict=True)]
    elo = fit_elo(names, results, anchor=anchor_index)
    info = {e.name: e.info for e in entrants if e.info}
    return TournamentResult(agents=names, pairs=pairs, elo=elo, anchor=names[anchor_index], agent_info=info)
