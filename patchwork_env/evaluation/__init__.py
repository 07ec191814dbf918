"""Measuring strength: the arena (paired deals, both seats, Wilson intervals, an Elo fit) and the
ladder. ``play_pairs(a, b, num_pairs)`` plays two agents; ``round_robin(agents, num_pairs)`` plays
every pair and fits their Elo."""

from patchwork_env.evaluation.arena import PairResult, TournamentResult, play_pairs, round_robin
from patchwork_env.evaluation.stats import Rating, fit_elo, wilson_interval

__all__ = ["PairResult", "Rating", "TournamentResult", "fit_elo", "play_pairs", "round_robin", "wilson_interval"]
