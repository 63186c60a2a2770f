"""Model-agnostic decoding: beam, greedy and exact search, GNMT scoring,
ensembles.

A model is seen only through a step function
`step_fn(ids [N], state) -> (log_probs [N, V], attention [N, S] or None,
new_state)`; every search here is written once against it.
"""

from gnmt_tf.decoding.beam_search import DecodingResult
from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.decoding.beam_search import flatten_beams
from gnmt_tf.decoding.beam_search import gather_beams
from gnmt_tf.decoding.beam_search import tile_beams
from gnmt_tf.decoding.beam_search import unflatten_beams
from gnmt_tf.decoding.ensemble import EnsembleStepFunction
from gnmt_tf.decoding.exact_search import ExactSearchResult
from gnmt_tf.decoding.exact_search import exact_search
from gnmt_tf.decoding.greedy_search import greedy_search
from gnmt_tf.decoding.penalties import coverage_penalty
from gnmt_tf.decoding.penalties import gnmt_score
from gnmt_tf.decoding.penalties import length_penalty
from gnmt_tf.decoding.xla_step import xla_step

__all__ = [
    "DecodingResult",
    "EnsembleStepFunction",
    "ExactSearchResult",
    "beam_search",
    "coverage_penalty",
    "exact_search",
    "flatten_beams",
    "gather_beams",
    "gnmt_score",
    "greedy_search",
    "length_penalty",
    "tile_beams",
    "unflatten_beams",
    "xla_step",
]
