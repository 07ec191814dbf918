"""The position evaluation behind ``greedy`` and the MCTS rollouts, compiled with numba.

Nothing here implements a rule: every resulting position comes from ``rules.step_into`` on a copy
of the state, and the functions below only *evaluate* positions. The value of a position for
player ``p`` is an estimate of p's final score::

    value = buttons + income * (income marks still ahead of p)         button economy
          + W_TIME * (53 - position)                                    time left to use
          - 2 * empty cells                                             the final penalty
          - W_ISOLATED * isolated empty cells (no empty neighbour: only a leather patch fits)
          - W_DOMINO * cells in isolated 2-cell holes (only the 1x2 patch or leather fits)
          - W_EDGE * edges between an empty cell and a covered cell or the border
            (the "perimeter" of the empty area: low when patches are placed compactly)
          + 7 if p holds the 7x7 bonus tile,
            else, while it is unclaimed, W_SQUARE * (covered cells of p's best 7x7 square)
          + W_LEATHER if p must place a leather patch now (a free cell to cover)

``W_TIME`` prices the time track: one space is worth at least one button (advancing pays 1 per
space), and more because time is what buying patches needs. The weights were tuned by playing
variants against each other in the arena (see ``DEFAULT_WEIGHTS``).

A quilt is read as nine 9-bit row masks (``bitboard.row_masks``); the bit operations on them are
``patchwork_env.core.bitboard``'s helpers (neighbours in a row, boundaries, cells in a column window).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.bitboard import (
    BOARD,
    BONUS_SIDE,
    ROW_BITS,
    bit_count,
    count_in_columns,
    row_boundaries,
    row_masks,
    with_left_neighbour,
    with_right_neighbour,
)
from patchwork_env.core.jit import jit

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# indices into the weight vector
W_TIME, W_ISOLATED, W_DOMINO, W_EDGE, W_SQUARE, W_LEATHER = range(6)
WEIGHT_NAMES = ("time", "isolated", "domino", "edge", "square", "leather")
# tuned one weight at a time, 100 paired deals per variant against the current default; time was
# the one that mattered (1.0: 44%, 1.5: base, 2.0: 62%, 2.5: 51%, 3.0: 46%); changing the others by
# x0.5 or x2 stayed within noise (42-55%), apart from dropping the perimeter term (27%)
DEFAULT_WEIGHTS = np.array([2.0, 3.0, 1.0, 0.25, 0.1, 2.0], dtype=np.float64)

FINAL = rules.FINAL_SPACE
MARKS = rules.INCOME_MARKS
# decision groups of the action encoding: buy from market slot 0 .. MARKET_SIZE - 1, place the
# leather patch, advance
LEATHER_GROUP = rules.MARKET_SIZE
ADVANCE_GROUP = rules.MARKET_SIZE + 1
NUM_GROUPS = rules.MARKET_SIZE + 2
# the groups' action ranges (group g: actions GROUP_BOUNDS[g] .. GROUP_BOUNDS[g + 1] - 1) and each
# action's group: the one table of them (``action_group`` reads it; the network and trainers import it)
GROUP_BOUNDS = (0, rules.SLOT_ACTIONS, 2 * rules.SLOT_ACTIONS, rules.LEATHER_BASE, rules.ADVANCE, rules.NUM_ACTIONS)
GROUP_OF_ACTION: npt.NDArray[np.int64] = np.repeat(np.arange(NUM_GROUPS), np.diff(GROUP_BOUNDS))


@jit
def quilt_features(lo: int, hi: int, out: FloatArray) -> None:
    """``out[:5]`` = empty cells, isolated empty cells, cells in isolated 2-cell holes, empty-area
    perimeter (border counts as covered), covered cells of the best 7x7 square."""
    rows = np.empty(BOARD, dtype=np.int64)
    row_masks(lo, hi, rows)
    e = np.empty(BOARD + 2, dtype=np.int64)  # empty masks with a covered row above and below
    e[0] = 0
    e[BOARD + 1] = 0
    for r in range(BOARD):
        e[r + 1] = ~rows[r] & ROW_BITS
    empty = 0
    isolated = 0
    edges = 0
    one = np.zeros(BOARD + 2, dtype=np.int64)  # empty cells with exactly one empty neighbour
    for r in range(1, BOARD + 1):
        x = e[r]
        empty += bit_count(x)
        left = with_left_neighbour(x)
        right = with_right_neighbour(x)
        up = e[r - 1]
        down = e[r + 1]
        isolated += bit_count(x & ~(left | right | up | down))
        any2 = (left & right) | (left & up) | (left & down) | (right & up) | (right & down) | (up & down)
        one[r] = x & (left | right | up | down) & ~any2
        edges += row_boundaries(x)
    for r in range(BOARD + 1):
        edges += bit_count(e[r] ^ e[r + 1])
    domino = 0
    for r in range(1, BOARD + 1):
        domino += 2 * bit_count(one[r] & with_right_neighbour(one[r]) & with_right_neighbour(e[r]))
        domino += 2 * bit_count(one[r] & one[r + 1])
    best = 0
    for r0 in range(BOARD - BONUS_SIDE + 1):
        for c0 in range(BOARD - BONUS_SIDE + 1):
            n = 0
            for r in range(r0, r0 + BONUS_SIDE):
                n += count_in_columns(rows[r], c0, BONUS_SIDE)
            best = max(best, n)
    out[0] = empty
    out[1] = isolated
    out[2] = domino
    out[3] = edges
    out[4] = best


# the terms of the value, one per entry of ``position_features``; the value is their dot product with
# ``feature_weights(w)``
FEATURE_NAMES = ("economy", "time", "empty", "isolated", "domino", "edge", "bonus", "square", "leather")
NUM_FEATURES = len(FEATURE_NAMES)


QUILT_FEATURES = 5  # entries ``quilt_features`` writes
SCRATCH = QUILT_FEATURES + NUM_FEATURES  # length of the ``feat`` scratch array ``position_value`` takes


@jit
def feature_weight(k: int, w: FloatArray) -> float:
    """The weight of ``position_features`` term ``k`` under the weight vector ``w``."""
    return (1.0, w[W_TIME], 2.0, w[W_ISOLATED], w[W_DOMINO], w[W_EDGE], 1.0, w[W_SQUARE], w[W_LEATHER])[k]


@jit
def feature_weights(w: FloatArray) -> FloatArray:
    """The weight of every ``position_features`` term under the weight vector ``w``."""
    out = np.empty(NUM_FEATURES, dtype=np.float64)
    for k in range(NUM_FEATURES):
        out[k] = feature_weight(k, w)
    return out


@jit
def position_features(s: IntArray, p: int, feat: FloatArray, out: FloatArray) -> None:
    """``out[:9]`` = the terms of player ``p``'s value in ``s`` (``FEATURE_NAMES``): buttons +
    income x income marks ahead, spaces left, minus empty / isolated / 2-cell-hole cells, minus the
    empty-area perimeter, 7 if p holds the 7x7 bonus, p's best 7x7 square while the bonus is
    unclaimed, 1 if p must place a leather patch now. ``feat`` is scratch (5 entries)."""
    pos = s[rules.POS + p]
    marks = 0
    for m in MARKS:
        if m > pos:
            marks += 1
    quilt_features(s[rules.QUILT + 2 * p], s[rules.QUILT + 2 * p + 1], feat)
    out[0] = s[rules.BUTTONS + p] + s[rules.INCOME + p] * marks
    out[1] = FINAL - pos
    out[2] = -feat[0]
    out[3] = -feat[1]
    out[4] = -feat[2]
    out[5] = -feat[3]
    out[6] = rules.BONUS_POINTS if s[rules.BONUS] == p else 0.0
    out[7] = feat[4] if s[rules.BONUS] < 0 else 0.0
    out[8] = 1.0 if (s[rules.PENDING] and s[rules.TOP] == p) else 0.0


@jit
def position_value(s: IntArray, p: int, w: FloatArray, feat: FloatArray) -> float:
    """Estimated final score of player ``p`` in state ``s`` (see the module docstring): the terms of
    ``position_features`` weighted by ``feature_weight``. ``feat`` is scratch of ``SCRATCH`` entries
    (nothing is allocated: this runs for every candidate move of greedy and of the MCTS rollouts)."""
    terms = feat[QUILT_FEATURES:SCRATCH]
    position_features(s, p, feat[:QUILT_FEATURES], terms)  # the caller may read the terms in feat[QUILT_FEATURES:]
    v = 0.0
    for k in range(NUM_FEATURES):
        v += terms[k] * feature_weight(k, w)
    return v


@jit
def score_actions(s: IntArray, actions: IntArray, n: int, w: FloatArray, out: FloatArray) -> None:
    """``out[i]`` = value for the player to move of the position after the legal ``actions[i]``
    (i < n): ``score_actions_terms`` with greedy's weights ``feature_weights(w)`` and no kind logits."""
    score_actions_terms(s, actions, n, feature_weights(w), np.zeros(NUM_GROUPS), out)


@jit
def score_actions_terms(
    s: IntArray, actions: IntArray, n: int, term_w: FloatArray, kind: FloatArray, out: FloatArray
) -> None:
    """``out[i]`` = ``kind[action_group(a)]`` plus the terms of the mover's position after the legal
    ``a = actions[i]`` (i < n; ``position_features``) weighted by ``term_w`` (9 entries): greedy's
    value with ``feature_weights``, a learned prior's logit with a model's (``value_model``). Each
    position comes from ``rules.step_into`` on a copy of ``s``; a purchase from the same market slot
    as the action before it changes that position's placement alone (``rules.replace_purchase``: the
    same values, a fraction of the cost)."""
    p = rules.current_player(s)
    tmp = np.empty_like(s)
    feat = np.empty(SCRATCH, dtype=np.float64)
    terms = feat[QUILT_FEATURES:SCRATCH]
    slot = -1  # the market slot of the purchase ``tmp`` holds, if any
    for i in range(n):
        a = actions[i]
        bought = -1 if (s[rules.PENDING] or a >= rules.LEATHER_BASE) else a // rules.SLOT_ACTIONS
        if bought >= 0 and bought == slot:
            rules.replace_purchase(tmp, s, p, a)
        else:
            tmp[:] = s
            rules.step_into(tmp, a)
        slot = bought
        position_features(tmp, p, feat[:QUILT_FEATURES], terms)
        v = kind[GROUP_OF_ACTION[a]]
        for k in range(NUM_FEATURES):
            v += terms[k] * term_w[k]
        out[i] = v


@jit
def action_terms(s: IntArray, actions: IntArray, n: int, out: FloatArray) -> None:
    """``out[i, :]`` = the terms (``position_features``) of the mover's position after the legal
    ``actions[i]`` (i < n): what a learned prior weighs (``score_actions_terms``), for its training."""
    p = rules.current_player(s)
    tmp = np.empty_like(s)
    feat = np.empty(QUILT_FEATURES, dtype=np.float64)
    for i in range(n):
        tmp[:] = s
        rules.step_into(tmp, actions[i])
        position_features(tmp, p, feat, out[i])


@jit
def legal_list(s: IntArray, mask: npt.NDArray[np.bool_], out: IntArray) -> int:
    """Write the legal actions of ``s`` into ``out`` (length 2026); return their number."""
    rules.legal_mask_into(s, mask)
    n = 0
    for a in range(rules.NUM_ACTIONS):
        if mask[a]:
            out[n] = a
            n += 1
    return n


# --- a small deterministic generator (xorshift64*), so kernels take a seed, not global state ----
@jit
def _next(st: npt.NDArray[np.uint64]) -> float:
    x = st[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    st[0] = x
    return float((x * np.uint64(2685821657736338717)) >> np.uint64(11)) / 9007199254740992.0


def rng_state(seed: int) -> npt.NDArray[np.uint64]:
    """A generator state for the kernels (never zero)."""
    return np.array([(seed & 0xFFFFFFFFFFFFFFFF) | 1], dtype=np.uint64)


@jit
def _pick(scores: FloatArray, n: int, temp: float, st: npt.NDArray[np.uint64]) -> int:
    """Index of the best score (ties broken at random), or a softmax draw when ``temp > 0``."""
    best = scores[0]
    for i in range(1, n):
        best = max(best, scores[i])
    if temp > 0.0:
        total = 0.0
        for i in range(n):
            scores[i] = np.exp((scores[i] - best) / temp)
            total += scores[i]
        u = _next(st) * total
        for i in range(n):
            u -= scores[i]
            if u <= 0.0:
                return i
        return n - 1
    ties = 0
    for i in range(n):
        if scores[i] >= best - 1e-9:
            ties += 1
    k = int(_next(st) * ties)
    for i in range(n):
        if scores[i] >= best - 1e-9:
            if k == 0:
                return i
            k -= 1
    return n - 1  # pragma: no cover


@jit
def greedy_action(
    s: IntArray,
    w: FloatArray,
    temp: float,
    max_candidates: int,
    st: npt.NDArray[np.uint64],
    mask: npt.NDArray[np.bool_],
    acts: IntArray,
    scores: FloatArray,
) -> int:
    """The greedy choice in ``s``: the legal action whose resulting position has the highest value
    for the player to move. With ``max_candidates > 0`` only that many actions are scored: advance
    plus a uniform sample of the others (the cheap rollout policy). -1 if the game is over."""
    n = legal_list(s, mask, acts)
    if n == 0:
        return -1
    if max_candidates > 0 and n > max_candidates:
        # acts is ascending, so advance (2025) is last when legal: keep it, sample the rest
        keep_last = acts[n - 1] == rules.ADVANCE
        pool = n - 1 if keep_last else n
        k = max_candidates - 1 if keep_last else max_candidates
        for i in range(k):
            j = i + int(_next(st) * (pool - i))
            acts[i], acts[j] = acts[j], acts[i]
        if keep_last:
            acts[k] = rules.ADVANCE
            k += 1
        n = k
    score_actions(s, acts, n, w, scores)
    return int(acts[_pick(scores, n, temp, st)])


@jit
def greedy_batch(states: IntArray, w: FloatArray, temp: float, st: npt.NDArray[np.uint64], out: IntArray) -> None:
    mask = np.empty(rules.NUM_ACTIONS, dtype=np.bool_)
    acts = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
    scores = np.empty(rules.NUM_ACTIONS, dtype=np.float64)
    for i in range(states.shape[0]):
        out[i] = greedy_action(states[i], w, temp, 0, st, mask, acts, scores)


ROLLOUT_RANDOM = 0
ROLLOUT_GREEDY = 1
ROLLOUT_TEMP = 2.0  # the greedy rollout policy's defaults (``mcts``'s rtemp / rcands, ``az``'s rollouts)
ROLLOUT_CANDIDATES = 16


@jit
def rollout(
    s0: IntArray, policy: int, w: FloatArray, temp: float, max_candidates: int, st: npt.NDArray[np.uint64]
) -> tuple[int, int]:
    """Play ``s0`` to the end with the rollout policy; return (winner, score of 0 - score of 1)."""
    s = s0.copy()
    mask = np.empty(rules.NUM_ACTIONS, dtype=np.bool_)
    acts = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
    scores = np.empty(rules.NUM_ACTIONS, dtype=np.float64)
    while not rules.is_terminal(s):
        if policy == ROLLOUT_RANDOM:
            n = legal_list(s, mask, acts)
            a = acts[int(_next(st) * n)]
        else:
            a = greedy_action(s, w, temp, max_candidates, st, mask, acts, scores)
        rules.step_into(s, a)
    return rules.winner(s), rules.score(s, 0) - rules.score(s, 1)


@jit
def rollout_results(
    states: IntArray, rollouts: int, w: FloatArray, temp: float, max_candidates: int, st: npt.NDArray[np.uint64]
) -> tuple[IntArray, IntArray]:
    """``rollouts`` greedy rollouts (``rollout``) from each unfinished state, seen from the side of
    the player to move there: (B, rollouts) 1 if that player won, else 0, and (B, rollouts) that
    player's score minus the opponent's."""
    wins = np.zeros((states.shape[0], rollouts), dtype=np.int64)
    margins = np.zeros((states.shape[0], rollouts), dtype=np.int64)
    for i in range(states.shape[0]):
        mover = rules.current_player(states[i])
        for k in range(rollouts):
            winner, margin = rollout(states[i], ROLLOUT_GREEDY, w, temp, max_candidates, st)
            wins[i, k] = 1 if winner == mover else 0
            margins[i, k] = margin if mover == 0 else -margin
    return wins, margins


@jit
def action_group(a: int) -> int:
    """The kind of move ``a`` is (its decision group): buying from market slot 0, 1 or 2, placing the
    leather patch, advancing (``GROUP_OF_ACTION``, in compiled code)."""
    return int(GROUP_OF_ACTION[a])


@jit
def candidate_actions(s: IntArray, w: FloatArray, width: int, out: IntArray, out_scores: FloatArray) -> int:
    """The actions worth searching in ``s``, best first: advance, and the ``width`` best-valued
    placements of each market patch (or the ``width`` best cells for a pending leather patch).
    Writes them into ``out`` with their values; returns how many (0 if the game is over)."""
    mask = np.empty(rules.NUM_ACTIONS, dtype=np.bool_)
    acts = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
    scores = np.empty(rules.NUM_ACTIONS, dtype=np.float64)
    n = legal_list(s, mask, acts)
    score_actions(s, acts, n, w, scores)
    k = best_per_group(acts, scores, n, width, out, out_scores)
    sort_together(out_scores, out, k, True)  # best first
    return k


@jit
def best_per_group(
    acts: IntArray, scores: FloatArray, n: int, width: int, out: IntArray, out_scores: FloatArray
) -> int:
    """The ``width`` best-scored of ``acts[:n]`` in each kind of move (``action_group``; the first of
    equals), group by group, into ``out`` with their scores; returns how many."""
    taken = np.zeros(n, dtype=np.bool_)
    k = 0
    for group in range(NUM_GROUPS):
        for _ in range(width):
            best = -1
            for i in range(n):
                a = acts[i]
                if action_group(a) == group and not taken[i] and (best < 0 or scores[i] > scores[best]):
                    best = i
            if best < 0:
                break
            taken[best] = True
            out[k] = acts[best]
            out_scores[k] = scores[best]
            k += 1
    return k


@jit
def sort_together(key: Any, other: Any, n: int, descending: bool) -> None:
    """Sort ``key[:n]`` and, alongside it, ``other[:n]`` by ``key`` (stable insertion sort: n is small)."""
    for i in range(1, n):
        k = key[i]
        o = other[i]
        j = i - 1
        while j >= 0 and (key[j] < k if descending else key[j] > k):
            key[j + 1] = key[j]
            other[j + 1] = other[j]
            j -= 1
        key[j + 1] = k
        other[j + 1] = o


@jit
def candidate_prior(
    s: IntArray, w: FloatArray, width: int, temp: float, acts: IntArray, scores: FloatArray, logp: FloatArray
) -> int:
    """``s``'s ``candidate_actions`` in ascending order in ``acts`` and, in ``logp``, their
    log-probabilities under a softmax of their greedy values at temperature ``temp`` score points;
    returns how many (0 if the game is over): the search prior from the heuristic alone
    (``az:prior=greedy``), ``model_candidates`` with greedy's weights over ``temp``. ``scores`` is
    scratch (2026 entries)."""
    return model_candidates(s, feature_weights(w) / temp, np.zeros(NUM_GROUPS), width, acts, scores, logp)


@jit
def model_candidates(
    s: IntArray, term_w: FloatArray, kind: FloatArray, width: int, acts: IntArray, scores: FloatArray,
    logp: FloatArray,
) -> int:  # fmt: skip
    """A prior's candidates in ``s`` and their log-probabilities: every legal action's logit is
    ``score_actions_terms`` (``kind`` per kind of move plus the terms after it weighted by ``term_w``);
    the ``width`` best of each kind are the candidates, in ascending order in ``acts``, with the
    log-softmax of their logits in ``logp``; returns how many (0 if the game is over). ``scores`` is
    scratch (2026 entries). The greedy prior (``candidate_prior``) and a learned one (a value model's
    placement head, ``patchwork_env.players.value_model``) alike."""
    mask = np.empty(rules.NUM_ACTIONS, dtype=np.bool_)
    legal = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
    n = legal_list(s, mask, legal)
    if n == 0:
        return 0
    score_actions_terms(s, legal, n, term_w, kind, scores)
    k = best_per_group(legal, scores, n, width, acts, logp)
    top = logp[:k].max()
    total = 0.0
    for j in range(k):
        total += np.exp(logp[j] - top)
    log_total = np.log(total)
    for j in range(k):
        logp[j] = logp[j] - top - log_total
    sort_together(acts, logp, k, False)  # ascending actions
    return k


@jit
def candidate_policy_batch(
    states: IntArray, w: FloatArray, width: int, temp: float, legal: npt.NDArray[np.bool_], logp: FloatArray
) -> None:
    """For each unfinished state (row): ``legal`` marks its ``candidate_actions`` and ``logp`` holds
    their log-probabilities under a softmax of their greedy values at temperature ``temp`` score
    points (-inf elsewhere): ``candidate_prior`` for a batch."""
    acts = np.empty(rules.NUM_ACTIONS, dtype=np.int64)
    scores = np.empty(rules.NUM_ACTIONS, dtype=np.float64)
    lp = np.empty(rules.NUM_ACTIONS, dtype=np.float64)
    for i in range(states.shape[0]):
        legal[i, :] = False
        logp[i, :] = -np.inf
        n = candidate_prior(states[i], w, width, temp, acts, scores, lp)
        for j in range(n):
            legal[i, acts[j]] = True
            logp[i, acts[j]] = lp[j]


@jit
def action_features_batch(states: IntArray, masks: npt.NDArray[np.bool_], w: FloatArray, out: Any) -> None:
    """``out[i, a, :]`` = ``position_features`` of the position after legal action ``a`` of
    ``states[i]`` for the player to move, minus those of the best action by the value under ``w``
    (greedy's choice, the first of equals); 0 where ``masks[i, a]`` is False. ``out`` (B, 2026, 9)
    may be float32 or float64; its dot product with ``feature_weights(w)`` is greedy's value of each
    action relative to the best one."""
    tmp = np.empty(states.shape[1], dtype=np.int64)
    feat = np.empty(SCRATCH, dtype=np.float64)
    for i in range(states.shape[0]):
        s = states[i]
        p = rules.current_player(s)
        best = -np.inf
        best_a = -1
        for a in range(rules.NUM_ACTIONS):
            if masks[i, a]:
                tmp[:] = s
                rules.step_into(tmp, a)
                v = position_value(tmp, p, w, feat)  # leaves the terms in feat[QUILT_FEATURES:]
                for k in range(NUM_FEATURES):
                    out[i, a, k] = feat[QUILT_FEATURES + k]
                if v > best:
                    best = v
                    best_a = a
            else:
                for k in range(NUM_FEATURES):
                    out[i, a, k] = 0.0
        if best_a >= 0:
            for k in range(NUM_FEATURES):
                feat[k] = out[i, best_a, k]
            for a in range(rules.NUM_ACTIONS):
                if masks[i, a]:
                    for k in range(NUM_FEATURES):
                        out[i, a, k] -= feat[k]


def greedy_prior(
    states: npt.NDArray[np.int64], masks: npt.NDArray[np.bool_], weights: FloatArray | None = None
) -> npt.NDArray[np.float32]:
    """(B, 2026, 9) float32: the terms of ``greedy``'s one-ply value of every legal action relative
    to greedy's choice (``action_features_batch``), the input of a network built with
    ``prior_scale > 0``."""
    states = np.ascontiguousarray(np.atleast_2d(states), dtype=np.int64)
    masks = np.ascontiguousarray(np.atleast_2d(masks), dtype=np.bool_)
    if states.ndim != 2 or states.shape[1] != rules.STATE_LEN:
        raise ValueError(f"greedy_prior: states must have shape (B, {rules.STATE_LEN}), got {states.shape}")
    if masks.shape != (len(states), rules.NUM_ACTIONS):
        raise ValueError(f"greedy_prior: masks must have shape ({len(states)}, {rules.NUM_ACTIONS}), got {masks.shape}")
    w = np.asarray(DEFAULT_WEIGHTS if weights is None else weights, dtype=np.float64)
    if w.shape != DEFAULT_WEIGHTS.shape:
        raise ValueError(
            f"greedy_prior: weights must have {len(DEFAULT_WEIGHTS)} entries {WEIGHT_NAMES}, got {w.shape}"
        )
    out = np.empty((len(states), rules.NUM_ACTIONS, NUM_FEATURES), dtype=np.float32)
    action_features_batch(states, masks, w, out)
    return out
