"""Fixtures for the task-space tests.

The tiny synthetic 4-way corpus (`multiway_dir`) is in `tests/conftest.py`,
shared with the task-space export tests.
"""
