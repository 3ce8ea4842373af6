"""Experiment platform: sweeps, the results store, figures and paper reproductions."""
