"""The players (layer 3, above the envs): everything that chooses a move, and the spec strings
that name them.

What belongs here: ``random``, ``greedy`` (its features in ``heuristic``) and ``mcts``; with the
``torch`` extra a checkpoint's network (``network:PATH``, ``policy``; ``ppo:PATH`` is its old
name until 0.5.0), the ``az`` search and the shipped ``pretrained`` network, with the network itself
(``network``), its checkpoint format (``checkpoint``) and its search-time forward pass
(``inference``); ``sb3:PATH`` models and your own agents (``user``); the spec registry
(``registry``). Every player follows ``patchwork_env.envs.agent.Agent``; ``make_agent(spec)`` builds
one (``describe_agents()`` lists them). Training code belongs in ``agents/`` and ``train/``, games
between players in ``patchwork_env.evaluation``. Importing this package is light: a player's module
loads when a spec builds it."""

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
