"""`Pipeline`: documents in, documents out, around any translate callable.

The steps: extract segments (`gnmt_tf.pipeline.documents`), refuse a sentence too
long for the model before any other work (`gnmt_tf.pipeline.limits`), detect the
source language when it is "auto" (`gnmt_tf.pipeline.language_id`: the document's,
then each segment's, so a mixed-language document is translated segment by
segment from its own language, and segments already in the target language
pass through unchanged), normalise the segments (`gnmt_tf.pipeline.normalize`; per
segment, so `script` and `pre` stay as they were), take inline markup out
(`gnmt_tf.pipeline.markup`), split into sentences (`gnmt_tf.pipeline.sentence_split`),
protect key information and glossary terms (`gnmt_tf.pipeline.key_information`),
translate the sentences not in the cache, batch by batch (a
`gnmt_tf.pipeline.cancellation.Cancellation` stops the work between batches),
restore entities, terms and markup at the aligned positions
(`gnmt_tf.pipeline.projection`, with repairs so none is lost), estimate quality
(`gnmt_tf.pipeline.quality`, on request), put the user's punctuation back, and
reassemble.

A segment in a script none of the model's languages use (Arabic, Hebrew,
Chinese for a model of en, de, fr, cs) would come back as fluent nonsense:
it is left as it is when the source language is detected, translated when
the user named the language, and either way named in
`DocumentTranslation.warnings`.

The model is a callable `translate(sentences, src_lang, tgt_lang, tags) ->
translations`, each a str or a `gnmt_tf.pipeline.results.SentenceResult` (whose
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

from gnmt_tf.pipeline.cache import Task
from gnmt_tf.pipeline.cancellation import Cancellation
from gnmt_tf.pipeline.cache import TranslationCache
from gnmt_tf.pipeline.documents import MAX_DOCUMENT_BYTES
from gnmt_tf.pipeline.documents import read_document
from gnmt_tf.pipeline.edits import apply_edits
from gnmt_tf.pipeline.glossary import as_glossary
from gnmt_tf.pipeline.key_information import ENTITY_TYPES
from gnmt_tf.pipeline.key_information import KeyInformation
from gnmt_tf.pipeline.key_information import Protected
from gnmt_tf.pipeline.language_id import UNDETERMINED
from gnmt_tf.pipeline.language_id import LanguageDetector
from gnmt_tf.pipeline.language_id import UnsupportedLanguageError
from gnmt_tf.pipeline.language_id import check_language
from gnmt_tf.pipeline.language_id import segment_languages
from gnmt_tf.pipeline.limits import check_segment
from gnmt_tf.pipeline.limits import check_sentences
from gnmt_tf.pipeline.markup import MarkupError
from gnmt_tf.pipeline.markup import restore_markup
from gnmt_tf.pipeline.markup import strip_markup
from gnmt_tf.pipeline.model_calls import ModelCalls
from gnmt_tf.pipeline.model_calls import check_count
from gnmt_tf.pipeline.normalize import normalize_reversibly
from gnmt_tf.pipeline.projection import WordAlignment
from gnmt_tf.pipeline.quality import DEFAULT_MODEL
from gnmt_tf.pipeline.quality import QualityModel
from gnmt_tf.pipeline.quality import document_score
from gnmt_tf.pipeline.quality import features
from gnmt_tf.pipeline.results import SentenceResult
from gnmt_tf.pipeline.sentence_split import split_sentences

TranslateFn = Callable[[List[str], str, str, Sequence[str]],
                       List[Union[str, SentenceResult]]]

# Languages written without spaces between sentences.
_NO_SPACE = frozenset({"ja", "zh", "th"})
_MARKUP = re.compile(r"</?g\d+>|<x\d+/>")


class LowQualityWarning(UserWarning):
    """Sentences whose quality estimate is below `min_quality`."""


class UnknownScriptWarning(UserWarning):
    """Segments in a script none of the model's languages use."""


@dataclasses.dataclass
class SentenceReport:
    """One translated sentence of a document.

    Attributes:
      source: str. The sentence as split (markup taken out).
      language: str. The language it was translated from.
      translation: str. Its translation with entities and terms restored
        (before markup and punctuation are put back).
      quality: float in [0, 1] or None (no quality estimation asked).
      flagged: bool. `quality` is below `min_quality`.
      features: the quality features (`gnmt_tf.pipeline.quality.FEATURES`).
      kept, repaired: per kind ("entity", "term"), how many the model
        carried itself and how many restoration had to put back.
    """

    source: str
    translation: str
    language: str = ""
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
      sentences: list of `SentenceReport`, in document order (segments
        passed through unchanged have none).
      kept, repaired: totals per kind ("entity", "term", "markup").
      warnings: list of str. One line per segment in a script none of the
        model's languages use.
    """

    output: Union[bytes, str]
    source_language: str
    target_language: str
    quality: Optional[float]
    sentences: List[SentenceReport]
    kept: Dict[str, int]
    repaired: Dict[str, int]
    warnings: List[str] = dataclasses.field(default_factory=list)

    @property
    def flagged(self) -> List[int]:
        """Indices of the sentences below `min_quality`."""
        return [i for i, s in enumerate(self.sentences) if s.flagged]


@dataclasses.dataclass
class _Segment:
    """One segment on its way through: normalised, markup out, split."""

    language: str  # the one it is translated from
    normalized: object  # gnmt_tf.pipeline.normalize.Normalized
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
        see `gnmt_tf.pipeline.key_information`.
      entity_types: entity types protected (`ENTITY_TYPES`: URL, EMAIL,
        MONEY, DATE, TIME, NUM); () protects none (glossary terms and markup
        still are).
      maskers: extra maskers (`mask(text) -> (masked, entities)`), e.g.
        `gnmt_tf.pipeline.placeholder_mapping.HashPlaceholderMasker` for `#NAME#`.
      quality_model: `gnmt_tf.pipeline.quality.QualityModel` combining the features.
      round_trip: bool. Quality estimation translates each output back
        (target -> source) with the same callable: only for a
        multi-direction model.
      max_sentence_length: int or None. The model's limit in subwords a
        sentence: a sentence of more words is refused before any work on
        the document (`gnmt_tf.pipeline.limits`).
      chunk_sentences: int. Sentences per call to `translate`
        (`gnmt_tf.pipeline.model_calls`); a `Cancellation` is checked between
        calls.

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
                 round_trip: bool = False,
                 max_sentence_length: Optional[int] = None,
                 chunk_sentences: int = 32):
        if max_sentence_length is not None:
            check_count("max_sentence_length", max_sentence_length)
        self._calls = ModelCalls(translate, chunk_sentences)
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
        self.max_sentence_length = max_sentence_length

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
                           min_quality: Optional[float] = None,
                           cancellation: Optional[Cancellation] = None
                           ) -> Union[bytes, str]:
        """The translated document (bytes in, bytes out; str in, str out).

        Args:
          data: the document.
          src_lang: str. A code of `languages`, or "auto".
          tgt_lang: str. A code of `languages`.
          tags: sequence of str. Scene tags for task-space models.
          format: str. "text" or "html".
          glossary: None, a `gnmt_tf.pipeline.glossary.Glossary`, a `GlossaryFile`
            or the path of a glossary TSV (entries selected by language
            pair and `tags`), or a mapping source term -> target term.
          qe: bool. Estimate quality (see `translate_document_detailed`
            for the scores).
          min_quality: float in [0, 1] or None. Sentences estimated below
            it are flagged: a `LowQualityWarning` says how many.
          cancellation: `gnmt_tf.pipeline.cancellation.Cancellation` or None.

        Raises:
          UnsupportedLanguageError, gnmt_tf.pipeline.documents.DocumentError,
          gnmt_tf.pipeline.glossary.GlossaryError, ValueError (bad `min_quality`),
          gnmt_tf.pipeline.limits.SentenceTooLongError,
          gnmt_tf.pipeline.cancellation.Cancelled (cancelled or past its deadline).
        """
        result = self.translate_document_detailed(
            data, src_lang, tgt_lang, tags, format, glossary, qe,
            min_quality, cancellation)
        if result.warnings:
            warnings.warn("; ".join(result.warnings), UnknownScriptWarning,
                          stacklevel=2)
        if result.flagged:
            warnings.warn(f"{len(result.flagged)} of {len(result.sentences)}"
                          f" sentence(s) estimated below min_quality "
                          f"{min_quality}", LowQualityWarning, stacklevel=2)
        return result.output

    def translate_document_detailed(
            self, data: Union[bytes, str], src_lang: str, tgt_lang: str,
            tags: Sequence[str] = (), format: str = "text", glossary=None,
            qe: bool = False, min_quality: Optional[float] = None,
            cancellation: Optional[Cancellation] = None
    ) -> DocumentTranslation:
        """`translate_document` with per-sentence detail: quality scores
        and flags, the detected language, entities / terms / markup kept
        and repaired, warnings. Same arguments; quality is estimated when
        `qe` or `min_quality` is given."""
        if min_quality is not None and not 0.0 <= min_quality <= 1.0:
            raise ValueError(f"min_quality must be in [0, 1], got "
                             f"{min_quality}")
        tgt_lang = check_language(tgt_lang, self.languages)
        document = read_document(data, format, self.max_bytes)
        segments = document.segments
        texts = [_MARKUP.sub(" ", s) for s in segments]
        if self.max_sentence_length:
            for n, text in enumerate(texts, 1):
                check_segment(text, self.max_sentence_length, f"segment {n}")
        detect = src_lang == "auto"
        if detect:
            src_lang = (self.detect_language(" ".join(texts))
                        if any(s.strip() for s in segments) else tgt_lang)
        src_lang = check_language(src_lang, self.languages)
        sources, notes = self._segment_sources(texts, src_lang, tgt_lang,
                                               detect)
        protectors: Dict[str, KeyInformation] = {}
        prepared: List[Optional[_Segment]] = []
        for n, (segment, source) in enumerate(zip(segments, sources), 1):
            if cancellation is not None:
                cancellation.check()
            if source is None:
                prepared.append(None)
                continue
            if source not in protectors:
                protectors[source] = KeyInformation(
                    as_glossary(glossary, source, tgt_lang, tuple(tags)),
                    self.protection, self.entity_types, self.maskers)
            prepared.append(self._prepare(segment, source, format == "html",
                                          protectors[source], f"segment {n}"))
        flat = [p for segment in prepared if segment
                for p in segment.protected]
        tasks = [Task(segment.language, tgt_lang, tuple(tags))
                 for segment in prepared if segment
                 for _ in segment.protected]
        results = self._calls([p.model_input for p in flat], tasks,
                              self.cache, self.model_version, cancellation)
        reports = [SentenceReport(p.source, "", task.src_lang)
                   for p, task in zip(flat, tasks)]
        totals: Dict[str, int] = collections.Counter()
        kept: Dict[str, int] = collections.Counter()
        joiner = "" if tgt_lang in _NO_SPACE else " "
        translated, k = [], 0
        for original, segment in zip(segments, prepared):
            if segment is None:
                translated.append(original)
                continue
            n = len(segment.protected)
            text, counts = self._assemble(
                segment, results[k:k + n], reports[k:k + n],
                protectors[segment.language], joiner)
            for report in reports[k:k + n]:
                kept.update(report.kept)
                totals.update(report.repaired)
            totals.update(counts)
            translated.append(segment.normalized.restore(text))
            k += n
        quality = None
        if qe or min_quality is not None:
            quality = self._estimate(flat, results, reports, tasks,
                                     min_quality, cancellation)
        return DocumentTranslation(
            document.rebuild(translated), src_lang, tgt_lang, quality,
            reports, dict(kept), dict(totals), notes)

    def _segment_sources(self, texts: List[str], src_lang: str,
                         tgt_lang: str, detect: bool
                         ) -> Tuple[List[Optional[str]], List[str]]:
        """The language to translate each segment from (None: it passes
        through unchanged) and the warnings for segments in an unknown
        script. With `detect`, each segment is in its own language, and
        those in `tgt_lang` or an unknown script pass through; else all are
        in `src_lang`."""
        detector = LanguageDetector.for_languages(self.languages)
        found = segment_languages(detector, texts, src_lang, detect)
        sources, notes = [], []
        known = ", ".join(self.languages)
        for n, language in enumerate(found, 1):
            if language == UNDETERMINED:
                notes.append(
                    f"segment {n}: written in a script none of the model's "
                    f"languages ({known}) use; "
                    + ("left untranslated" if detect else
                       "its translation is unreliable"))
                language = None if detect else src_lang
            elif detect and language == tgt_lang:
                language = None
            sources.append(language)
        return sources, notes

    def _prepare(self, segment: str, language: str, html: bool,
                 protector: KeyInformation, where: str) -> _Segment:
        """Normalises a segment, takes its markup out, splits it, checks
        its sentences' length and protects them."""
        normalized = normalize_reversibly(segment, language)
        plain, markup = normalized.text, []
        if html:
            try:
                plain, markup = strip_markup(normalized.text)
            except MarkupError as e:  # not from gnmt_tf.pipeline.documents
                warnings.warn(f"{e}; markup translated as text",
                              UserWarning, stacklevel=4)
        sentences = split_sentences(plain, language)
        try:
            spans = _sentence_spans(plain, sentences)
        except ValueError:
            spans = [(0, len(plain))] if plain.strip() else []
            sentences = [plain] if plain.strip() else []
        if self.max_sentence_length:
            check_sentences(sentences, self.max_sentence_length, where)
        return _Segment(language, normalized, plain, markup, spans,
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
                  reports: List[SentenceReport], tasks: List[Task],
                  min_quality: Optional[float],
                  cancellation: Optional[Cancellation]) -> Optional[float]:
        """Fills the reports' quality; returns the document's."""
        backs: List[Optional[str]] = [None] * len(results)
        if self.round_trip and results:
            reverse = [Task(t.tgt_lang, t.src_lang, t.tags) for t in tasks]
            backs = [r.text for r in self._calls(
                [r.text for r in results], reverse, self.cache,
                self.model_version, cancellation)]
        for protected, result, report, back in zip(flat, results, reports,
                                                   backs):
            report.features = features(result, protected.model_input, back)
            report.quality = self.quality_model.score(report.features)
            report.flagged = (min_quality is not None
                              and report.quality < min_quality)
        return document_score([r.quality for r in reports],
                              [len(r.source) for r in reports])
