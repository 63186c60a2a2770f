"""What every translator answers, whatever runs the model: one search
options type, one result type and one protocol.

`gnmt_tf.translator.Translator` (TensorFlow in process), the host
translators over TFLite and ONNX (`gnmt_tf.host_translator`) and the gRPC
client (`gnmt_tf.serving.client.TranslationClient`) are each a
`TranslationBackend`:

```python
backend.translate(["A dog runs."], SearchOptions(beam_size=4),
                  src_lang="en", tgt_lang="de")             # -> ["..."]
backend.translate_nbest(texts, beam_size=4, num_hypotheses=2, **task)
                                                 # -> [[Hypothesis, ...], ...]
```

Search settings come as a `SearchOptions` or as its field names as
keywords (`split_search_arguments` sorts them from the task arguments). This module
imports no TensorFlow, so light clients (serving, host runtimes) use it.
"""

import dataclasses
import numbers
import typing
from typing import List, Optional, Sequence, Tuple

from gnmt_tf.checks import check_number

# Beam search's stopping rules (`gnmt_tf.decoding.beam_search`).
EARLY_STOPPING_MODES = ("gnmt", "exact", "none")

# Search strategies (`SearchOptions.decoder`). "beam" and "greedy" run in the
# graph (`search_fn`, the SavedModel); the others are host-side loops over
# the model's step function (`gnmt_tf.decoding.host_decoding`).
DECODERS = ("beam", "greedy", "dfs", "bucket", "sepbeam")
GRAPH_DECODERS = ("beam", "greedy")


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """How to search.

    Attributes:
      beam_size: int. 1 means greedy search. The command line bounds it
        by `gnmt_tf.checks.MAX_BEAM_SIZE`; the library does not (an exact
        search over a toy vocabulary takes a beam of thousands).
      length_penalty: float. GNMT's alpha (0 = none).
      coverage_penalty: float. GNMT's beta (0 = none).
      beam_width: float or None. GNMT's score-space pruning width.
      num_hypotheses: int. n-best list size (<= beam_size).
      early_stopping: "gnmt", "exact" or "none" (see `beam_search`).
      max_length_ratio: float. Output may be at most this times the source
        length in subwords (GNMT: 2).
      decoder: one of `DECODERS`. "beam" (greedy when `beam_size` is 1),
        "greedy", "dfs" (exact depth-first search,
        `gnmt_tf.decoding.exact_search`), "bucket" (budgeted best-first
        search, `gnmt_tf.decoding.bucket_search`) or "sepbeam" (one beam
        per model, `gnmt_tf.decoding.sepbeam_search`). dfs and bucket rank
        by the plain log-probability (no penalties) and give one hypothesis.
      max_expansions: int or None. Budget of model steps for dfs and bucket.
      max_seconds: float or None. Time budget for dfs and bucket.
    """

    beam_size: int = 5
    length_penalty: float = 0.6
    coverage_penalty: float = 0.0
    beam_width: typing.Optional[float] = None
    num_hypotheses: int = 1
    early_stopping: str = "gnmt"
    max_length_ratio: float = 2.0
    decoder: str = "beam"
    max_expansions: typing.Optional[int] = None
    max_seconds: typing.Optional[float] = None

    def __post_init__(self):
        check_number("beam_size", self.beam_size, integer=True, minimum=1)
        check_number("num_hypotheses", self.num_hypotheses, integer=True,
                     minimum=1, maximum=self.beam_size)
        # Penalties may be graph tensors (the SavedModel's
        # translate_with_options): only Python/NumPy numbers are checked.
        for name, bounds in (("length_penalty", {}),
                             ("coverage_penalty", {}),
                             ("beam_width", {"above": 0}),
                             ("max_length_ratio", {"above": 0})):
            value = getattr(self, name)
            if value is None or isinstance(value, numbers.Real):
                check_number(name, value, optional=name == "beam_width",
                             **bounds)
        check_number("max_expansions", self.max_expansions, integer=True,
                     minimum=1, optional=True)
        check_number("max_seconds", self.max_seconds, above=0, optional=True)
        if self.decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {', '.join(DECODERS)}, "
                             f"got {self.decoder!r}")
        if (self.max_expansions is not None or self.max_seconds is not None
                ) and self.decoder not in ("dfs", "bucket"):
            raise ValueError("max_expansions and max_seconds budget the dfs "
                             f"and bucket decoders, not {self.decoder}")
        if self.num_hypotheses > 1 and self.decoder in ("greedy", "dfs",
                                                        "bucket"):
            raise ValueError(f"the {self.decoder} decoder gives one "
                             "hypothesis: num_hypotheses must be 1")
        if self.early_stopping not in EARLY_STOPPING_MODES:
            raise ValueError(f"early_stopping must be one of "
                             f"{', '.join(EARLY_STOPPING_MODES)}, got "
                             f"{self.early_stopping!r}")


def runs_on_host(options: SearchOptions) -> bool:
    """Whether the host search over an export
    (`gnmt_tf.host_translator.HostTranslator`) runs `options`: the beam
    or greedy decoder with GNMT's early stopping."""
    return (options.decoder in ("beam", "greedy")
            and options.early_stopping == "gnmt")


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """One translation of a sentence: its text and its search score (what
    every translator's `translate_nbest` gives, a list a sentence)."""

    text: str
    score: float


SEARCH_FIELDS = tuple(f.name for f in dataclasses.fields(SearchOptions))


def split_search_arguments(options: Optional[SearchOptions] = None,
                           **arguments) -> Tuple[SearchOptions, dict]:
    """`(SearchOptions, task)` from a translator call's arguments: `options`
    (default `SearchOptions()`), with any `SearchOptions` field given as a
    keyword replacing its value; the other keywords are the task.

    Raises:
      TypeError: `options` is not a `SearchOptions`.
      ValueError: a bad search setting (`SearchOptions`' checks).
    """
    if options is None:
        options = SearchOptions()
    elif not isinstance(options, SearchOptions):
        raise TypeError(f"options must be a SearchOptions, not "
                        f"{type(options).__name__}")
    search = {k: arguments.pop(k) for k in list(arguments)
              if k in SEARCH_FIELDS}
    if search:
        options = dataclasses.replace(options, **search)
    return options, arguments


@typing.runtime_checkable
class TranslationBackend(typing.Protocol):
    """Anything that translates: `Translator`, `HostTranslator`,
    `TranslationClient`.

    `task` holds the model's task arguments by name (`src_lang`, `tgt_lang`,
    `tags`; none for a one-direction model), search settings a
    `SearchOptions` or its fields as keywords. Blank inputs give "" (score
    0); results are in input order.
    """

    def translate(self, texts: Sequence[str],
                  options: Optional[SearchOptions] = None,
                  **task) -> List[str]:
        """The best translation of each text."""

    def translate_nbest(self, texts: Sequence[str],
                        options: Optional[SearchOptions] = None,
                        **task) -> List[List[Hypothesis]]:
        """`options.num_hypotheses` `Hypothesis` a text, best first."""
