"""``az``'s search tree on flat arrays, compiled: the search without a network in its loop (the
algorithm; the agent around it is ``patchwork_env.players.az_compiled.TreeAgent``).

With its leaf values from a small value model (``patchwork_env.players.value_model``) and its prior
from the greedy heuristic (``heuristic.candidate_prior``, plus the model's move-kind logits if it has
that head), ``az`` needs nothing a compiled kernel
cannot do, so ``CompiledSearch`` runs whole simulations in numba: the root's choice (Gumbel's
sequential halving or PUCT: ``batched_search.root_choice``), PUCT below it (``batched_search.puct_choice``),
the new leaf's position (``rules.step_into``), its expansion (candidates and prior) and value, and
the backup, on arrays of nodes and edges instead of Python objects. It is the same search as
``batched_search.BatchedSearch`` with that evaluator, ``expand=1`` and ``leaves=1`` (a test plays both
and compares every visit count); the Python tree spends most of a simulation on its own
bookkeeping, this one about 12-15 us in all on one core (about 3x ``mcts``'s simulations per
second, 3.4x the Python tree's: ``benchmarks.bench_az``), most of it scoring the new leaf's
candidate moves and valuing it.

The arrays: per node its state (``STATE_LEN`` entries), mover (-1 when the game is over), first
edge and number of edges (-1 until expanded), and value (the model's, from the mover's side; a
finished game's ``final_value`` for player 0); per edge its action, child node (-1 until visited),
visits, summed value (from the edge's node's mover's side), prior and logit. Simulations run in
chunks of ``CHUNK`` between deadline checks (numba has no clock). Subtree reuse: after a search the
played move's child is kept; the next search looks for its position below it
(``patchwork_env.players.tree.find_below``) and, if found, copies that subtree to the front of the
arrays (``_compact``) so a game's tree never outgrows one search's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.jit import compile_notice, jit
from patchwork_env.core.state import new_game
from patchwork_env.core.validate import check_state_rows
from patchwork_env.envs.observation import OBS_DIM
from patchwork_env.players.batched_search import (
    GREEDY_PRIOR_TEMP,
    SearchConfig,
    considered_visits,
    final_value,
    puct_choice,
    root_choice,
    root_outcome,
)
from patchwork_env.players.heuristic import NUM_FEATURES, NUM_GROUPS, model_candidates
from patchwork_env.players.tree import find_below
from patchwork_env.players.value_model import ValueModel, kind_logit, mlp_value, term_weights

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
F32 = npt.NDArray[np.float32]

PLAYER, FIRST, COUNT = range(3)  # columns of the nodes' integer array
PRIOR, LOGIT, W = range(3)  # columns of the edges' float array
ACTION, CHILD, VISITS = range(3)  # columns of the edges' integer array
CHUNK = 32  # simulations per kernel call between deadline checks (~1 ms)
# a path's length at most: every decision but a leather placement moves its player >= 1 space
# (2 x 53 spaces), and a game has at most 5 leather patches
MAX_DEPTH = 2 * rules.FINAL_SPACE + 8


@dataclass
class TreeResult:
    """One search: the move, its policy target and value, and the root's edges (for statistics)."""

    action: int
    policy: npt.NDArray[np.float32]
    """(2026,) the policy target (``batched_search.root_outcome``), zero off the root's edges."""
    root_value: float
    actions: IntArray
    """The root's edges' actions and their visits in this search."""
    visits: IntArray


class CompiledSearch:
    """``az``'s search with a value model's leaves and the greedy prior, compiled (see the module
    docstring). ``run`` searches one position; the tree of the move it chose is kept for the next
    (``reuse``) until ``reset``."""

    def __init__(
        self,
        config: SearchConfig,
        value_model: ValueModel,
        prior_temp: float = GREEDY_PRIOR_TEMP,
        width: int = 1,
        reuse: bool = True,
    ) -> None:
        config.validate()
        if config.expand != 1 or config.leaves != 1:
            raise ValueError(
                f"the compiled tree expands every new leaf and descends one path at a time (expand=1, leaves=1); "
                f"got expand={config.expand}, leaves={config.leaves}"
            )
        if not prior_temp > 0 or width < 1:
            raise ValueError(f"need prior_temp > 0 and width >= 1; got {prior_temp} and {width}")
        compile_notice("the compiled search tree", _simulate, "10-45 s")
        self.config = config
        self.model = value_model
        self.prior_temp = float(prior_temp)
        # the prior's heads: a model without them gives zero kind logits and greedy's weights over prior_temp
        self.heads: tuple[F32, F32, F32, FloatArray] = (*value_model.head(), *value_model.placement(self.prior_temp))
        self.width = int(width)
        self.reuse = reuse
        self.max_edges = NUM_GROUPS * self.width  # a node's edges at most (candidate_actions' groups)
        self._alloc(1024)
        self._kept = -1  # the played move's child after the last search, or -1
        self.last_sims = 0
        self.last_sim_seconds = 0.0
        h1, h2 = value_model.hidden
        self._scratch: tuple[IntArray, FloatArray, FloatArray, F32, F32, F32, FloatArray, FloatArray] = (
            np.empty(rules.NUM_ACTIONS, np.int64), np.empty(rules.NUM_ACTIONS), np.empty(rules.NUM_ACTIONS),
            np.zeros(OBS_DIM, np.float32), np.empty(h1, np.float32), np.empty(h2, np.float32),
            np.empty(NUM_FEATURES), np.empty(NUM_GROUPS),
        )  # fmt: skip
        self._warm()

    def _warm(self) -> None:
        """Compile every kernel now (a fresh install: seconds, once; later processes load them from
        disk): a first move's compiling would otherwise eat its time budget and, taken for the
        simulations' speed, shrink the next moves' plans. Two small searches, the second from the
        first one's kept subtree (its compaction), then ``reset``."""
        row = new_game(0).array().copy()
        first = self.run(row, sims=2)
        rules.step_into(row, first.action)
        self.run(row, sims=2)
        self.reset()

    def _alloc(self, nodes: int) -> None:
        self.states = np.zeros((nodes, rules.STATE_LEN), dtype=np.int64)
        self.node_i = np.zeros((nodes, 3), dtype=np.int64)
        self.node_v = np.zeros(nodes)
        self.edge_i = np.zeros((nodes * self.max_edges, 3), dtype=np.int64)
        self.edge_f = np.zeros((nodes * self.max_edges, 3))
        self.counts = np.zeros(2, dtype=np.int64)  # nodes, edges in use

    def _room(self, nodes: int) -> None:
        """Grow the arrays (doubling) until ``nodes`` more nodes fit."""
        need = int(self.counts[0]) + nodes
        if need <= len(self.states):
            return
        size = len(self.states)
        while size < need:
            size *= 2
        old = (self.states, self.node_i, self.node_v, self.edge_i, self.edge_f, self.counts)
        self._alloc(size)
        n, e = int(old[5][0]), int(old[5][1])
        self.states[:n], self.node_i[:n], self.node_v[:n] = old[0][:n], old[1][:n], old[2][:n]
        self.edge_i[:e], self.edge_f[:e] = old[3][:e], old[4][:e]
        self.counts[:] = old[5]

    def reset(self) -> None:
        """Forget the kept subtree (the arena calls the agent's ``reset`` before each game)."""
        self._kept = -1
        self.counts[:] = 0

    def _children(self, node: int) -> list[int]:
        first, count = self.node_i[node, FIRST], self.node_i[node, COUNT]
        return [int(c) for c in self.edge_i[first : first + max(count, 0), CHILD] if c >= 0]

    def _root(self, row: IntArray) -> int:
        """The node to search from: the kept subtree's node of ``row`` moved to the front, else a new one."""
        found = None
        if self.reuse and self._kept >= 0:
            found = find_below(self._kept, row, lambda node: self.states[node], self._children)
        if found is None:
            self.counts[:] = 0
            self._room(1)
            _new_node(self.states, self.node_i, self.node_v, self.counts, row, -1, self.config.margin_weight)
            return 0
        moved = _Arrays(self)
        self._alloc(len(self.states))
        self.counts[:] = _compact(
            moved.states, moved.node_i, moved.node_v, moved.edge_i, moved.edge_f, found,
            self.states, self.node_i, self.node_v, self.edge_i, self.edge_f,
        )  # fmt: skip
        return 0

    def run(
        self,
        state: IntArray,
        sims: int | None = None,
        deadline: float | None = None,
        noise: np.random.Generator | None = None,
    ) -> TreeResult:
        """Search ``state`` (a state row, unfinished) with ``sims`` simulations (the config's unless
        given) or until ``deadline`` (``time.perf_counter()``), whichever ends first; with ``noise``
        the Gumbel root draws its Gumbel variables from it (self-play's exploration: the move is a
        sample), else none (play: the best move)."""
        import time

        row = np.ascontiguousarray(state, dtype=np.int64).reshape(1, -1)
        check_state_rows(row)  # the kernels trust their input
        row = row[0]
        if rules.is_terminal(row):
            raise ValueError("search: the game is over, there is no action to search")
        cfg = self.config
        sims = cfg.sims if sims is None else int(sims)
        root = self._root(row)
        m = self.model
        wp, bp, wf, bf = self.heads
        acts, scores, logp, obs, h1, h2, tw, kind = self._scratch
        if self.node_i[root, COUNT] < 0:
            _expand(
                self.states, self.node_i, self.node_v, self.edge_i, self.edge_f, self.counts, root, self.width,
                m.w1, m.b1, m.w2, m.b2, m.w3, m.b3, wp, bp, wf, bf, acts, scores, logp, obs, h1, h2, tw, kind,
            )  # fmt: skip
        first, k = int(self.node_i[root, FIRST]), int(self.node_i[root, COUNT])
        edges = slice(first, first + k)
        self.edge_i[edges, VISITS] = 0  # a kept root: this search's statistics only
        self.edge_f[edges, W] = 0.0
        logits = self.edge_f[edges, LOGIT].copy()
        gumbel = noise.gumbel(size=k) if noise is not None else np.zeros(k)
        considered = np.argsort(-(gumbel + logits), kind="stable")[: min(cfg.considered, k)].astype(np.int64)
        schedule = np.array(considered_visits(len(considered), sims), dtype=np.int64)
        self.last_sims = 0
        started = time.perf_counter()
        while k > 1 and self.last_sims < sims:  # a single action needs no search
            if deadline is not None and time.perf_counter() >= deadline:
                break
            chunk = min(CHUNK, sims - self.last_sims)
            self._room(chunk)
            _simulate(
                self.states, self.node_i, self.node_v, self.edge_i, self.edge_f, self.counts, root, self.last_sims,
                chunk, gumbel, considered, schedule, cfg.root == "gumbel", cfg.c_puct, cfg.c_visit, cfg.c_scale,
                cfg.rescale_values, cfg.margin_weight, self.width, m.w1, m.b1, m.w2, m.b2, m.w3, m.b3,
                wp, bp, wf, bf, acts, scores, logp, obs, h1, h2, tw, kind,
            )  # fmt: skip
            self.last_sims += chunk
        self.last_sim_seconds = time.perf_counter() - started
        n = self.edge_i[edges, VISITS].copy()
        best, target, root_value = root_outcome(
            n, self.edge_f[edges, W].copy(), self.edge_f[edges, PRIOR].copy(), logits, float(self.node_v[root]),
            gumbel, considered, cfg,
        )  # fmt: skip
        actions = self.edge_i[edges, ACTION].copy()
        policy = np.zeros(rules.NUM_ACTIONS, dtype=np.float32)
        policy[actions] = target
        self._kept = int(self.edge_i[first + best, CHILD]) if self.reuse else -1
        return TreeResult(int(actions[best]), policy, root_value, actions, n)


class _Arrays:
    """The arrays of a ``CompiledSearch`` at one moment (the source of a compaction)."""

    def __init__(self, search: CompiledSearch) -> None:
        self.states, self.node_i, self.node_v = search.states, search.node_i, search.node_v
        self.edge_i, self.edge_f = search.edge_i, search.edge_f


# --- the kernels -----------------------------------------------------------------------------------
@jit
def _new_node(states: IntArray, node_i: IntArray, node_v: FloatArray, counts: IntArray, s: IntArray, action: int,
              margin_weight: float) -> int:  # fmt: skip
    """A node for position ``s`` after ``action`` (-1: ``s`` itself), unexpanded; a finished game's
    value is its ``final_value`` for player 0."""
    c = int(counts[0])
    counts[0] += 1
    states[c, :] = s
    if action >= 0:
        rules.step_into(states[c], action)
    node_i[c, FIRST] = 0
    node_i[c, COUNT] = -1
    if rules.is_terminal(states[c]):
        node_i[c, PLAYER] = -1
        node_v[c] = final_value(states[c], 0, margin_weight)
    else:
        node_i[c, PLAYER] = rules.current_player(states[c])
        node_v[c] = 0.0
    return c


@jit
def _expand(
    states: IntArray, node_i: IntArray, node_v: FloatArray, edge_i: IntArray, edge_f: FloatArray, counts: IntArray,
    node: int, width: int, w1: F32, b1: F32, w2: F32, b2: F32, w3: F32, b3: F32, wp: F32, bp: F32, wf: F32,
    bf: FloatArray,
    acts: IntArray, scores: FloatArray, logp: FloatArray, obs: F32, h1: F32, h2: F32, tw: FloatArray, kind: FloatArray,
) -> float:  # fmt: skip
    """Give the unfinished ``node`` its edges (``heuristic.model_candidates`` of the model's move-kind
    logits and placement weights from its last hidden layer: the greedy prior for a model without
    those heads, see ``ValueModel.placement``) and its value model's value; returns it."""
    s = states[node]
    value = mlp_value(s, w1, b1, w2, b2, w3, b3, obs, h1, h2)  # h2: the last hidden layer, for the heads
    for g in range(kind.shape[0]):
        kind[g] = kind_logit(h2, wp, bp, g)
    term_weights(h2, wf, bf, tw)
    k = model_candidates(s, tw, kind, width, acts, scores, logp)
    first = counts[1]
    counts[1] += k
    node_i[node, FIRST] = first
    node_i[node, COUNT] = k
    for j in range(k):
        e = first + j
        edge_i[e, ACTION] = acts[j]
        edge_i[e, CHILD] = -1
        edge_i[e, VISITS] = 0
        edge_f[e, LOGIT] = logp[j]
        edge_f[e, PRIOR] = np.exp(logp[j])
        edge_f[e, W] = 0.0
    node_v[node] = value
    return value


@jit
def _simulate(
    states: IntArray, node_i: IntArray, node_v: FloatArray, edge_i: IntArray, edge_f: FloatArray, counts: IntArray,
    root: int, index: int, sims: int, gumbel: FloatArray, considered: IntArray, schedule: IntArray,
    gumbel_root: bool, c_puct: float, c_visit: float, c_scale: float, rescale: bool, margin_weight: float,
    width: int, w1: F32, b1: F32, w2: F32, b2: F32, w3: F32, b3: F32, wp: F32, bp: F32, wf: F32, bf: FloatArray,
    acts: IntArray, scores: FloatArray, logp: FloatArray, obs: F32, h1: F32, h2: F32, tw: FloatArray, kind: FloatArray,
) -> None:  # fmt: skip
    """Simulations ``index`` to ``index + sims - 1`` from ``root``: descend (the root's choice, then
    PUCT) to an edge never taken or a finished game, make and expand the new node, back its value up.
    The arrays must have room for ``sims`` more nodes."""
    path = np.empty(MAX_DEPTH, dtype=np.int64)  # the edges taken
    for sim in range(index, index + sims):
        node = root
        depth = 0
        while True:
            first = node_i[node, FIRST]
            k = node_i[node, COUNT]
            n = edge_i[first : first + k, VISITS]
            w = edge_f[first : first + k, W]
            prior = edge_f[first : first + k, PRIOR]
            if node == root:
                i = root_choice(n, w, prior, edge_f[first : first + k, LOGIT], node_v[node], gumbel, considered,
                                schedule, sim, gumbel_root, c_puct, c_visit, c_scale, rescale)  # fmt: skip
            else:
                i = puct_choice(n, w, prior, node_v[node], c_puct)
            e = first + i
            path[depth] = e
            depth += 1
            child = edge_i[e, CHILD]
            if child < 0:
                child = _new_node(states, node_i, node_v, counts, states[node], edge_i[e, ACTION], margin_weight)
                edge_i[e, CHILD] = child
            node = child
            if node_i[node, PLAYER] < 0 or node_i[node, COUNT] < 0:
                break
        if node_i[node, PLAYER] < 0:
            value0 = node_v[node]
        else:
            v = _expand(states, node_i, node_v, edge_i, edge_f, counts, node, width, w1, b1, w2, b2, w3, b3,
                        wp, bp, wf, bf, acts, scores, logp, obs, h1, h2, tw, kind)  # fmt: skip
            value0 = v if node_i[node, PLAYER] == 0 else -v
        # back up: every edge from its node's mover's side (the path's nodes are the edges' parents)
        parent = root
        for d in range(depth):
            e = path[d]
            edge_i[e, VISITS] += 1
            edge_f[e, W] += value0 if node_i[parent, PLAYER] == 0 else -value0
            parent = edge_i[e, CHILD]


@jit
def _compact(
    states: IntArray, node_i: IntArray, node_v: FloatArray, edge_i: IntArray, edge_f: FloatArray, root: int,
    out_states: IntArray, out_node_i: IntArray, out_node_v: FloatArray, out_edge_i: IntArray, out_edge_f: FloatArray,
) -> IntArray:  # fmt: skip
    """Copy the subtree of ``root`` into the ``out_`` arrays, ``root`` first (breadth first, children
    renumbered); returns the (nodes, edges) used there."""
    order = np.empty(states.shape[0], dtype=np.int64)
    order[0] = root
    head, tail, edges = 0, 1, 0
    while head < tail:
        old = order[head]
        out_states[head, :] = states[old]
        out_node_i[head, PLAYER] = node_i[old, PLAYER]
        out_node_v[head] = node_v[old]
        k = node_i[old, COUNT]
        out_node_i[head, COUNT] = k
        out_node_i[head, FIRST] = edges if k >= 0 else 0
        for j in range(max(k, 0)):
            e = node_i[old, FIRST] + j
            out_edge_i[edges, :] = edge_i[e]
            out_edge_f[edges, :] = edge_f[e]
            if edge_i[e, CHILD] >= 0:
                order[tail] = edge_i[e, CHILD]
                out_edge_i[edges, CHILD] = tail
                tail += 1
            edges += 1
        head += 1
    out = np.empty(2, dtype=np.int64)
    out[0] = tail
    out[1] = edges
    return out
