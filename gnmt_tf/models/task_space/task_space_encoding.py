"""`TaskSpaceEncoding`: one vector per translation task (Ctrip-style)."""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf
import tf_keras as keras

from gnmt_tf.models.task_space.layer_utils import mask_value


@keras.utils.register_keras_serializable(package="task_space")
class TaskSpaceEncoding(keras.layers.Layer):
    """Encodes a task (direction + set of scene tags) as one `d`-vector.

    Ctrip's MT platform serves many directions and scenes (captions, news,
    e-commerce, ...) with one Transformer by telling it the *task*. Here a
    task is a direction `(source language, target language)` plus a *set*
    of scene tags, encoded as

        task = E_src[src_lang] + E_tgt[tgt_lang] + scene
        scene = sum_j a_j V_j,  a = softmax_j(q . (W_k V_j) / sqrt(d))

    where `V [num_tags + 1, d]` are tag embeddings, `q [d]` is a trainable
    query, and `j` runs over the tags present in the example *plus* a
    learned "no tag" entry (the last row of `V`) that is always present.
    The entry makes the empty set give a well-defined vector (`V_none`),
    keeps the softmax defined for any combination, including ones never
    seen in training, and lets the model weigh "no specific scene" against
    the given tags. The pooled vector has the same size whatever the number
    of tags, so tag sets of any size share one representation space.

    How the model uses it: `TaskSpaceTransformer` gives the encoder and the
    decoder their own `TaskSpaceEncoding` (separate parameters) and ADDS the
    task vector to every token embedding (after the `sqrt(d)` scaling and
    the position encoding). Adding, rather than prepending a task position,
    keeps sequence lengths and positions unchanged, so padding masks, the
    decoder's KV cache and the `[T, S]` cross-attention maps (used by the
    alignment head and UNK replacement) still index real tokens only, and it
    injects the task at every position, where the residual stream carries
    it through all layers.

    Args:
        num_languages: int. Rows of the source- and target-language tables.
        num_tags: int. Number of scene tags `K` (columns of `tags`).
        hidden_dim: int. Output width `d`.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        src_lang: int `[B]`, source-language ids in `[0, num_languages)`.
        tgt_lang: int `[B]`, target-language ids.
        tags: int or float `[B, K]`, multi-hot (nonzero = tag present).
        return_weights: bool. Also return the tag attention weights.

    Returns:
        float `[B, d]`; with `return_weights=True` also the weights
        `[B, K + 1]` (last column: the "no tag" entry), zero for absent tags.

    Example:
    ```python
    encoding = TaskSpaceEncoding(num_languages=4, num_tags=6, hidden_dim=16)
    task = encoding(tf.constant([0]), tf.constant([1]),
                    tf.constant([[0, 1, 0, 0, 0, 1]]))  # [1, 16]
    ```
    """

    def __init__(self, num_languages, num_tags, hidden_dim, **kwargs):
        super().__init__(**kwargs)
        self.num_languages = num_languages
        self.num_tags = num_tags
        self.hidden_dim = hidden_dim

    def build(self, input_shape=None):
        def weight(name, shape):
            return self.add_weight(
                name=name, shape=shape,
                initializer=keras.initializers.RandomNormal(stddev=0.02))

        d = self.hidden_dim
        self.source_language_embeddings = weight(
            "source_language_embeddings", (self.num_languages, d))
        self.target_language_embeddings = weight(
            "target_language_embeddings", (self.num_languages, d))
        self.tag_embeddings = weight("tag_embeddings", (self.num_tags + 1, d))
        self.tag_key_kernel = weight("tag_key_kernel", (d, d))
        self.tag_query = weight("tag_query", (d,))
        super().build(input_shape)

    def call(self, src_lang, tgt_lang, tags, return_weights=False):
        if tags.shape.rank is not None and tags.shape[-1] is not None and (
                tags.shape[-1] != self.num_tags):
            raise ValueError(
                f"tags must have {self.num_tags} columns (one per scene "
                f"tag), got shape {tags.shape}")
        dtype = self.compute_dtype
        tag_values = tf.cast(self.tag_embeddings, dtype)  # [K+1, d]
        keys = tf.matmul(tag_values, tf.cast(self.tag_key_kernel, dtype))
        scores = tf.linalg.matvec(keys, tf.cast(self.tag_query, dtype))
        scores *= tf.cast(self.hidden_dim ** -0.5, dtype)  # [K+1]

        present = tf.not_equal(tags, tf.zeros_like(tags))  # [B, K]
        no_tag = tf.ones_like(present[:, :1])  # [B, 1], always present
        present = tf.concat([present, no_tag], axis=-1)  # [B, K+1]
        scores = tf.where(present, scores[None, :],
                          tf.cast(mask_value(dtype), dtype))
        weights = tf.nn.softmax(scores, axis=-1)  # [B, K+1]
        scene = tf.matmul(weights, tag_values)  # [B, d]

        direction = (
            tf.gather(tf.cast(self.source_language_embeddings, dtype),
                      tf.cast(src_lang, tf.int32))
            + tf.gather(tf.cast(self.target_language_embeddings, dtype),
                        tf.cast(tgt_lang, tf.int32)))  # [B, d]
        task = direction + scene
        if return_weights:
            return task, weights
        return task

    def get_config(self):
        config = super().get_config()
        config.update({"num_languages": self.num_languages,
                       "num_tags": self.num_tags,
                       "hidden_dim": self.hidden_dim})
        return config
