"""The old home of the multipath figures, now `figures.multipath`: re-exported so that old
imports work."""

from rdmalab.experiments.figures.multipath import *  # noqa: F401,F403
