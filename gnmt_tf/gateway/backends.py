"""Translate backends for `pipeline.Pipeline`: a model in this process, or a
server over gRPC.

Both are callables `backend(sentences, src_lang, tgt_lang, tags) ->
[gnmt_tf.pipeline.results.SentenceResult]` with a `languages` attribute (the codes
the model knows), `model_version` (for the cache key) and
`max_sentence_length` (the model's limit in subwords a sentence, None when
unknown: a server checks it itself).

- `ModelBackend` runs a model directory (or shipped model name) with
  `gnmt_tf.translator.Translator` and `gnmt_tf.aligned_search`: the text,
  the score (log-probability per output subword, end token included), the
  subwords and a `[T, S]` alignment (the `ConvAlignmentHead` of an
  `gnmt_tf.alignment.aligned_model.AlignedTranslationModel`, else the mean
  cross-attention of a teacher-forced pass over the output). TensorFlow and
  `gnmt_tf` are imported when one is made, not with this module.
- `ServerBackend` translates through `gnmt_tf.serving.client.TranslationClient`
  (TF Serving or `gnmt-tf serve`; request batching, retries) and imports no
  TensorFlow. When the served model has the export's
  ``translate_with_alignment`` signature (`gnmt_tf.export.savedmodel`), its results
  carry the same fields as the in-process ones (the same graph computes
  them); otherwise text only (`serving_default`'s score has GNMT's length
  and coverage penalties, so it is not passed on as one).
"""

import dataclasses
import threading
from typing import List, Optional, Sequence, Tuple

import numpy as np

from gnmt_tf.pipeline.results import SentenceResult

# Kept equal to `gnmt_tf.export.savedmodel.ALIGNMENT_SIGNATURE` and
# `gnmt_tf.aligned_search.OUTPUTS` (a test checks), which this module may not
# import: they load TensorFlow.
ALIGNMENT_SIGNATURE = "translate_with_alignment"
ALIGNMENT_OUTPUTS = ("translations", "scores", "source_pieces",
                     "source_lengths", "target_pieces", "target_lengths",
                     "alignment")
_EXTRA_OUTPUTS = ALIGNMENT_OUTPUTS[2:]


class BackendError(RuntimeError):
    """The model could not translate (a server error); `status` is the HTTP
    status a gateway answers with (502, 503, 504)."""

    def __init__(self, message: str, status: int = 502):
        super().__init__(message)
        self.status = status


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) \
        else str(value)


def blank_result() -> SentenceResult:
    """What a blank sentence translates to (never sent to the model)."""
    return SentenceResult("", 0.0, (), (), np.zeros([0, 0], np.float32))


def result_of_row(outputs, row: int) -> SentenceResult:
    """`SentenceResult` of row `row` of the `ALIGNMENT_OUTPUTS` arrays
    (batched, padded: the lengths say what is real)."""
    source_length = int(outputs["source_lengths"][row])
    target_length = int(outputs["target_lengths"][row])
    alignment = np.asarray(outputs["alignment"][row], np.float32)
    return SentenceResult(
        text=_text(outputs["translations"][row]),
        score=float(outputs["scores"][row]),
        source_pieces=tuple(_text(p) for p in
                            outputs["source_pieces"][row][:source_length]),
        target_pieces=tuple(_text(p) for p in
                            outputs["target_pieces"][row][:target_length]),
        alignment=alignment[:target_length, :source_length].copy())


def direction_task(task_names: Sequence[str], fixed: Tuple[str, str],
                   src_lang: str, tgt_lang: str, tags: Sequence[str]) -> dict:
    """The task arguments of one request for a model whose task inputs are
    `task_names` (a subset of src_lang, tgt_lang, tags), or which translates
    the one direction `fixed` (src, tgt) when it has none.

    Raises:
      ValueError: a direction or tags the model cannot honour.
    """
    tags = tuple(tags or ())
    if not task_names:
        if fixed and (src_lang, tgt_lang) != tuple(fixed):
            raise ValueError(f"this model translates {fixed[0]}->{fixed[1]} "
                             f"only, not {src_lang}->{tgt_lang}")
        if tags:
            raise ValueError("this model takes no scene tags; got "
                             f"{', '.join(tags)}")
        return {}
    task = {"src_lang": src_lang, "tgt_lang": tgt_lang, "tags": list(tags)}
    if tags and "tags" not in task_names:
        raise ValueError("this model takes no scene tags")
    return {k: v for k, v in task.items() if k in task_names}


class ModelBackend:
    """An in-process model as a pipeline backend.

    Args:
      translator: a `gnmt_tf.translator.Translator`.
      options: `gnmt_tf.translator.SearchOptions` (default: its defaults).
      batch_size: int. Sentences per search call (sorted by length).
      languages: codes the model knows (default: its task inputs' languages,
        or its fixed direction).
      model_version: str. The cache key's model part.

    Example:
      >>> backend = ModelBackend.from_model_dir("runs/en-de")
      >>> backend(["A dog runs."], "en", "de", ())[0].alignment.shape
      (4, 5)
    """

    def __init__(self, translator, options=None, batch_size: int = 32,
                 languages: Optional[Sequence[str]] = None,
                 model_version: str = "in-process"):
        from gnmt_tf.translation import SearchOptions

        self.translator = translator
        self.model = translator.model
        self.max_sentence_length = translator.max_source_length
        self.options = options or SearchOptions()
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        names = [t.name for t in self.model.task_inputs()]
        self.task_names = tuple(n for n in names
                                if n in ("src_lang", "tgt_lang", "tags"))
        fixed = self.model.fixed_task or {}
        self.fixed = ((fixed["src_lang"], fixed["tgt_lang"])
                      if {"src_lang", "tgt_lang"} <= set(fixed) else None)
        self.languages = tuple(languages or self._model_languages())
        if not self.languages:
            raise ValueError("the model does not say which languages it "
                             "translates; give languages")
        self.model_version = model_version
        self._lock = threading.Lock()

    @classmethod
    def from_model_dir(cls, model_dir, options=None, batch_size: int = 32,
                       languages: Optional[Sequence[str]] = None,
                       engine: Optional[str] = None):
        """Loads a model directory or shipped model name
        (`gnmt_tf.alignment.head_files.load_model`: with its alignment head, if
        the directory has one).

        `engine` (`gnmt_tf.search_engine`; None: its default) as
        `Translator.for_engine`'s: under ``auto`` a directory that
        carries its float32 TFLite export (the shipped models) is searched
        there where the options allow, and only the alignment pass runs
        in process (`gnmt_tf.aligned_search.align_translations`)."""
        from gnmt_tf.alignment.head_files import load_model
        from gnmt_tf.translator import Translator

        model, subwords, _ = load_model(model_dir)
        return cls(Translator.for_engine(model, subwords, model_dir, engine),
                   options, batch_size, languages,
                   model_version=f"{model_dir}")

    def translate_nbest(self, texts: Sequence[str], options=None, **task):
        """The `gnmt_tf.translation.TranslationBackend` protocol: the model's
        `Translator`, with this backend's search options unless given."""
        return self.translator.translate_nbest(
            list(texts), options or self.options, self.batch_size, **task)

    def translate(self, texts: Sequence[str], options=None,
                  **task) -> List[str]:
        """The best translation of each text (as `translate_nbest`)."""
        return [h[0].text for h in self.translate_nbest(texts, options,
                                                        **task)]

    def _model_languages(self) -> List[str]:
        inputs = {t.name: t for t in self.model.task_inputs()}
        found = set()
        for name in ("src_lang", "tgt_lang"):
            if name in inputs:
                found.update(inputs[name].values)
        if not found and self.fixed:
            found.update(self.fixed)
        return sorted(found)

    def __call__(self, sentences: Sequence[str], src_lang: str,
                 tgt_lang: str, tags: Sequence[str] = (),
                 cancellation=None) -> List[SentenceResult]:
        """Translates `sentences`; a `gnmt_tf.pipeline.cancellation.Cancellation`
        is checked before each search (after waiting for the model)."""
        import tensorflow as tf

        task = direction_task(self.task_names, self.fixed, src_lang,
                              tgt_lang, tags)
        ids = self.translator.task_ids(**task)
        sentences = list(sentences)
        lengths = self.translator.check_inputs(sentences)
        results = [blank_result() for _ in sentences]
        order = sorted((i for i, s in enumerate(sentences) if s.strip()),
                       key=lambda i: lengths[i])
        # One search at a time: TensorFlow spreads each over the cores.
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                if cancellation is not None:
                    cancellation.check()
                chunk = order[start:start + self.batch_size]
                batch = tf.constant([sentences[i].encode("utf-8")
                                     for i in chunk])
                task_batch = [
                    tf.constant([ids[t.name]] * len(chunk), tf.int32)
                    for t in self.translator.task_inputs]
                found = self._search(batch, task_batch,
                                     [sentences[i] for i in chunk], task)
                out = {k: v.numpy() for k, v in found.items()}
                for row, i in enumerate(chunk):
                    results[i] = result_of_row(out, row)
        return results

    def _search(self, batch, task_batch, sentences, task):
        """The aligned outputs of `batch`: searched by the translator's
        `tflite_search` where it runs the options (then aligned in
        process), else in process. Remakes the tokenizer once if its
        resource is gone (as `Translator._run`: a TensorFlow seed set
        since clears it)."""
        import tensorflow as tf

        from gnmt_tf.aligned_search import (align_translations_fn,
                                            alignment_search_fn)

        inputs = [batch]
        if self.translator.sends_to_tflite(self.options):
            found = self.translator.tflite_search.search_sentences(
                sentences, dataclasses.replace(self.options,
                                               num_hypotheses=1), **task)
            best = [pairs[0][0] for pairs in found]
            width = max(1, max(len(ids) for ids in best))
            inputs += [tf.constant([list(ids) + [0] * (width - len(ids))
                                    for ids in best], tf.int32),
                       tf.constant([len(ids) for ids in best], tf.int32)]

            def function():
                return align_translations_fn(self.translator, self.options)
        else:
            def function():
                return alignment_search_fn(self.translator, self.options)
        try:
            return function()(*inputs, *task_batch)
        except tf.errors.NotFoundError as e:
            if "Sentencepiece" not in str(e):
                raise
        self.translator.reset_tokenizer()
        return function()(*inputs, *task_batch)


class ServerBackend:
    """A served model (TF Serving or `gnmt-tf serve`) as a pipeline backend.

    Args:
      client: a `gnmt_tf.serving.client.TranslationClient` of the model.
      languages: the codes the model knows (a served model does not say).
        For an export without task inputs (GNMT), exactly `(src, tgt)`: the
        one direction it translates.
      signatures: the served model's signature names and inputs
        (`client.metadata()`), read from the server when None.

    Use `ServerBackend.connect(target, model_name, languages)`.
    """

    def __init__(self, client, languages: Sequence[str],
                 signatures: Optional[dict] = None):
        self.client = client
        signatures = client.metadata() if signatures is None else signatures
        if client.signature not in signatures:
            raise ValueError(f"model {client.model_name!r} has no signature "
                             f"{client.signature!r} (has "
                             f"{', '.join(sorted(signatures))})")
        inputs = signatures[client.signature]["inputs"]
        self.task_names = tuple(n for n in ("src_lang", "tgt_lang", "tags")
                                if n in inputs)
        self.with_alignment = client.signature == ALIGNMENT_SIGNATURE
        self.languages = tuple(c.lower() for c in languages)
        if not self.languages:
            raise ValueError("give the languages the served model knows")
        self.fixed = None
        if not self.task_names:
            if len(self.languages) != 2:
                raise ValueError(
                    "a served model without task inputs translates one "
                    "direction: give its languages as exactly SRC,TGT")
            self.fixed = self.languages
        self.model_version = f"{client.target}/{client.model_name}"
        self.max_sentence_length = None

    @classmethod
    def connect(cls, target: str, model_name: str, languages: Sequence[str],
                **client_kwargs) -> "ServerBackend":
        """A backend for `model_name` at `target` ("host:port"): uses
        ``translate_with_alignment`` when the model has it, else
        ``serving_default``. `client_kwargs` go to `TranslationClient`.

        Raises:
          gnmt_tf.serving.client.TranslationError: the server cannot be reached or
            does not serve the model.
        """
        from gnmt_tf.serving.client import TranslationClient

        with TranslationClient(target, model_name, **client_kwargs) as probe:
            signatures = probe.metadata()
        aligned = ALIGNMENT_SIGNATURE in signatures
        client = TranslationClient(
            target, model_name,
            signature=ALIGNMENT_SIGNATURE if aligned else None,
            extra_outputs=_EXTRA_OUTPUTS if aligned else (), **client_kwargs)
        return cls(client, languages, signatures)

    def close(self):
        self.client.close()

    def translate_nbest(self, texts: Sequence[str], options=None, **task):
        """The `gnmt_tf.translation.TranslationBackend` protocol: the
        client's (`TranslationClient.translate_nbest`)."""
        return self.client.translate_nbest(list(texts), options, **task)

    def translate(self, texts: Sequence[str], options=None,
                  **task) -> List[str]:
        """The best translation of each text (as `translate_nbest`)."""
        return self.client.translate(list(texts), options, **task)

    def __call__(self, sentences: Sequence[str], src_lang: str,
                 tgt_lang: str, tags: Sequence[str] = ()
                 ) -> List[SentenceResult]:
        import grpc

        task = direction_task(self.task_names, self.fixed, src_lang,
                              tgt_lang, tags)
        if "tags" in task:
            task["tags"] = ",".join(task["tags"])
        results = []
        for r in self.client.translate_detailed(list(sentences), **task):
            if r.error is not None:
                if r.code == grpc.StatusCode.INVALID_ARGUMENT:
                    raise ValueError(_server_message(r.error))
                status = {grpc.StatusCode.UNAVAILABLE: 503,
                          grpc.StatusCode.DEADLINE_EXCEEDED: 504}.get(
                              r.code, 502)
                raise BackendError(f"the translation server failed: "
                                   f"{_server_message(r.error)}", status)
            if not r.source.strip():
                results.append(blank_result())
            elif self.with_alignment:
                outputs = dict(r.outputs, translations=[r.translation],
                               scores=[r.score])
                outputs = {k: (v if k in ("translations", "scores")
                               else np.asarray(v)[None]) for k, v in
                           outputs.items()}
                results.append(result_of_row(outputs, 0))
            else:
                results.append(SentenceResult(r.translation))
        return results


def _server_message(message: str) -> str:
    """A server error on one line: TensorFlow's "assertion failed: ..."
    line when there is one."""
    for line in message.splitlines():
        if "assertion failed:" in line:
            return line.strip()
    return " ".join(message.split())
