"""PPO pieces for two-seat games with irregular turns: rollout storage, per-seat GAE, the update.

Storage is indexed by (vector step ``t``, game ``i``): at each step exactly one seat acts in each
game. Only the learner's decisions are trained on (in a game against a frozen opponent, one
seat; in a self-play game, both). A seat's trajectory in a game is its own decisions in order:
several own moves in a row are ordinary consecutive transitions, the opponent's moves in
between are part of the environment. When a game ends, each seat's final reward goes to that
seat's last decision in the game, whoever made the final move.

Per-seat GAE (``per_seat_gae``) walks the rollout backwards keeping, for every (game, seat),
the value and advantage of that seat's next decision and the reward waiting for it::

    delta_t = r_t + gamma * V(next own decision) - V_t        (V(next) = 0 after the game ends)
    A_t     = delta_t + gamma * lambda * A(next own decision)

A trajectory cut by the end of the rollout bootstraps from ``last_values[i, seat]``: the value
of the current position of game ``i`` seen from that seat.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from patchwork_env.players.network import NUM_ACTIONS, PatchworkNet, legal_entropy, legal_probs
from patchwork_env.players.policy import most_probable_move

F32 = npt.NDArray[np.float32]


def shaped_final_rewards(
    winner: npt.NDArray[np.int64], scores: npt.NDArray[np.int64], margin_weight: float, margin_scale: float
) -> F32:
    """(E, 2) final reward of each seat of E finished games: ``(1 - w) * (+1 win / -1 loss)
    + w * clip(own margin / margin_scale, -1, 1)``."""
    win = np.where(np.asarray(winner)[:, None] == np.arange(2), 1.0, -1.0)
    scores = np.asarray(scores, dtype=np.float64)
    shaped = np.clip((scores - scores[:, ::-1]) / margin_scale, -1.0, 1.0)
    return ((1.0 - margin_weight) * win + margin_weight * shaped).astype(np.float32)


def per_seat_gae(
    values: F32,
    actor: npt.NDArray[np.int64],
    learner: npt.NDArray[np.bool_],
    done: npt.NDArray[np.bool_],
    outcome: F32,
    last_values: F32,
    gamma: float,
    lam: float,
) -> tuple[F32, F32]:
    """Advantages and returns (both (T, N), zero where ``learner`` is False).

    values (T, N): V of the actor's observation at each step; actor (T, N): the seat that acted;
    learner (T, N): the decision is trained on; done (T, N): the game ended with this step's action;
    outcome (T, N, 2): each seat's final reward of the game that ended at this step; last_values
    (N, 2): bootstrap values of each seat after the last step.
    """
    steps, n = values.shape
    adv = np.zeros((steps, n), dtype=np.float32)
    next_value = last_values.astype(np.float32).copy()
    next_adv = np.zeros((n, 2), dtype=np.float32)
    reward = np.zeros((n, 2), dtype=np.float32)
    games = np.arange(n)
    for t in range(steps - 1, -1, -1):
        ended = done[t]
        next_value[ended] = 0.0
        next_adv[ended] = 0.0
        reward[ended] = outcome[t][ended]
        seat = actor[t]
        delta = reward[games, seat] + gamma * next_value[games, seat] - values[t]
        a = delta + gamma * lam * next_adv[games, seat]
        mine = learner[t]
        adv[t] = np.where(mine, a, 0.0)
        g, s = games[mine], seat[mine]
        next_value[g, s] = values[t][mine]
        next_adv[g, s] = a[mine]
        reward[g, s] = 0.0
    returns = np.where(learner, adv + values, 0.0).astype(np.float32)
    return adv, returns


@dataclass
class Rollout:
    """Preallocated (T, N) storage of one rollout on the vector engine."""

    obs: F32
    masks: npt.NDArray[np.bool_]
    actions: npt.NDArray[np.int64]
    logprobs: F32
    values: F32
    actor: npt.NDArray[np.int64]
    learner: npt.NDArray[np.bool_]
    done: npt.NDArray[np.bool_]
    outcome: F32
    prior: npt.NDArray[np.float16] | None = None
    """(T, N, A, 9) the learner's greedy prior terms (``patchwork_env.players.heuristic.greedy_prior``), for a net
    built with ``prior_scale > 0``; float16 holds them exactly (whole numbers below 2,048)."""

    @classmethod
    def allocate(cls, steps: int, games: int, obs_dim: int, num_actions: int, prior_features: int = 0) -> Rollout:
        return cls(
            obs=np.zeros((steps, games, obs_dim), dtype=np.float32),
            masks=np.zeros((steps, games, num_actions), dtype=np.bool_),
            actions=np.zeros((steps, games), dtype=np.int64),
            logprobs=np.zeros((steps, games), dtype=np.float32),
            values=np.zeros((steps, games), dtype=np.float32),
            actor=np.zeros((steps, games), dtype=np.int64),
            learner=np.zeros((steps, games), dtype=np.bool_),
            done=np.zeros((steps, games), dtype=np.bool_),
            outcome=np.zeros((steps, games, 2), dtype=np.float32),
            prior=np.zeros((steps, games, num_actions, prior_features), dtype=np.float16) if prior_features else None,
        )

    def learner_batch(self, advantages: F32, returns: F32) -> dict[str, torch.Tensor]:
        """The learner's decisions as flat tensors (masks stay bool)."""
        sel = self.learner
        extra = {} if self.prior is None else {"prior": torch.from_numpy(self.prior[sel])}
        return {
            **extra,
            "obs": torch.from_numpy(self.obs[sel]),
            "masks": torch.from_numpy(self.masks[sel]),
            "actions": torch.from_numpy(self.actions[sel]),
            "logprobs": torch.from_numpy(self.logprobs[sel]),
            "values": torch.from_numpy(self.values[sel]),
            "advantages": torch.from_numpy(advantages[sel]),
            "returns": torch.from_numpy(returns[sel]),
        }


@dataclass(frozen=True)
class PPOSettings:
    """The update's hyperparameters (see ``train.config.SelfPlayConfig`` for their meaning)."""

    epochs: int
    num_minibatches: int
    clip_coef: float
    clip_vloss: bool
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    target_kl: float
    anchor_coef: float = 0.0
    """Weight of ``KL(policy || start policy)`` in the loss (0: no anchor)."""
    train_policy: bool = True
    """False during the critic warm-up: only the value head's parameters are updated."""

    @classmethod
    def of(cls, cfg: Any) -> PPOSettings:
        """The settings of a trainer's config (``train.config.SelfPlayConfig``), under the same names."""
        return cls(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cls) if f.name != "train_policy"})


def start_log_probs(start: PatchworkNet, batch: dict[str, torch.Tensor], chunk: int = 1024) -> torch.Tensor:
    """(B, 2026) log-probabilities of the start policy on the batch's decisions (no gradient)."""
    out = []
    with torch.no_grad():
        for i in range(0, batch["actions"].shape[0], chunk):
            prior = batch["prior"][i : i + chunk] if "prior" in batch else None
            logits, _ = start(batch["obs"][i : i + chunk], batch["masks"][i : i + chunk], prior)
            out.append(torch.log_softmax(logits, -1))
    return torch.cat(out) if out else torch.zeros(0, NUM_ACTIONS)


def kl_to(logp: torch.Tensor, ref_logp: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """(B,) ``KL(p || ref)`` over the legal actions of each row."""
    return torch.where(masks, legal_probs(logp, masks) * (logp - ref_logp), torch.zeros_like(logp)).sum(-1)


def ppo_update(
    net: PatchworkNet,
    optimizer: torch.optim.Optimizer,
    batch: dict[str, torch.Tensor],
    settings: PPOSettings,
    generator: torch.Generator,
    start: PatchworkNet | None = None,
) -> dict[str, float]:
    """Clipped PPO over ``batch`` (log-probs recomputed with the stored masks); returns metrics
    named for TensorBoard (``losses/...``, and ``diag/...`` when the ``start`` network is given:
    how far the policy has moved from it). With ``settings.anchor_coef > 0`` the loss adds
    ``anchor_coef * KL(policy || start policy)`` (``start`` required). With
    ``settings.train_policy`` False only the value head learns (the critic warm-up)."""
    if settings.anchor_coef > 0 and start is None:
        raise ValueError("anchor_coef > 0 needs the start network")
    size = batch["actions"].shape[0]
    mb_size = max(1, size // settings.num_minibatches)
    if start is not None and settings.anchor_coef > 0:
        batch = {**batch, "start_logp": start_log_probs(start, batch)}
    value_params = set(net.value.parameters())
    clipfracs: list[float] = []
    stats = {"pg": 0.0, "v": 0.0, "ent": 0.0, "kl": 0.0, "old_kl": 0.0, "anchor": 0.0, "n": 0}
    approx_kl = 0.0
    for _ in range(settings.epochs):
        order = torch.randperm(size, generator=generator)
        for begin in range(0, size - mb_size + 1, mb_size):
            idx = order[begin : begin + mb_size]
            ret = batch["returns"][idx]
            if not settings.train_policy:  # critic warm-up: the value head alone
                v_loss = 0.5 * ((net.values(batch["obs"][idx]) - ret) ** 2).mean()
                warm_loss: torch.Tensor = settings.vf_coef * v_loss
                optimizer.zero_grad()
                warm_loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward untyped
                for p in net.parameters():
                    if p not in value_params:
                        p.grad = None  # Adam skips parameters without a gradient
                torch.nn.utils.clip_grad_norm_(net.value.parameters(), settings.max_grad_norm)
                optimizer.step()
                stats["v"] += v_loss.item()
                stats["n"] += 1
                continue
            masks = batch["masks"][idx]
            prior = batch.get("prior")  # read at the minibatch's rows, not copied (``prior_rows``)
            logits, new_value = net(batch["obs"][idx], masks, prior, None if prior is None else idx)
            logp_all = torch.log_softmax(logits, dim=-1)
            new_logp = logp_all.gather(1, batch["actions"][idx].unsqueeze(1)).squeeze(1)
            entropy = legal_entropy(logp_all, masks)
            log_ratio = new_logp - batch["logprobs"][idx]
            ratio = log_ratio.exp()
            with torch.no_grad():
                old_kl = (-log_ratio).mean().item()
                approx_kl = ((ratio - 1) - log_ratio).mean().item()
                clipfracs.append(((ratio - 1.0).abs() > settings.clip_coef).float().mean().item())
            adv = batch["advantages"][idx]
            adv = (adv - adv.mean()) / (adv.std(unbiased=False) + 1e-8)
            pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - settings.clip_coef, 1 + settings.clip_coef)).mean()
            if settings.clip_vloss:
                old_v = batch["values"][idx]
                clipped = old_v + (new_value - old_v).clamp(-settings.clip_coef, settings.clip_coef)
                v_loss = 0.5 * torch.max((new_value - ret) ** 2, (clipped - ret) ** 2).mean()
            else:
                v_loss = 0.5 * ((new_value - ret) ** 2).mean()
            ent = entropy.mean()
            loss = pg_loss - settings.ent_coef * ent + settings.vf_coef * v_loss
            if "start_logp" in batch:
                anchor = kl_to(logp_all, batch["start_logp"][idx], masks).mean()
                loss = loss + settings.anchor_coef * anchor
                stats["anchor"] += anchor.item()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), settings.max_grad_norm)
            optimizer.step()
            for key, value in (("pg", pg_loss.item()), ("v", v_loss.item()), ("ent", ent.item())):
                stats[key] += value
            stats["kl"] += approx_kl
            stats["old_kl"] += old_kl
            stats["n"] += 1
        if settings.target_kl > 0 and approx_kl > settings.target_kl:
            break
    n = max(1, int(stats["n"]))
    values, returns = batch["values"].numpy(), batch["returns"].numpy()
    var_y = float(np.var(returns))
    explained = float("nan") if var_y == 0 else 1.0 - float(np.var(returns - values)) / var_y
    metrics = {
        "losses/policy_loss": stats["pg"] / n,
        "losses/value_loss": stats["v"] / n,
        "losses/entropy": stats["ent"] / n,
        "losses/approx_kl": stats["kl"] / n,
        "losses/old_approx_kl": stats["old_kl"] / n,
        "losses/clipfrac": float(np.mean(clipfracs)) if clipfracs else 0.0,
        "losses/explained_variance": explained,
    }
    if settings.anchor_coef > 0:
        metrics["losses/anchor_kl"] = stats["anchor"] / n
    if start is not None:
        metrics.update(drift_from_start(net, start, batch, generator))
    return metrics


def drift_from_start(
    net: PatchworkNet, start: PatchworkNet, batch: dict[str, torch.Tensor], generator: torch.Generator, rows: int = 512
) -> dict[str, float]:
    """How far the policy is from the start policy on ``rows`` of the batch's decisions:
    ``diag/agree_start`` (share where both play the same most probable move, as the evaluation
    does) and ``diag/kl_to_start`` (mean ``KL(policy || start)``); ``diag/entropy`` of the policy."""
    size = batch["actions"].shape[0]
    idx = torch.randperm(size, generator=generator)[:rows]
    masks = batch["masks"][idx]
    prior = batch["prior"][idx] if "prior" in batch else None
    was_training = net.training
    net.eval()
    with torch.no_grad():
        logits, _ = net(batch["obs"][idx], masks, prior)
        start_logits, _ = start(batch["obs"][idx], masks, prior)
    net.train(was_training)
    logp, start_logp = torch.log_softmax(logits, -1), torch.log_softmax(start_logits, -1)
    same = most_probable_move(logits, masks) == most_probable_move(start_logits, masks)
    return {
        "diag/agree_start": same.float().mean().item(),
        "diag/kl_to_start": kl_to(logp, start_logp, masks).mean().item(),
        "diag/entropy": legal_entropy(logp, masks).mean().item(),
    }
