"""The players: ``random``, ``greedy``, ``mcts`` and, with the ``torch`` extra, the network policy of
a checkpoint (``ppo:PATH``), the AlphaZero-style search (``az``) and the shipped ``pretrained``
network. Every player follows ``patchwork_env.envs.agent.Agent``; ``make_agent(spec)`` builds one
from a spec string (``describe_agents()`` lists them)."""

from patchwork_env.envs.agent import Agent, BatchAgent, RandomAgent
from patchwork_env.players.registry import (
    AGENT_SPECS,
    AgentSpecError,
    MissingExtraError,
    describe_agents,
    make_agent,
    parse_spec,
)

__all__ = [
    "AGENT_SPECS",
    "Agent",
    "AgentSpecError",
    "BatchAgent",
    "MissingExtraError",
    "RandomAgent",
    "describe_agents",
    "make_agent",
    "parse_spec",
]
