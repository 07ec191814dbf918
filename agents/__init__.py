"""Players for Patchwork: ``random``, ``greedy``, ``mcts`` and (with torch) ``ppo``, all following
``patchwork_env.agent.Agent``, built from spec strings with ``make_agent``; the arena that measures
their strength is ``agents.arena``."""

from agents.registry import AGENT_SPECS, AgentSpecError, describe_agents, make_agent, parse_spec
from patchwork_env.agent import Agent, BatchAgent, RandomAgent

__all__ = [
    "AGENT_SPECS",
    "Agent",
    "AgentSpecError",
    "BatchAgent",
    "RandomAgent",
    "describe_agents",
    "make_agent",
    "parse_spec",
]
