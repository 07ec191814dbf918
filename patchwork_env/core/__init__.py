"""The rules core (layer 1, the lowest: it imports nothing above it): the patch tables and bit
twiddling (``patches``, ``bitboard``), the compiled rules kernels on the flat state array
(``rules``, the one implementation), actions and their encoding (``actions``), the immutable
``GameState`` (``state``), the one check of a raw array (``validate``), serialization, drawing and
game records (``serialize``, ``render``, ``records``, over the read-only ``view``), and how the
engine compiles, writes files and loads names lazily (``jit``, ``files``, ``lazy``). The rules are
deterministic, with no global random generator; observations, rewards and env APIs belong above
(``patchwork_env.envs``).
"""
