"""Init file for Supervisor."""
