"""The vector engine's compiled batch kernels: whole steps of many games in one numba call, the
work under ``vector`` and ``vector_env`` (they call it, users do not).

Every kernel here is a loop over games whose body CALLS the rules of ``patchwork_env.core.rules``
(``step_into``, ``legal_mask_into``, ``observation.observe_into``, ``current_player``, ``is_terminal``,
``winner``, ``score``, ``new_state_into``); no rule is written twice. What this module adds:

- per-game random streams: one ``uint64`` word per game (splitmix64), so that dealing a new game
  and drawing a random move happen inside the kernels, reproducibly, and each game's sequence of
  deals depends only on its own word (not on the batch size nor on the other games);
- fusion: one call steps every game, records the results of the games that ended, deals new ones,
  and writes legal masks, players to move and (optionally) observations;
- a parallel mode (``PARALLEL``): the per-game drivers run on row chunks of the batch, spread
  over the calling thread and helper threads (``vector_threads``); the compiled loops release the
  GIL. Serial and parallel give identical games.

Why threads over row chunks and not numba's ``parallel=True`` / ``prange``: a ``prange`` loop
waits for its slowest thread, so it slows down badly whenever other processes hold the cores,
whereas dynamically claimed chunks never wait for a thread that has not started one.

A driver's arrays are all preallocated by the caller (``VectorGames``, ``PatchworkVectorEnv``) and
handed over as a few NamedTuples (``Batch``, ``SelfPlayResults``, ``Learners``, ``Deal``), which
numba compiles like separate arguments; the kernels allocate nothing per game except a 33-entry
scratch circle when dealing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.jit import jit
from patchwork_env.core.patches import NUM_PATCHES, STARTING_PATCH
from patchwork_env.envs.edge import ILLEGAL_ACTION_REWARD, final_reward
from patchwork_env.envs.observation import legal_mask_and_observe_into, observe_into
from patchwork_env.envs.vector_threads import chunked

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]


# --- per-game random streams (splitmix64, Steele, Lea & Flood 2014) --------------------------
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S11 = np.uint64(11)
_S27 = np.uint64(27)
_S30 = np.uint64(30)
_S31 = np.uint64(31)
_S53 = np.uint64(53)

RANDOM_SEAT = -1


@jit
def next_u64(rng: U64, i: int) -> Any:
    """Advance game ``i``'s stream and return 64 random bits."""
    x = rng[i] + _GAMMA
    rng[i] = x
    z = (x ^ (x >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@jit
def below(rng: U64, i: int, n: int) -> int:
    """A uniform integer in ``[0, n)`` from game ``i``'s stream (``n`` < 2**10; bias < 2**-43)."""
    return int(((next_u64(rng, i) >> _S11) * np.uint64(n)) >> _S53)


@jit
def deal_into(s: I64, rng: U64, i: int, layout: int, leather: int) -> None:
    """A new game in ``s``: a uniformly shuffled circle (the 1x2 patch last) and a random first
    player, both from game ``i``'s stream."""
    circle = np.empty(NUM_PATCHES, dtype=np.int64)
    k = 0
    for p in range(NUM_PATCHES):
        if p != STARTING_PATCH:
            circle[k] = p
            k += 1
    for k in range(NUM_PATCHES - 2, 0, -1):  # Fisher-Yates over the first 32 entries
        j = below(rng, i, k + 1)
        tmp = circle[k]
        circle[k] = circle[j]
        circle[j] = tmp
    circle[NUM_PATCHES - 1] = STARTING_PATCH
    rules.new_state_into(s, circle, below(rng, i, 2), layout, leather)


_CHUNK = 64
_FULL_CHUNKS = rules.NUM_ACTIONS // _CHUNK


@jit
def kth_legal(mask: B, k: int) -> int:
    """The ``k``-th legal action (0-based) of one mask row, -1 if there are not that many. Counts
    64-action chunks first (a loop the compiler vectorises), then scans inside one chunk."""
    m = mask.view(np.uint8)
    for c in range(_FULL_CHUNKS):
        base = c * _CHUNK
        n = 0
        for j in range(_CHUNK):
            n += m[base + j]
        if k < n:
            for j in range(_CHUNK):
                if m[base + j]:
                    if k == 0:
                        return base + j
                    k -= 1
        k -= n
    for a in range(_FULL_CHUNKS * _CHUNK, rules.NUM_ACTIONS):
        if m[a]:
            if k == 0:
                return a
            k -= 1
    return -1


@jit
def sample_legal(mask: B, count: int, rng: U64, i: int) -> int:
    """A uniformly random legal action of one mask row holding ``count`` legal actions (-1 if none)."""
    if count <= 0:
        return -1
    return kth_legal(mask, below(rng, i, count))


# --- the buffers a driver works on ------------------------------------------------------------
class Batch(NamedTuple):
    """The per-game arrays of a batch, one row per game, handed to the drivers as one object (numba
    compiles a NamedTuple of arrays like separate arguments). ``rows(lo, hi)`` is a chunk of it."""

    states: I64  # (N, STATE_LEN) rule states
    masks: B  # (N, NUM_ACTIONS) legal masks of the player to move
    counts: I64  # (N,) legal actions (0: the game is over)
    cur: I64  # (N,) player to move
    obs: F32  # (N, OBS_DIM) observations
    deal_rng: U64  # (N,) the deal stream of each game
    play_rng: U64  # (N,) the play stream of each game (random moves, the env's random opponent)


class SelfPlayResults(NamedTuple):
    """What ``selfplay_step`` writes per game (``vector.StepResult`` plus the rules' error codes)."""

    done: B
    winners: I64
    scores: I64  # (N, 2)
    plies: I64
    actors: I64
    errors: I64


class Learners(NamedTuple):
    """The single-agent view's per-game arrays (``PatchworkVectorEnv``)."""

    seats: I64  # the learner's seat
    rewards: F32
    terminated: B
    results: I64  # (N, 5): won, score, opponent score, seat, plies
    final_obs: F32  # (N, OBS_DIM)
    errors: I64


#: what the drivers take in the place of each NamedTuple below: its fields as a plain tuple
#: (``tuple(batch)``), which numba recognises from a cached fingerprint, where typing a NamedTuple
#: argument costs about 0.7 us per call; each driver rebuilds the NamedTuple (free, compiled)
Fields = tuple[Any, ...]


class Deal(NamedTuple):
    """How new games are dealt: the leather layout's index and bitmask (``rules``)."""

    layout: int
    leather: int


# --- per-game bodies -----------------------------------------------------------------------
@jit
def _view(i: int, b: Batch, seat: int, want_obs: bool) -> None:
    """Mask and player to move of game ``i``; its observation from ``seat`` (-1: the player to move)."""
    s = b.states[i]
    b.cur[i] = rules.current_player(s)
    if want_obs and (seat < 0 or seat == b.cur[i]):
        b.counts[i] = legal_mask_and_observe_into(s, b.masks[i], b.obs[i])
    else:
        b.counts[i] = rules.legal_mask_into(s, b.masks[i])
        if want_obs:
            observe_into(s, seat, b.obs[i])


@jit
def _selfplay_one(
    i: int, b: Batch, actions: I64, deal: Deal, auto_reset: bool, want_obs: bool, r: SelfPlayResults
) -> None:
    s = b.states[i]
    r.done[i] = False
    r.winners[i] = -1
    r.scores[i, 0] = 0
    r.scores[i, 1] = 0
    r.plies[i] = 0
    r.errors[i] = rules.OK
    if b.counts[i] == 0:  # a finished game that was not reset: stepping it is a no-op
        r.actors[i] = -1
    else:
        r.actors[i] = b.cur[i]
        r.errors[i] = rules.step_into(s, actions[i])
        if rules.is_terminal(s):
            r.done[i] = True
            r.winners[i] = rules.winner(s)
            r.scores[i, 0] = rules.score(s, 0)
            r.scores[i, 1] = rules.score(s, 1)
            r.plies[i] = s[rules.PLY]
            if auto_reset:
                deal_into(s, b.deal_rng, i, deal.layout, deal.leather)
    _view(i, b, -1, want_obs)


@jit
def _play_random_opponent(i: int, b: Batch, seat: int) -> None:
    """Uniformly random moves for the opponent of ``seat`` until ``seat`` is to move or the game
    ends (game ``i``'s mask row serves as scratch space; its play stream draws)."""
    s = b.states[i]
    scratch = b.masks[i]
    while not rules.is_terminal(s) and rules.current_player(s) != seat:
        count = rules.legal_mask_into(s, scratch)
        rules.step_into(s, sample_legal(scratch, count, b.play_rng, i))


@jit
def _record_end(i: int, s: I64, seat: int, won: bool, results: I64) -> None:
    """``results[i]`` = (learner won 0/1, learner's score, opponent's score, learner's seat,
    decisions taken in the game by both players)."""
    results[i, 0] = 1 if won else 0
    results[i, 1] = rules.score(s, seat)
    results[i, 2] = rules.score(s, 1 - seat)
    results[i, 3] = seat
    results[i, 4] = s[rules.PLY]


@jit
def _finish_one(i: int, b: Batch, e: Learners, seat_mode: int, deal: Deal, reward_mode: int) -> bool:
    """If game ``i`` is over: the learner's reward, the result, the final observation, then a new
    deal and learner seat. Returns True when a new game was dealt."""
    s = b.states[i]
    e.rewards[i] = 0.0
    e.terminated[i] = False
    if not rules.is_terminal(s):
        return False
    seat = e.seats[i]
    e.terminated[i] = True
    _record_end(i, s, seat, rules.winner(s) == seat, e.results)
    e.rewards[i] = final_reward(e.results[i, 0] == 1, float(e.results[i, 1] - e.results[i, 2]), reward_mode)
    observe_into(s, seat, e.final_obs[i])
    _new_episode(i, b, e.seats, seat_mode, deal)
    return True


@jit
def _new_episode(i: int, b: Batch, seats: I64, seat_mode: int, deal: Deal) -> None:
    deal_into(b.states[i], b.deal_rng, i, deal.layout, deal.leather)
    seats[i] = below(b.deal_rng, i, 2) if seat_mode == RANDOM_SEAT else seat_mode


# --- drivers (compiled twice: serial and parallel) -----------------------------------------
@jit
def selfplay_step(batch: Fields, actions: I64, deal: Fields, auto_reset: bool, want_obs: bool, results: Fields) -> None:
    """One action per game by its player to move; results of ended games; deals; masks; obs."""
    b, d, r = Batch(*batch), Deal(*deal), SelfPlayResults(*results)
    for i in range(b.states.shape[0]):
        _selfplay_one(i, b, actions, d, auto_reset, want_obs, r)


@jit
def deal_all(batch: Fields, deal: Fields) -> None:
    """A new deal in every game, with masks and players to move."""
    b, layout, leather = Batch(*batch), deal[0], deal[1]
    for i in range(b.states.shape[0]):
        deal_into(b.states[i], b.deal_rng, i, layout, leather)
        b.counts[i] = rules.legal_mask_into(b.states[i], b.masks[i])
        b.cur[i] = rules.current_player(b.states[i])


@jit
def refresh(batch: Fields, seats: I64, want_obs: bool) -> None:
    """Masks, players to move and (if ``want_obs``) observations from ``seats`` (-1: player to move)."""
    b = Batch(*batch)
    for i in range(b.states.shape[0]):
        _view(i, b, seats[i], want_obs)


@jit
def observe(batch: Fields, seats: I64) -> None:
    """Observation of every game from ``seats[i]`` (-1: its player to move ``cur[i]``)."""
    b = Batch(*batch)
    for i in range(b.states.shape[0]):
        observe_into(b.states[i], b.cur[i] if seats[i] < 0 else seats[i], b.obs[i])


@jit
def random_legal_action(mask: B, u: float) -> int:
    """A uniformly random legal action of one mask given a uniform ``u`` in [0, 1) (-1 if none)."""
    count = 0
    m = mask.view(np.uint8)
    for a in range(rules.NUM_ACTIONS):
        count += m[a]
    return kth_legal(mask, int(u * count)) if count else -1


@jit
def sample_rows(masks: B, uniforms: F64, out: I64) -> None:
    """In each row, the legal action of rank ``floor(u * count)``: uniform over the legal actions."""
    for i in range(masks.shape[0]):
        out[i] = random_legal_action(masks[i], uniforms[i])


@jit
def random_actions(masks: B, counts: I64, rng: U64, out: I64) -> None:
    """A uniformly random legal action per game (-1 for a finished game) from each game's stream."""
    for i in range(masks.shape[0]):
        out[i] = sample_legal(masks[i], counts[i], rng, i)


@jit
def first_illegal(masks: B, counts: I64, actions: I64, skip_finished: bool) -> int:
    """The first game whose action is not legal (-1 if all are); finished games may be skipped."""
    for i in range(masks.shape[0]):
        a = actions[i]
        if skip_finished and counts[i] == 0:
            continue
        if a < 0 or a >= rules.NUM_ACTIONS or not masks[i, a]:
            return i
    return -1


@jit
def env_start(batch: Fields, learners: Fields, seat_mode: int, deal: Fields, random_opponent: bool) -> None:
    """New episode in every game of the single-agent view; the random opponent opens if it starts."""
    b, e, d = Batch(*batch), Learners(*learners), Deal(*deal)
    for i in range(b.states.shape[0]):
        _new_episode(i, b, e.seats, seat_mode, d)
        if random_opponent:
            _play_random_opponent(i, b, e.seats[i])
        _view(i, b, e.seats[i], True)


@jit
def env_step_random(
    batch: Fields, actions: I64, learners: Fields, seat_mode: int, deal: Fields, reward_mode: int
) -> None:
    """Single-agent view against the random opponent, fused: the learner's action, the opponent's
    replies, the end of the episode (reward, final observation, new deal and opening replies), the
    learner's next mask and observation. Games whose action is negative are skipped (forfeits)."""
    b, e, d = Batch(*batch), Learners(*learners), Deal(*deal)
    for i in range(b.states.shape[0]):
        if actions[i] < 0:
            continue
        e.errors[i] = rules.step_into(b.states[i], actions[i])
        _play_random_opponent(i, b, e.seats[i])
        if _finish_one(i, b, e, seat_mode, d, reward_mode):
            _play_random_opponent(i, b, e.seats[i])
        _view(i, b, e.seats[i], True)


@jit
def env_learner_step(states: I64, actions: I64, errors: I64) -> None:
    """The learner's action in every game whose action is not negative."""
    for i in range(states.shape[0]):
        errors[i] = rules.step_into(states[i], actions[i]) if actions[i] >= 0 else rules.OK


@jit
def env_finish(batch: Fields, actions: I64, learners: Fields, seat_mode: int, deal: Fields, reward_mode: int) -> None:
    """End-of-episode bookkeeping (see ``_finish_one``) of every game whose action is not negative,
    for opponents that move in Python."""
    b, e, d = Batch(*batch), Learners(*learners), Deal(*deal)
    for i in range(b.states.shape[0]):
        if actions[i] >= 0:
            _finish_one(i, b, e, seat_mode, d, reward_mode)


@jit
def env_forfeit(
    batch: Fields, game_rows: I64, learners: Fields, seat_mode: int, deal: Fields, random_opponent: bool
) -> None:
    """The learner sent an illegal action in the games ``game_rows``: each ends at once with reward
    -1 and the opponent as winner, then a new episode starts there."""
    b, e, d = Batch(*batch), Learners(*learners), Deal(*deal)
    for k in range(game_rows.shape[0]):
        i = game_rows[k]
        s = b.states[i]
        e.rewards[i] = ILLEGAL_ACTION_REWARD
        e.terminated[i] = True
        _record_end(i, s, e.seats[i], False, e.results)
        observe_into(s, e.seats[i], e.final_obs[i])
        _new_episode(i, b, e.seats, seat_mode, d)
        if random_opponent:
            _play_random_opponent(i, b, e.seats[i])
        _view(i, b, e.seats[i], True)


@jit
def opponent_turns(states: I64, seats: I64, out: B) -> None:
    """``out[i]``: game ``i`` is running and the opponent of ``seats[i]`` is to move."""
    for i in range(states.shape[0]):
        s = states[i]
        out[i] = (not rules.is_terminal(s)) and rules.current_player(s) != seats[i]


@jit
def masks_rows(states: I64, rows: I64, masks: B, counts: I64) -> None:
    """Legal masks of the games listed in ``rows``."""
    for k in range(rows.shape[0]):
        i = rows[k]
        counts[i] = rules.legal_mask_into(states[i], masks[i])


@jit
def step_rows(states: I64, rows: I64, actions: I64, errors: I64) -> None:
    """``actions[k]`` in game ``rows[k]``."""
    for k in range(rows.shape[0]):
        errors[k] = rules.step_into(states[rows[k]], actions[k])


# --- running the per-game drivers over several cores -------------------------------------
#: drivers whose every array argument has one row per game: they can run on row chunks
PER_GAME_DRIVERS: tuple[Callable[..., Any], ...] = (
    selfplay_step, deal_all, refresh, observe, random_actions, env_start, env_step_random, env_learner_step,
    env_finish, opponent_turns,
)  # fmt: skip
#: drivers over a list of rows (small: the opponent's turns, forfeits): always on the calling thread
ROW_DRIVERS: tuple[Callable[..., Any], ...] = (masks_rows, step_rows, env_forfeit)


class Kernels:
    """Every driver as an attribute. ``parallel=True``: the per-game drivers run on row chunks over
    the calling thread and ``vector_threads``' helper threads (the kernels release the GIL)."""

    def __init__(self, parallel: bool) -> None:
        self.parallel = parallel
        for fn in PER_GAME_DRIVERS:
            setattr(self, fn.__name__, chunked(fn) if parallel else fn)
        for fn in ROW_DRIVERS:
            setattr(self, fn.__name__, fn)

    def __getattr__(self, name: str) -> Callable[..., Any]:  # tells the type checker: attributes are drivers
        raise AttributeError(name)


SERIAL = Kernels(parallel=False)
PARALLEL = Kernels(parallel=True)


def kernels_for(parallel: bool) -> Kernels:
    return PARALLEL if parallel else SERIAL


def seed_streams(seed: int | None, n: int) -> U64:
    """``n`` independent stream words from ``numpy.random.SeedSequence(seed)``."""
    return np.asarray(np.random.SeedSequence(seed).generate_state(n, dtype=np.uint64), dtype=np.uint64)
