"""Init file for Supervisor apps."""
