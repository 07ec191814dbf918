"""The policy-value network (``PatchworkNet``) that every trainer trains and every network player plays.

Input: the engine's flat observation (``patchwork_env.envs.observation.observe_into``, from the acting seat)::

    [0, 405)      5 quilt planes of 9x9: own quilt, opponent quilt, and for each market slot the
                  cells its patch could cover on the own quilt
    [405, 429)    24 scalars (positions, buttons, income, distances, bonus state, ...)
    [429, 1452)   33 circle entries of 31 features (present, cost, time, buttons, area,
                  affordable, 5x5 shape), slot 0 first

Layout::

    planes (5, 9, 9) --conv stem--(+ per-channel bias from the embedding)--res blocks--> trunk (C, 9, 9)
    scalars + circle --MLP--> embedding (H)

    buy logits, 24 planes of 9x9, one per (market slot, orientation): for the slot's patch in that
        orientation with its box's top-left at (row, col), sum F projected trunk channels over the
        cells it would cover and, separately, over its 4-neighbours outside it (off-board
        neighbours count a learned edge vector); add a slot bias (from the embedding and the
        slot's own features); a small MLP gives the logit
    leather logits, 1 plane of 9x9: a 1x1 convolution of the trunk
    advance logit and value: MLPs over [mean and max of the trunk, embedding]

    optional greedy prior (``NetConfig.prior_scale > 0``): each legal action's logit also gets
        sum_k weight_k * term_k, the 9 terms of greedy's one-ply value of the action relative to
        greedy's choice (``patchwork_env.players.heuristic.greedy_prior``, passed to ``forward`` by the caller),
        weighted by prior_scale x greedy's weights + a learned linear function of the pooled
        features (zero at start): the untrained policy is a softened greedy, training reweighs it

so ``logits[:2025].reshape(25, 9, 9)`` is the public action encoding. The patch in each market
slot is recovered from its circle features (matched against the 33 patches as the engine itself
observes them). With a mask, buy logits are computed for legal buys only (about 80 per decision
instead of 1,944): that is most of the network's speed. Illegal logits get ``MASK_VALUE`` (zero
probability); entropy is over legal actions only; masks are bool tensors.

This ``forward`` is the network's one definition. Two other forms exist, each tested against it:
``players.inference.NetInference``, the search's forward pass (numpy around torch's trunk, a
fraction of the per-call cost at small batches; ``az`` uses it unless ``fast=0``;
``tests/test_inference.py``), and the tests' dense ``ReferenceNet``
(``tests/test_network_reference.py``), the plain formulation whose losses and gradients this one's
sparse prior, compiled geometry and channels-last convolutions must reproduce.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn

from patchwork_env.core import rules
from patchwork_env.core.bitboard import BOARD, CELLS, MAX_CELLS, NUM_ORIENTATIONS, orient
from patchwork_env.core.jit import jit
from patchwork_env.core.patches import NUM_PATCHES, PATCHES
from patchwork_env.core.state import new_game
from patchwork_env.envs import observation
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, NUM_FEATURES, feature_weights, greedy_prior
from patchwork_env.players.heuristic import GROUP_BOUNDS as GROUP_BOUNDS  # re-exported: the network's groups
from patchwork_env.players.heuristic import GROUP_OF_ACTION as GROUP_OF_ACTION
from patchwork_env.players.net_config import NetConfig

NUM_ACTIONS = rules.NUM_ACTIONS
NUM_BUY = rules.LEATHER_BASE  # 1944 buy actions = 24 planes of 81
MASK_VALUE = -1e8
MAX_COVER = MAX_CELLS  # cells of the largest patch
MAX_BORDER = 12  # most 4-neighbours outside any oriented patch
_ZERO_ROW = CELLS  # gather index of a zero feature row (padding)
_EDGE_ROW = CELLS + 1  # gather index of the learned off-board vector
_IDENTITY_FEATURES = [1, 2, 3, 4, *range(6, observation.CIRCLE_FEATURES)]  # all but "present" and "affordable"


# --- tables built once at import ---------------------------------------------------------------
def _patch_templates() -> torch.Tensor:
    """(33, 29) identity features of every patch, exactly as the engine writes them."""
    circle = [*range(1, NUM_PATCHES), 0]
    obs = observation.observe(new_game(circle=circle, first_player=0), 0)
    entries = observation.circle(obs)
    templates = np.zeros((NUM_PATCHES, len(_IDENTITY_FEATURES)), dtype=np.float32)
    for k, patch in enumerate(circle):
        templates[patch] = entries[k, _IDENTITY_FEATURES]
    return torch.from_numpy(templates)


def _placement_tables() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per (patch, orientation, anchor cell), (33, 8, 81, 20) gather indices: 8 covered cells then
    12 outside neighbours (``_ZERO_ROW`` pads, ``_EDGE_ROW`` stands for an off-board neighbour;
    off-board placements, never legal, cover nothing). Per (patch, orientation): (33, 8, 12) how
    many covered cells touch each outside neighbour, and (33, 8) how many outside neighbours."""
    table = np.full((NUM_PATCHES, NUM_ORIENTATIONS, CELLS, MAX_COVER + MAX_BORDER), _ZERO_ROW, dtype=np.int64)
    touching = np.zeros((NUM_PATCHES, NUM_ORIENTATIONS, MAX_BORDER), dtype=np.float32)
    border_size = np.zeros((NUM_PATCHES, NUM_ORIENTATIONS), dtype=np.float32)
    for p in PATCHES:
        for o in range(NUM_ORIENTATIONS):
            shape = orient(p.cells, o)
            cells = set(shape)
            border = sorted(
                {q for r, c in shape for q in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)) if q not in cells}
            )
            border_size[p.id, o] = len(border)
            for k, (r, c) in enumerate(border):
                touching[p.id, o, k] = sum(q in cells for q in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)))
            height = max(r for r, _ in shape) + 1
            width = max(c for _, c in shape) + 1
            for row in range(BOARD - height + 1):
                for col in range(BOARD - width + 1):
                    entry = table[p.id, o, row * BOARD + col]
                    for k, (r, c) in enumerate(shape):
                        entry[k] = (row + r) * BOARD + col + c
                    for k, (r, c) in enumerate(border):
                        rr, cc = row + r, col + c
                        on_board = 0 <= rr < BOARD and 0 <= cc < BOARD
                        entry[MAX_COVER + k] = rr * BOARD + cc if on_board else _EDGE_ROW
    return torch.from_numpy(table), torch.from_numpy(touching), torch.from_numpy(border_size)


PATCH_TEMPLATES = _patch_templates()
PLACEMENT_CELLS, BORDER_TOUCHING, BORDER_SIZE = _placement_tables()


@jit
def border_counts(
    quilt: npt.NDArray[np.float32], border: npt.NDArray[np.int64], touching: npt.NDArray[np.float32], size: float
) -> tuple[float, float, float]:
    """For one placement: the empty cells around it that it would leave with no empty neighbour
    and with one, and its edges touching filled or off-board cells. ``quilt`` (81,): 1 where
    covered; ``border`` (12,): the placement's outside neighbours as ``PLACEMENT_CELLS`` gives
    them (``_ZERO_ROW`` pads, ``_EDGE_ROW`` is off the board); ``touching`` (12,): how many of its
    covered cells touch each; ``size``: how many outside neighbours it has."""
    isolated, narrow, empties = 0.0, 0.0, 0.0
    for k in range(border.shape[0]):
        c = border[k]
        if c >= CELLS or quilt[c] != 0.0:
            continue
        row, col = c // BOARD, c % BOARD
        free = 0.0
        if row > 0 and quilt[c - BOARD] == 0.0:
            free += 1.0
        if row < BOARD - 1 and quilt[c + BOARD] == 0.0:
            free += 1.0
        if col > 0 and quilt[c - 1] == 0.0:
            free += 1.0
        if col < BOARD - 1 and quilt[c + 1] == 0.0:
            free += 1.0
        left = free - touching[k]
        empties += 1.0
        if left == 0.0:
            isolated += 1.0
        elif left == 1.0:
            narrow += 1.0
    return isolated, narrow, size - empties


@jit
def geometry_counts(
    obs: npt.NDArray[np.float32],
    rows: npt.NDArray[np.int64],
    cells: npt.NDArray[np.int64],
    patch: npt.NDArray[np.int64],
    orientation: npt.NDArray[np.int64],
    touching: npt.NDArray[np.float32],
    border_size: npt.NDArray[np.float32],
    out: npt.NDArray[np.float32],
) -> None:
    """``out[m]`` = the geometry inputs of placement ``m`` (``border_counts`` / (4, 4, 12)) on the
    own quilt of observation ``rows[m]``; ``cells`` (M, 20) are its ``PLACEMENT_CELLS`` entries."""
    for m in range(rows.shape[0]):
        p, o = patch[m], orientation[m]
        isolated, narrow, contact = border_counts(obs[rows[m]], cells[m, MAX_COVER:], touching[p, o], border_size[p, o])
        out[m, 0] = isolated / 4.0
        out[m, 1] = narrow / 4.0
        out[m, 2] = contact / MAX_BORDER


class _ResBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.conv2(F.relu(self.conv1(x))))


def _init(layer: nn.Module, std: float) -> None:
    assert isinstance(layer, nn.Linear | nn.Conv2d)
    nn.init.orthogonal_(layer.weight, std)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)


class PatchworkNet(nn.Module):
    """Masked policy logits (2026) and a value from the acting seat's observation."""

    templates: torch.Tensor
    placement_cells: torch.Tensor
    border_touching: torch.Tensor
    border_size: torch.Tensor

    def __init__(self, config: NetConfig | None = None) -> None:
        super().__init__()
        cfg = config or NetConfig()
        cfg.validate()
        self.config = cfg
        c, h, f, d = cfg.channels, cfg.hidden, cfg.head_features, cfg.head_hidden
        self.register_buffer("templates", PATCH_TEMPLATES, persistent=False)
        self.register_buffer("placement_cells", PLACEMENT_CELLS, persistent=False)
        self.register_buffer("border_touching", BORDER_TOUCHING, persistent=False)
        self.register_buffer("border_size", BORDER_SIZE, persistent=False)
        num_vector = observation.OBS_DIM - observation.OBS_PLANES_END
        self.embed = nn.Sequential(nn.Linear(num_vector, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU())
        self.stem = nn.Conv2d(observation.N_PLANES, c, 3, padding=1)
        self.film = nn.Linear(h, c)
        self.blocks = nn.Sequential(*[_ResBlock(c) for _ in range(cfg.blocks)])
        self.project = nn.Conv2d(c, f, 1)
        self.edge = nn.Parameter(torch.zeros(f))
        self.slot_bias = nn.Linear(h + observation.CIRCLE_FEATURES + rules.MARKET_SIZE, d)
        self.slot_logit = nn.Linear(h + observation.CIRCLE_FEATURES + rules.MARKET_SIZE, 1)
        if cfg.kind_hidden:
            self.slot_mlp = nn.Sequential(
                nn.Linear(h + observation.CIRCLE_FEATURES + rules.MARKET_SIZE, cfg.kind_hidden),
                nn.ReLU(),
                nn.Linear(cfg.kind_hidden, 1),
            )
        self.place_in = nn.Linear(2 * f + (3 if cfg.geometry else 0), d)
        self.place_out = nn.Linear(d, 1)
        self.leather = nn.Conv2d(c, 1, 1)
        self.advance = nn.Sequential(nn.Linear(2 * c + h, h), nn.ReLU(), nn.Linear(h, 1))
        self.value = nn.Sequential(nn.Linear(2 * c + h, h), nn.ReLU(), nn.Linear(h, 1))
        if cfg.prior_scale > 0:
            base = cfg.prior_scale * feature_weights(DEFAULT_WEIGHTS)
            self.register_buffer("prior_base", torch.tensor(base, dtype=torch.float32), persistent=False)
            self.prior_weights = nn.Linear(2 * c + h, NUM_FEATURES)
            if cfg.group_scale:
                self.group_scale = nn.Linear(2 * c + h, 1)
            if cfg.kind_weights:
                self.kind_weights = nn.Linear(2 * c + h, NUM_FEATURES)
        for layer in self.modules():
            if isinstance(layer, nn.Linear | nn.Conv2d):
                _init(layer, float(np.sqrt(2.0)))  # CleanRL's layer_init: activations keep their scale
        if cfg.prior_scale > 0:
            _init(self.prior_weights, 0.0)  # start exactly at greedy's weights
            if cfg.group_scale:
                _init(self.group_scale, 0.0)  # factor exp(0) = 1: the plain prior at start
            if cfg.kind_weights:
                _init(self.kind_weights, 0.0)  # the placement weights at start
        for out, std in (
            (self.place_out, 0.01),
            (self.slot_logit, 0.01),
            *([(self.slot_mlp[-1], 0.0)] if cfg.kind_hidden else []),  # zero at start: the same policy
            (self.leather, 0.01),
            (self.advance[-1], 0.01),
            (self.value[-1], 1.0),
        ):
            _init(out, std)
        # the convolutions' weights (and so the trunk) channels-last: their forward and backward
        # passes run faster on the CPU in that layout (about 1.3x at the learner's batch sizes)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                layer.weight.data = layer.weight.data.contiguous(memory_format=torch.channels_last)

    def patch_ids(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, 3) patch id in each market slot, matched from its circle features (any id if empty)."""
        ident = observation.market(obs)[:, :, _IDENTITY_FEATURES]
        return (ident.unsqueeze(2) - self.templates).abs().sum(-1).argmin(-1)

    def _body(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Embedding (B, H), trunk (B, C, 9, 9) and pooled features (B, 2C + H)."""
        emb = self.embed(observation.vector(obs))
        planes = observation.planes(obs).contiguous(memory_format=torch.channels_last)
        trunk = self.blocks(F.relu(self.stem(planes) + self.film(emb)[:, :, None, None]))
        pooled = torch.cat([trunk.mean((2, 3)), trunk.amax((2, 3)), emb], dim=1)
        return emb, trunk, pooled

    def pooled(self, obs: torch.Tensor) -> torch.Tensor:
        """The trunk's pooled features (B, 2C + H), the input of the value head (``self.value``)."""
        return self._body(obs)[2]

    def values(self, obs: torch.Tensor) -> torch.Tensor:
        """Values (B,) alone, from any seat's observation (no policy head)."""
        values: torch.Tensor = self.value(self.pooled(obs)).squeeze(-1)
        return values

    def _geometry(
        self, obs: torch.Tensor, rows: torch.Tensor, cells: torch.Tensor, patch: torch.Tensor, orientation: torch.Tensor
    ) -> torch.Tensor:
        """(M, 3) exact counts per placement (see ``NetConfig.geometry``), scaled to about [0, 1]:
        a function of the observation alone (no gradient), computed by a compiled kernel."""
        out = np.empty((len(rows), 3), dtype=np.float32)
        geometry_counts(
            np.ascontiguousarray(obs.detach().numpy()), rows.numpy(), cells.numpy(), patch.numpy(),
            orientation.numpy(), self.border_touching.numpy(), self.border_size.numpy(), out,
        )  # fmt: skip
        return torch.from_numpy(out)

    def _prior_logits(
        self,
        prior: torch.Tensor,
        rows: torch.Tensor,
        acts: torch.Tensor,
        weights: torch.Tensor,
        kind_weights: torch.Tensor | None,
        prior_rows: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The prior's logits ``sum_k weights_k * prior_k`` where ``forward`` uses them, not over
        all 2,026 actions: at the buys ``(rows, acts)`` (M,), there as the choice of kind weighs
        them (``kind_weights``; M,), at the leather cells and advance (B, 82), and advance as the
        choice of kind weighs it (B, 1). ``prior_rows``: see ``forward``."""
        terms = prior[rows if prior_rows is None else prior_rows[rows], acts].to(weights.dtype)  # (M, 9)
        buy = (terms * _gather_rows(weights, rows)).sum(-1)
        kind = buy if kind_weights is None else (terms * _gather_rows(kind_weights, rows)).sum(-1)
        tail = (prior[:, NUM_BUY:] if prior_rows is None else prior[prior_rows, NUM_BUY:]).to(weights.dtype)
        rest = torch.einsum("bak,bk->ba", tail, weights)
        if kind_weights is None:
            return buy, kind, rest, rest[:, -1:]
        return buy, kind, rest, (tail[:, -1] * kind_weights).sum(-1, keepdim=True)

    @property
    def uses_prior(self) -> bool:
        """True if ``forward`` needs ``prior=patchwork_env.players.heuristic.greedy_prior(states, masks)``."""
        return self.config.prior_scale > 0

    def forward(
        self,
        obs: torch.Tensor,
        mask: torch.Tensor | None = None,
        prior: torch.Tensor | None = None,
        prior_rows: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (B, 2026) and values (B,). With a bool ``mask`` illegal logits are
        ``MASK_VALUE`` and buy logits are computed for legal buys only; without one, every buy
        logit is computed (off-board buys get a meaningless but finite value). ``prior`` (B, 2026, 9):
        required exactly when the net was built with ``prior_scale > 0`` (see ``NetConfig``); float32
        or float16 (as the rollout stores it: only the entries used are converted). ``prior_rows``
        (B,): the batch's rows of a larger ``prior`` (N, 2026, 9), so that a minibatch reads its
        prior where the rollout stored it instead of copying it (``agents.ppo``)."""
        b = obs.shape[0]
        cfg = self.config
        if self.uses_prior != (prior is not None):
            raise ValueError(
                "this network was built with prior_scale > 0: pass "
                "prior=patchwork_env.players.heuristic.greedy_prior(states, masks)"
                if self.uses_prior
                else "this network has no greedy prior (prior_scale = 0): do not pass prior"
            )
        if mask is not None and tuple(mask.shape) != (b, NUM_ACTIONS):
            raise ValueError(f"mask must have shape ({b}, {NUM_ACTIONS}), got {tuple(mask.shape)}")
        if prior_rows is not None and (prior is None or prior_rows.shape != (b,)):
            raise ValueError(f"prior_rows must be given with prior and have shape ({b},)")
        rows_of_prior = b if prior_rows is None or prior is None else prior.shape[0]
        if prior is not None and (prior.shape[1:] != (NUM_ACTIONS, NUM_FEATURES) or prior.shape[0] != rows_of_prior):
            expected = (
                f"({b}, {NUM_ACTIONS}, {NUM_FEATURES})" if prior_rows is None else f"(N, {NUM_ACTIONS}, {NUM_FEATURES})"
            )
            raise ValueError(f"prior must have shape {expected}, got {tuple(prior.shape)}")
        emb, trunk, pooled = self._body(obs)
        value = self.value(pooled).squeeze(-1)
        weights = None  # (B, 9): the state-dependent weighting of greedy's value terms
        kind_scale = None  # (B,) the prior's weight in the choice of move kind (NetConfig.group_scale)
        kind_weights = None  # (B, 9) the weighting as the choice of kind sees it (NetConfig.kind_weights)
        if prior is not None:  # the prior's logits are sum_k weights_k * terms_k, taken where needed
            weights = self.prior_base + self.prior_weights(pooled)
            if cfg.group_scale:
                kind_scale = self.group_scale(pooled).squeeze(-1).clamp(-5.0, 5.0).exp()
            if cfg.kind_weights:
                kind_weights = weights + self.kind_weights(pooled)

        # buy head over (game, action) pairs: the legal ones, or all of them
        if mask is None:
            rows = torch.arange(b).repeat_interleave(NUM_BUY)
            acts = torch.arange(NUM_BUY).repeat(b)
        else:
            rows, acts = mask[:, :NUM_BUY].nonzero(as_tuple=True)
        slot = acts // rules.SLOT_ACTIONS
        orientation = acts % rules.SLOT_ACTIONS // CELLS
        patch = self.patch_ids(obs)[rows, slot]
        # (M, 20): row ``patch * SLOT_ACTIONS + orientation * CELLS + anchor`` of the flat table
        cells = self.placement_cells.view(-1, self.placement_cells.shape[-1]).index_select(
            0, patch * rules.SLOT_ACTIONS + acts % rules.SLOT_ACTIONS
        )
        feats = self.project(trunk).flatten(2).transpose(1, 2)  # (B, 81, F)
        table = torch.cat([feats, feats.new_zeros(b, 1, cfg.head_features), self.edge.expand(b, 1, -1)], dim=1)
        flat = table.reshape(b * (CELLS + 2), cfg.head_features)
        index = rows.unsqueeze(1) * (CELLS + 2) + cells  # (M, 20) rows of ``flat``
        cover = _gather_sum(flat, index[:, :MAX_COVER])  # (M, F): over the covered cells
        border = _gather_sum(flat, index[:, MAX_COVER:])  # (M, F): over the cells around
        summed = torch.cat([cover, border], dim=1)
        if cfg.geometry:
            summed = torch.cat([summed, self._geometry(obs, rows, cells, patch, orientation)], dim=1)
        slot_feats = observation.market(obs)
        slot_in = torch.cat(
            [
                emb.unsqueeze(1).expand(b, rules.MARKET_SIZE, -1),
                slot_feats.reshape(b, rules.MARKET_SIZE, -1),
                torch.eye(rules.MARKET_SIZE, dtype=obs.dtype).expand(b, -1, -1),
            ],
            dim=-1,
        )
        group = rows * rules.MARKET_SIZE + slot  # (M,) the (game, slot) of each buy
        bias = _gather_rows(self.slot_bias(slot_in).reshape(b * rules.MARKET_SIZE, -1), group)  # (M, D)
        place = self.place_out(F.relu(self.place_in(summed) + bias)).squeeze(-1)
        # two-level policy in one softmax: logit = slot logit + log-softmax of the placement among
        # the slot's legal placements, so p(buy slot s here) = p(slot s) * p(here | slot s)
        slot_out = self.slot_logit(slot_in)
        if cfg.kind_hidden:
            slot_out = slot_out + self.slot_mlp(slot_in)
        slot_logits = _gather_rows(slot_out.reshape(-1), group)
        if prior is not None and weights is not None:
            # with the prior: placement logit + prior logit inside the slot, and the slot's logit +
            # log-sum-exp of its prior logits, so a zero residual gives logit = prior logit
            buy_prior, kind_prior, rest_prior, advance = self._prior_logits(
                prior, rows, acts, weights, kind_weights, prior_rows
            )
            place = place + buy_prior
            slot_prior = _group_logsumexp(kind_prior, group, b * rules.MARKET_SIZE)
            if kind_scale is not None:
                slot_prior = _gather_rows(kind_scale, rows) * slot_prior
            slot_logits = slot_logits + slot_prior
        buy_logits = slot_logits + place - _group_logsumexp(place, group, b * rules.MARKET_SIZE)

        fill = MASK_VALUE if mask is not None else 0.0
        buy = obs.new_full((b, NUM_BUY), fill).index_put((rows, acts), buy_logits)
        rest = torch.cat([self.leather(trunk).flatten(1), self.advance(pooled)], dim=1)
        if prior is not None:
            if kind_scale is not None:
                advance = kind_scale.unsqueeze(1) * advance
            # advance is a kind of its own (leather is never a choice of kind)
            rest_prior = torch.cat([rest_prior[:, :-1], advance], dim=1)
            rest = rest + rest_prior
        logits = torch.cat([buy, rest], dim=1)
        if mask is not None:
            logits = apply_mask(logits, mask)
        return logits, value


@jit
def gather_rows_sum(table: npt.NDArray[Any], index: npt.NDArray[np.int64], out: npt.NDArray[Any]) -> None:
    """``out[m] = sum_k table[index[m, k]]``, the rows added in the order of ``k``. An index outside
    ``table`` raises IndexError (the loops are compiled without bounds checks otherwise)."""
    n = table.shape[0]
    for m in range(index.shape[0]):
        for j in range(table.shape[1]):
            out[m, j] = 0.0
        for k in range(index.shape[1]):
            r = index[m, k]
            if r < 0 or r >= n:
                raise IndexError("gather_rows_sum: an index is outside the table")
            for j in range(table.shape[1]):
                out[m, j] += table[r, j]


@jit
def scatter_rows_add(grad: npt.NDArray[Any], index: npt.NDArray[np.int64], out: npt.NDArray[Any]) -> None:
    """``out[index[m, k]] += grad[m]`` for every ``m`` and ``k``, in that order (the transpose of
    ``gather_rows_sum``: its backward). An index outside ``out`` raises IndexError."""
    n = out.shape[0]
    for m in range(index.shape[0]):
        for k in range(index.shape[1]):
            r = index[m, k]
            if r < 0 or r >= n:
                raise IndexError("scatter_rows_add: an index is outside the table")
            for j in range(grad.shape[1]):
                out[r, j] += grad[m, j]


class _GatherSum(torch.autograd.Function):
    """``table[index].sum(1)`` for an (M, K) ``index`` full of repeats (each game's rows are
    gathered hundreds of times by the buy head), by two compiled loops: the forward
    ``gather_rows_sum`` (equal to the plain formula within float rounding: the order of the sum
    over ``k`` may differ), the backward ``scatter_rows_add`` (bit for bit the accumulating
    ``index_put_`` of advanced indexing on one thread, and the same on any number of threads).
    Each is several times faster than torch's ``index_select`` + sum and ``index_put_``, which
    materialise the (M, K, F) gather and sort the repeats."""

    @staticmethod
    def forward(ctx: Any, table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        index = index.contiguous()
        ctx.save_for_backward(index)
        ctx.table_shape = table.shape
        source = table.detach().contiguous()
        out = source.new_empty(index.shape[0], table.shape[1])
        gather_rows_sum(source.numpy(), index.numpy(), out.numpy())
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (index,) = ctx.saved_tensors
        grad = grad.contiguous()
        out = grad.new_zeros(ctx.table_shape)
        scatter_rows_add(grad.numpy(), index.numpy(), out.numpy())
        return out, None


def _gather_sum(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index].sum(1)`` (M, F) for a 2-D ``table`` (N, F) and ``index`` (M, K)."""
    out: torch.Tensor = _GatherSum.apply(table, index)  # type: ignore[no-untyped-call]  # torch leaves apply untyped
    return out


def _gather_rows(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index]`` (M, *rest) for an (M,) ``index``: ``_gather_sum`` with one row each."""
    flat = table.reshape(table.shape[0], -1)
    return _gather_sum(flat, index.unsqueeze(1)).view(index.shape[0], *table.shape[1:])


def _group_logsumexp(values: torch.Tensor, group: torch.Tensor, groups: int) -> torch.Tensor:
    """log-sum-exp of ``values`` within each group, returned per element (M,)."""
    top = values.new_full((groups,), float("-inf")).scatter_reduce(0, group, values, "amax").detach()
    top_each = _gather_rows(top, group)
    total = values.new_zeros(groups).index_add(0, group, (values - top_each).exp())
    return top_each + _gather_rows(total, group).log()


# --- masked distribution helpers ---------------------------------------------------------------
def apply_mask(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Illegal logits get ``MASK_VALUE`` (zero probability after softmax); ``mask`` is bool."""
    return logits.masked_fill(~mask, MASK_VALUE)


def legal_entropy(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Entropy over legal actions only (illegal terms are exactly zero, never NaN)."""
    return -torch.where(mask, legal_probs(logp, mask) * logp, torch.zeros_like(logp)).sum(-1)


def legal_probs(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logp.exp()`` on legal actions, 1 elsewhere (to be masked out by the caller): the same
    values and gradients where legal, without exponentiating ``MASK_VALUE``-sized log-probabilities
    (5x slower on the CPU than ordinary numbers: the learner's (B, 2026) tensors are mostly those)."""
    return logp.masked_fill(~mask, 0.0).exp()


def sample_actions(
    masked_logits: torch.Tensor, generator: torch.Generator | None = None, deterministic: bool = False
) -> torch.Tensor:
    """One action per row by Gumbel-max sampling (or argmax); never an illegal action."""
    if deterministic:
        return masked_logits.argmax(-1)
    u = torch.rand(masked_logits.shape, generator=generator, dtype=masked_logits.dtype)
    gumbel = -torch.log(-torch.log(u.clamp_(1e-20, 1.0)))
    return (masked_logits + gumbel).argmax(-1)


def prior_for(net: PatchworkNet, states: np.ndarray, masks: np.ndarray) -> torch.Tensor | None:
    """The ``prior`` argument ``net`` needs for these game states (None for a net without prior)."""
    return torch.from_numpy(greedy_prior(states, masks)) if net.uses_prior else None


def net_inputs(
    net: PatchworkNet, states: npt.NDArray[np.int64]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Observation (mover's seat), legal mask and greedy-prior terms of each state, as tensors."""
    states = np.ascontiguousarray(states, dtype=np.int64)
    obs = torch.from_numpy(observation.observe_movers(states))  # first: it checks the rows the kernels below trust
    b = len(states)
    masks = np.zeros((b, rules.NUM_ACTIONS), dtype=np.bool_)
    rules.legal_mask_batch(states, masks, np.zeros(b, dtype=np.int64))
    return obs, torch.from_numpy(masks), prior_for(net, states, masks)


def count_parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


def net_from_config(data: dict[str, Any]) -> PatchworkNet:
    """A fresh net from a ``NetConfig`` dict (as stored in checkpoints), with a clear error."""
    known = set(NetConfig.__dataclass_fields__)
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown network settings {sorted(unknown)}; allowed: {sorted(known)}")
    data = {"geometry": False, **data}  # checkpoints from before the option had no geometry inputs
    return PatchworkNet(NetConfig(**data))
