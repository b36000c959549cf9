"""Development tools shared by tests, benchmarks and training; not installed with the server."""
