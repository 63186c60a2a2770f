"""`Embedding`: `keras.layers.Embedding` that never puts its matrix in
copy-on-read mode."""

import tensorflow as tf
import tf_keras as keras


class Embedding(keras.layers.Embedding):
    """`keras.layers.Embedding` whose lookup gathers from the matrix read as a
    tensor.

    Keras gathers straight from the variable (`ResourceGather`), which
    switches the variable to copy-on-read for good: every later read of it
    then copies the whole `[V, d]` matrix. With tied embeddings the softmax
    projection reads it at every search step, so each step paid a full copy
    (8 MB at V 8000, d 256). Same weights, same outputs, same checkpoints.
    """

    def call(self, inputs):
        if inputs.dtype not in (tf.int32, tf.int64):
            inputs = tf.cast(inputs, tf.int32)
        outputs = tf.gather(tf.convert_to_tensor(self.embeddings), inputs)
        return tf.cast(outputs, self.compute_dtype)
