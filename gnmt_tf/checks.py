"""Range checks for numeric settings, shared by the configs and the CLI.

`check_number` is the one place that says what a valid count, size or weight
is; the typed configs (`gnmt_tf.config`, `task_space`) call it in
`__post_init__`, so a `--set key=value` override is checked like a flag, and
`gnmt_tf.flags.arg_types` builds the argparse `type=` validators from it.
"""

import math
import numbers

# The largest beam any search takes. The search holds beam_size x batch
# hypotheses, each with its decoder state (a Transformer's KV cache) and a
# row of log-probabilities over the whole vocabulary, so a beam of
# thousands exhausts memory; beams above about 10 rarely gain BLEU (Koehn
# and Knowles 2017, "Six challenges for NMT"), and 128 leaves room for
# studies of large beams.
MAX_BEAM_SIZE = 128


def describe(integer=False, minimum=None, above=None, maximum=None,
             below=None) -> str:
    """Words for a range, e.g. `an integer >= 1`, `a finite number in [0, 1)`."""
    kind = "an integer" if integer else "a finite number"
    has_low = minimum is not None or above is not None
    has_high = maximum is not None or below is not None
    if has_low and has_high:
        left = f"[{minimum}" if minimum is not None else f"({above}"
        right = f"{maximum}]" if maximum is not None else f"{below})"
        return f"{kind} in {left}, {right}"
    for operator, bound in ((">=", minimum), (">", above), ("<=", maximum),
                            ("<", below)):
        if bound is not None:
            return f"{kind} {operator} {bound}"
    return kind


def in_range(value, integer=False, minimum=None, above=None, maximum=None,
             below=None) -> bool:
    """True when `value` is a finite number (an integer if `integer`) in
    the range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if integer and not isinstance(value, numbers.Integral):
        return False
    if not math.isfinite(value):
        return False
    return bool((minimum is None or value >= minimum)
                and (above is None or value > above)
                and (maximum is None or value <= maximum)
                and (below is None or value < below))


def check_number(name, value, integer=False, minimum=None, above=None,
                 maximum=None, below=None, optional=False):
    """Raises ValueError naming `name` unless `value` is in range.

    Args:
      name: str. The setting, for the message.
      value: the value to check.
      integer: bool. Require an integer.
      minimum / maximum: inclusive bounds; above / below: exclusive bounds.
      optional: bool. None is also accepted.

    Raises:
      ValueError: e.g. `max_tokens must be an integer >= 1, got 0`.
    """
    if optional and value is None:
        return
    bounds = dict(integer=integer, minimum=minimum, above=above,
                  maximum=maximum, below=below)
    if not in_range(value, **bounds):
        raise ValueError(f"{name} must be {describe(**bounds)}, "
                         f"got {value!r}")
