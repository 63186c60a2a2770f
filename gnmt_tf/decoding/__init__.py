"""Model-agnostic decoding: beam and greedy search and sampling (in-graph);
exact (dfs), bucket, separate-beam and lexically constrained search
(host-side); forced decoding; GNMT scoring and pruning; ensembles and
log-linear predictor combination; vocabulary shortlists.

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
from gnmt_tf.decoding.bucket_search import bucket_search
from gnmt_tf.decoding.constrained_search import ConstrainedHypothesis
from gnmt_tf.decoding.constrained_search import constrained_search
from gnmt_tf.decoding.ensemble import EnsembleStepFunction
from gnmt_tf.decoding.ensemble import LogLinearStepFunction
from gnmt_tf.decoding.ensemble import WordCountPredictor
from gnmt_tf.decoding.exact_search import ExactSearchResult
from gnmt_tf.decoding.exact_search import exact_search
from gnmt_tf.decoding.forced import ForcedResult
from gnmt_tf.decoding.forced import forced_decode
from gnmt_tf.decoding.greedy_search import greedy_search
from gnmt_tf.decoding.host_steps import HostSteps
from gnmt_tf.decoding.penalties import coverage_penalty
from gnmt_tf.decoding.penalties import gnmt_score
from gnmt_tf.decoding.penalties import length_penalty
from gnmt_tf.decoding.sampling import sample_search
from gnmt_tf.decoding.sepbeam_search import sepbeam_search
from gnmt_tf.decoding.shortlist import Shortlist
from gnmt_tf.decoding.xla_step import xla_step

__all__ = [
    "ConstrainedHypothesis",
    "DecodingResult",
    "EnsembleStepFunction",
    "ExactSearchResult",
    "ForcedResult",
    "LogLinearStepFunction",
    "WordCountPredictor",
    "HostSteps",
    "Shortlist",
    "beam_search",
    "bucket_search",
    "constrained_search",
    "coverage_penalty",
    "exact_search",
    "flatten_beams",
    "forced_decode",
    "gather_beams",
    "gnmt_score",
    "greedy_search",
    "length_penalty",
    "sample_search",
    "sepbeam_search",
    "tile_beams",
    "unflatten_beams",
    "xla_step",
]
