"""Errors the `gnmt-tf` command reports as one line with exit status 2.

Kept apart from `gnmt_tf.cli.main` so that subcommands raise the very class
`main` catches, also when it runs as `python -m gnmt_tf.cli.main` (where
`main` is the module `__main__`).
"""


class UsageError(Exception):
    """A user error: printed as one line, exit code 2, no traceback."""
