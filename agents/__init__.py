"""The learning algorithms (research code, run from a checkout; torch): what a trainer's step calls.

What belongs here: losses, updates and the data they learn from, importable without a command
line: PPO's rollout storage, per-seat GAE and update (``ppo``), Gumbel AlphaZero's self-play and
learner (``alphazero``), distillation and expert iteration (``distill``, ``exit``), the self-play
opponent pool, value fitting (``value_head``, ``value_model``, ``az_selfplay``'s games), and the adapters
to SB3 and RLlib. What does not: a trainer's command line, config, run folder and loop
(``train/``), and anything needed to play or rate an agent (the library, ``patchwork_env``; the
network these algorithms train and its player are ``patchwork_env.players``).
"""

from pathlib import Path

#: the previously shipped network (before ``pretrained``), kept in the repository for comparisons
SEARCH_PATH = Path(__file__).parent / "models" / "search.pt"
