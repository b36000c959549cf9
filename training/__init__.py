"""Tools that make the project's own models (not part of the server or the tests)."""
