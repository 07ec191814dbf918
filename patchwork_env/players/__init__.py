"""The players: ``random``, ``greedy``, ``mcts`` and, with the ``torch`` extra, the network policy of
a checkpoint (``ppo:PATH``), the AlphaZero-style search (``az``) and the shipped ``pretrained``
network. Every player follows ``patchwork_env.envs.agent.Agent``; ``make_agent(spec)`` builds one
from a spec string (``describe_agents()`` lists them). Importing this package is light: a player's
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
