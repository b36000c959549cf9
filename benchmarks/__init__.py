"""Benchmarks (not part of the test suite); run them with script/benchmark."""
