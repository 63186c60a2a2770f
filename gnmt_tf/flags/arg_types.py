"""argparse `type=` validators for the numeric flags of every subcommand.

Each one parses the string and checks its range with
`gnmt_tf.checks`, so `--batch-size -3` or `--alpha nan` stop with one line
(`argument --batch-size: must be an integer >= 1, got '-3'`) and exit 2
before any work.

Example:
```python
parser.add_argument("--batch-size", type=positive_int, default=32)
```
"""

import argparse

from gnmt_tf.checks import MAX_BEAM_SIZE, describe, in_range


def number(integer=False, minimum=None, above=None, maximum=None,
           below=None, name=None):
    """An argparse type: the string as int (or float), checked for range."""
    bounds = dict(integer=integer, minimum=minimum, above=above,
                  maximum=maximum, below=below)

    def parse(text):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            value = None
        if value is None or not in_range(value, **bounds):
            raise argparse.ArgumentTypeError(
                f"must be {describe(**bounds)}, got {text!r}")
        return value

    parse.__name__ = name or describe(**bounds)
    return parse


positive_int = number(integer=True, minimum=1, name="positive_int")
non_negative_int = number(integer=True, minimum=0, name="non_negative_int")
positive_float = number(above=0, name="positive_float")
non_negative_float = number(minimum=0, name="non_negative_float")
finite_float = number(name="finite_float")
probability = number(minimum=0, maximum=1, name="probability")
beam_size = number(integer=True, minimum=1, maximum=MAX_BEAM_SIZE,
                   name="beam_size")
