"""Players for Patchwork: ``random``, ``greedy``, ``mcts`` and (with torch) ``ppo``, all following
``patchwork_env.agent.Agent``, built from spec strings with ``make_agent``; the arena that measures
their strength is ``agents.arena``."""

from agents.registry import AGENT_SPECS, AgentSpecError, describe_agents, make_agent, parse_spec
from patchwork_env.agent import Agent, BatchAgent, RandomAgent, register_agent_factory

register_agent_factory(make_agent)  # the envs' opponent specs ("greedy", "mcts:sims=200") build here

_LAZY = {
    "GreedyAgent": "agents.greedy",
    "MCTSAgent": "agents.mcts",
    "PPOAgent": "agents.ppo_agent",
    "play_pairs": "agents.arena",
    "round_robin": "agents.arena",
}


def __getattr__(name: str) -> object:
    """Agents and the arena load on first use (``PPOAgent`` needs torch)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agents' has no attribute {name!r}")


__all__ = [
    "AGENT_SPECS",
    "Agent",
    "AgentSpecError",
    "BatchAgent",
    "GreedyAgent",
    "MCTSAgent",
    "PPOAgent",
    "RandomAgent",
    "describe_agents",
    "make_agent",
    "parse_spec",
    "play_pairs",
    "round_robin",
]
