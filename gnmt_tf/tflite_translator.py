"""Translating with a TFLite model: `HostTranslator` over LiteRT.

`TFLiteTranslator` is `gnmt_tf.host_translator.HostTranslator` with a
`gnmt_tf.tflite_runtime.TFLiteRuntime`, constructed from the `.tflite`
file `gnmt_tf.export.tflite.export_tflite` writes (its ``spm.model`` and
``model.json`` next to it). The search is the one all host runtimes share
(`gnmt_tf.decoding.host_beam_search`); no TensorFlow is imported unless LiteRT is missing.
"""

import pathlib

from gnmt_tf.host_translator import (HostTranslator, Hypothesis,
                                     tflite_worker_pool)
from gnmt_tf.pretrained import locate_tflite
from gnmt_tf.tflite_runtime import TFLiteRuntime, interpreter_class

__all__ = ["Hypothesis", "TFLiteTranslator", "interpreter_class"]


class TFLiteTranslator(HostTranslator):
    """Translates raw sentences with a TFLite `encode` + `decode_step` model.

    Example:
      >>> translator = TFLiteTranslator("out/model_float32.tflite")
      >>> translator.translate(["A dog runs."], beam_size=4)
      >>> task_space = TFLiteTranslator("ts/model_float32.tflite")
      >>> task_space.translate(["A dog runs."], src_lang="en", tgt_lang="fr",
      ...                      tags="caption")

    Args:
      model_path: str or Path. A `.tflite` file from `export_tflite`.
      vocabulary_path: str or Path or None. Its SentencePiece model (default:
        ``spm.model`` next to it).
      num_threads: int or None. Interpreter threads.
      workers: int or None. Single-threaded interpreters batches are split
        between (`gnmt_tf.host_translator.tflite_worker_pool`).
      metadata_path: str or Path or None. Its ``model.json`` (default: next
        to it; without one, a model without task inputs is assumed).

    Attributes:
      interpreter: the LiteRT `Interpreter` (``runtime.interpreter``).
      The others are `HostTranslator`'s.

    Raises:
      ValueError: the model lacks the `encode` / `decode_step` signatures,
        or its `encode` takes inputs ``model.json`` does not describe.
    """

    def __init__(self, model_path, vocabulary_path=None, num_threads=None,
                 metadata_path=None, workers=None):
        super().__init__(TFLiteRuntime(model_path, num_threads),
                         vocabulary_path, metadata_path,
                         workers=tflite_worker_pool(model_path, num_threads,
                                                    workers))

    @property
    def interpreter(self):
        return self.runtime.interpreter

    @classmethod
    def from_export_dir(cls, path, **kwargs):
        """Opens an `export_tflite` output folder (its one `.tflite`, with
        `spm.model` and `model.json` beside it), a `.tflite` file, or the
        int8 export of a shipped model given by name
        (`gnmt_tf.pretrained.locate_tflite`).

        Raises:
          FileNotFoundError: no `.tflite` file in the folder; a path that
            is neither a folder nor a file nor a shipped model's name.
          ValueError: several `.tflite` files in the folder; pass the one
            to use.
        """
        path = pathlib.Path(path)
        if not path.is_dir():
            return cls(locate_tflite(path), **kwargs)
        models = sorted(path.glob("*.tflite"))
        if not models:
            raise FileNotFoundError(f"no .tflite file in {path}")
        if len(models) > 1:
            raise ValueError(
                f"{path} holds {len(models)} .tflite files "
                f"({', '.join(m.name for m in models)}); pass one")
        return cls(models[0], **kwargs)
