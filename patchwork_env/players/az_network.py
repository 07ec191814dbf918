"""The AlphaZero agent with a network (``az:net=v1``, ``az:path=CKPT``, ``az:prior=network``), its
network evaluator, and ``pretrained``.

``NetEvaluator`` is the leaf evaluator of ``patchwork_env.players.batched_search.BatchedSearch``: one
forward pass of a ``PatchworkNet`` over a batch of game states (legal masks, observations from each
mover's seat and, for a network with the greedy prior, the prior's terms, all from the compiled
rules), returning masked log-probabilities and values clipped to [-1, 1]; optionally the leaf
values mixed with greedy rollouts. ``AZAgent`` runs the search for one game per call (the arena's
interface); self-play runs it for many games at once (``agents.az_selfplay``).

The shipped network (``PRETRAINED_PATH``, package data; ``docs/model-card.md``) is the
``pretrained`` agent: the network alone, its most probable legal move (``NetworkAgent`` with
``deterministic=True``), and the network ``az`` searches with when it searches with one. Then, by
default (``make_az_agent``'s, the registry's ``AZ_NETWORK``), ``az`` searches over *kinds* of move
(``kinds``; ``patchwork_env.players.policy.kind_policy``: each kind at the network's best
placement, about 4 children instead of about 100), values its leaves by the mean of 4 greedy
rollouts (``rollouts``; ``mix`` weighs them against the network's value, AlphaGo's leaf
evaluation), with ``SIMS`` = 300 simulations, a leaf expanded by the network at its ``EXPAND`` = 4th
visit (``SearchConfig.expand``) and the subtree of the move played kept (``reuse``). ``value=...``
takes every leaf value from a small compiled value model instead (``patchwork_env.players.value_model``,
distilled from a network by ``train.value_distill``: ~8 us a position against ~0.4 ms for the
network's value head), and ``prior=greedy`` takes the prior from the greedy heuristic (``mcts``'s
candidates, a softmax of their greedy values at ``ptemp`` score points) instead of the network's
policy: with both (and ``expand=1``, no rollouts), the search calls no network, and the registry
runs it compiled (``patchwork_env.players.compiled_search``: ``az``'s default); ``AZAgent`` with those
settings is the same search in Python, its reference. The trainer's self-play
(``train.alphazero``) searches over all actions with the network's value alone
(``NetEvaluator(net)``): its policy targets cover every placement. Checkpoints are the project's
format (``patchwork_env.players.checkpoint``), so ``network:PATH`` plays an AlphaZero checkpoint's
network too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from patchwork_env.core import rules
from patchwork_env.core.state import GameState
from patchwork_env.core.validate import check_state_rows
from patchwork_env.envs.observation import observe_movers
from patchwork_env.players.batched_search import FIRST_PLAN as FIRST_PLAN  # re-exported: az's budget names
from patchwork_env.players.batched_search import OVERPLAN as OVERPLAN
from patchwork_env.players.batched_search import BatchedSearch, Node, SearchConfig, TimeBudget, outcome_value
from patchwork_env.players.checkpoint import load_network
from patchwork_env.players.heuristic import (
    DEFAULT_WEIGHTS,
    ROLLOUT_CANDIDATES,
    ROLLOUT_TEMP,
    candidate_policy_batch,
    rng_state,
    rollout_results,
)
from patchwork_env.players.inference import NetInference, kind_policy_np, log_softmax_np
from patchwork_env.players.network import PatchworkNet, net_from_config, net_inputs
from patchwork_env.players.policy import NetworkAgent, kind_policy, one_thread_in_workers, one_torch_thread
from patchwork_env.players.search_config import NETWORK_SIMS
from patchwork_env.players.shipped import (
    NEWEST_TORCH_NETWORK,
    NO_VALUE_MODEL,
    SHIPPED_NETWORKS,
    network_path,
    value_model_path,
)
from patchwork_env.players.tree import find_below
from patchwork_env.players.value_model import ValueModel, load_value_model

PRETRAINED_PATH = SHIPPED_NETWORKS[NEWEST_TORCH_NETWORK]  # the torch network az searches with by default

IntArray = npt.NDArray[np.int64]
MAX_ROLLOUTS = 1000  # per leaf; beyond it a leaf costs seconds
SIMS = NETWORK_SIMS  # the agent's simulations per move unless given (or a time budget)
EXPAND = 4  # the agent's expansion threshold unless given (the trainer's search: SearchConfig's 1)
PRIORS = ("network", "greedy")  # where the search's prior comes from (``NetEvaluator.prior``)


class NetEvaluator:
    """Batched leaf evaluation with a policy-value network (``patchwork_env.players.batched_search.Evaluator``)."""

    def __init__(
        self,
        net: PatchworkNet,
        kinds: bool = False,
        rollouts: int = 0,
        mix: float = 1.0,
        margin_weight: float = 0.2,
        fast: bool = True,
        value_model: ValueModel | None = None,
        prior: str = "network",
        prior_temp: float = ROLLOUT_TEMP,
    ) -> None:
        if not 0 <= rollouts <= MAX_ROLLOUTS or not 0.0 <= mix <= 1.0 or not 0.0 <= margin_weight <= 1.0:
            raise ValueError(
                f"need rollouts in [0, {MAX_ROLLOUTS}] and mix, margin_weight in [0, 1]; "
                f"got {rollouts}, {mix}, {margin_weight}"
            )
        if prior not in PRIORS or not prior_temp > 0:
            raise ValueError(f"need prior in {PRIORS} and prior_temp > 0; got {prior!r} and {prior_temp}")
        self.net = net.eval()
        self.kinds = kinds
        """Search over kinds of move (``patchwork_env.players.policy.kind_policy``): each legal kind (advance,
        buy from slot s, leather) at the network's most probable placement, with the kind's whole
        probability; the tree then branches about 4 ways, like ``mcts``'s, not ~100."""
        self.rollouts = rollouts
        """> 0: a leaf's value is ``(1 - mix) * network value + mix * mean of this many greedy
        rollouts`` (``patchwork_env.players.heuristic.rollout_results``, ``mcts``'s rollout policy), each scored
        like a finished game (``final_value`` with ``margin_weight``): AlphaGo's leaf evaluation.
        0: the network's value alone (AlphaZero)."""
        self.mix = mix
        self.margin_weight = margin_weight
        self.fast = fast
        """Evaluate through ``patchwork_env.players.inference.NetInference`` (the same priors and
        values up to float rounding, a fraction of the per-call cost); False: through
        ``PatchworkNet.forward`` (the reference path)."""
        self._inference = NetInference(self.net) if fast else None
        self.value_model = value_model
        """Given: the leaves' values (the network's part of them, with rollouts) come from this small
        compiled model (``patchwork_env.players.value_model``) instead of the network's value head,
        at every call; the network then gives the legal actions and the prior alone."""
        self.prior = prior
        """``network``: the network's policy (over kinds with ``kinds``); ``greedy``: the heuristic's
        candidates (``mcts``'s: advance and each market patch at its best placement by the greedy
        value) with a softmax of their greedy values at ``prior_temp`` score points
        (``heuristic.candidate_policy_batch``): no network call at all when ``value_model`` gives the
        values."""
        self.prior_temp = prior_temp
        self.deterministic_values = rollouts == 0
        """A state's value is the same at every call (no rollouts): the search asks once per leaf
        (``patchwork_env.players.batched_search.Evaluator.values``)."""
        self._rng = rng_state(0)
        self.evaluations = 0  # states evaluated so far (for statistics)
        self.value_evaluations = 0  # and valued alone (``values``)

    def seed(self, seed: int) -> None:
        """Seed the rollouts (the agent reseeds from the arena's generator at every move)."""
        self._rng = rng_state(seed)

    @torch.no_grad()
    def __call__(
        self, states: IntArray
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        states = np.ascontiguousarray(states, dtype=np.int64)  # the rollout kernel's layout
        if self.prior == "greedy":
            check_state_rows(states)  # the kernels trust their input
            legal = np.empty((len(states), rules.NUM_ACTIONS), dtype=np.bool_)
            logp64 = np.empty((len(states), rules.NUM_ACTIONS), dtype=np.float64)
            candidate_policy_batch(states, DEFAULT_WEIGHTS, 1, self.prior_temp, legal, logp64)
            self.evaluations += len(states)
            return legal, logp64, self._values(states)
        if self._inference is not None:
            legal, logits, net_values = self._inference(states)  # checks the rows before any kernel
            legal, logp = kind_policy_np(logits, legal) if self.kinds else (legal, log_softmax_np(logits))
            self.evaluations += len(states)
            value = self._leaf_values(states, self._network_part(states, net_values))
            return legal, logp.astype(np.float64), value
        obs, masks, prior = net_inputs(self.net, states)  # checks the rows before any kernel
        logits, values = self.net(obs, masks, prior)
        if self.kinds:
            masks, logp_t = kind_policy(logits, masks)
        else:
            logp_t = torch.log_softmax(logits, -1)
        self.evaluations += len(obs)
        value = self._leaf_values(states, self._network_part(states, values.double().numpy()))
        return masks.numpy(), logp_t.double().numpy(), value

    @torch.no_grad()
    def values(self, states: IntArray) -> npt.NDArray[np.float64]:
        """Leaf values alone (``SearchConfig.expand`` > 1), as ``__call__`` computes them; with
        the rollouts alone (``mix=1``) the network does not run."""
        states = np.ascontiguousarray(states, dtype=np.int64)
        self.value_evaluations += len(states)
        return self._values(states)

    def _values(self, states: IntArray) -> npt.NDArray[np.float64]:
        if self.rollouts and self.mix == 1.0:
            check_state_rows(states)  # the rollout kernel trusts its input
            return self._leaf_values(states, None)
        if self.value_model is not None:
            return self._leaf_values(states, self._network_part(states, None))  # checks the rows
        if self._inference is not None:
            net_values = np.clip(self._inference.values(states), -1.0, 1.0).astype(np.float64)  # checks the rows
            return self._leaf_values(states, net_values)
        obs = torch.from_numpy(observe_movers(states))  # checks the rows first
        return self._leaf_values(states, self.net.values(obs).clamp(-1.0, 1.0).double().numpy())

    def _network_part(self, states: IntArray, net_values: npt.NDArray[Any] | None) -> npt.NDArray[np.float64]:
        """The network's part of the leaf values: the value model's (``value_model``) if given, else
        ``net_values`` (the network's own) clipped to [-1, 1]."""
        if self.value_model is not None:
            return self.value_model.values(states)
        assert net_values is not None
        out: npt.NDArray[np.float64] = np.clip(net_values, -1.0, 1.0).astype(np.float64)
        return out

    def _leaf_values(self, states: IntArray, net_value: npt.NDArray[np.float64] | None) -> npt.NDArray[np.float64]:
        """The leaf-value rule: the network's value, or with rollouts ``(1 - mix)`` x it + ``mix``
        x the rollouts' mean (``net_value`` may be None only with ``mix=1``: the rollouts alone)."""
        if not self.rollouts:
            assert net_value is not None
            return net_value
        rollouts = self._rollout_values(states)
        if net_value is None:
            return rollouts
        out: npt.NDArray[np.float64] = (1.0 - self.mix) * net_value + self.mix * rollouts
        return out

    def _rollout_values(self, states: IntArray) -> npt.NDArray[np.float64]:
        return rollout_values(states, self.rollouts, self.margin_weight, self._rng)


def rollout_values(
    states: IntArray, rollouts: int, margin_weight: float, stream: npt.NDArray[np.uint64]
) -> npt.NDArray[np.float64]:
    """The mean ``final_value`` of ``rollouts`` greedy rollouts from each unfinished state, from the
    side of the player to move there: ``az``'s leaf value with rollouts alone (``mix=1``), and the
    value head's target in ``agents.value_head.rollout_targets``. ``stream``: the kernels' generator
    state (``rng_state``), advanced in place. The states must be checked rows (the kernel trusts them)."""
    wins, margins = rollout_results(
        np.ascontiguousarray(states, dtype=np.int64),
        rollouts,
        DEFAULT_WEIGHTS,
        ROLLOUT_TEMP,
        ROLLOUT_CANDIDATES,
        stream,
    )
    mean: npt.NDArray[np.float64] = outcome_value(2 * wins - 1, margins, margin_weight).mean(axis=1)
    return mean


class AZAgent:
    """Search with a network for one game per move: ``sims`` simulations, or ``time`` seconds
    (simulations planned from the measured speed of the previous moves, stopped at the deadline).
    ``reuse``: keep the subtree of the move played and search on from it if the game reaches one
    of its positions (``patchwork_env.players.tree.find_below``; ``reset()`` forgets it).
    ``fast``: evaluate through ``patchwork_env.players.inference`` (``NetEvaluator.fast``).
    A move's search runs on one torch thread (``policy.one_torch_thread``), whatever the process's
    count, which it leaves as it was."""

    def __init__(
        self,
        net: PatchworkNet,
        config: SearchConfig,
        time: float | None = None,
        name: str = "az",
        kinds: bool = True,
        rollouts: int = 4,
        mix: float = 1.0,
        reuse: bool = True,
        fast: bool = True,
        value_model: ValueModel | None = None,
        prior: str = "network",
        prior_temp: float = ROLLOUT_TEMP,
    ) -> None:
        if time is not None and not time > 0:
            raise ValueError(f"az: time must be > 0 seconds, got {time}")
        self.net = net.eval()
        self.config = config
        self.time = time
        self.name = name
        self.kinds = kinds
        self.rollouts = rollouts
        self.mix = mix
        self.reuse = reuse
        self.fast = fast
        self.value_model = value_model
        self.prior = prior
        self.prior_temp = prior_temp
        self._kept: Node | None = None  # the played move's child after the last search (``reuse``)
        try:
            self.evaluator = NetEvaluator(
                self.net, kinds, rollouts, mix, config.margin_weight, fast, value_model, prior, prior_temp
            )
        except ValueError as exc:
            raise ValueError(f"az: {exc}") from None
        self.search = BatchedSearch(self.evaluator, config)
        self.search.warm()  # its kernels compiled (or loaded) now, not in a first timed move
        self.budget = TimeBudget(config.sims, time)
        self.last_visits: list[tuple[int, int]] = []
        """(root action, visits) of the last decision's search, as ``mcts``'s (a distillation's targets,
        ``agents.distill``)."""
        self.last_policy: npt.NDArray[np.float32] | None = None
        """(2026,) the last decision's policy target (``batched_search.root_outcome``): what a distillation
        learns from an ``az`` teacher (``agents.distill``)."""

    @property
    def last_sims(self) -> int:
        """Simulations run for the last decision, as ``mcts``'s (``search_stats.search_stats``)."""
        return self.search.last_sims

    def reset(self) -> None:
        """Forget the kept subtree (the arena calls this before each game)."""
        self._kept = None

    def act(self, state: GameState, rng: np.random.Generator) -> int:
        if state.is_terminal:
            raise ValueError(f"{self.name}: the game is over, there is no action to take")
        if self.rollouts:  # only then: a search without rollouts draws nothing from the game's generator
            self.evaluator.seed(int(rng.integers(1 << 62)))
        row = state.array()
        sims, deadline = self.budget.plan()
        kept = find_below(self._kept, row, lambda node: node.state, lambda node: node.children) if self.reuse else None
        with one_torch_thread():
            result = self.search.run(row[None, :], [rng], noise=False, sims=sims, deadline=deadline, nodes=[kept])
        self.budget.measure(self.search.last_sims, self.search.last_sim_seconds)
        action = int(result.actions[0])
        root = result.roots[0]
        assert root.actions is not None
        self.last_visits = list(zip(root.actions.tolist(), root.n.tolist(), strict=True))
        self.last_policy = result.policies[0]
        if self.reuse:
            self._kept = root.children[int(np.flatnonzero(root.actions == action)[0])]
        return action

    # pickled for the arena's worker processes: weights and settings only
    def __getstate__(self) -> dict[str, Any]:
        return {
            "net_config": self.net.config.to_dict(),
            "model": self.net.state_dict(),
            "config": self.config,
            "time": self.time,
            "name": self.name,
            "kinds": self.kinds,
            "rollouts": self.rollouts,
            "mix": self.mix,
            "reuse": self.reuse,
            "fast": self.fast,
            "value_model": self.value_model,
            "prior": self.prior,
            "prior_temp": self.prior_temp,
        }

    def __setstate__(self, data: dict[str, Any]) -> None:
        one_thread_in_workers()
        net = net_from_config(dict(data["net_config"]))
        net.load_state_dict(data["model"])
        self.__init__(  # type: ignore[misc]
            net,
            data["config"],
            data["time"],
            data["name"],
            data["kinds"],
            data["rollouts"],
            data["mix"],
            data["reuse"],
            data["fast"],
            data["value_model"],
            data["prior"],
            data["prior_temp"],
        )


def make_az_agent(
    path: str = "",
    net: str = "",
    time: float | None = None,
    kinds: bool = True,
    rollouts: int = 4,
    mix: float = 1.0,
    reuse: bool = True,
    sims: int | None = None,
    expand: int = EXPAND,
    fast: bool = True,
    value: str = NO_VALUE_MODEL,
    prior: str = "network",
    ptemp: float = ROLLOUT_TEMP,
    **search: Any,
) -> AZAgent:
    """``az:...``: the network at ``path`` (default: the shipped network ``net``, the newest unless
    given) with a ``SearchConfig``;
    ``kinds``: search over kinds of move (``NetEvaluator.kinds``); ``rollouts``, ``mix``: leaf
    values from greedy rollouts, weighed by ``mix`` against the network's (``NetEvaluator.rollouts``);
    ``reuse``: keep the subtree of the move played (``AZAgent``); ``fast``: evaluate through
    ``patchwork_env.players.inference`` (``NetEvaluator.fast``); ``value``: the value model giving
    the leaf values (``NetEvaluator.value_model``), a shipped version or a file, ``none`` for none
    (``shipped.value_model_path``); ``prior``, ``ptemp``: the search's prior
    (``NetEvaluator.prior``, ``prior_temp``). ``sims`` unless given: ``SIMS``,
    or with ``time`` the first move's plan ``FIRST_PLAN`` (then the measured speed)."""
    network = load_network(network_path(path, net, torch=True))
    model_path = value_model_path(value)
    value_model = None if model_path is None else load_value_model(model_path)
    if sims is None:
        sims = SIMS if time is None else FIRST_PLAN
    config = SearchConfig(sims=sims, expand=expand, **search)
    config.validate()
    return AZAgent(
        network, config, time=time, kinds=kinds, rollouts=rollouts, mix=mix, reuse=reuse, fast=fast,
        value_model=value_model, prior=prior, prior_temp=ptemp,
    )  # fmt: skip


def make_pretrained_agent(path: str = "", net: str = "") -> NetworkAgent:
    """``pretrained`` with a torch network (``path``, or the shipped version ``net``, default the
    newest torch network): the network alone, its most probable legal move."""
    return NetworkAgent(load_network(network_path(path, net, torch=True)), deterministic=True, name="pretrained")
