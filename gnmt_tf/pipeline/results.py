"""What a translate backend returns for one sentence.

A backend (`Pipeline`'s translate callable) may return plain strings, or
`SentenceResult`s carrying what quality estimation and placeholder / markup
restoration need from the model: the score, the subword pieces on both sides,
and a `[T, S]` alignment (alignment-head probabilities or cross-attention,
row = target piece, column = source piece). Backends fill what they have;
consumers treat a missing field as "not available" and fall back.
"""

from typing import Any, NamedTuple, Optional, Sequence, Tuple, Union


class SentenceResult(NamedTuple):
    """One translated sentence.

    Attributes:
      text: str. The translation (detokenised).
      score: float or None. Length-normalised log-probability: the sum of
        the output's token log-probabilities divided by its length in
        subwords (EOS included).
      source_pieces: tuple of str or None. The subwords the model read.
      target_pieces: tuple of str or None. The subwords it wrote (no EOS).
      alignment: `[len(target_pieces), len(source_pieces)]` array-like of
        float, or None.
    """

    text: str
    score: Optional[float] = None
    source_pieces: Optional[Tuple[str, ...]] = None
    target_pieces: Optional[Tuple[str, ...]] = None
    alignment: Optional[Any] = None


def as_result(value: Union[str, SentenceResult]) -> SentenceResult:
    """`value` as a `SentenceResult` (a str becomes one with only its text)."""
    if isinstance(value, SentenceResult):
        return value
    if isinstance(value, str):
        return SentenceResult(value)
    raise TypeError(f"a translate backend must return str or SentenceResult, "
                    f"got {type(value).__name__}")


def texts(values: Sequence[Union[str, SentenceResult]]):
    """The texts of `values` (str or `SentenceResult`)."""
    return [as_result(v).text for v in values]
