"""`Pipeline`: documents in, documents out, around any translate callable.

The steps: extract segments (`pipeline.documents`), normalise them
(`pipeline.normalize`; per segment, so `script` and `pre` stay as they
were), take inline markup out (`pipeline.markup`), detect the source
language when it is "auto" (`pipeline.language_id`), split into sentences
(`pipeline.sentence_split`), protect key information and glossary terms
(`pipeline.key_information`), translate the sentences not in the cache,
restore entities, terms and markup at the aligned positions
(`pipeline.projection`, with repairs so none is lost), estimate quality
(`pipeline.quality`, on request), put the user's punctuation back, and
reassemble.

The model is a callable `translate(sentences, src_lang, tgt_lang, tags) ->
translations`, each a str or a `pipeline.results.SentenceResult` (whose
alignment and score restoration and quality estimation use when present),
so an in-process translator or a server client can be wrapped in one
without this module importing TensorFlow or gRPC.
"""

import collections
import dataclasses
import re
import warnings
from typing import (Callable, Dict, List, Optional, Sequence, Tuple,
                    Union)

from pipeline.cache import Task
from pipeline.cache import TranslationCache
from pipeline.documents import MAX_DOCUMENT_BYTES
from pipeline.documents import read_document
from pipeline.edits import apply_edits
from pipeline.glossary import as_glossary
from pipeline.key_information import ENTITY_TYPES
from pipeline.key_information import KeyInformation
from pipeline.key_information import Protected
from pipeline.language_id import UNDETERMINED
from pipeline.language_id import LanguageDetector
from pipeline.language_id import UnsupportedLanguageError
from pipeline.language_id import check_language
from pipeline.markup import MarkupError
from pipeline.markup import restore_markup
from pipeline.markup import strip_markup
from pipeline.normalize import normalize_reversibly
from pipeline.projection import WordAlignment
from pipeline.quality import DEFAULT_MODEL
from pipeline.quality import QualityModel
from pipeline.quality import document_score
from pipeline.quality import features
from pipeline.results import SentenceResult
from pipeline.results import as_result
from pipeline.sentence_split import split_sentences

TranslateFn = Callable[[List[str], str, str, Sequence[str]],
                       List[Union[str, SentenceResult]]]

# Languages written without spaces between sentences.
_NO_SPACE = frozenset({"ja", "zh", "th"})
_MARKUP = re.compile(r"</?g\d+>|<x\d+/>")


class LowQualityWarning(UserWarning):
    """Sentences whose quality estimate is below `min_quality`."""


@dataclasses.dataclass
class SentenceReport:
    """One translated sentence of a document.

    Attributes:
      source: str. The sentence as split (markup taken out).
      translation: str. Its translation with entities and terms restored
        (before markup and punctuation are put back).
      quality: float in [0, 1] or None (no quality estimation asked).
      flagged: bool. `quality` is below `min_quality`.
      features: the quality features (`pipeline.quality.FEATURES`).
      kept, repaired: per kind ("entity", "term"), how many the model
        carried itself and how many restoration had to put back.
    """

    source: str
    translation: str
    quality: Optional[float] = None
    flagged: bool = False
    features: Dict[str, Optional[float]] = dataclasses.field(
        default_factory=dict)
    kept: Dict[str, int] = dataclasses.field(default_factory=dict)
    repaired: Dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class DocumentTranslation:
    """`Pipeline.translate_document_detailed`'s result.

    Attributes:
      output: the translated document (bytes for bytes input, else str).
      source_language, target_language: str. ISO 639-1 codes (the source
        as detected when "auto" was asked).
      quality: float or None. Length-weighted mean of the sentences'.
      sentences: list of `SentenceReport`, in document order.
      kept, repaired: totals per kind ("entity", "term", "markup").
    """

    output: Union[bytes, str]
    source_language: str
    target_language: str
    quality: Optional[float]
    sentences: List[SentenceReport]
    kept: Dict[str, int]
    repaired: Dict[str, int]

    @property
    def flagged(self) -> List[int]:
        """Indices of the sentences below `min_quality`."""
        return [i for i, s in enumerate(self.sentences) if s.flagged]


@dataclasses.dataclass
class _Segment:
    """One segment on its way through: normalised, markup out, split."""

    normalized: object  # pipeline.normalize.Normalized
    plain: str
    markup: list
    spans: List[Tuple[int, int]]  # sentence spans over `plain`
    protected: List[Protected]


def _sentence_spans(text: str, sentences: Sequence[str]
                    ) -> List[Tuple[int, int]]:
    """Where each (stripped) sentence lies in `text`."""
    spans, position = [], 0
    for sentence in sentences:
        start = text.find(sentence, position)
        if start < 0:
            raise ValueError("sentence splitter changed the text")
        spans.append((start, start + len(sentence)))
        position = start + len(sentence)
    return spans


class Pipeline:
    """Translates documents with a sentence-level translate callable.

    Args:
      translate: callable `(sentences, src_lang, tgt_lang, tags) ->
        translations`, one str or `SentenceResult` per sentence.
      languages: sequence of str. ISO 639-1 codes the model knows; source
        and target languages must be among them.
      cache: TranslationCache or None.
      model_version: str. Part of the cache key.
      max_bytes: int. The largest document accepted.
      protection: "text" (the model reads entities as they are) or
        "tokens" (typed placeholder tokens, for a model trained with them);
        see `pipeline.key_information`.
      entity_types: entity types protected (`ENTITY_TYPES`: URL, EMAIL,
        MONEY, DATE, TIME, NUM); () protects none (glossary terms and markup
        still are).
      maskers: extra maskers (`mask(text) -> (masked, entities)`), e.g.
        `pipeline.placeholder_mapping.HashPlaceholderMasker` for `#NAME#`.
      quality_model: `pipeline.quality.QualityModel` combining the features.
      round_trip: bool. Quality estimation translates each output back
        (target -> source) with the same callable: only for a
        multi-direction model.

    Example:
      >>> upper = lambda sentences, src, tgt, tags: [s.upper()
      ...                                            for s in sentences]
      >>> Pipeline(upper, ["en", "de"]).translate_document(
      ...     "Hallo Welt. Wie geht es?", src_lang="de", tgt_lang="en")
      'HALLO WELT. WIE GEHT ES?'
    """

    def __init__(self, translate: TranslateFn, languages: Sequence[str],
                 cache: Optional[TranslationCache] = None,
                 model_version: str = "unversioned",
                 max_bytes: int = MAX_DOCUMENT_BYTES,
                 protection: str = "text",
                 entity_types: Sequence[str] = ENTITY_TYPES,
                 maskers: Sequence = (),
                 quality_model: QualityModel = DEFAULT_MODEL,
                 round_trip: bool = False):
        self._translate = translate
        self.languages = tuple(sorted({c.lower() for c in languages}))
        self.cache = cache
        self.model_version = model_version
        self.max_bytes = max_bytes
        KeyInformation(mode=protection, types=entity_types)  # validates
        self.protection = protection
        self.entity_types = tuple(entity_types)
        self.maskers = tuple(maskers)
        self.quality_model = quality_model
        self.round_trip = round_trip

    def detect_language(self, text: str) -> str:
        """The source language of `text` among `languages`; raises
        `UnsupportedLanguageError` when there is nothing to detect."""
        found = LanguageDetector.for_languages(self.languages).detect(text)
        if found.language == UNDETERMINED:
            raise UnsupportedLanguageError(UNDETERMINED, self.languages)
        return found.language

    def translate_document(self, data: Union[bytes, str], src_lang: str,
                           tgt_lang: str, tags: Sequence[str] = (),
                           format: str = "text", glossary=None,
                           qe: bool = False,
                           min_quality: Optional[float] = None
                           ) -> Union[bytes, str]:
        """The translated document (bytes in, bytes out; str in, str out).

        Args:
          data: the document.
          src_lang: str. A code of `languages`, or "auto".
          tgt_lang: str. A code of `languages`.
          tags: sequence of str. Scene tags for task-space models.
          format: str. "text" or "html".
          glossary: None, a `pipeline.glossary.Glossary`, a `GlossaryFile`
            or the path of a glossary TSV (entries selected by language
            pair and `tags`), or a mapping source term -> target term.
          qe: bool. Estimate quality (see `translate_document_detailed`
            for the scores).
          min_quality: float in [0, 1] or None. Sentences estimated below
            it are flagged: a `LowQualityWarning` says how many.

        Raises:
          UnsupportedLanguageError, pipeline.documents.DocumentError,
          pipeline.glossary.GlossaryError, ValueError (bad `min_quality`).
        """
        result = self.translate_document_detailed(
            data, src_lang, tgt_lang, tags, format, glossary, qe,
            min_quality)
        if result.flagged:
            warnings.warn(f"{len(result.flagged)} of {len(result.sentences)}"
                          f" sentence(s) estimated below min_quality "
                          f"{min_quality}", LowQualityWarning, stacklevel=2)
        return result.output

    def translate_document_detailed(
            self, data: Union[bytes, str], src_lang: str, tgt_lang: str,
            tags: Sequence[str] = (), format: str = "text", glossary=None,
            qe: bool = False, min_quality: Optional[float] = None
    ) -> DocumentTranslation:
        """`translate_document` with per-sentence detail: quality scores
        and flags, the detected language, entities / terms / markup kept
        and repaired. Same arguments; quality is estimated when `qe` or
        `min_quality` is given."""
        if min_quality is not None and not 0.0 <= min_quality <= 1.0:
            raise ValueError(f"min_quality must be in [0, 1], got "
                             f"{min_quality}")
        tgt_lang = check_language(tgt_lang, self.languages)
        document = read_document(data, format, self.max_bytes)
        segments = document.segments
        if src_lang == "auto":
            src_lang = (self.detect_language(_MARKUP.sub(
                " ", " ".join(segments)))
                if any(s.strip() for s in segments) else tgt_lang)
        src_lang = check_language(src_lang, self.languages)
        task = Task(src_lang, tgt_lang, tuple(tags))
        protector = KeyInformation(
            as_glossary(glossary, src_lang, tgt_lang, task.tags),
            self.protection, self.entity_types, self.maskers)
        prepared = [self._prepare(s, src_lang, format == "html", protector)
                    for s in segments]
        flat = [p for segment in prepared for p in segment.protected]
        results = self._translate_sentences([p.model_input for p in flat],
                                            task)
        reports = [SentenceReport(p.source, "") for p in flat]
        totals: Dict[str, int] = collections.Counter()
        kept: Dict[str, int] = collections.Counter()
        joiner = "" if tgt_lang in _NO_SPACE else " "
        translated, k = [], 0
        for segment in prepared:
            n = len(segment.protected)
            text, counts = self._assemble(
                segment, results[k:k + n], reports[k:k + n], protector,
                joiner)
            for report in reports[k:k + n]:
                kept.update(report.kept)
                totals.update(report.repaired)
            totals.update(counts)
            translated.append(segment.normalized.restore(text))
            k += n
        quality = None
        if qe or min_quality is not None:
            quality = self._estimate(flat, results, reports, task,
                                     min_quality)
        return DocumentTranslation(
            document.rebuild(translated), src_lang, tgt_lang, quality,
            reports, dict(kept), dict(totals))

    def _prepare(self, segment: str, language: str, html: bool,
                 protector: KeyInformation) -> _Segment:
        """Normalises a segment, takes its markup out, splits and protects
        its sentences."""
        normalized = normalize_reversibly(segment, language)
        plain, markup = normalized.text, []
        if html:
            try:
                plain, markup = strip_markup(normalized.text)
            except MarkupError as e:  # not from pipeline.documents
                warnings.warn(f"{e}; markup translated as text",
                              UserWarning, stacklevel=4)
        sentences = split_sentences(plain, language)
        try:
            spans = _sentence_spans(plain, sentences)
        except ValueError:
            spans = [(0, len(plain))] if plain.strip() else []
            sentences = [plain] if plain.strip() else []
        return _Segment(normalized, plain, markup, spans,
                        [protector.protect(s) for s in sentences])

    def _assemble(self, segment: _Segment, results: List[SentenceResult],
                  reports: List[SentenceReport],
                  protector: KeyInformation, joiner: str
                  ) -> Tuple[str, Dict[str, int]]:
        """The translated segment (markup back in) and its markup repairs.
        """
        finals, places, offset = [], [], 0
        for protected, result, report in zip(segment.protected, results,
                                             reports):
            alignment = WordAlignment(protected.model_input, result.text,
                                      result)
            restored = protector.restore(protected, result, alignment)
            final, target_map = apply_edits(result.text, restored.edits)
            source_map = apply_edits(protected.source, protected.edits)[1]
            report.translation = final
            report.kept, report.repaired = restored.kept, restored.repaired
            finals.append(final)
            places.append((alignment, source_map, target_map, offset))
            offset += len(final) + len(joiner)
        text = joiner.join(finals)
        if not segment.markup:
            return text, {}
        spans = segment.spans

        def project_point(position: int) -> int:
            for (a, b), (alignment, source_map, target_map, start) in zip(
                    spans, places):
                if position < a:
                    return start  # in the gap before this sentence
                if position <= b:
                    return start + target_map(alignment.project_point(
                        source_map(position - a)))
            return len(text)

        def project_range(start: int, end: int):
            inside = [k for k, (a, b) in enumerate(spans)
                      if a < end and b > start]
            if not inside:
                point = project_point(start)
                return point, point
            first, last = inside[0], inside[-1]
            ends = []
            for k, use in ((first, 0), (last, 1)):
                a, _ = spans[k]
                alignment, source_map, target_map, offset = places[k]
                local = (max(start, a) - a, min(end, spans[k][1]) - a)
                found = alignment.project_range(source_map(local[0]),
                                                source_map(local[1]))
                if found is None:
                    if first == last:
                        return None
                    ends.append(project_point(start if use == 0 else end))
                else:
                    ends.append(offset + target_map(found[use]))
            return ends[0], max(ends)

        text, repairs = restore_markup(text, segment.markup, project_range,
                                       project_point)
        return text, ({"markup": repairs} if repairs else {})

    def _estimate(self, flat: List[Protected], results: List[SentenceResult],
                  reports: List[SentenceReport], task: Task,
                  min_quality: Optional[float]) -> Optional[float]:
        """Fills the reports' quality; returns the document's."""
        backs: List[Optional[str]] = [None] * len(results)
        if self.round_trip and results:
            reverse = Task(task.tgt_lang, task.src_lang, task.tags)
            backs = [r.text for r in self._translate_sentences(
                [r.text for r in results], reverse)]
        for protected, result, report, back in zip(flat, results, reports,
                                                   backs):
            report.features = features(result, protected.model_input, back)
            report.quality = self.quality_model.score(report.features)
            report.flagged = (min_quality is not None
                              and report.quality < min_quality)
        return document_score([r.quality for r in reports],
                              [len(r.source) for r in reports])

    def _translate_sentences(self, sentences: List[str],
                             task: Task) -> List[SentenceResult]:
        """Cached translations, the rest from the callable (each unique
        sentence once)."""
        results = {}
        if self.cache is not None:
            for s in sentences:
                hit = self.cache.get(s, task, self.model_version)
                if hit is not None:
                    results[s] = as_result(hit)
        todo = list(dict.fromkeys(s for s in sentences if s not in results))
        if todo:
            out = [as_result(t) for t in self._translate(
                todo, task.src_lang, task.tgt_lang, task.tags)]
            if len(out) != len(todo):
                raise ValueError(f"translate returned {len(out)} "
                                 f"translations for {len(todo)} sentences")
            for source, target in zip(todo, out):
                results[source] = target
                if self.cache is not None:
                    self.cache.put(source, task, self.model_version, target)
        return [results[s] for s in sentences]
