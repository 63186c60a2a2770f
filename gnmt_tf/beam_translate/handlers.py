"""`RunInference` model handlers: sentences in, one translation each out.

`TranslatorHandler` loads a trained model directory as `gnmt-tf translate
--model` does (`gnmt_tf.translator.Translator`, same search, so the same
translations); `SavedModelHandler` loads a `gnmt-tf export savedmodel`
export (TF Text ops registered first) and calls its ``serving_default``
signature, or ``translate_with_options`` when search options are given.
Both hold only strings and numbers, so they pickle to remote workers, and
load the model once per worker (`load_model`). Translations come back as
strings, in the order of the batch; a batch the model refuses (a line too
long) is translated again a line at a time, and a line that still fails
comes back as a `shards.LineFailure` with the reason, so that only its
shard fails (`gnmt_tf.beam_translate.job`), not the whole job.
"""

import re

from apache_beam.ml.inference.base import ModelHandler

from gnmt_tf.beam_translate.shards import LineFailure

# RunInference batches of at most this many sentences (the translators sort
# a batch by length and search it in `batch_size` pieces).
DEFAULT_MAX_BATCH_SIZE = 512


class _Handler(ModelHandler):
    """Batching shared by both handlers."""

    def __init__(self, max_batch_size=DEFAULT_MAX_BATCH_SIZE):
        super().__init__()
        self._max_batch_size = max_batch_size

    def batch_elements_kwargs(self):
        return {"min_batch_size": 1, "max_batch_size": self._max_batch_size}

    def run_inference(self, batch, model, inference_args=None):
        batch = list(batch)
        try:
            return self.translate(batch, model)
        # Any error of the model on its input (ValueError from the
        # translator, TensorFlow's InvalidArgumentError from an export):
        # one line at a time tells which line it was.
        except Exception:
            return [_failure(line, model, self.translate) for line in batch]

    def translate(self, batch, model):
        """Translations of the sentences `batch` (a list of str)."""
        raise NotImplementedError


class TranslatorHandler(_Handler):
    """Translates with a trained model directory.

    Args:
      model_dir: str. A trained model directory (`gnmt_tf.model_dir`).
      search: dict. `gnmt_tf.translator.SearchOptions` fields
        (`num_hypotheses` 1).
      task: dict. Task arguments (`gnmt_tf.cli.task_flags.task_arguments`).
      batch_size: int. Sentences per search call.
      max_batch_size: int. Sentences per `RunInference` batch.
    """

    def __init__(self, model_dir, search, task, batch_size=32,
                 max_batch_size=DEFAULT_MAX_BATCH_SIZE):
        super().__init__(max_batch_size)
        self._model_dir = str(model_dir)
        self._search = dict(search)
        self._task = dict(task)
        self._batch_size = batch_size

    def load_model(self):
        from gnmt_tf.translator import Translator

        return Translator.from_model_dir(self._model_dir)

    def translate(self, batch, model):
        from gnmt_tf.translator import SearchOptions

        results = model.translate_nbest(
            list(batch), SearchOptions(**self._search), self._batch_size,
            **self._task)
        return [hypotheses[0].text for hypotheses in results]


class SavedModelHandler(_Handler):
    """Translates with an exported SavedModel.

    Args:
      export_dir: str. The export (`BASE/NAME/VERSION`, local or remote).
      options: dict or None. ``beam_size``, ``length_penalty`` and
        ``coverage_penalty`` for ``translate_with_options``; None:
        ``serving_default`` with the export's own options.
      task: dict. Task inputs by name (strings, e.g. ``src_lang``), sent
        with every sentence.
      max_batch_size: int. Sentences per `RunInference` batch (one call).
    """

    def __init__(self, export_dir, options=None, task=None,
                 max_batch_size=DEFAULT_MAX_BATCH_SIZE):
        super().__init__(max_batch_size)
        self._export_dir = str(export_dir)
        self._options = dict(options) if options else None
        self._task = dict(task or {})

    def load_model(self):
        import gnmt_tf  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)

        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (the SentencePiece ops)

        return tf.saved_model.load(self._export_dir)

    def translate(self, batch, model):
        import tensorflow as tf

        inputs = {"text": tf.constant([s.encode("utf-8") for s in batch])}
        for name, value in self._task.items():
            inputs[name] = tf.constant([value.encode("utf-8")] * len(batch))
        if self._options:
            signature = model.signatures["translate_with_options"]
            inputs["beam_size"] = tf.constant(self._options["beam_size"],
                                              tf.int32)
            for name in ("length_penalty", "coverage_penalty"):
                inputs[name] = tf.constant(self._options[name], tf.float32)
        else:
            signature = model.signatures["serving_default"]
        translations = signature(**inputs)["translations"].numpy()
        return [t.decode("utf-8") for t in translations]


def _failure(line, model, translate):
    """`line`'s translation, or a `LineFailure` with the reason on one line
    (a leading "input 1" dropped: the job names the line)."""
    try:
        return translate([line], model)[0]
    except Exception as e:  # as `_Handler.run_inference`
        message = " ".join(str(e).split()) or type(e).__name__
        return LineFailure(re.sub(r"^input 1 ", "", message))
