"""DRUM resource scheduling (seed 000). Filled in by the DRUM work."""
