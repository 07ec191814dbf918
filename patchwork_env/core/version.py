"""The package's version, in the lowest layer so that every layer may name it without importing
the package face (``patchwork_env.__version__`` re-exports it). pyproject.toml and CITATION.cff
carry the same string (a test keeps them equal)."""

__version__ = "0.4.0.dev0"
