"""Fuzzer of every entry point that takes a state or an action from outside.

    python -m tests.fuzz_states [--cases N] [--seed S] [--long]

Mutates reachable states (from random games) and feeds them to ``GameState(array)``, unpickling,
``VectorGames.set_state``, ``GameState.from_dict`` and ``from_notation``; feeds mutated actions to
``GameState.step``. Every input must either be rejected with a ``ValueError`` (an
``IllegalActionError`` for actions) or give a state that is safe: its observations lie in the
observation space, and random play from it re-validates every successor, stays within the ply
bound and ends. For ``from_dict``/``from_notation`` an accepted state must also round-trip and all
its successors must be accepted by ``from_dict`` again (a reachable state only leads to reachable
states), otherwise it is counted as an accepted-impossible state.

Any other exception is a failure; an interpreter crash kills the process, which the pytest
wrapper (``tests/test_fuzz.py``) runs as a subprocess with ``faulthandler`` on, so a crash fails
the test. ``--long`` runs 1,000,000 cases. Prints one summary line per kind and exits 1 on any
failure.
"""

from __future__ import annotations

import argparse
import faulthandler
import pickle
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from patchwork_env import GameState, IllegalActionError, new_game
from patchwork_env.core import rules
from patchwork_env.core.state import _from_bytes
from patchwork_env.core.validate import MAX_PLY, check_state_array
from patchwork_env.envs import observation
from patchwork_env.envs.observation import OBS_DIM, observation_bounds
from patchwork_env.envs.vector import VectorGames
from patchwork_env.envs.vector_kernels import random_legal_action

LONG_CASES = 1_000_000
LOW, HIGH = observation_bounds()
BIG = [2**63 - 1, -(2**63), 2**62, 10**9, 10**7, -(10**9), 1 << 53, 4096, 129, 128, 82, 81, 64, 63, 54, 53, 39, 38]


class Failure(Exception):
    """An accepted input that broke an invariant (or an exception other than the expected one)."""


class _Payload:
    """Pickles as a GameState with the given bytes: the real unpickling path, any payload."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        return (_from_bytes, (self.data,))


def reachable_states(rng: np.random.Generator, games: int) -> list[GameState]:
    out = []
    for _ in range(games):
        s = new_game(rng, leather_layout=("revised", "original")[int(rng.integers(2))])
        while True:
            out.append(s)
            if s.is_terminal:
                break
            s = s.step(random_legal_action(s.legal_action_mask(), rng.random()))
    return out


def check_safe(s: GameState, rng: np.random.Generator, steps: int, dict_closed: bool) -> None:
    """Observations in bounds, then random play re-validating every successor; any ValueError on
    the way is a ``Failure`` (the state was accepted, so nothing after it may be rejected)."""
    try:
        _play_checked(s, rng, steps, dict_closed)
    except ValueError as exc:
        raise Failure(f"after the state was accepted: {type(exc).__name__}: {exc}") from exc


def _play_checked(s: GameState, rng: np.random.Generator, steps: int, dict_closed: bool) -> None:
    obs = np.empty(OBS_DIM, dtype=np.float32)
    for k in range(steps + 1):
        arr = s.array()
        check_state_array(arr)  # every successor is still valid
        for seat in (0, 1):
            observation.observe_into(arr, seat, obs)
            if not (np.all(obs >= LOW) and np.all(obs <= HIGH)):
                bad = int(np.flatnonzero((obs < LOW) | (obs > HIGH))[0])
                raise Failure(f"observation entry {bad} = {obs[bad]} outside [{LOW[bad]}, {HIGH[bad]}]")
        if dict_closed and (k % 5 == 0 or s.is_terminal):  # every 5th successor (the slow part)
            again = GameState.from_dict(s.to_dict())  # a successor of a reachable state is reachable
            if again != s:
                raise Failure("to_dict/from_dict does not round-trip")
        if s.ply > MAX_PLY:
            raise Failure(f"ply {s.ply} beyond the bound {MAX_PLY}")
        if s.is_terminal:
            return
        mask = s.legal_action_mask()
        if not mask.any():
            raise Failure("an unfinished game without legal actions")
        if k < steps:
            s = s.step(random_legal_action(mask, rng.random()))


def mutate_array(arr: np.ndarray, rng: np.random.Generator) -> Any:
    with np.errstate(over="ignore"):  # int64 wrap-around is one more mutation
        return _mutate_array(arr, rng)


def _mutate_array(arr: np.ndarray, rng: np.random.Generator) -> Any:
    a = arr.copy()
    kind = int(rng.integers(10))
    if kind == 0:  # a wrong length or dtype
        n = int(rng.integers(rules.STATE_LEN - 3, rules.STATE_LEN + 4))
        b = np.resize(a, n)
        return b.astype(rng.choice([np.int64, np.int32, np.float64, np.uint64, np.bool_])) if rng.random() < 0.5 else b
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(rules.STATE_LEN)) if rng.random() < 0.5 else int(rng.integers(rules.CIRCLE))
        r = rng.random()
        if r < 0.35:
            a[i] += int(rng.integers(-3, 4))
        elif r < 0.55:
            a[i] = int(rng.integers(-2, 60))
        elif r < 0.7:
            a[i] = max(-(2**63), min(2**63 - 1, int(rng.choice(BIG)) * (1 if rng.random() < 0.8 else -1)))
        elif r < 0.85:
            a[i] ^= np.int64(1) << int(rng.integers(64))
        else:
            a[i] = int(rng.integers(-(2**63), 2**63 - 1, dtype=np.int64))
    return a


def mutate_dict(d: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    d = {k: (list(v) if isinstance(v, list) else v) for k, v in d.items()}
    d["placements"] = [[list(e) for e in q] for q in d["placements"]]
    for _ in range(int(rng.integers(1, 3))):
        key = str(rng.choice(list(d)))
        v = d[key]
        r = rng.random()
        if key == "placements":
            q = d["placements"][int(rng.integers(2))]
            if q and r < 0.4:
                e = q[int(rng.integers(len(q)))]
                e[int(rng.integers(4))] += int(rng.integers(-2, 3))
            elif q and r < 0.6:
                q.pop(int(rng.integers(len(q))))
            elif r < 0.8:
                q.append([-1, 0, int(rng.integers(9)), int(rng.integers(9))])
            elif d["circle"]:
                patch = d["circle"].pop(int(rng.integers(len(d["circle"]))))
                q.append([patch, 0, int(rng.integers(9)), int(rng.integers(9))])
        elif isinstance(v, list) and v and all(isinstance(x, int) for x in v):
            j = int(rng.integers(len(v)))
            v[j] = _mutate_number(v[j], rng)
            if r < 0.1:
                v.append(int(rng.integers(60)))
        elif isinstance(v, bool):
            d[key] = not v if r < 0.8 else int(v)
        elif isinstance(v, int) or v is None:
            d[key] = _mutate_number(-1 if v is None else v, rng) if r < 0.85 else None
        elif r < 0.2:
            d[key] = None
    return d


def _mutate_number(x: int, rng: np.random.Generator) -> Any:
    r = rng.random()
    if r < 0.6:
        return x + int(rng.integers(-3, 4))
    if r < 0.7:
        return float(x) if rng.random() < 0.5 else float("inf")
    if r < 0.75:
        return True
    if r < 0.9:
        return int(rng.integers(0, 60))
    return int(rng.choice(BIG))


def mutate_action(rng: np.random.Generator, legal: np.ndarray) -> Any:
    pick = int(legal[int(rng.integers(len(legal)))]) if len(legal) else 0
    choices: list[Callable[[], Any]] = [
        lambda: pick,
        lambda: np.int16(pick),
        lambda: np.uint64(pick),
        lambda: int(rng.integers(-5, rules.NUM_ACTIONS + 5)),
        lambda: int(rng.choice(BIG)) * int(rng.choice([1, -1])) * 10 ** int(rng.integers(0, 30)),
        lambda: bool(rng.integers(2)),
        lambda: np.bool_(rng.integers(2)),
        lambda: float(rng.integers(rules.NUM_ACTIONS)),
        lambda: np.float32(rng.integers(rules.NUM_ACTIONS)),
        lambda: np.uint64(rng.integers(0, 2**63)) * np.uint64(2),
        lambda: np.int8(rng.integers(-128, 127)),
        lambda: np.array(int(rng.integers(rules.NUM_ACTIONS))),
        lambda: str(int(rng.integers(rules.NUM_ACTIONS))),
        lambda: None,
        lambda: float("nan"),
    ]
    return choices[int(rng.integers(len(choices)))]()


def run(cases: int, seed: int, report: Callable[[str], None] = print) -> Counter[str]:
    faulthandler.enable()
    rng = np.random.default_rng(seed)
    pool = reachable_states(rng, max(4, min(200, cases // 500)))
    games = VectorGames(1, seed=seed)
    counts: Counter[str] = Counter()
    start = time.perf_counter()
    for case in range(cases):
        base = pool[int(rng.integers(len(pool)))]
        kind = ("array", "pickle", "vector", "dict", "notation", "action")[case % 6]
        try:
            accepted = _one(kind, base, rng, games)
        except Failure as exc:
            counts[f"{kind} failed"] += 1
            report(f"FAIL {kind} case {case}: {exc}")
            continue
        counts[f"{kind} {'accepted' if accepted else 'rejected'}"] += 1
    counts["seconds"] = round(time.perf_counter() - start)
    return counts


def _one(kind: str, base: GameState, rng: np.random.Generator, games: VectorGames) -> bool:
    """One fuzz case: True if the input was accepted (and checked safe), False if rejected."""
    try:
        if kind == "action":
            action = mutate_action(rng, base.legal_actions())
            try:
                base.step(action)
            except IllegalActionError:
                return False
            if isinstance(action, bool | np.bool_ | float | np.floating | str) or action is None:
                raise Failure(f"action {action!r} was accepted")
            if not base.legal_action_mask()[int(action)]:
                raise Failure(f"masked-out action {action!r} was accepted")
            return True
        if kind in ("dict", "notation"):
            d = mutate_dict(base.to_dict(), rng)
            if kind == "notation":
                text = base.to_notation() if rng.random() < 0.05 else _notation_of(d)
                s = GameState.from_notation(text)
            else:
                s = GameState.from_dict(d)
            if GameState.from_notation(s.to_notation()) != s:
                raise Failure("accepted state does not round-trip through the notation")
            check_safe(s, rng, 200 if rng.random() < 0.1 else 30, dict_closed=True)
            return True
        arr = mutate_array(base.array(), rng)
        if kind == "array":
            s = GameState(arr)
        elif kind == "pickle":
            data = np.asarray(arr).tobytes()
            if rng.random() < 0.1:
                data = data[: int(rng.integers(len(data) + 1))] if rng.random() < 0.5 else data + b"\x00" * 8
            s = pickle.loads(pickle.dumps(_Payload(data)))
        else:
            games.set_state(0, arr)
            games.step(games.sample_random())
            s = GameState(games.states[0])
        check_safe(s, rng, 200 if rng.random() < 0.05 else 20, dict_closed=False)
        return True
    except Failure:
        raise
    except ValueError:  # IllegalActionError included: a clean rejection
        if kind == "vector":
            return False
        return False
    except Exception as exc:  # anything else is a bug
        raise Failure(f"{type(exc).__name__}: {exc}") from exc


def _notation_of(d: dict[str, Any]) -> str:
    """The notation text of a (possibly mutated) dict, as a user could type it."""

    def ints(v: Any, sep: str) -> str:  # a mutation may have made it None or a number
        if isinstance(v, list | tuple):
            return sep.join(str(x) for x in v) if v else "-"
        return "-" if v is None else str(v)

    def quilt(q: list[list[Any]]) -> str:
        return "/".join(f"L:{e[2]}:{e[3]}" if e[0] == -1 else ":".join(str(x) for x in e) for e in q) or "-"

    return " ".join([
        "R" if d["leather_layout"] == "revised" else "O",
        ints(d["positions"], ","), ints(d["buttons"], ","),
        f"{d['top']}{'!' if d['pending_leather'] else ''}",
        "-" if d["bonus_owner"] is None else str(d["bonus_owner"]),
        ints(d["leather_remaining"], ","),
        "-" if d["first_to_finish"] is None else str(d["first_to_finish"]),
        ints(d["circle"], "."), quilt(d["placements"][0]), quilt(d["placements"][1]), str(d["ply"]),
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz_states", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=3000, help="mutated inputs (default 3000)")
    parser.add_argument("--long", action="store_true", help=f"{LONG_CASES:,} inputs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cases = LONG_CASES if args.long else args.cases
    counts = run(cases, args.seed)
    failed = sum(v for k, v in counts.items() if k.endswith("failed"))
    for key in sorted(counts):
        print(f"{key}: {counts[key]}")
    print(f"fuzz: {cases} cases, {failed} failures (crashes would have killed this process)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
