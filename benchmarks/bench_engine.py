"""Engine speed: random games through ``GameState.legal_action_mask()`` + ``step()``, state copies
for search, memory per state, and the PettingZoo connect four reference they are compared with.

    python -m benchmarks.bench_engine [--seconds 1] [--repeats 5]

The engine plays whole random games: ``new_game(rng)``, then until the mask is empty, a uniformly
random legal action of ``legal_action_mask()`` (picked by the compiled ``random_legal_action``)
and ``step``. Connect four (``connect_four_v3.raw_env``, PettingZoo's own rules implementation)
plays random legal games through its only API, ``agent_iter`` / ``last`` / ``step``.

Targets (issue 2 / issue 4): >= 50,000 moves/s on one core; copying a state <= 5 microseconds.
"""

from __future__ import annotations

import argparse
import copy
import tracemalloc
from typing import Any

import numpy as np

from benchmarks import Case, Counts, Row, format_table, rate, row, run_cases, timed
from patchwork_env import new_game
from patchwork_env.core.state import GameState
from patchwork_env.envs.vector_kernels import random_legal_action

ENGINE_TARGET = 50_000.0
ENGINE_GAMES_TARGET = 1_100.0  # issue 2: "about 1,100 games/s"
COPY_TARGET_US = 5.0
C4 = "connect four raw_env"


def _mid_game(seed: int = 0, plies: int = 20) -> GameState:
    rng = np.random.default_rng(seed)
    s = new_game(rng)
    for _ in range(plies):
        s = s.step(random_legal_action(s.legal_action_mask(), rng.random()))
    return s


class ConnectFourReference:
    """PettingZoo's ``connect_four_v3.raw_env``: random play, deepcopy for search, memory per env."""

    def __init__(self, seed: int = 0) -> None:
        from pettingzoo.classic import connect_four_v3

        self.make = connect_four_v3.raw_env
        self.env = self.make()
        self.rng = np.random.default_rng(seed)
        self.games = 0
        self.mid = self.make()
        self.mid.reset(seed=seed)
        for _ in range(6):
            self.mid.step(int(np.flatnonzero(self.mid.last()[0]["action_mask"])[0]))

    def _play(self) -> Counts:
        env, rng = self.env, self.rng
        env.reset(seed=self.games)
        self.games += 1
        moves = 0
        for _agent in env.agent_iter():
            obs, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[int(rng.random() * len(legal))]))
            moves += 1
        return {"moves": moves, "games": 1}

    def _deepcopy(self) -> Counts:
        for _ in range(100):
            copy.deepcopy(self.mid)
        return {"ops": 100}

    def cases(self) -> list[Case]:
        return [
            Case("c4 play", lambda s: timed(self._play, s)),
            Case("c4 deepcopy", lambda s: timed(self._deepcopy, s)),
        ]

    def bytes_per_env(self, count: int = 200) -> float:
        tracemalloc.start()
        envs = []
        for k in range(count):
            e = self.make()
            e.reset(seed=k)
            envs.append(e)
        used = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        return used / count


def _engine_game(rng: np.random.Generator) -> Counts:
    s = new_game(rng)
    moves = 0
    while True:
        a = random_legal_action(s.legal_action_mask(), rng.random())
        if a < 0:
            return {"moves": moves, "games": 1}
        s = s.step(a)
        moves += 1


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    state = _mid_game()
    arr = state.array()

    def copies() -> Counts:
        for _ in range(1000):
            copy.copy(state)
        return {"ops": 1000}

    def array_copies() -> Counts:
        for _ in range(1000):
            GameState._wrap(arr.copy())
        return {"ops": 1000}

    _engine_game(rng)  # compile / warm up
    return [
        Case("engine", lambda s: timed(lambda: _engine_game(rng), s)),
        Case("copy", lambda s: timed(copies, s)),
        Case("array copy", lambda s: timed(array_copies, s)),
    ]


def rows(runs: dict[str, list[Counts]], ref: ConnectFourReference) -> list[Row]:
    c4 = runs["c4 play"]
    c4_copy_us = 1e6 / rate(runs["c4 deepcopy"], "ops")
    e = runs["engine"]
    return [
        row("engine: random play, mask + step", rate(e, "moves"), "moves/s", per_cpu_s=rate(e, "moves", "cpu"),
            reference=rate(c4, "moves"), reference_name=C4, target=ENGINE_TARGET),
        row("engine: random games", rate(e, "games"), "games/s", per_cpu_s=rate(e, "games", "cpu"),
            reference=rate(c4, "games"), reference_name=C4, target=ENGINE_GAMES_TARGET),
        row("state copy: copy.copy(GameState)", 1e6 / rate(runs["copy"], "ops"), "us", reference=c4_copy_us,
            reference_name="deepcopy(c4 raw_env)", higher_is_better=False, target=COPY_TARGET_US,
            note="immutable: returns itself"),
        row("state copy: GameState._wrap(s.array().copy())", 1e6 / rate(runs["array copy"], "ops"), "us",
            reference=c4_copy_us, reference_name="deepcopy(c4 raw_env)", higher_is_better=False,
            target=COPY_TARGET_US, note="what search code does"),
    ]  # fmt: skip


def memory_rows(ref: ConnectFourReference) -> list[Row]:
    """Bytes per GameState (tracemalloc), per game of the vector engine and env (arrays)."""
    from patchwork_env.envs.vector import VectorGames
    from patchwork_env.envs.vector_env import PatchworkVectorEnv

    c4 = ref.bytes_per_env()
    state = _mid_game()
    action = random_legal_action(state.legal_action_mask(), 0.0)
    tracemalloc.start()
    states = [state.step(action) for _ in range(2000)]
    per_state = tracemalloc.get_traced_memory()[0] / len(states)
    tracemalloc.stop()
    n = 1024
    tracemalloc.start()
    env = PatchworkVectorEnv(n, seed=0)
    env.reset(seed=0)
    per_env_game = tracemalloc.get_traced_memory()[0] / n
    tracemalloc.stop()
    del states, env
    ref_name = "c4 raw_env (tracemalloc)"
    return [
        row("memory: GameState (tracemalloc)", per_state, "bytes", reference=c4, reference_name=ref_name,
            higher_is_better=False, note="+2,026 once its mask is computed"),
        row("memory: VectorGames arrays per game", VectorGames(n, seed=0).nbytes_per_game(), "bytes",
            n=n, reference=c4, reference_name=ref_name, higher_is_better=False,
            note="state 1,032 + mask 2,026 + obs 5,808"),
        row("memory: PatchworkVectorEnv per game (tracemalloc)", per_env_game, "bytes", n=n, reference=c4,
            reference_name=ref_name, higher_is_better=False),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Engine speed next to connect four")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per case per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (medians are reported)")
    args = parser.parse_args(argv)
    ref = ConnectFourReference()
    runs = run_cases([*ref.cases(), *cases()], args.seconds, args.repeats)
    table: list[dict[str, Any]] = rows(runs, ref) + memory_rows(ref)
    print(f"median of {args.repeats} x {args.seconds:g} s per case")
    print(format_table(table))


if __name__ == "__main__":
    main()
