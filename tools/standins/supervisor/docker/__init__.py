"""Init file for supervisor docker."""
