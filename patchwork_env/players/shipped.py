"""The networks shipped with the package, by version (no torch here: the spec registry lists them).

``pretrained`` and ``az`` play the newest unless a spec pins one (``pretrained:net=v1``,
``az:net=v1``). A version's file never changes: the rungs of a ladder version that use a network
name its version, so shipping a better network (the next version) never moves an existing scale.
"""

from __future__ import annotations

from pathlib import Path

#: the shipped networks by version: a version's weights never change (a rung of a ladder version
#: plays with them), a better network ships as the next version and becomes the default
SHIPPED_NETWORKS: dict[str, Path] = {"v1": Path(__file__).parent / "pretrained-v1.pt"}
NEWEST_NETWORK = "v1"


def network_path(path: str = "", net: str = "") -> Path | str:
    """The checkpoint an agent loads: ``path`` if given, else the shipped network of version
    ``net`` (default: the newest)."""
    if path and net:
        raise ValueError(f"give a checkpoint path or a shipped network version, not both (path={path!r}, net={net!r})")
    if path:
        return path
    if net and net not in SHIPPED_NETWORKS:
        raise ValueError(f"no shipped network {net!r}; the versions are {', '.join(SHIPPED_NETWORKS)}")
    return SHIPPED_NETWORKS[net or NEWEST_NETWORK]
