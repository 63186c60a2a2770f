"""Translating with a task-space Transformer TFLite model on the host.

`TaskSpaceTFLiteTranslator` is `export.tflite_translator.TFLiteTranslator`
(same NumPy search, tokenisation and input checks) for the files that
`export.task_space_tflite.export_task_space_tflite` writes: it also needs
their ``task.json``, from which it maps a direction (language codes) and
scene tags (names) to the ids the ``encode`` signature takes, and prepends
the `<2xx>` token for models trained with ``target_language_token``, as
`task_space.translator.TaskSpaceTranslator` does in TensorFlow. Like the
base class it imports no TensorFlow.
"""

import json
import pathlib

import numpy as np

from export.tflite_translator import TFLiteTranslator
from task_space.config import TransformerConfig  # no TensorFlow
from task_space.data import parse_tags  # no TensorFlow

TASK_FILE = "task.json"
TASK_INPUTS = ("src_lang", "tgt_lang", "tags")


class TaskSpaceTFLiteTranslator(TFLiteTranslator):
    """Translates raw sentences with a task-space TFLite export.

    Example:
      >>> translator = TaskSpaceTFLiteTranslator("out/model_float32.tflite")
      >>> translator.translate(["A dog runs."], "en", "fr", "caption",
      ...                      beam_size=4)

    Args:
      model_path: str or Path. A `.tflite` file from `export_tflite`.
      vocabulary_path: str or Path or None. Its SentencePiece model
        (default: ``spm.model`` next to the model).
      task_path: str or Path or None. Its ``task.json`` (default: next to
        the model).
      num_threads: int or None. Interpreter threads.

    Attributes:
      config: the model's `task_space.config.TransformerConfig` (languages,
        scene tags).
      default_tags: tuple of str. The tags the model was trained with, used
        when `tags` is None.
      directions: str or None. The training directions ("en-de,en-fr"),
        None for an export that does not record them.
      max_output_length: int. The KV-cache length, at most the model's
        `max_sequence_length` (where `TaskSpaceTranslator` stops too):
        outputs end after this many subwords (end token included) whatever
        `max_length_ratio` allows; a hypothesis cut there has no end token.

    Raises:
      FileNotFoundError: no ``task.json``.
      ValueError: the file is not a task-space export (see the base class).
    """

    def __init__(self, model_path, vocabulary_path=None, task_path=None,
                 num_threads=None):
        model_path = pathlib.Path(model_path)
        task_path = pathlib.Path(task_path or model_path.parent / TASK_FILE)
        if not task_path.exists():
            raise FileNotFoundError(
                f"{task_path} not found: a task-space TFLite model needs the "
                f"{TASK_FILE} that export_tflite writes next to it")
        task = json.loads(task_path.read_text(encoding="utf-8"))
        self.config = TransformerConfig.from_dict(task["model"])
        options = task.get("task_space", {})
        self.directions = options.get("directions")
        self.default_tags = parse_tags(options.get("tags"))
        self.target_language_token = bool(
            options.get("target_language_token", False))
        self.ENCODE_INPUTS = (("source_ids",) + TASK_INPUTS
                              if self.config.use_task_space
                              else ("source_ids",))
        super().__init__(model_path,
                         vocabulary_path or model_path.parent / "spm.model",
                         num_threads)
        caches = [detail["shape_signature"][1] for name, detail in
                  self._step.get_input_details().items()
                  if name.endswith("__self_key")]
        if not caches or "time" not in self._step_dtypes:
            raise ValueError(f"{model_path}'s decode_step has no KV cache: "
                             "not a task-space Transformer export")
        self.max_output_length = int(min(min(caches),
                                         self.config.max_sequence_length))
        self._language_token_ids = None
        if self.target_language_token:
            self._language_token_ids = [
                self._piece_id(f"<2{lang}>") for lang in self.config.languages]

    def _other_class_hint(self):
        return ""

    def _piece_id(self, piece):
        piece_id = self.sentencepiece.piece_to_id(piece)
        if (piece_id == self.sentencepiece.unk_id()
                or self.sentencepiece.id_to_piece(piece_id) != piece):
            raise ValueError(f"the vocabulary has no {piece} piece, which "
                             "the model was trained with")
        return piece_id

    def task_inputs(self, src_lang, tgt_lang, tags=None):
        """Checks a task; returns `(prefix, encode_inputs)`: the ids put
        before the subwords and the `encode` task arrays of batch 1.

        Raises:
          ValueError: an unknown language or tag (naming the known ones), or
            the same source and target language.
        """
        for name, code in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
            if not isinstance(code, str):
                raise ValueError(f"{name} must be a language code (one of "
                                 f"{list(self.config.languages)}), got "
                                 f"{code!r}")
        src_id = self.config.language_id(src_lang)
        tgt_id = self.config.language_id(tgt_lang)
        if src_id == tgt_id:
            raise ValueError(f"source and target language are both "
                             f"{src_lang!r}")
        tags = self.default_tags if tags is None else parse_tags(tags)
        vector = self.config.tag_vector(tags)
        prefix = ([] if self._language_token_ids is None
                  else [self._language_token_ids[tgt_id]])
        inputs = {"src_lang": np.asarray([src_id], np.int32),
                  "tgt_lang": np.asarray([tgt_id], np.int32),
                  "tags": np.asarray([vector], np.int32)}
        return prefix, {name: value for name, value in inputs.items()
                        if name in self.encode_inputs}

    def translate_nbest(self, sentences, src_lang, tgt_lang, tags=None,
                        beam_size=5, length_penalty=0.6, coverage_penalty=0.0,
                        num_hypotheses=1, max_length_ratio=2.0,
                        beam_width=None):
        """Translates `sentences` (list of str) from `src_lang` to `tgt_lang`
        in the scene `tags` (names, `"a,b"`, `""` for none; None: the
        training tags), giving `num_hypotheses` `Hypothesis` each.

        Blank inputs give one empty hypothesis with score 0.

        Raises:
          ValueError: a bad task (see `task_inputs`) or an over-long input.
          TypeError: `sentences` is a str, or an input is not a str.
        """
        prefix, task = self.task_inputs(src_lang, tgt_lang, tags)
        return self._translate_nbest(
            sentences, prefix, task,
            dict(beam_size=beam_size, length_penalty=length_penalty,
                 coverage_penalty=coverage_penalty,
                 num_hypotheses=num_hypotheses,
                 max_length_ratio=max_length_ratio, beam_width=beam_width))

    def translate(self, sentences, src_lang, tgt_lang, tags=None,
                  beam_size=5, length_penalty=0.6, coverage_penalty=0.0,
                  max_length_ratio=2.0):
        """Best translation of each sentence (list of str)."""
        return [hyps[0].text for hyps in self.translate_nbest(
            sentences, src_lang, tgt_lang, tags, beam_size, length_penalty,
            coverage_penalty, 1, max_length_ratio)]
