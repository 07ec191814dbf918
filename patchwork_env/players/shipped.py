"""The networks and value models shipped with the package, by version (no torch here: the spec
registry lists them).

``pretrained`` and ``az`` play their defaults (``NEWEST_NETWORK``, ``NEWEST_VALUE_MODEL``: the newest
version measured stronger than the one before) unless a spec pins one (``pretrained:net=v1``,
``az:net=v1``). A version's file never changes: the rungs of a ladder version that use a network
name its version, so shipping a better network (the next version) never moves an existing scale.
"""

from __future__ import annotations

from pathlib import Path

#: the shipped networks by version: a version's weights never change (a rung of a ladder version
#: plays with them), a better network ships as the next version and becomes the default
SHIPPED_NETWORKS: dict[str, Path] = {
    "v1": Path(__file__).parent / "pretrained-v1.pt",  # mcts:sims=100 distilled (configs/dagger.yaml)
    "v2": Path(__file__).parent / "pretrained-v2.pt",  # az's compiled search distilled (configs/dagger_az.yaml)
    "v3": Path(__file__).parent / "pretrained-v3.npz",  # train.alphazero (configs/alphazero.yaml, seed 0): no torch
    "v4": Path(__file__).parent / "pretrained-v4.npz",  # the same run of seed 0 at its end (480 CPU-minutes)
}
#: each shipped network file's sha256 (a test holds the files to them: a version never changes)
NETWORK_SHA256 = {
    "v1": "98bc0e147601cf9ca06d4a32a2327d23d4eae801e71694074baffa9532e0a02b",
    "v2": "33cda39c4f3892453939af0d744227cbb46ade1db76344d832c26cf57fa33171",
    "v3": "aae0ea5361344339c4148164c56a8737ab79039efa2a45f21014ecf18add96cf",
    "v4": "8401296c8fe816362a5e9a71708104b525ccadaefa9595365a31a68caba7a6cc",
}
#: the default of ``pretrained``: the newest version measured stronger than the default before it.
#: v3 alone is as strong as v2, not measured stronger (54.8% [49.9, 59.6] of 400 games head to
#: head: results/network-v3.json); v4 is (66.8% [62.0, 71.2] of 400 games against v2, 92.5% against
#: greedy where v2 won 82.5% on the same deals: results/network-v4.json), and needs no torch
NEWEST_NETWORK = "v4"
#: the versions that are torch networks (``.pt``): the ones ``az`` can search with; a ``.npz``
#: version is a search model of ``train.alphazero`` (a value model with prior heads, no torch),
#: played alone by ``players.model_policy`` and searched with by ``az:value=<version>``
TORCH_NETWORKS = tuple(v for v, p in SHIPPED_NETWORKS.items() if p.suffix == ".pt")
SEARCH_NETWORKS = tuple(v for v in SHIPPED_NETWORKS if v not in TORCH_NETWORKS)
NEWEST_TORCH_NETWORK = TORCH_NETWORKS[-1]


def is_search_model(path: str | Path) -> bool:
    """Whether a network file is a search model (``.npz``, ``players.value_model``), not a torch checkpoint."""
    return Path(path).suffix == ".npz"


def network_path(path: str = "", net: str = "", torch: bool = False) -> Path | str:
    """The file an agent loads: ``path`` if given, else the shipped network of version ``net``
    (default: ``NEWEST_NETWORK``; ``torch``: the newest torch network, and a search model is refused)."""
    if path and net:
        raise ValueError(f"give a checkpoint path or a shipped network version, not both (path={path!r}, net={net!r})")
    if path:
        return path
    if net and net not in SHIPPED_NETWORKS:
        raise ValueError(f"no shipped network {net!r}; the versions are {', '.join(SHIPPED_NETWORKS)}")
    if torch and net and net not in TORCH_NETWORKS:
        raise ValueError(
            f"network {net} is a search model, not a torch network: az:value={net} searches with it "
            f"(the torch networks are {', '.join(TORCH_NETWORKS)})"
        )
    return SHIPPED_NETWORKS[net or (NEWEST_TORCH_NETWORK if torch else NEWEST_NETWORK)]


#: the shipped value models (``patchwork_env.players.value_model``) by version: ``az:value=v1``; a
#: version's file never changes, a better model ships as the next version
#: (from network v3 on, a shipped search model is a value model of the same version)
SHIPPED_VALUE_MODELS: dict[str, Path] = {
    "v1": Path(__file__).parent / "value-v1.npz",
    **{v: SHIPPED_NETWORKS[v] for v in SEARCH_NETWORKS},
}
#: each shipped value model file's sha256 (a test holds the files to them: a version never changes)
VALUE_MODEL_SHA256 = {
    "v1": "1b0430669cf766473bf99f26fc6bf238682a06587e6d7a80f26b679cdbd94daf",
    **{v: NETWORK_SHA256[v] for v in SEARCH_NETWORKS},
}
#: az's leaves unless a spec names another (or none): the newest version measured stronger in the search
#: at equal time (v4 against v3: 71.2% [60.5, 80.0] of 80 games at 0.5 s a move, results/az-v4-equal-time.json)
NEWEST_VALUE_MODEL = "v4"
NO_VALUE_MODEL = "none"  # az:value=none: no value model (the leaves' values from the network or rollouts)


def value_model_path(value: str) -> Path | str | None:
    """The value-model file ``az:value=...`` names: None for ``none`` (or nothing), a shipped
    version's file (``SHIPPED_VALUE_MODELS``), else ``value`` itself, a path."""
    if value in ("", NO_VALUE_MODEL):
        return None
    return SHIPPED_VALUE_MODELS.get(value, value)
