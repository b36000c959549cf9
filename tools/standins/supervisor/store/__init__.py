"""Supervisor app store (empty here: the real one loads the store manager)."""
