"""``NetConfig``: the sizes of the policy-value network (``patchwork_env.players.network``), stored
in every checkpoint so that a checkpoint rebuilds its network. Light (no torch): trainer configs
and ``--help`` read it without loading the network code."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from patchwork_env.core.bounds import bounded, field_problem

# The sizes' upper bounds are far above anything trained here (channels 32-64, blocks 1-4) and low
# enough that the largest network allowed (about 1.3 GB of float32 weights) is built in seconds, not
# hours; beyond a prior_scale of 1000 the prior is plain greedy argmax and the logits only grow.


@dataclass(frozen=True)
class NetConfig:
    """Sizes of ``PatchworkNet`` (stored in every checkpoint, so a checkpoint rebuilds its net)."""

    channels: int = bounded(32, 1, 512)
    """Channels of the convolutional trunk over the 9x9 quilt."""
    blocks: int = bounded(2, 1, 32)
    """Residual blocks (two 3x3 convolutions each) in the trunk."""
    hidden: int = bounded(128, 1, 4096)
    """Width of the MLP over the scalar and circle features, and of the value/advance MLPs."""
    head_features: int = bounded(16, 1, 256)
    """Trunk channels summed under and around each candidate placement in the buy head."""
    head_hidden: int = bounded(32, 1, 1024)
    """Hidden width of the per-placement MLP of the buy head."""
    geometry: bool = True
    """Give the buy head three exact counts per placement: empty cells it would isolate, empty
    cells it would leave with one empty neighbour, and its edges touching filled or off-board cells."""
    prior_scale: float = bounded(0.0, 0.0, 1000.0)
    """0: a plain policy. > 0: a residual policy on ``greedy``'s evaluation. Every legal action's
    logit gets ``sum_k weight_k(state) * term_k(action)``, where the terms are the 9 parts of greedy's
    one-ply value of the resulting position relative to greedy's choice (``heuristic.greedy_prior``,
    computed from the game states, so the caller passes them to ``forward``) and the weights start
    at ``prior_scale`` x greedy's own weights plus a learned, state-dependent correction (zero at
    start). So the untrained policy is ``greedy:temp=1/prior_scale``; training learns how much each
    term is worth in each position, and the rest of the network adds a residual logit."""
    group_scale: bool = False
    """With the prior: the prior's say in the choice of move *kind* (which market patch, or advance)
    is multiplied by a learned, state-dependent factor (1 at start; the prior inside a kind, i.e.
    where a patch goes, is not). Without it the kind-level logits keep the prior's full scale
    (score-point differences x ``prior_scale``), so a teacher that disagrees with greedy, or
    hesitates between two kinds, cannot be matched (``agents.distill``); older checkpoints lack it."""
    kind_weights: bool = False
    """With the prior: the choice of move kind weighs greedy's value terms with weights of its own
    (the placement weights plus a learned, state-dependent correction, zero at start), so which
    patch to buy, or whether to advance, can value buttons, time or empty cells differently from
    where a patch goes."""

    kind_hidden: int = bounded(0, 0, 4096)
    """0: the residual logit of buying from a market slot is linear in the state's embedding and
    the slot's patch features, so the state shifts the three slots alike and, without the greedy
    prior, the market's patches rank the same in every position. > 0: an MLP with this hidden width
    adds to it (zero at start), so a patch's worth can depend on the position (its income with the
    income phases left, its time cost with the distance to the end); older checkpoints have 0."""

    def to_dict(self) -> dict[str, int | bool | float]:
        return asdict(self)

    def validate(self, prefix: str = "net.") -> None:
        """Raise ``ValueError`` naming the first impossible size (as ``<prefix><field>``): every size
        is bounded, so a config or a checkpoint cannot ask for a network that does not fit in memory
        before anything is built."""
        problem = field_problem(self, prefix)
        if problem:
            raise ValueError(problem)
        for name in ("group_scale", "kind_weights"):
            if getattr(self, name) is True and not self.prior_scale > 0:
                raise ValueError(
                    f"{prefix}{name} needs prior_scale > 0 (it reweighs the greedy prior), got {self.prior_scale!r}"
                )
