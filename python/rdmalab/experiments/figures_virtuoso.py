"""The old home of the Virtuoso figures, now `figures.virtuoso`: re-exported so that old
imports work."""

from rdmalab.experiments.figures.virtuoso import *  # noqa: F401,F403
