"""The policy-value network: shapes, masking, the buy head's geometry, the network agent, the
checkpoint format."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from patchwork_env.core import rules
from patchwork_env.core.patches import PATCHES
from patchwork_env.core.state import GameState, new_game
from patchwork_env.envs import observation
from patchwork_env.envs.vector import VectorGames
from patchwork_env.players import checkpoint
from patchwork_env.players.network import (
    MASK_VALUE,
    PLACEMENT_CELLS,
    NetConfig,
    PatchworkNet,
    _gather_rows,
    _gather_sum,
    legal_entropy,
    net_from_config,
    sample_actions,
)
from patchwork_env.players.policy import NetworkAgent, PPOAgent, load_network_agent, load_ppo_agent
from patchwork_env.players.shipped import SHIPPED_NETWORKS

SMALL = NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8)


@pytest.fixture(scope="module")
def batch() -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Observations, masks and states of 48 games after 0..47 random moves (leather included)."""
    games = VectorGames(48, seed=7)
    rng = np.random.default_rng(0)
    obs, masks, states = [], [], []
    for t in range(48):
        obs.append(games.observe()[t].copy())
        masks.append(games.masks[t].copy())
        states.append(games.states[t].copy())
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in games.masks])
        games.step(acts)
    return torch.from_numpy(np.stack(obs)), torch.from_numpy(np.stack(masks)), np.stack(states)


def test_output_shapes_and_masking(batch: tuple[torch.Tensor, torch.Tensor, np.ndarray]) -> None:
    obs, mask, _ = batch
    net = PatchworkNet(SMALL)
    logits, value = net(obs, mask)
    assert logits.shape == (48, rules.NUM_ACTIONS) and value.shape == (48,)
    assert torch.all(logits[~mask] == MASK_VALUE) and torch.all(logits[mask] > MASK_VALUE / 2)
    probs = torch.softmax(logits, -1)
    assert torch.all(probs[~mask] == 0)
    torch.testing.assert_close(probs.sum(-1), torch.ones(48))
    torch.testing.assert_close(net.values(obs), value)


def test_market_patch_recognised_from_the_observation(batch: tuple[torch.Tensor, torch.Tensor, np.ndarray]) -> None:
    obs, _, states = batch
    ids = PatchworkNet(SMALL).patch_ids(obs).numpy()
    market = states[:, rules.CIRCLE : rules.CIRCLE + rules.MARKET_SIZE]
    present = market >= 0
    assert present.sum() > 100
    np.testing.assert_array_equal(ids[present], market[present])


def test_placement_table_matches_the_legal_buys(batch: tuple[torch.Tensor, torch.Tensor, np.ndarray]) -> None:
    """Every legal buy covers exactly its patch's area, all on empty cells of the own quilt."""
    obs, mask, states = batch
    rows, acts = mask[:, : rules.LEATHER_BASE].nonzero(as_tuple=True)
    slot = acts // rules.SLOT_ACTIONS
    patch = torch.from_numpy(states[:, rules.CIRCLE : rules.CIRCLE + 3])[rows, slot]
    cells = PLACEMENT_CELLS[patch, acts % rules.SLOT_ACTIONS // 81, acts % 81][:, :8]
    own = torch.cat([obs[:, :81], torch.zeros(48, 2)], dim=1)
    area = torch.tensor([p.area for p in PATCHES])
    assert len(rows) > 500
    assert torch.equal((cells < 81).sum(1), area[patch])
    assert own[rows.unsqueeze(1), cells].sum() == 0
    # and a buy whose cells overlap the quilt is never legal: fill a cell a legal buy would cover
    i, a = int(rows[0]), int(acts[0])
    state = states[i].copy()
    cell = int(cells[0, 0])
    player = rules.current_player(state)
    if cell < 63:
        state[rules.QUILT + 2 * player] |= np.int64(1) << cell
    else:
        state[rules.QUILT + 2 * player + 1] |= np.int64(1) << (cell - 63)
    legal = np.zeros(rules.NUM_ACTIONS, dtype=np.bool_)
    rules.legal_mask_into(state, legal)
    assert not legal[a]


def test_dense_and_sparse_heads_agree_up_to_the_per_slot_normalisation(
    batch: tuple[torch.Tensor, torch.Tensor, np.ndarray],
) -> None:
    obs, mask, _ = batch
    net = PatchworkNet(SMALL)
    with torch.no_grad():
        sparse, v1 = net(obs, mask)
        dense, v2 = net(obs, None)
    torch.testing.assert_close(v1, v2)
    # within one (game, slot) the placement logits differ only by a constant
    rows, acts = mask[:, : rules.LEATHER_BASE].nonzero(as_tuple=True)
    diff = sparse[rows, acts] - dense[rows, acts]
    group = rows * 3 + acts // rules.SLOT_ACTIONS
    for g in torch.unique(group)[:20]:
        d = diff[group == g]
        assert torch.allclose(d, d[0].expand_as(d), atol=1e-4)
    torch.testing.assert_close(
        sparse[:, rules.LEATHER_BASE :][mask[:, rules.LEATHER_BASE :]],
        dense[:, rules.LEATHER_BASE :][mask[:, rules.LEATHER_BASE :]],
    )


def test_two_level_policy_initial_slot_probabilities(batch: tuple[torch.Tensor, torch.Tensor, np.ndarray]) -> None:
    """At initialisation advance and each buyable slot get similar probability, whatever the
    number of placements of each patch (the per-slot normalisation)."""
    obs, mask, _ = batch
    with torch.no_grad():
        probs = torch.softmax(PatchworkNet(SMALL)(obs, mask)[0], -1)
    for i in range(48):
        if mask[i, rules.LEATHER_BASE : rules.ADVANCE].any():
            continue
        options = 1 + sum(bool(mask[i, s * 648 : (s + 1) * 648].any()) for s in range(3))
        assert abs(float(probs[i, rules.ADVANCE]) - 1 / options) < 0.1


def test_entropy_is_over_legal_actions_only() -> None:
    mask = torch.zeros(2, rules.NUM_ACTIONS, dtype=torch.bool)
    mask[0, [3, 7]] = True
    mask[1, rules.ADVANCE] = True
    logits = torch.where(mask, torch.zeros(()), torch.full((), MASK_VALUE))
    ent = legal_entropy(torch.log_softmax(logits, -1), mask)
    torch.testing.assert_close(ent, torch.tensor([np.log(2.0), 0.0], dtype=torch.float32))
    assert torch.isfinite(ent).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_gather_sum_is_advanced_indexing(threads: int) -> None:
    """The buy head's compiled gather: values those of ``table[index].sum(1)`` within float
    rounding (the sum over ``k`` may run in another order) and gradients bit for bit those of one
    thread's accumulating ``index_put_`` (advanced indexing's own backward), with a strided index
    full of repeats (as the head's is: each game's rows hundreds of times), on any thread count."""
    gen = torch.Generator().manual_seed(0)
    table = torch.randn(5 * 83, 8, generator=gen, requires_grad=True)
    index = torch.randint(0, 5 * 83, (400, 20), generator=gen)[:, 8:]  # a strided (400, 12) slice
    weights = torch.randn(400, 8, generator=gen)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        slow = table[index].sum(1)
        (g_slow,) = torch.autograd.grad((slow * weights).sum(), table)
        torch.set_num_threads(threads)
        fast = _gather_sum(table, index)
        (g_fast,) = torch.autograd.grad((fast * weights).sum(), table)
    finally:
        torch.set_num_threads(before)
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-5)
    assert torch.equal(g_fast, g_slow)
    with pytest.raises(IndexError, match="outside the table"):  # compiled, but never reads past the table
        _gather_sum(table, torch.tensor([[0, 5 * 83]]))
    with pytest.raises(IndexError, match="outside the table"):
        _gather_sum(table, torch.tensor([[-1, 0]]))
    rows = torch.tensor([3, 3, 0, 7])  # ``_gather_rows``: plain row indexing of any trailing shape
    cube = torch.randn(9, 2, 3, generator=gen)
    assert torch.equal(_gather_rows(cube, rows), cube[rows])


def test_legal_entropy_values_and_gradients_are_the_plain_formulas(
    batch: tuple[torch.Tensor, torch.Tensor, np.ndarray],
) -> None:
    """``legal_entropy`` skips exponentiating the masked log-probabilities (for speed) and gives
    exactly the values and gradients of ``-sum over legal of exp(logp) * logp``."""
    obs, mask, _ = batch
    logits, _ = PatchworkNet(SMALL)(obs, mask)
    logp = torch.log_softmax(logits, -1)
    fast = legal_entropy(logp, mask)
    plain = -torch.where(mask, logp.exp() * logp, torch.zeros_like(logp)).sum(-1)
    assert torch.equal(fast, plain)
    (g_fast,) = torch.autograd.grad(fast.sum(), logits, retain_graph=True)
    (g_plain,) = torch.autograd.grad(plain.sum(), logits)
    assert torch.equal(g_fast, g_plain)


def test_sampling_never_picks_an_illegal_action(batch: tuple[torch.Tensor, torch.Tensor, np.ndarray]) -> None:
    obs, mask, _ = batch
    with torch.no_grad():
        logits, _ = PatchworkNet(SMALL)(obs, mask)
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        assert mask[torch.arange(48), sample_actions(logits, gen)].all()
    assert mask[torch.arange(48), sample_actions(logits, deterministic=True)].all()


def test_network_agent_act_and_act_batch_agree(batch: tuple[torch.Tensor, torch.Tensor, np.ndarray]) -> None:
    _, mask, states = batch
    agent = NetworkAgent(PatchworkNet(SMALL))
    rng = np.random.default_rng(0)
    batch_actions = agent.act_batch(states, mask.numpy(), rng)
    for i in range(0, 48, 6):
        assert agent.act(GameState._wrap(states[i].copy()), rng) == batch_actions[i]
    sampler = NetworkAgent(PatchworkNet(SMALL), deterministic=False)
    assert mask.numpy()[np.arange(48), sampler.act_batch(states, mask.numpy(), rng)].all()
    with pytest.raises(ValueError, match="game is over"):
        state = new_game(0)
        while not state.is_terminal:
            state = state.step(int(state.legal_actions()[-1]))  # advance, or the last leather cell
        agent.act(state, rng)


def test_checkpoints_are_network_checkpoints_and_the_old_format_name_still_loads(tmp_path: Path) -> None:
    """Written as ``patchwork-network``; files of 0.3.0 and earlier (``patchwork-ppo``, the shipped
    ``pretrained-v1.pt`` among them) load as before; the old class and loader names are the new ones."""
    net = PatchworkNet(SMALL)
    path = checkpoint.save_checkpoint(tmp_path / "net.pt", net)
    assert checkpoint.read_checkpoint(path)["format"] == checkpoint.FORMAT == "patchwork-network"
    data = torch.load(path, weights_only=True)
    data["format"] = "patchwork-ppo"
    torch.save(data, tmp_path / "old.pt")
    for file in (path, tmp_path / "old.pt", SHIPPED_NETWORKS["v1"]):
        agent = load_network_agent(str(file))
        assert isinstance(agent, NetworkAgent) and agent.name == f"network:{file}"
    assert torch.load(SHIPPED_NETWORKS["v1"], weights_only=True)["format"] in checkpoint.OLD_FORMATS
    assert PPOAgent is NetworkAgent and load_ppo_agent is load_network_agent
    data["format"] = "patchwork-something"
    torch.save(data, tmp_path / "other.pt")
    with pytest.raises(checkpoint.CheckpointError, match="not a network checkpoint"):
        checkpoint.read_checkpoint(tmp_path / "other.pt")


def test_a_mask_of_another_shape_is_an_error(batch: tuple[torch.Tensor, torch.Tensor, np.ndarray]) -> None:
    obs, masks, _ = batch
    net = PatchworkNet(SMALL)
    with pytest.raises(ValueError, match="mask must have shape"):
        net(obs[:2], masks[:3])
    with pytest.raises(ValueError, match="mask must have shape"):
        net(obs[:2], masks[:2, :100])


def test_net_config_errors() -> None:
    with pytest.raises(ValueError, match="channels"):
        PatchworkNet(NetConfig(channels=0))
    # a checkpoint's sizes reach NetConfig unchecked: each field's type is checked with its bounds
    for sizes, message in (
        ({"channels": 3.5}, r"net\.channels must be an integer, got 3\.5"),
        ({"blocks": True}, r"net\.blocks must be an integer, got True"),
        ({"geometry": 1}, r"net\.geometry must be true or false, got 1"),
        ({"prior_scale": float("nan")}, r"net\.prior_scale must be a finite number, got nan"),
        ({"prior_scale": 1e4}, r"net\.prior_scale must be in \[0, 1000\]"),
        ({"kind_weights": True}, r"net\.kind_weights needs prior_scale > 0"),
    ):
        with pytest.raises(ValueError, match=message):
            NetConfig(**sizes).validate()  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown network settings"):
        net_from_config({"channels": 8, "depth": 3})


def test_most_probable_move_picks_the_likeliest_kind_of_move_first() -> None:
    from patchwork_env.players.policy import most_probable_move

    mask = torch.zeros(1, rules.NUM_ACTIONS, dtype=torch.bool)
    mask[0, [0, 1, 2, 3, 4, 5, rules.ADVANCE]] = True
    probs = torch.zeros(1, rules.NUM_ACTIONS)
    probs[0, :6] = torch.tensor([0.05, 0.2, 0.1, 0.1, 0.1, 0.05])  # slot 0: 0.6 in all
    probs[0, rules.ADVANCE] = 0.4  # the single likeliest action, but the less likely kind of move
    logits = torch.where(mask, probs.clamp_min(1e-30).log(), torch.full((), MASK_VALUE))
    assert int(most_probable_move(logits, mask)[0]) == 1
    assert int(logits.argmax()) == rules.ADVANCE


def test_kind_policy_is_each_kind_at_its_best_placement_with_the_kinds_mass(
    batch: tuple[torch.Tensor, torch.Tensor, np.ndarray],
) -> None:
    from patchwork_env.players.network import GROUP_BOUNDS
    from patchwork_env.players.policy import kind_policy, most_probable_move

    obs, mask, _ = batch
    torch.manual_seed(5)
    logits, _ = PatchworkNet(SMALL)(obs, mask)
    chosen, logp = kind_policy(logits, mask)
    assert not (chosen & ~mask).any()  # only legal actions
    full = torch.log_softmax(logits, -1)
    for lo, hi in itertools.pairwise(GROUP_BOUNDS):
        legal = mask[:, lo:hi].any(1)
        assert torch.equal(chosen[:, lo:hi].sum(1), legal.long())  # one placement per legal kind
        rows = torch.nonzero(legal).squeeze(1)
        best = torch.where(mask[rows, lo:hi], full[rows, lo:hi], torch.full((), -1e30)).argmax(1) + lo
        assert chosen[rows, best].all()
        torch.testing.assert_close(
            logp[rows, best], torch.logsumexp(full[rows, lo:hi].masked_fill(~mask[rows, lo:hi], -1e30), 1)
        )
    torch.testing.assert_close(torch.where(chosen, logp.exp(), 0.0).sum(1), torch.ones(len(obs)))
    assert (chosen.sum(1) < mask.sum(1)).any()  # placements were pruned somewhere
    assert torch.equal(most_probable_move(logits, mask), torch.where(chosen, logp, -1e30).argmax(1))


def test_geometry_counts_of_a_placement() -> None:
    """The 1x2 patch stood upright at (1, 0)-(2, 0) under a filled (0, 1): cell (0, 0) becomes an
    isolated hole, and the patch touches the left edge twice."""
    from patchwork_env.players.network import MAX_COVER

    net = PatchworkNet(SMALL)
    obs = torch.zeros(1, observation.OBS_DIM)
    obs[0, 0 * 9 + 1] = 1.0  # own quilt: (0, 1) filled
    o = 1  # the 1x2 patch (id 0) turned a quarter: vertical
    anchor = 1 * 9 + 0  # top-left at (1, 0): covers (1, 0) and (2, 0)
    cells = PLACEMENT_CELLS[0, o, anchor]
    assert sorted(cells[:MAX_COVER][cells[:MAX_COVER] < 81].tolist()) == [9, 18]
    geo = net._geometry(obs, torch.tensor([0]), cells.unsqueeze(0), torch.tensor([0]), torch.tensor([o]))[0]
    geo = geo * torch.tensor([4.0, 4.0, 12.0])
    # outside neighbours: (0,0) empty, left only (0,1)-filled and (1,0)-covered -> isolated;
    # (3,0): free neighbours (3,1), (4,0) -> 2 left; (1,1), (2,1): 2 and 3 left;
    # off-board: (1,-1), (2,-1) -> 2 contacts, no filled ones
    torch.testing.assert_close(geo, torch.tensor([1.0, 0.0, 2.0]))


def test_the_shipped_networks_never_change_and_the_default_is_pinned() -> None:
    """Each version's file is held to its sha256 (a ladder rung plays it), under 5 MB, loads; plain
    ``pretrained`` plays the default (v4: measured stronger than v2, which v3 was not),
    ``pretrained:net=v1`` the first, ``pretrained:net=v3`` and ``v4`` train.alphazero's models alone (no torch)."""
    import hashlib

    from patchwork_env.players.registry import make_agent
    from patchwork_env.players.shipped import NETWORK_SHA256, NEWEST_NETWORK, network_path

    assert set(SHIPPED_NETWORKS) == set(NETWORK_SHA256) and NEWEST_NETWORK == "v4"
    for version, path in SHIPPED_NETWORKS.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == NETWORK_SHA256[version], version
        assert path.stat().st_size <= 5 * 2**20
    assert network_path() == SHIPPED_NETWORKS[NEWEST_NETWORK] and network_path(net="v1") == SHIPPED_NETWORKS["v1"]
    state, rng = new_game(3), np.random.default_rng(0)
    moves = {}
    for spec in ("pretrained", "pretrained:net=v2", "pretrained:net=v1", "pretrained:net=v3", "pretrained:net=v4"):
        agent = make_agent(spec)
        s = state
        for _ in range(30):  # 30 moves of each: the versions are different players (v3 and v4 part after the 20th)
            s = s.step(agent.act(s, rng))
        moves[spec] = s.to_notation()
    assert moves["pretrained"] == moves["pretrained:net=v4"]
    assert moves["pretrained:net=v2"] != moves["pretrained:net=v1"]
    assert moves["pretrained:net=v3"] not in (moves["pretrained:net=v1"], moves["pretrained:net=v2"])
    assert moves["pretrained:net=v4"] not in (
        moves["pretrained:net=v1"],
        moves["pretrained:net=v2"],
        moves["pretrained:net=v3"],
    )
