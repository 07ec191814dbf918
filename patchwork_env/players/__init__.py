"""The players (layer 3, above the envs): everything that chooses a move, and the spec strings
that name them.

``random`` (``players.random``), ``greedy`` (``players.greedy``, its features in
``players.heuristic``), ``mcts`` and, with the ``torch`` extra, the network a checkpoint holds
(``network:PATH``, ``players.policy``; ``ppo:PATH`` is its old name), the AlphaZero-style search
(``az``) and the shipped ``pretrained`` network, with what they need: the network
(``players.network``), its checkpoint format (``players.checkpoint``) and its search-time forward
pass (``players.inference``). Every player follows ``patchwork_env.envs.agent.Agent``;
``make_agent(spec)`` builds one from a spec string (``describe_agents()`` lists them). Training
code does not belong here (``agents/``, ``train/``). Importing this package is light: a player's
module loads when a spec builds it."""

from patchwork_env.players.errors import AgentSpecError, CheckpointError, MissingExtraError
from patchwork_env.players.registry import AGENT_SPECS, describe_agents, make_agent, parse_spec

__all__ = [
    "AGENT_SPECS",
    "AgentSpecError",
    "CheckpointError",
    "MissingExtraError",
    "describe_agents",
    "make_agent",
    "parse_spec",
]
