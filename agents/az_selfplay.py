"""Games whose positions teach values: fresh deals (``deal_states``), each position's result
(``decisions_to_end``), and greedy self-play games with their results (``greedy_value_samples``: the
value fits of ``agents.value_head`` and the benchmarks). AlphaZero's own self-play is
``agents.alphazero``'s."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.state import new_game
from patchwork_env.players.batched_search import final_value
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, greedy_batch, rng_state

IntArray = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]


def deal_states(num_games: int, seed: int, first: int = 0) -> IntArray:
    """``num_games`` fresh deals (rows of game states) of games ``first, first + 1, ...``; deal ``g``
    from seed stream ``(seed, g)``."""
    return np.stack(
        [
            new_game(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(g,)))).array()
            for g in range(first, first + num_games)
        ]
    )


def decisions_to_end(
    states: IntArray, choose: Callable[[IntArray, IntArray, IntArray], None], margin_weight: float
) -> tuple[IntArray, F32, IntArray]:
    """Play every game of ``states`` (rows, stepped in place) to its end; ``choose(block, live,
    out)`` writes into ``out`` the move of each unfinished game (``block``: their states, ``live``:
    their rows). Returns every decision, its final value from the mover's side (``final_value``)
    and its game's row."""
    actions = np.empty(len(states), dtype=np.int64)
    seen: list[IntArray] = []
    owner: list[IntArray] = []
    while True:
        live = np.flatnonzero([not rules.is_terminal(s) for s in states])
        if live.size == 0:
            break
        block = np.ascontiguousarray(states[live])
        seen.append(block.copy())
        owner.append(live)
        choose(block, live, actions[: len(live)])
        for k, g in enumerate(live):
            rules.step_into(states[g], int(actions[k]))
    rows = np.concatenate(seen)
    games = np.concatenate(owner)
    values = [
        final_value(states[g], int(rules.current_player(s)), margin_weight) for s, g in zip(rows, games, strict=True)
    ]
    return rows, np.asarray(values, dtype=np.float32), games


def greedy_value_samples(num_games: int, seed: int, temp: float, margin_weight: float) -> tuple[IntArray, F32]:
    """Every decision of ``num_games`` greedy self-play games (softmax temperature ``temp`` score
    points) and its final value from the mover's side: the value head's warm-up data."""
    stream = rng_state(seed)

    def greedy(block: IntArray, live: IntArray, out: IntArray) -> None:
        greedy_batch(block, DEFAULT_WEIGHTS, temp, stream, out)

    rows, values, _ = decisions_to_end(deal_states(num_games, seed), greedy, margin_weight)
    return rows, values
