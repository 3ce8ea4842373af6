"""`rdmalab sweep`, `rdmalab plot`, `rdmalab repro` (filled in by the experiment-platform work)."""


def register(sub) -> None:  # noqa: ANN001
    """Adds the experiment subcommands to the `rdmalab` parser."""
