"""`TaskSpaceTranslationModel`: the task-space Transformer as `gnmt_tf`
trains, saves and loads models."""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.models.task_space.task_space_transformer import TaskSpaceTransformer


@keras.utils.register_keras_serializable(package="task_space")
class TaskSpaceTranslationModel(TaskSpaceTransformer):
    """`TaskSpaceTransformer` plus what `gnmt_tf`'s model plumbing expects.

    `gnmt_tf.training.trainer.fit` and `gnmt_tf.model_dir.load_model` call
    `model(model.dummy_inputs())` to create variables before restoring a
    checkpoint, and `attach_model_dir` after loading; this subclass adds
    those methods and nothing else, so its variables (and checkpoints) are
    exactly those of `TaskSpaceTransformer`.

    Args: as `TaskSpaceTransformer`.

    Example:
    ```python
    model = TaskSpaceTranslationModel.from_preset("transformer_tiny")
    logits = model(model.dummy_inputs())  # [1, 1, V]
    ```
    """

    def dummy_inputs(self):
        """A one-token batch (first language to itself, no tags)."""
        c = self.config
        return {"source_ids": tf.constant([[c.eos_id]], tf.int32),
                "target_in_ids": tf.constant([[c.bos_id]], tf.int32),
                "src_lang": tf.zeros([1], tf.int32),
                "tgt_lang": tf.zeros([1], tf.int32),
                "tags": tf.zeros([1, c.num_tags], tf.int32)}

    def attach_model_dir(self, subwords, payload):
        """Reads what the model's inputs need from its directory
        (`payload` is its `config.json`): the `<2xx>` token ids of a model
        trained with them, and a trained direction as `default_task`."""
        from gnmt_tf.data import multiway as data_lib

        options = payload.get("task_space", {})
        languages = self.config.languages
        if options.get("target_language_token"):
            self.language_token_ids = tuple(
                data_lib.target_language_token_ids(subwords, languages))
        pairs = data_lib.parse_directions(options.get("directions") or "all",
                                          languages)
        # The first trained direction out of English (the built-in warm-up
        # sentences are English), else the first one.
        src, tgt = next((p for p in pairs if p[0] == "en"), pairs[0])
        self.default_task = {
            "src_lang": src, "tgt_lang": tgt,
            "tags": data_lib.parse_tags(options.get("tags") or ())}
        # Old model directories do not record their directions: None.
        self.trained_tasks = None if not options.get("directions") else [
            {"src_lang": s, "tgt_lang": t} for s, t in pairs]
