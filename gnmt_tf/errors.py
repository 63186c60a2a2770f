"""Errors that mean "bad input", not "bug": the `gnmt-tf` command prints
them as one line and exits with status 2."""


class UsageError(Exception):
    """A user error: printed as one line, exit code 2, no traceback."""
