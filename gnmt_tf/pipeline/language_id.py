"""Language identification restricted to the languages a model knows.

Uses lingua (lingua-language-detector), whose n-gram models ship inside its
wheel, so detection works offline. A detector is built once per set of
languages (`LanguageDetector.for_languages`, about a second with the models
preloaded) and reused; detection itself takes milliseconds.

Codes are ISO 639-1 ("en", "de", "fr", "cs"). A code lingua does not know,
or a language a model was not trained on, raises `UnsupportedLanguageError`,
whose message lists the supported codes.
"""

import dataclasses
import functools
from typing import Iterable, List, Optional, Sequence, Tuple

try:
    from lingua import IsoCode639_1
    from lingua import Language
    from lingua import LanguageDetectorBuilder
except ImportError:  # the gateway extra
    raise ModuleNotFoundError(
        "language identification needs lingua-language-detector: "
        "pip install 'gnmt-tf[gateway]'",
        name="lingua") from None

UNDETERMINED = "und"  # ISO 639-2: no language could be determined

# Document-level detection reads at most this many characters: enough for a
# confident answer, and bounded time on huge documents.
MAX_DETECTION_CHARS = 4000
# Per-segment detection (`segment_languages`) reads at most this many
# characters of a segment, and gives a segment a language of its own only
# from this many letters: shorter ones (headings, captions, alt text) are
# too short for a reliable answer and take the document's.
SEGMENT_DETECTION_CHARS = 300
MIN_SEGMENT_LETTERS = 20


class UnsupportedLanguageError(ValueError):
    """A language code that is not among the supported ones."""

    def __init__(self, code: str, supported: Iterable[str]):
        self.code = code
        self.supported = tuple(sorted(supported))
        if code == UNDETERMINED:
            super().__init__(
                f"unsupported language {code!r}: the text is in none of the "
                f"supported languages ({', '.join(self.supported)}), or has "
                f"no letters")
        else:
            super().__init__(f"unsupported language {code!r}; supported: "
                             f"{', '.join(self.supported)}")


def check_language(code: str, supported: Iterable[str]) -> str:
    """`code` lower-cased if it is in `supported`, else
    `UnsupportedLanguageError`."""
    supported = {c.lower() for c in supported}
    if not code or code.lower() not in supported:
        raise UnsupportedLanguageError(code, supported)
    return code.lower()


def _iso_code(code: str) -> IsoCode639_1:
    try:
        return IsoCode639_1.from_str(code.lower())
    except ValueError:
        raise UnsupportedLanguageError(
            code, (lang.iso_code_639_1.name.lower()
                   for lang in Language.all())) from None


@dataclasses.dataclass(frozen=True)
class Detection:
    """One detection: the language code (`UNDETERMINED` when the text has
    nothing to go on, such as digits only) and lingua's confidence in [0, 1]
    (relative to the other supported languages, so with one language it is
    always 1)."""

    language: str
    confidence: float


@dataclasses.dataclass(frozen=True)
class Span:
    """A stretch of mixed-language text: `text[start:end]` is in
    `language`."""

    start: int
    end: int
    language: str


class LanguageDetector:
    """Detects which of a fixed set of languages a text is in.

    Args:
      languages: sequence of str. ISO 639-1 codes the model knows (at least
        one).

    Raises:
      UnsupportedLanguageError: a code lingua does not know.

    Example:
      >>> detector = LanguageDetector.for_languages(["en", "de"])
      >>> detector.detect("Ein Mann fährt Fahrrad.").language
      'de'
    """

    def __init__(self, languages: Sequence[str]):
        if not languages:
            raise ValueError("no languages given")
        codes = sorted({_iso_code(code) for code in languages},
                       key=lambda c: c.name)
        self.languages: Tuple[str, ...] = tuple(c.name.lower() for c in codes)
        builder = (LanguageDetectorBuilder.from_iso_codes_639_1(*codes)
                   if len(codes) > 1 else None)
        self._detector = (builder.with_preloaded_language_models().build()
                          if builder else None)

    @classmethod
    def for_languages(cls, languages: Iterable[str]) -> "LanguageDetector":
        """A shared detector for these languages (built on first use)."""
        return _cached(frozenset(code.lower() for code in languages))

    def detect(self, text: str) -> Detection:
        """The most likely supported language of `text` (its first
        `MAX_DETECTION_CHARS` characters) and the confidence;
        `UNDETERMINED` when it has no letters or is in none of the
        supported languages' scripts (Cyrillic among en, de)."""
        text = text[:MAX_DETECTION_CHARS]
        if not any(c.isalpha() for c in text):
            return Detection(UNDETERMINED, 0.0)
        if self._detector is None:
            return Detection(self.languages[0], 1.0)
        best = self._detector.compute_language_confidence_values(text)[0]
        if best.value == 0:  # lingua ruled every language out (the script)
            return Detection(UNDETERMINED, 0.0)
        return Detection(best.language.iso_code_639_1.name.lower(),
                         best.value)

    def detect_each(self, texts: Sequence[str]) -> List[Detection]:
        """`detect` for each text (sentences of a mixed document)."""
        return [self.detect(text) for text in texts]

    def spans(self, text: str) -> List[Span]:
        """Stretches of `text` by language, for text that mixes languages
        inside one line (lingua's `detect_multiple_languages_of`)."""
        if self._detector is None:
            return [Span(0, len(text), self.languages[0])] if text else []
        return [Span(r.start_index, r.end_index,
                     r.language.iso_code_639_1.name.lower())
                for r in self._detector.detect_multiple_languages_of(text)]

    def check(self, code: str) -> str:
        """`code` if this detector supports it, else
        `UnsupportedLanguageError`."""
        return check_language(code, self.languages)


def segment_languages(detector: LanguageDetector, texts: Sequence[str],
                      document_language: str,
                      detect_each: bool = True) -> List[str]:
    """The language of each segment of a document (mixed-language documents
    translate each segment from its own).

    Args:
      detector: `LanguageDetector` of the model's languages.
      texts: the segments' text.
      document_language: str. The document's language (detected or given).
      detect_each: bool. Give a segment of at least `MIN_SEGMENT_LETTERS`
        letters the language detected in it; False: every segment is in
        `document_language` (a language the user gave).

    Returns:
      One code per segment: `UNDETERMINED` for a segment with letters in
      none of the detector's languages' scripts (Arabic among en, de),
      whatever `detect_each`; else its language.
    """
    languages = []
    for text in texts:
        head = text[:SEGMENT_DETECTION_CHARS]
        letters = sum(c.isalpha() for c in head)
        if not letters:
            languages.append(document_language)
            continue
        found = detector.detect(head).language
        if found == UNDETERMINED or (detect_each
                                     and letters >= MIN_SEGMENT_LETTERS):
            languages.append(found)
        else:
            languages.append(document_language)
    return languages


@functools.lru_cache(maxsize=8)
def _cached(languages: frozenset) -> LanguageDetector:
    return LanguageDetector(sorted(languages))


def parse_languages(text: Optional[str]) -> List[str]:
    """`"en,de, fr"` -> `["en", "de", "fr"]` (for command-line options)."""
    codes = [c.strip().lower() for c in (text or "").split(",") if c.strip()]
    if not codes:
        raise ValueError("no languages given")
    return codes
