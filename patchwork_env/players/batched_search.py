"""AlphaZero-style search for many games at once: the search is one object, the leaf evaluator another.

Following OpenSpiel's split (``mcts.py``: one bot, a separate evaluator), ``BatchedSearch`` holds
no network: it asks an ``Evaluator`` for the legal actions, the prior log-probabilities and the
value of a batch of game states (``patchwork_env.players.az_network.NetEvaluator`` runs the policy-value network;
a test plugs in a hand-written one). Each simulation step descends ONE path in every game still
searching and evaluates all their new leaves in one call, so the network sees one batch of up to
``len(games)`` positions per step.

Patchwork-specific choices:

* **Values from the mover's side.** Turns do not alternate: the player behind moves, possibly
  several times in a row, and a leather patch is another decision by the same player. Every node
  stores the player to move there; edge statistics are from that player's side, and a backed-up
  value changes sign only at nodes where the *other* player moves (``_backup``). Leaves are valued
  by the network from their mover's side, finished games by their exact result (``final_value``).
* **Selection below the root: PUCT** (AlphaZero), ``Q + c_puct * P * sqrt(N) / (1 + N_a)``;
  an unvisited action's Q is the node's own network value (first-play urgency).
* **Root: Gumbel (default) or PUCT.** ``root="gumbel"`` is Gumbel AlphaZero's root (Danihelka et
  al. 2022, as in ``deepmind/mctx``): sample Gumbel noise, keep the ``considered`` best actions by
  ``g + logit``, spread the simulations over them by sequential halving, play the survivor. Its
  policy target is ``softmax(logit + sigma(completed Q))`` over ALL legal actions: unvisited
  actions keep their prior ratios. That matters here: a position has ~100 legal placements and
  self-play affords 16-32 simulations, so AlphaZero's visit-count target would train almost every
  placement towards zero probability (``agents.distill`` measured what retraining placements
  against a search teacher does: worse placements). ``root="puct"`` is AlphaZero's root with
  Dirichlet noise (self-play) and the visit distribution as target.
* **Expansion threshold** (``expand``, AlphaGo's n_thr; default 1, AlphaZero's: every new leaf is
  expanded). With ``expand=k`` a leaf's first ``k - 1`` visits ask the evaluator for its value
  alone (``Evaluator.values``: for the ``az`` agent, greedy rollouts without the network) and the
  ``k``-th expands it (legal actions, prior, value: the network). Most leaves of a search are
  visited once or twice, so the network runs for a fraction of the simulations.
* **Subtree reuse** (``run(..., nodes=...)``, the ``az`` agent's ``reuse``): a root may be a node
  kept from an earlier search (``SearchResult.roots``). Its edge statistics start from zero, since
  the root's schedule (sequential halving) and its targets count this search's simulations; the
  subtrees below keep their visits, values and priors, so the search starts from what it learnt.
* Without noise (evaluation) the search is deterministic: no Gumbel, no Dirichlet noise.

The tree is Python objects (``Node``); the per-edge arithmetic that every descent repeats (PUCT's
selection, the Gumbel root's completed Q, sigma and choice) is compiled (``puct_choice``,
``gumbel_choice``): numpy's many small array operations per call cost more than the arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.jit import jit
from patchwork_env.core.validate import check_state_rows
from patchwork_env.players.clock import CLOCKS, DEFAULT_CLOCK, Deadline, check_clock, reached
from patchwork_env.players.search_config import GREEDY_PRIOR_TEMP as GREEDY_PRIOR_TEMP
from patchwork_env.players.search_config import MAX_LEAVES as MAX_LEAVES  # re-exported: the search's names
from patchwork_env.players.search_config import TREE_SIMS as TREE_SIMS
from patchwork_env.players.search_config import SearchConfig as SearchConfig
from patchwork_env.players.tree import warm_positions

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

MARGIN_SCALE = 30.0  # score points that count as a full +-1 in the margin part of a value


@jit
def final_value(s: IntArray, player: int, margin_weight: float) -> float:
    """A finished game's value for ``player`` in [-1, 1]: ``(1 - w) * (+1 win / -1 loss) + w *
    clip(margin / 30, -1, 1)`` (``outcome_value``'s; compiled: the compiled tree's terminal leaves
    take it too); the network's value head is trained on the same quantity."""
    win = 1.0 if rules.winner(s) == player else -1.0
    margin = float(rules.score(s, player) - rules.score(s, 1 - player))
    return (1.0 - margin_weight) * win + margin_weight * min(1.0, max(-1.0, margin / MARGIN_SCALE))


def outcome_value(win: npt.ArrayLike, margin: npt.ArrayLike, margin_weight: float) -> FloatArray:
    """``final_value`` of results given as +1 (won) / -1 (lost) and score margins, elementwise."""
    win_a = np.asarray(win, dtype=np.float64)
    margin_a = np.asarray(margin, dtype=np.float64)
    out: FloatArray = (1.0 - margin_weight) * win_a + margin_weight * np.clip(margin_a / MARGIN_SCALE, -1.0, 1.0)
    return out


class Evaluator(Protocol):
    """Legal actions, prior log-probabilities and values of a batch of unfinished game states."""

    def __call__(self, states: IntArray) -> tuple[npt.NDArray[np.bool_], FloatArray, FloatArray]:
        """(B, 2026) legal masks, (B, 2026) log-probabilities (any value where illegal) and (B,)
        values in [-1, 1] from the side of the player to move in each state."""
        ...

    def values(self, states: IntArray) -> FloatArray:
        """(B,) values alone (the visits before a leaf's expansion, ``SearchConfig.expand`` > 1).
        An evaluator whose ``deterministic_values`` attribute is true (``NetEvaluator`` without
        rollouts) gives a state the same value every call: the search then asks once per leaf and
        reuses it on the leaf's later visits before its expansion."""
        ...


@jit
def puct_choice(n: IntArray, w: FloatArray, prior: FloatArray, value: float, c_puct: float) -> int:
    """The edge of largest ``Q + c_puct * P * sqrt(N) / (1 + N_a)`` (the first of equals), ``Q`` of an
    unvisited edge the node's own ``value``: PUCT's selection, compiled (one call per level of every
    descent; numpy's dozen small array operations cost more than the arithmetic)."""
    root_total = math.sqrt(max(1, n.sum()))
    best, best_score = 0, -math.inf
    for i in range(len(n)):
        q = w[i] / n[i] if n[i] > 0 else value
        score = q + c_puct * prior[i] * root_total / (1 + n[i])
        if score > best_score:
            best, best_score = i, score
    return best


# --- Gumbel's root, compiled (called for every path of every simulation) -------------------------
@jit
def completed_q(n: IntArray, w: FloatArray, prior: FloatArray, value: float) -> FloatArray:
    """Visited actions: their mean value; unvisited: the mix of the node's (network) value and the
    prior-weighted mean of the visited ones (mctx ``qtransform_completed_by_mix_value``)."""
    out = np.full(len(n), value)
    total = n.sum()
    if total == 0:
        return out
    mass, weighted = 0.0, 0.0
    for i in range(len(n)):
        if n[i] > 0:
            out[i] = w[i] / n[i]
            mass += prior[i]
            weighted += prior[i] * out[i]
    mixed = (value + total * (weighted / max(mass, 1e-12))) / (total + 1)
    for i in range(len(n)):
        if n[i] == 0:
            out[i] = mixed
    return out


@jit
def sigma(
    n: IntArray, w: FloatArray, prior: FloatArray, value: float, c_visit: float, c_scale: float, rescale: bool
) -> FloatArray:
    """Gumbel's ``sigma(completed Q)`` = ``(c_visit + max visits) * c_scale * q``, q the completed Q
    mapped linearly from [-1, 1] to [0, 1], or (``rescale``) min-max rescaled to it."""
    cq = completed_q(n, w, prior, value)
    if rescale:
        low = cq.min()
        scaled = (cq - low) / max(cq.max() - low, 1e-8)
    else:
        scaled = (cq + 1.0) / 2.0
    out: FloatArray = (c_visit + (n.max() if len(n) else 0)) * c_scale * scaled
    return out


@jit
def gumbel_choice(
    n: IntArray, w: FloatArray, prior: FloatArray, logits: FloatArray, value: float, gumbel: FloatArray,
    considered: IntArray, want: int, c_visit: float, c_scale: float, rescale: bool,
) -> int:  # fmt: skip
    """Sequential halving's next action: among the ``considered`` actions with exactly ``want``
    visits, the largest ``g + logit + sigma(completed Q)`` (the first of equals)."""
    sig = sigma(n, w, prior, value, c_visit, c_scale, rescale)
    best, best_score = -1, -math.inf
    for a in considered:
        score = gumbel[a] + logits[a] + sig[a]
        if n[a] == want and score > best_score:
            best, best_score = a, score
    if best < 0:  # cannot happen with the schedule; be safe: the best by g + logit
        for a in considered:
            if best < 0 or gumbel[a] + logits[a] > gumbel[best] + logits[best]:
                best = a
    return best


@jit
def root_choice(
    n: IntArray, w: FloatArray, prior: FloatArray, logits: FloatArray, value: float, gumbel: FloatArray,
    considered: IntArray, schedule: IntArray, index: int, gumbel_root: bool, c_puct: float, c_visit: float,
    c_scale: float, rescale: bool,
) -> int:  # fmt: skip
    """The root's edge for simulation ``index``: PUCT's choice, or (``gumbel_root``) sequential
    halving's among the ``considered`` with ``schedule[index]`` visits (past the schedule: the
    fewest visits), for the Python tree and the compiled one (``patchwork_env.players.compiled_search``)."""
    if not gumbel_root:
        return puct_choice(n, w, prior, value, c_puct)
    if index < len(schedule):
        want = schedule[index]
    else:
        want = n[considered[0]]
        for a in considered:
            want = min(want, n[a])
    return gumbel_choice(n, w, prior, logits, value, gumbel, considered, want, c_visit, c_scale, rescale)


def root_outcome(
    n: IntArray, w: FloatArray, prior: FloatArray, logits: FloatArray, value: float, gumbel: FloatArray,
    considered: IntArray, config: SearchConfig,
) -> tuple[int, FloatArray, float]:  # fmt: skip
    """A searched root's (chosen edge, policy target over its edges, searched value from its mover's
    side): Gumbel's sequential-halving survivor (among the most visited considered edges, the largest
    ``g + logit + sigma``) and ``softmax(logit + sigma(completed Q))``, or PUCT's most visited edge and
    the visit distribution (the prior if none); the value is the mean of the node's own value and its
    edges' backed-up values. For the Python tree and the compiled one."""
    total = n.sum()
    root_value = float((value + w.sum()) / (1 + total))
    if config.root == "puct":
        target = n / total if total else prior
        best = int(np.argmax(n)) if total else int(np.argmax(prior))
        return best, np.asarray(target, dtype=np.float64), root_value
    sig = sigma(n, w, prior, value, config.c_visit, config.c_scale, config.rescale_values)
    z = logits + sig
    target = np.exp(z - z.max())
    target /= target.sum()
    most = n[considered].max()
    score = gumbel[considered] + logits[considered] + sig[considered]
    best = int(considered[int(np.argmax(np.where(n[considered] == most, score, -np.inf)))])
    return best, target, root_value


class Node:
    """A position: its mover, legal actions with prior and edge statistics (mover's side)."""

    __slots__ = (
        "actions", "children", "early", "logits", "n", "player", "prior", "state", "terminal", "value", "valued", "w"
    )  # fmt: skip

    def __init__(self, state: IntArray, margin_weight: float) -> None:
        self.state = state
        self.terminal = bool(rules.is_terminal(state))
        self.player = -1 if self.terminal else int(rules.current_player(state))
        self.value = final_value(state, 0, margin_weight) if self.terminal else 0.0  # terminal: player 0's side
        self.actions: IntArray | None = None  # None until evaluated
        self.logits = np.zeros(0)
        self.prior = np.zeros(0)
        self.n = np.zeros(0, dtype=np.int64)
        self.w = np.zeros(0)
        self.children: list[Node | None] = []
        self.valued = 0  # visits valued before the expansion (``SearchConfig.expand``)
        self.early = 0.0  # the value of those visits (reused when the evaluator's values are deterministic)

    def expand(self, mask: npt.NDArray[np.bool_], logp: FloatArray, value: float) -> None:
        self.actions = np.flatnonzero(mask)
        logits = np.asarray(logp[self.actions], dtype=np.float64)
        self.logits = logits - logits.max()
        p = np.exp(self.logits)
        self.prior = p / p.sum()
        self.value = float(value)
        k = len(self.actions)
        self.n = np.zeros(k, dtype=np.int64)
        self.w = np.zeros(k)
        self.children = [None] * k

    def child(self, i: int, margin_weight: float) -> Node:
        node = self.children[i]
        if node is None:
            assert self.actions is not None
            arr = self.state.copy()
            rules.step_into(arr, int(self.actions[i]))
            node = self.children[i] = Node(arr, margin_weight)
        return node


@dataclass
class _Root:
    """Per-game state of the root during one search."""

    node: Node
    rng: np.random.Generator
    gumbel: FloatArray = field(default_factory=lambda: np.zeros(0))
    considered: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    schedule: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass
class SearchResult:
    """One search per game: the action to play, the policy target and statistics."""

    actions: IntArray
    """(B,) the search's choice (Gumbel: the sequential-halving survivor; PUCT: most visited)."""
    policies: npt.NDArray[np.float32]
    """(B, 2026) policy targets, zero on illegal actions, rows summing to 1."""
    root_values: FloatArray
    """(B,) the search's value of each root from its mover's side."""
    net_values: FloatArray
    """(B,) the network's value of each root from its mover's side."""
    roots: list[Node] = field(default_factory=list)
    """The searched roots (their ``children`` hold the subtrees, for reuse by the next search)."""


OVERPLAN = 1.2  # time budget: simulations planned from the measured speed, times this
FIRST_PLAN = 10_000  # time budget, first move (no speed measured yet): the deadline ends the search
MAX_PLAN = 100_000  # time budget: at most this many (a spec's largest sims): late moves are cheap, a tree is not
MIN_SHARE_SECONDS = 0.01  # a move shorter than this on the wall clock: its share of the CPU is not measured


class TimeBudget:
    """A search agent's budget per move: ``sims`` simulations, or (``seconds``) until a deadline with
    the simulations planned ``OVERPLAN`` x above what the measured speed of earlier moves affords
    (the plan sets Gumbel's sequential-halving schedule; the deadline, not a cautious plan, should end
    the search: a move's speed varies by a fifth, and at the plan alone moves used 60-95% of their
    time). The first move plans ``sims`` (``FIRST_PLAN`` for a time budget). ``clock``: the seconds
    are CPU seconds of this process (``cpu``, the default) or seconds on the wall clock (``wall``;
    ``patchwork_env.players.clock``)."""

    def __init__(self, sims: int, seconds: float | None = None, clock: str = DEFAULT_CLOCK) -> None:
        if seconds is not None and not seconds > 0:
            raise ValueError(f"time must be > 0 seconds, got {seconds}")
        self.sims = sims
        self.seconds = seconds
        self.clock = check_clock(clock)
        self.seconds_per_sim = 0.0  # measured on the budget's clock (time budget only)
        self._started: tuple[float, float] | None = None  # the last plan's moment on its clock and the wall's

    def plan(self) -> tuple[int | None, float | None]:
        """(simulations, ``Deadline`` on the budget's clock) for the next move: (None, None) without a
        time budget (the search's own ``sims``)."""
        import time

        if self.seconds is None:
            return None, None
        self._started = (CLOCKS[self.clock](), time.perf_counter())
        deadline = Deadline(self.seconds, self.clock)
        planned = OVERPLAN * self.seconds / self.seconds_per_sim if self.seconds_per_sim else self.sims
        return max(4, min(MAX_PLAN, int(planned))), deadline

    def measure(self, sims: int, seconds: float) -> None:
        """A move's ``sims`` simulations took ``seconds`` on the wall clock (the root's evaluation
        apart): the speed the next plans take (an average weighing the newest move 0.3), on the
        budget's clock (the CPU clock: ``seconds`` times the share of the CPU the move had since
        its plan). A move without a simulation (a single candidate) says nothing of the speed."""
        import time

        if self.seconds is None or not sims:
            return
        if self.clock != "wall" and self._started is not None:
            began, wall_began = self._started
            wall = time.perf_counter() - wall_began
            if wall >= MIN_SHARE_SECONDS:
                seconds *= max(CLOCKS[self.clock]() - began, 0.0) / wall
        per_sim = seconds / sims
        old = self.seconds_per_sim
        self.seconds_per_sim = per_sim if old == 0 else 0.7 * old + 0.3 * per_sim


def considered_visits(num_considered: int, sims: int) -> tuple[int, ...]:
    """Sequential halving's schedule (mctx ``get_sequence_of_considered_visits``): before simulation
    ``i`` the action chosen is one of the considered with exactly ``schedule[i]`` visits."""
    if num_considered <= 1:
        return tuple(range(sims))
    log2max = math.ceil(math.log2(num_considered))
    out: list[int] = []
    visits = [0] * num_considered
    left = num_considered
    while len(out) < sims:
        extra = max(1, int(sims / (log2max * left)))
        for _ in range(extra):
            out.extend(visits[:left])
            for i in range(left):
                visits[i] += 1
        left = max(2, left // 2)
    return tuple(out[:sims])


class BatchedSearch:
    """PUCT / Gumbel search over many games, leaf evaluations batched (see the module docstring)."""

    def __init__(self, evaluator: Evaluator, config: SearchConfig) -> None:
        config.validate()
        self.evaluator = evaluator
        self.config = config
        self._same_values = bool(getattr(evaluator, "deterministic_values", False))  # ask once per leaf
        self.last_sims = 0  # simulations run by the last ``run`` (0 if no root had a choice)
        self.last_sim_seconds = 0.0  # and the seconds they took (the roots' evaluation apart)

    # --- the whole search ------------------------------------------------------------------------
    def run(
        self,
        states: IntArray,
        rngs: Sequence[np.random.Generator],
        noise: bool,
        sims: int | None = None,
        deadline: float | None = None,
        nodes: Sequence[Node | None] | None = None,
    ) -> SearchResult:
        """Search each of the unfinished ``states`` (rows) with its own generator; ``noise`` adds
        the root noise of self-play. ``deadline`` (a ``clock.Deadline``, or a ``time.perf_counter()``
        moment) may stop it early.
        ``nodes``: per row, a node of an earlier search holding that state (its subtree is kept,
        its edge statistics restart) or None."""
        import time

        cfg = self.config
        sims = cfg.sims if sims is None else sims
        check_state_rows(states)  # the compiled rules below trust their input
        kept = [None] * len(states) if nodes is None else list(nodes)
        if len(kept) != len(states):
            raise ValueError(f"search: {len(kept)} kept nodes for {len(states)} states")
        roots = []
        for s, rng, node in zip(states, rngs, kept, strict=True):
            if node is None:
                node = Node(np.array(s, dtype=np.int64), cfg.margin_weight)
            elif not np.array_equal(node.state, s):
                raise ValueError("search: a kept node does not hold the state it is given for")
            roots.append(_Root(node, rng))
        if any(r.node.terminal for r in roots):
            raise ValueError("search: a game is over, there is no action to search")
        self._evaluate([r.node for r in roots if r.node.actions is None])
        for r in roots:  # a kept root: this search's statistics only (its subtrees keep theirs)
            r.node.n[:] = 0
            r.node.w[:] = 0.0
        for r in roots:
            self._prepare_root(r, noise, sims)
        self.last_sims = 0
        started = time.perf_counter()
        searched = [r for r in roots if len(r.node.children) > 1]  # a single action needs no search
        while searched and self.last_sims < sims:
            if reached(deadline):
                break
            paths = min(cfg.leaves, sims - self.last_sims)
            self._simulate(searched, self.last_sims, paths)
            self.last_sims += paths
        self.last_sim_seconds = time.perf_counter() - started
        return self._results(roots)

    def warm(self, sims: int = 32) -> None:
        """A few simulations from a first and a late position (``tree.warm_positions``), which no
        game keeps: every kernel the search and its evaluator call is compiled (or loaded) now, not
        in a first timed move. The evaluator's counters and the search's statistics are left as
        they were."""
        counters = {k: getattr(self.evaluator, k) for k in ("evaluations", "value_evaluations")
                    if isinstance(getattr(self.evaluator, k, None), int)}  # fmt: skip
        last = self.last_sims, self.last_sim_seconds
        for state in warm_positions():
            self.run(state.array()[None, :], [np.random.default_rng(0)], noise=False, sims=sims)
        for key, value in counters.items():
            setattr(self.evaluator, key, value)
        self.last_sims, self.last_sim_seconds = last

    def _evaluate(self, nodes: list[Node]) -> None:
        if not nodes:
            return
        masks, logp, values = self.evaluator(np.stack([n.state for n in nodes]))
        for k, node in enumerate(nodes):
            node.expand(masks[k], logp[k], float(values[k]))

    def _prepare_root(self, root: _Root, noise: bool, sims: int) -> None:
        node, cfg = root.node, self.config
        k = len(node.prior)
        if cfg.root == "puct":
            if noise and k > 1:
                eta = root.rng.dirichlet(np.full(k, cfg.dirichlet_alpha))
                node.prior = (1 - cfg.dirichlet_eps) * node.prior + cfg.dirichlet_eps * eta
            return
        root.gumbel = root.rng.gumbel(size=k) if noise else np.zeros(k)
        m = min(cfg.considered, k)
        root.considered = np.argsort(-(root.gumbel + node.logits), kind="stable")[:m]
        root.schedule = np.array(considered_visits(m, sims), dtype=np.int64)

    # --- one simulation step in every game ------------------------------------------------------
    def _simulate(self, roots: list[_Root], index: int, paths: int = 1) -> None:
        """Simulations ``index`` to ``index + paths - 1`` of every game: ``paths`` descents per
        game, then one evaluator call for all their new leaves, then the backups. With several
        paths, each edge a path takes gets a virtual loss (one more visit, ``virtual_loss`` less
        value for its mover) until the backups, so the next descent of the same game prefers
        other edges; a leaf reached twice is evaluated once and backed up along both paths."""
        cfg = self.config
        virtual = paths > 1
        descents: list[list[tuple[Node, int]]] = []
        leaves: list[Node] = []
        for root in roots:
            for j in range(paths):
                node = root.node
                path = [(node, self._root_choice(root, index + j))]
                node = node.child(path[0][1], cfg.margin_weight)
                while not node.terminal and node.actions is not None:
                    i = self._puct(node)
                    path.append((node, i))
                    node = node.child(i, cfg.margin_weight)
                if virtual:
                    self._virtual_loss(path, cfg.virtual_loss)
                descents.append(path)
                leaves.append(node)
        unique = list({id(leaf): leaf for leaf in leaves}.values())
        expand = [leaf for leaf in unique if not leaf.terminal and leaf.valued + 1 >= cfg.expand]
        self._evaluate(expand)
        value = {id(leaf): leaf.value for leaf in expand}
        early = [leaf for leaf in unique if not leaf.terminal and leaf.valued + 1 < cfg.expand]
        ask = [leaf for leaf in early if not (self._same_values and leaf.valued)]
        if ask:
            for leaf, v in zip(ask, self.evaluator.values(np.stack([n.state for n in ask])), strict=True):
                leaf.early = float(v)
        for leaf in early:
            leaf.valued += 1
            value[id(leaf)] = leaf.early
        for path, leaf in zip(descents, leaves, strict=True):
            if virtual:
                self._virtual_loss(path, -cfg.virtual_loss, -1)
            v = leaf.value if leaf.terminal else value[id(leaf)]
            value0 = v if leaf.terminal or leaf.player == 0 else -v
            self._backup(path, value0)

    @staticmethod
    def _virtual_loss(path: list[tuple[Node, int]], loss: float, visit: int = 1) -> None:
        """Add (``visit`` 1, ``loss`` > 0) or remove (-1, the loss negated) one path's virtual
        visit and loss on its edges."""
        for node, i in path:
            node.n[i] += visit
            node.w[i] -= loss

    @staticmethod
    def _backup(path: list[tuple[Node, int]], value0: float) -> None:
        """Add a leaf's value (player 0's side) to every edge of the path, from its mover's side."""
        for node, i in path:
            node.n[i] += 1
            node.w[i] += value0 if node.player == 0 else -value0

    def _puct(self, node: Node) -> int:
        return int(puct_choice(node.n, node.w, node.prior, node.value, self.config.c_puct))

    def _root_choice(self, root: _Root, index: int) -> int:
        node, cfg = root.node, self.config
        return int(
            root_choice(node.n, node.w, node.prior, node.logits, node.value, root.gumbel, root.considered,
                        root.schedule, index, cfg.root == "gumbel", cfg.c_puct, cfg.c_visit, cfg.c_scale,
                        cfg.rescale_values)
        )  # fmt: skip

    # --- results ------------------------------------------------------------------------------------
    def _results(self, roots: list[_Root]) -> SearchResult:
        b = len(roots)
        actions = np.empty(b, dtype=np.int64)
        policies = np.zeros((b, rules.NUM_ACTIONS), dtype=np.float32)
        root_values = np.empty(b)
        net_values = np.empty(b)
        for k, root in enumerate(roots):
            node = root.node
            assert node.actions is not None
            net_values[k] = node.value
            best, target, root_values[k] = root_outcome(
                node.n, node.w, node.prior, node.logits, node.value, root.gumbel, root.considered, self.config
            )
            policies[k, node.actions] = target
            actions[k] = node.actions[best]
        return SearchResult(actions, policies, root_values, net_values, [r.node for r in roots])
