"""`Pipeline`: documents in, documents out, around any translate callable.

The steps: extract segments (`pipeline.documents`), normalise them
(`pipeline.normalize`; per segment, so `script` and `pre` stay as they
were), detect the source language when it is "auto" (`pipeline.language_id`),
split into sentences (`pipeline.sentence_split`), translate the sentences not
in the cache, put the user's punctuation back, and reassemble.

The model is a callable `translate(sentences, src_lang, tgt_lang, tags) ->
translations`, so an in-process `gnmt_tf.translator.Translator`, a
`HostTranslator` or `serving.client.TranslationClient` can be wrapped in one
later without this module importing TensorFlow or gRPC. Still to come:
placeholders and glossaries restored through the alignment head, quality
estimation, `Pipeline.from_model_dir` / `from_server`.
"""

from typing import Callable, List, Optional, Sequence, Union

from pipeline.cache import Task
from pipeline.cache import TranslationCache
from pipeline.documents import MAX_DOCUMENT_BYTES
from pipeline.documents import read_document
from pipeline.language_id import UNDETERMINED
from pipeline.language_id import LanguageDetector
from pipeline.language_id import UnsupportedLanguageError
from pipeline.language_id import check_language
from pipeline.normalize import normalize_reversibly
from pipeline.results import texts
from pipeline.sentence_split import split_sentences

TranslateFn = Callable[[List[str], str, str, Sequence[str]], List[str]]

# Languages written without spaces between sentences.
_NO_SPACE = frozenset({"ja", "zh", "th"})


class Pipeline:
    """Translates documents with a sentence-level translate callable.

    Args:
      translate: callable `(sentences, src_lang, tgt_lang, tags) ->
        translations`, one translation per sentence.
      languages: sequence of str. ISO 639-1 codes the model knows; source
        and target languages must be among them.
      cache: TranslationCache or None.
      model_version: str. Part of the cache key.
      max_bytes: int. The largest document accepted.

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
                 max_bytes: int = MAX_DOCUMENT_BYTES):
        self._translate = translate
        self.languages = tuple(sorted({c.lower() for c in languages}))
        self.cache = cache
        self.model_version = model_version
        self.max_bytes = max_bytes

    def detect_language(self, text: str) -> str:
        """The source language of `text` among `languages`; raises
        `UnsupportedLanguageError` when there is nothing to detect."""
        found = LanguageDetector.for_languages(self.languages).detect(text)
        if found.language == UNDETERMINED:
            raise UnsupportedLanguageError(UNDETERMINED, self.languages)
        return found.language

    def translate_document(self, data: Union[bytes, str], src_lang: str,
                           tgt_lang: str, tags: Sequence[str] = (),
                           format: str = "text") -> Union[bytes, str]:
        """The translated document (bytes in, bytes out; str in, str out).

        Args:
          data: the document.
          src_lang: str. A code of `languages`, or "auto".
          tgt_lang: str. A code of `languages`.
          tags: sequence of str. Scene tags for task-space models.
          format: str. "text" or "html".

        Raises:
          UnsupportedLanguageError, pipeline.documents.DocumentError.
        """
        tgt_lang = check_language(tgt_lang, self.languages)
        document = read_document(data, format, self.max_bytes)
        segments = document.segments
        if src_lang == "auto":
            src_lang = (self.detect_language(" ".join(segments))
                        if any(s.strip() for s in segments) else tgt_lang)
        src_lang = check_language(src_lang, self.languages)
        normalized = [normalize_reversibly(s, src_lang) for s in segments]
        sentences = [split_sentences(n.text, src_lang) for n in normalized]
        flat = [s for group in sentences for s in group]
        translations = iter(self._translate_sentences(
            flat, Task(src_lang, tgt_lang, tuple(tags))))
        joiner = "" if tgt_lang in _NO_SPACE else " "
        translated = [n.restore(joiner.join(next(translations)
                                            for _ in group))
                      for n, group in zip(normalized, sentences)]
        return document.rebuild(translated)

    def _translate_sentences(self, sentences: List[str],
                             task: Task) -> List[str]:
        """Cached translations, the rest from the callable (each unique
        sentence once)."""
        results = {}
        if self.cache is not None:
            for s in sentences:
                hit = self.cache.get(s, task, self.model_version)
                if hit is not None:
                    results[s] = hit
        todo = list(dict.fromkeys(s for s in sentences if s not in results))
        if todo:
            out = texts(self._translate(todo, task.src_lang, task.tgt_lang,
                                        task.tags))
            if len(out) != len(todo):
                raise ValueError(f"translate returned {len(out)} "
                                 f"translations for {len(todo)} sentences")
            for source, target in zip(todo, out):
                results[source] = target
                if self.cache is not None:
                    self.cache.put(source, task, self.model_version, target)
        return [results[s] for s in sentences]
