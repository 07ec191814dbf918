"""``NetInference``: the forward pass of a ``PatchworkNet`` for search, from game states, with the
per-call overhead cut (``patchwork_env.players.az_network.NetEvaluator`` uses it).

It gives the same masked logits and values as ``net(obs, mask, prior)`` (``network.net_inputs``)
up to float rounding, computed differently:

* the legal mask and the observation come from one compiled pass per state
  (``observation.legal_mask_and_observe_into``), into buffers kept between calls;
* the convolutional trunk runs in torch (channels-last, no autograd); everything else runs in
  numpy on float32, whose per-operation cost on small arrays is a fraction of torch's dispatch;
* the layers reading the same input are fused into one matrix product (the value, advance and
  prior-weight layers on the pooled features; the 1x1 projection and the leather head on the
  trunk; the slot layers, with the slot one-hot folded into per-slot biases);
* the buy head's index work (placement tables, geometry counts, the per-slot log-sum-exp over
  contiguous segments of the sorted legal buys) is plain numpy indexing;
* the greedy prior's terms are taken at the legal actions only.

The weights are read from the network at construction and read again whenever a parameter has
changed in place (an optimizer step, ``load_state_dict``), so a network that trains between
calls is always evaluated with its current weights.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from patchwork_env.core import rules
from patchwork_env.core.bitboard import BOARD, CELLS
from patchwork_env.core.jit import jit
from patchwork_env.core.validate import check_state_rows
from patchwork_env.envs import observation
from patchwork_env.envs.observation import legal_mask_and_observe_into
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, NUM_FEATURES, action_features_batch
from patchwork_env.players.network import (
    _IDENTITY_FEATURES,
    GROUP_BOUNDS,
    MASK_VALUE,
    MAX_BORDER,
    MAX_COVER,
    NUM_BUY,
    PatchworkNet,
    border_counts,
)

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


@jit
def _masks_and_observations(states: I64, masks: npt.NDArray[np.bool_], obs: F32) -> None:
    for i in range(states.shape[0]):
        legal_mask_and_observe_into(states[i], masks[i], obs[i])


@jit
def _placement_inputs(
    obs: F32,
    feats: F32,
    edge: F32,
    rows: I64,
    acts: I64,
    templates: F32,
    identity: I64,
    cells: I64,
    touching: F32,
    border_size: F32,
    geometry: bool,
    out: F32,
) -> None:
    """For each legal buy ``(rows[m], acts[m])``: ``out[m]`` = the trunk features ``feats`` (B, 81, F)
    summed over the cells the patch would cover, then over its outside neighbours (``edge`` for an
    off-board one), then (``geometry``) ``PatchworkNet._geometry``'s three counts. The patch in each
    market slot is matched from its circle features against ``templates``, as
    ``PatchworkNet.patch_ids`` does."""
    b, f = feats.shape[0], feats.shape[2]
    num_slots = rules.MARKET_SIZE
    width = observation.CIRCLE_FEATURES
    patches = np.zeros((b, num_slots), dtype=np.int64)
    for r in range(b):
        for s in range(num_slots):
            base = observation.OBS_SCALARS_END + s * width
            best, best_d = 0, np.inf
            for p in range(templates.shape[0]):
                d = 0.0
                for j in range(identity.shape[0]):
                    d += abs(obs[r, base + identity[j]] - templates[p, j])
                if d < best_d:
                    best, best_d = p, d
            patches[r, s] = best
    out[:] = 0.0
    for m in range(rows.shape[0]):
        r, a = rows[m], acts[m]
        slot = a // rules.SLOT_ACTIONS
        o = a % rules.SLOT_ACTIONS // CELLS
        anchor = a % CELLS
        p = patches[r, slot]
        for k in range(MAX_COVER + MAX_BORDER):
            c = cells[p, o, anchor, k]
            at = 0 if k < MAX_COVER else f
            if c < CELLS:
                for j in range(f):
                    out[m, at + j] += feats[r, c, j]
            elif c == CELLS + 1:
                for j in range(f):
                    out[m, at + j] += edge[j]
        if geometry:
            isolated, narrow, contact = border_counts(
                obs[r, :CELLS], cells[p, o, anchor, MAX_COVER:], touching[p, o], border_size[p, o]
            )
            out[m, 2 * f] = isolated / 4.0
            out[m, 2 * f + 1] = narrow / 4.0
            out[m, 2 * f + 2] = contact / MAX_BORDER


@jit
def _kind_policy(logits: F32, masks: npt.NDArray[np.bool_], chosen: npt.NDArray[np.bool_], out: F32) -> None:
    """``policy.kind_policy`` of masked logits: ``chosen`` True at each legal kind's most probable
    placement, ``out`` the kind's whole log-probability there (``MASK_VALUE`` elsewhere)."""
    bounds = np.array(GROUP_BOUNDS)
    for i in range(logits.shape[0]):
        top = -np.inf
        for a in range(logits.shape[1]):
            if masks[i, a] and logits[i, a] > top:
                top = logits[i, a]
        total = 0.0
        for a in range(logits.shape[1]):
            if masks[i, a]:
                total += np.exp(logits[i, a] - top)
        log_z = top + np.log(total)
        for a in range(logits.shape[1]):
            chosen[i, a] = False
            out[i, a] = MASK_VALUE
        for g in range(len(bounds) - 1):
            best, best_a = -np.inf, -1
            for a in range(bounds[g], bounds[g + 1]):
                if masks[i, a] and logits[i, a] > best:
                    best, best_a = logits[i, a], a
            if best_a < 0:
                continue
            mass = 0.0
            for a in range(bounds[g], bounds[g + 1]):
                if masks[i, a]:
                    mass += np.exp(logits[i, a] - best)
            chosen[i, best_a] = True
            out[i, best_a] = best + np.log(mass) - log_z


def _np(t: torch.Tensor) -> F32:
    out: F32 = np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float32)
    return out


class NetInference:
    """Masked logits (B, 2026), legal masks and values (B,) of game states, as ``PatchworkNet``
    computes them from ``network.net_inputs`` (see the module docstring)."""

    def __init__(self, net: PatchworkNet) -> None:
        self.net = net
        self._key: tuple[int, ...] = ()
        self._params: list[torch.nn.Parameter] = []
        self._capacity = 0
        self._load()

    # --- weights -----------------------------------------------------------------------------------
    def _version(self) -> tuple[int, ...]:
        return tuple(p._version for p in self._params)

    def _load(self) -> None:
        """Copy (and fuse) the network's weights."""
        net, cfg = self.net, self.net.config
        self._params = list(net.parameters())
        self._key = self._version()
        self.cfg = cfg
        h = cfg.hidden
        with torch.no_grad():
            self.embed = [_dense_weights(net.embed[0]), _dense_weights(net.embed[2])]
            self.film = _dense_weights(net.film)
            cl = torch.channels_last
            stem_w, stem_b = _weight_bias(net.stem)
            self.stem = (stem_w.contiguous(memory_format=cl), _np(stem_b))
            self.blocks = []
            for block in net.blocks:
                w1, b1 = _weight_bias(block.conv1)
                w2, b2 = _weight_bias(block.conv2)
                self.blocks.append((w1.contiguous(memory_format=cl), b1, w2.contiguous(memory_format=cl), b2))
            # the layers reading the pooled features, one product: value, advance, prior weights, ...
            pooled_layers = [net.value[0], net.advance[0]]
            if net.uses_prior:
                pooled_layers.append(net.prior_weights)
                if cfg.group_scale:
                    pooled_layers.append(net.group_scale)
                if cfg.kind_weights:
                    pooled_layers.append(net.kind_weights)
            self.pool = _dense_weights(*pooled_layers)
            self.value_out = _dense_weights(net.value[2])
            self.advance_out = _dense_weights(net.advance[2])
            self.prior_base = _np(net.get_buffer("prior_base")) if net.uses_prior else np.zeros(0, np.float32)
            self.edge = _np(net.edge)
            # 1x1 projection and leather head over the trunk, one product
            f = cfg.head_features
            (pw, pb), (lw, lb) = _weight_bias(net.project), _weight_bias(net.leather)
            self.proj = (torch.cat([pw.view(f, -1), lw.view(1, -1)]).t().contiguous(), torch.cat([pb, lb]))
            # the slot layers: slot_bias (D), slot_logit (1), slot_mlp's hidden (K); input
            # [embedding (H), the slot's circle features (31), one-hot slot (3)]
            slot_layers = [net.slot_bias, net.slot_logit] + ([net.slot_mlp[0]] if cfg.kind_hidden else [])
            w = torch.cat([_weight_bias(m)[0] for m in slot_layers]).t()
            b = torch.cat([_weight_bias(m)[1] for m in slot_layers])
            nf = observation.CIRCLE_FEATURES
            zero = torch.zeros_like(b)
            self.slot_emb = (w[:h].contiguous(), zero)
            self.slot_feat = (w[h : h + nf].contiguous(), zero)
            self.slot_const = _np(w[h + nf :] + b)  # (3, out): bias + the one-hot slot's column
            if cfg.kind_hidden:
                self.slot_mlp_out = _dense_weights(net.slot_mlp[2])
            self.place_in = _dense_weights(net.place_in)
            self.place_out = _dense_weights(net.place_out)
        self.templates = _np(net.templates)
        self.identity = np.array(_IDENTITY_FEATURES, dtype=np.int64)
        self.placement_cells = net.placement_cells.numpy()
        self.border_touching = net.border_touching.numpy()
        self.border_size = net.border_size.numpy()

    def _buffers(self, b: int) -> None:
        if b <= self._capacity:
            return
        self._capacity = max(b, 2 * self._capacity)
        n = self._capacity
        self._obs = np.zeros((n, observation.OBS_DIM), dtype=np.float32)
        self._masks = np.zeros((n, rules.NUM_ACTIONS), dtype=np.bool_)
        self._prior = np.zeros((n, rules.NUM_ACTIONS, NUM_FEATURES), dtype=np.float32) if self.net.uses_prior else None
        self._weights = np.asarray(DEFAULT_WEIGHTS, dtype=np.float64)

    # --- the forward pass --------------------------------------------------------------------------
    def __call__(self, states: I64) -> tuple[npt.NDArray[np.bool_], F32, F32]:
        """Legal masks (B, 2026), masked logits (B, 2026; ``MASK_VALUE`` where illegal) and
        values (B,) of unfinished game states (rows), each from its mover's seat."""
        states, obs, masks = self._inputs(states)
        prior = None
        if self._prior is not None:
            prior = self._prior[: len(states)]
            action_features_batch(states, masks, self._weights, prior)
        return masks.copy(), *self._forward(obs, masks, prior)

    def values(self, states: I64) -> F32:
        """Values (B,) alone of unfinished game states, each from its mover's seat, as
        ``PatchworkNet.values`` gives them (no policy head, no prior)."""
        _, obs, _ = self._inputs(states)
        _, _, heads = self._body(obs)
        h = self.cfg.hidden
        return _linear(np.maximum(heads[:, :h], 0.0), *self.value_out)[:, 0]

    def _inputs(self, states: I64) -> tuple[I64, F32, npt.NDArray[np.bool_]]:
        """The states as the kernels read them, their observations and legal masks (views of
        the kept buffers); the weights read again if the network changed."""
        states = np.ascontiguousarray(states, dtype=np.int64)
        check_state_rows(states)  # the compiled kernels below trust their input
        if self._version() != self._key:
            self._load()
        b = len(states)
        self._buffers(b)
        obs, masks = self._obs[:b], self._masks[:b]
        _masks_and_observations(states, masks, obs)
        return states, obs, masks

    def _body(self, obs: F32) -> tuple[F32, F32, F32]:
        """Embedding (B, H), trunk (B, 81, C) and the layers on the pooled features (B, ...)."""
        emb = _dense(obs[:, observation.OBS_PLANES_END :], self.embed)
        trunk = self._trunk(obs, emb)
        pooled = np.concatenate([trunk.sum(1) * np.float32(1.0 / CELLS), trunk.max(1), emb], axis=1)
        return emb, trunk, _linear(pooled, *self.pool)

    def _forward(self, obs: F32, masks: npt.NDArray[np.bool_], prior: F32 | None) -> tuple[F32, F32]:
        cfg = self.cfg
        b = len(obs)
        emb, trunk, heads = self._body(obs)
        h = cfg.hidden
        value = _linear(np.maximum(heads[:, :h], 0.0), *self.value_out)[:, 0]
        advance = _linear(np.maximum(heads[:, h : 2 * h], 0.0), *self.advance_out)[:, 0]
        at = 2 * h
        weights = kind_weights = kind_scale = None
        if prior is not None:
            weights = self.prior_base + heads[:, at : at + NUM_FEATURES]
            at += NUM_FEATURES
            if cfg.group_scale:
                kind_scale = np.exp(np.clip(heads[:, at], -5.0, 5.0))
                at += 1
            if cfg.kind_weights:
                kind_weights = weights + heads[:, at : at + NUM_FEATURES]
        proj = _linear(trunk, *self.proj)  # (B, 81, F + 1)
        feats = np.ascontiguousarray(proj[:, :, : cfg.head_features])
        f = cfg.head_features
        logits = np.full((b, rules.NUM_ACTIONS), MASK_VALUE, dtype=np.float32)
        rows, acts = np.nonzero(masks[:, :NUM_BUY])
        if len(rows):
            logits[rows, acts] = self._buy(obs, emb, feats, rows, acts, prior, weights, kind_weights, kind_scale)
        rest = np.concatenate([proj[:, :, f], advance[:, None]], axis=1)  # (B, 82)
        if prior is not None:
            assert weights is not None
            rest_prior = np.einsum("bak,bk->ba", prior[:, NUM_BUY:], weights)
            if kind_weights is not None:
                rest_prior[:, -1] = np.einsum("bk,bk->b", prior[:, -1], kind_weights)
            if kind_scale is not None:
                rest_prior[:, -1] *= kind_scale
            rest += rest_prior
        tail = logits[:, NUM_BUY:]
        legal = masks[:, NUM_BUY:]
        tail[legal] = rest[legal]
        return logits, value.astype(np.float32)

    def _trunk(self, obs: F32, emb: F32) -> F32:
        """(B, 81, C) the trunk after the residual blocks, cells in row-major order."""
        b = len(obs)
        film = _linear(emb, *self.film)
        planes = torch.from_numpy(obs[:, : observation.OBS_PLANES_END]).reshape(b, observation.N_PLANES, BOARD, BOARD)
        planes = planes.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode():
            w, bias = self.stem
            if b == 1:  # the film term is then a per-channel bias
                x = F.conv2d(planes, w, torch.from_numpy(bias + film[0]), padding=1).relu_()
            else:
                x = F.conv2d(planes, w, torch.from_numpy(bias), padding=1)
                x = x.add_(torch.from_numpy(film)[:, :, None, None]).relu_()
            for w1, b1, w2, b2 in self.blocks:
                y = F.conv2d(x, w1, b1, padding=1).relu_()
                x = F.conv2d(y, w2, b2, padding=1).add_(x).relu_()
            out: F32 = x.permute(0, 2, 3, 1).reshape(b, CELLS, -1).numpy()
        return out

    def _buy(
        self,
        obs: F32,
        emb: F32,
        feats: F32,
        rows: I64,
        acts: I64,
        prior: F32 | None,
        weights: F32 | None,
        kind_weights: F32 | None,
        kind_scale: F32 | None,
    ) -> F32:
        """Logits of the legal buys ``(rows, acts)`` (sorted by row, then action)."""
        cfg = self.cfg
        b = len(obs)
        slot = acts // rules.SLOT_ACTIONS
        market = obs[:, observation.MARKET_SLICE].reshape(b, rules.MARKET_SIZE, observation.CIRCLE_FEATURES)
        f = cfg.head_features
        summed = np.empty((len(rows), 2 * f + (3 if cfg.geometry else 0)), dtype=np.float32)
        _placement_inputs(
            obs, feats, self.edge, rows, acts, self.templates, self.identity, self.placement_cells,
            self.border_touching, self.border_size, cfg.geometry, summed,
        )  # fmt: skip
        # slot layers: per (game, slot), then taken at each buy's (row, slot)
        slot_out = _linear(emb, *self.slot_emb)[:, None, :] + _linear(market, *self.slot_feat) + self.slot_const
        d = cfg.head_hidden
        per_buy = slot_out[rows, slot]  # (M, out)
        hidden = np.maximum(_linear(summed, *self.place_in) + per_buy[:, :d], 0.0)
        place = _linear(hidden, *self.place_out)[:, 0]
        slot_logits = per_buy[:, d]
        if cfg.kind_hidden:
            slot_logits = slot_logits + _linear(np.maximum(per_buy[:, d + 1 :], 0.0), *self.slot_mlp_out)[:, 0]
        starts, segment = _segments(rows * rules.MARKET_SIZE + slot)
        if prior is not None:
            assert weights is not None
            terms = prior[rows, acts]  # (M, 9)
            buy_prior = np.einsum("mk,mk->m", terms, weights[rows])
            place = place + buy_prior
            kind_prior = buy_prior if kind_weights is None else np.einsum("mk,mk->m", terms, kind_weights[rows])
            slot_prior = _segment_logsumexp(kind_prior, starts, segment)
            slot_logits = slot_logits + (slot_prior if kind_scale is None else kind_scale[rows] * slot_prior)
        out: F32 = slot_logits + place - _segment_logsumexp(place, starts, segment)
        return out


def _weight_bias(layer: object) -> tuple[torch.Tensor, torch.Tensor]:
    """A linear or convolution layer's weight and bias, detached."""
    assert isinstance(layer, torch.nn.Linear | torch.nn.Conv2d) and layer.bias is not None
    return layer.weight.detach(), layer.bias.detach()


def _dense_weights(*layers: object) -> tuple[torch.Tensor, torch.Tensor]:
    """``(W^T, b)`` of linear layers reading the same input, their outputs side by side."""
    pairs = [_weight_bias(m) for m in layers]
    weights = torch.cat([w for w, _ in pairs])
    return weights.t().contiguous(), torch.cat([b for _, b in pairs])


def _linear(x: F32, w: torch.Tensor, b: torch.Tensor) -> F32:
    """``x @ w + b`` over the last axis, by torch (its thread setting; numpy's BLAS would start
    threads of its own on the larger batches)."""
    flat = torch.from_numpy(x).reshape(-1, x.shape[-1])
    out: F32 = torch.addmm(b, flat, w).numpy().reshape(*x.shape[:-1], w.shape[1])
    return out


def _dense(x: F32, layers: list[tuple[torch.Tensor, torch.Tensor]]) -> F32:
    """An MLP of ReLU layers (``(W^T, b)`` pairs), ReLU after every layer."""
    for w, b in layers:
        x = np.maximum(_linear(x, w, b), 0.0)
    return x


def _segments(group: I64) -> tuple[I64, I64]:
    """Start of each run of equal values of a non-decreasing ``group``, and each element's run."""
    new = np.empty(len(group), dtype=np.bool_)
    new[0] = True
    np.not_equal(group[1:], group[:-1], out=new[1:])
    return np.flatnonzero(new), np.cumsum(new) - 1


def _segment_logsumexp(values: F32, starts: I64, segment: I64) -> F32:
    """log-sum-exp of ``values`` within each segment, returned per element."""
    top = np.maximum.reduceat(values, starts)
    total = np.add.reduceat(np.exp(values - top[segment]), starts)
    out: F32 = (top + np.log(total))[segment]
    return out


def kind_policy_np(logits: F32, masks: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.bool_], F32]:
    """``policy.kind_policy`` on masked logits, compiled: True at each legal kind's most probable
    placement, with the kind's whole log-probability there (``MASK_VALUE`` elsewhere)."""
    chosen = np.empty(masks.shape, dtype=np.bool_)
    out = np.empty(logits.shape, dtype=np.float32)
    _kind_policy(logits, masks, chosen, out)
    return chosen, out


def log_softmax_np(logits: F32) -> F32:
    top = logits.max(1, keepdims=True)
    shifted = logits - top
    out: F32 = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    return out
