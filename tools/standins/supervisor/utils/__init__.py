"""Supervisor utils (empty here: the real one loads the runtime helpers)."""
