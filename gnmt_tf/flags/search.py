"""The search flags (`--beam-size`, `--alpha`, `--decoder`, ...) and the
`SearchOptions` they make."""

from gnmt_tf.checks import MAX_BEAM_SIZE
from gnmt_tf.flags.arg_types import (beam_size, finite_float, positive_float,
                                     positive_int)


# Search flag -> (`SearchOptions` field, default). The flags default to None
# so that `--server` can tell which ones were given.
_SEARCH_FLAGS = {"beam_size": ("beam_size", 5), "alpha": ("length_penalty", 0.6),
                 "beta": ("coverage_penalty", 0.0),
                 "beam_width": ("beam_width", None),
                 "early_stopping": ("early_stopping", "gnmt"),
                 "n_best": ("num_hypotheses", 1),
                 "decoder": ("decoder", "beam"),
                 "max_expansions": ("max_expansions", None),
                 "max_seconds": ("max_seconds", None)}


def add_search_arguments(parser):
    """Adds the search flags (`search_options` reads them)."""
    parser.add_argument("--beam-size", type=beam_size, default=None,
                        help="1 = greedy search (default 5, at most "
                             f"{MAX_BEAM_SIZE})")
    parser.add_argument("--alpha", type=finite_float, default=None,
                        help="GNMT length-normalisation exponent (default 0.6)")
    parser.add_argument("--beta", type=finite_float, default=None,
                        help="GNMT coverage-penalty weight (default 0)")
    parser.add_argument("--beam-width", type=positive_float, default=None,
                        help="GNMT pruning: drop candidates this far below the best")
    parser.add_argument("--early-stopping", default=None,
                        choices=["gnmt", "exact", "none"],
                        help="default gnmt")
    parser.add_argument("--n-best", type=beam_size, default=None,
                        help="print N hypotheses per input as 'i ||| text ||| "
                             "score' (default 1)")
    parser.add_argument(
        "--decoder", default=None,
        choices=["beam", "greedy", "dfs", "bucket", "sepbeam"],
        help="search strategy (default beam): beam and greedy run in the "
             "graph; dfs (exact search, for short inputs), bucket "
             "(budgeted best-first search) and sepbeam (one beam per "
             "model: --sepbeam-model) on the host, one sentence at a time")
    parser.add_argument("--max-expansions", type=positive_int, default=None,
                        help="dfs/bucket: stop after N model steps")
    parser.add_argument("--max-seconds", type=positive_float, default=None,
                        help="dfs/bucket: stop after S seconds per sentence")


def given_search_flags(args) -> dict:
    """`{flag dest: value}` of the search flags given on the command line."""
    return {dest: getattr(args, dest) for dest in _SEARCH_FLAGS
            if getattr(args, dest, None) is not None}


def search_options(args):
    """`SearchOptions` from the search flags (defaults for those not given).

    Raises:
      ValueError: a bad beam size or n-best size.
    """
    from gnmt_tf.translation import SearchOptions

    values = {dest: default for dest, (_, default) in _SEARCH_FLAGS.items()}
    values.update(given_search_flags(args))
    if values["beam_size"] < 1:
        raise ValueError("--beam-size must be >= 1")
    if not 1 <= values["n_best"] <= values["beam_size"]:
        raise ValueError("--n-best must be between 1 and --beam-size")
    if values["decoder"] in ("greedy", "dfs", "bucket") and values[
            "n_best"] > 1:
        raise ValueError(f"--decoder {values['decoder']} gives one "
                         "translation: --n-best must be 1")
    if (values["max_expansions"] or values["max_seconds"]) and values[
            "decoder"] not in ("dfs", "bucket"):
        raise ValueError("--max-expansions and --max-seconds need "
                         "--decoder dfs or bucket")
    return SearchOptions(**{field: values[dest]
                            for dest, (field, _) in _SEARCH_FLAGS.items()})
