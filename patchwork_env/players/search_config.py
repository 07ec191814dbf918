"""The search's settings (``SearchConfig``), apart from the search (``patchwork_env.players.batched_search``)
so that the trainers' configs and ``--help`` read them without loading the rules or the search: the
``search:`` group of ``train.exit`` and ``train.alphazero``, and the ``az`` agent spec's settings."""

from __future__ import annotations

from dataclasses import dataclass

from patchwork_env.core.bounds import above, bounded, field_problem, one_of

MAX_LEAVES = 256  # paths per game per evaluator call (``SearchConfig.leaves``)
TREE_SIMS = 3000  # az's compiled search: simulations per move unless given (about mcts:sims=1000's time)
NETWORK_SIMS = 300  # az's search with a network: simulations per move unless given
PLACEMENT_WIDTH = 2  # az's compiled search with a placement head: candidates per kind (train.alphazero's width)
MAX_WIDTH = 16  # candidates per kind at most (a node holds NUM_GROUPS * width edges)
GREEDY_PRIOR_TEMP = 20.0  # az's greedy prior: the strongest temperature measured (2, 8, 20, 50 score points)


@dataclass(frozen=True)
class SearchConfig:
    """Settings of ``BatchedSearch``: the ``search:`` group of the trainers' configs (``train.exit``,
    ``train.alphazero``) and, through the ``az`` agent spec, the agent's. Each bound beside its field
    (``patchwork_env.core.bounds``)."""

    sims: int = bounded(32, 1, 100_000)
    """Simulations per decision."""
    root: str = one_of("gumbel", "gumbel", "puct")
    """``gumbel`` (Gumbel top-k + sequential halving, target from the completed Q values) or ``puct``
    (AlphaZero's root: Dirichlet noise in self-play, visit-count target)."""
    c_puct: float = bounded(1.25, 0.0, 100.0)
    """PUCT exploration constant below the root and at a PUCT root (values are in [-1, 1])."""
    considered: int = bounded(16, 1, 2026)
    """Gumbel root: actions kept for sequential halving."""
    c_visit: float = bounded(50.0, 0.0, 1e6)
    """Gumbel root: sigma(q) = (c_visit + max visits) * c_scale * q (mctx's defaults)."""
    c_scale: float = bounded(0.1, 0.0, 1e6)
    """Gumbel root: see ``c_visit``."""
    rescale_values: bool = False
    """Gumbel root: min-max rescale the completed Q values to [0, 1] before sigma (mctx's default).
    Off here: with 16-32 simulations most Q values are single leaf evaluations, and rescaling turns
    any difference between them, noise included, into ``c_visit * c_scale`` = 5 logits. Off, Q in
    [-1, 1] maps linearly to [0, 1] (a 0.1 difference in value is 0.25 logits)."""
    dirichlet_alpha: float = above(0.3, 0.0, 1e6)
    """PUCT root in self-play: Dirichlet noise parameter."""
    dirichlet_eps: float = bounded(0.25, 0.0, 1.0)
    """PUCT root in self-play: weight of the noise in the root prior."""
    margin_weight: float = bounded(0.2, 0.0, 1.0)
    """Weight of the score margin (over 30 points) in the value of a finished game (``final_value``)."""
    expand: int = bounded(1, 1, 10_000)
    """A leaf is expanded at its ``expand``-th visit; the visits before value it alone
    (``Evaluator.values``; AlphaGo's expansion threshold). 1: at its first (AlphaZero)."""
    leaves: int = bounded(1, 1, MAX_LEAVES)
    """Paths descended per game before one evaluator call (virtual loss keeps them apart; see
    ``BatchedSearch._simulate``): the evaluator sees up to ``leaves`` positions per game per
    call. 1: one path per game per call, no virtual loss."""
    virtual_loss: float = bounded(1.0, 0.0, 2.0)
    """``leaves`` > 1: value taken from an edge's mover per path in flight through it (besides the
    one visit each path adds) until the backups; 0: a virtual visit alone."""

    def validate(self, prefix: str = "") -> None:
        """Raise ``ValueError`` naming the first setting out of its bounds (as ``<prefix><field>``)."""
        problem = field_problem(self, prefix)
        if problem:
            raise ValueError(problem)
