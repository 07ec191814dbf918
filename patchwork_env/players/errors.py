"""The errors of the players layer (light: no torch, no engine), so that command lines can name
them without loading what raises them."""


class AgentSpecError(ValueError):
    """A spec string that names no agent, or gives an agent a parameter it does not take."""


class MissingExtraError(AgentSpecError, ImportError):
    """A spec whose agent needs an optional dependency that is not installed."""


class CheckpointError(ValueError):
    """A file that is not a readable checkpoint of this project."""
