"""The learning side of the project (run from a checkout): PPO pieces, AlphaZero self-play and its
learner, distillation, the self-play opponent pool, value-head fitting, and the SB3 and RLlib
adapters. The players they train (and ``make_agent``) are ``patchwork_env.players``."""

from pathlib import Path

#: the previously shipped network (before ``pretrained``), kept in the repository for comparisons
SEARCH_PATH = Path(__file__).parent / "models" / "search.pt"
