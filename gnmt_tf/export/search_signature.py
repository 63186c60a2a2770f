"""A whole beam search as one signature, for translating one sentence at a
time without a host loop.

The host search (`gnmt_tf.decoding.host_beam_search`) calls `decode_step`
once per output position and does the beam bookkeeping in NumPy between
calls. For one sentence the steps are small, so that bookkeeping, the
input copies and the reallocation of a growing cache are a large part of
each step (`benchmarks/tflite_search_parts.py`: 37 % of a batch-1 step).
`search_function` puts `encode` and the search loop
(`gnmt_tf.decoding.beam_search`, the same search `Translator` runs) into
one function that a TFLite file carries as a signature named
``search_beam<K>`` (`gnmt_tf.search_signatures`); the runtime calls it
once per sentence (`gnmt_tf.tflite_runtime.TFLiteRuntime.search`).

Its beam size `K` is fixed when it is exported (the buffers' shapes
depend on it); the penalties and the output limit are inputs. It keeps
the host search's rules: GNMT early stopping, one hypothesis, no pruning.
The self-attention cache has the fixed-size layout, sized from the output
limit on each call: the search loop's shapes then stay the same from step
to step, which a growing cache's would not (in a TFLite loop body, a
tensor whose shape changes is reallocated at every step).
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.decoding.beam_search import beam_search
from gnmt_tf.export.step_functions import exported_step
from gnmt_tf.search_signatures import check_search_beam_size

def search_function(model, beam_size, encode_fn, encode_specs,
                    log_softmax=None):
    """One sentence's encoder and beam search as a concrete function.

    Args:
      model: a `Seq2SeqModel`, weights loaded.
      beam_size: int `K` >= 2 (`check_search_beam_size`).
      encode_fn, encode_specs: the encoder with its task inputs, at batch 1
        (`gnmt_tf.export.step_functions.task_encode_function(model, 1)`).
      log_softmax: callable or None. As `decode_step`'s
        (`gnmt_tf.export.step_functions.exported_step`).

    Returns:
      A concrete function of `encode_specs` plus ``max_length`` (int32
      scalar: the most output tokens, end token included, as the host
      search's limit), ``length_penalty`` and ``coverage_penalty`` (float32
      scalars), returning ``ids`` int32 `[1, T]` (the best hypothesis,
      end token included, 0-padded), ``length`` int32 `[1]` and ``score``
      float32 `[1]` (its GNMT score).
    """
    check_search_beam_size(beam_size)
    step = exported_step(model, log_softmax)
    scalars = [tf.TensorSpec([], tf.int32, name="max_length"),
               tf.TensorSpec([], tf.float32, name="length_penalty"),
               tf.TensorSpec([], tf.float32, name="coverage_penalty")]
    count = len(encode_specs)

    def search(*inputs):
        encoded = encode_fn(*inputs[:count])
        max_length, length_penalty, coverage_penalty = inputs[count:]
        max_length = tf.maximum(max_length, 1)
        source_length = tf.shape(inputs[0])[1]
        result = beam_search(
            step, model.initial_state(encoded, max_length),
            tf.fill([1], model.config.bos_id), model.config.eos_id,
            int(beam_size), tf.reshape(max_length, [1]),
            source_lengths=tf.reshape(source_length, [1]),
            length_penalty=length_penalty, coverage_penalty=coverage_penalty,
            num_hypotheses=1, early_stopping="gnmt")
        return {"ids": result.ids[:, 0], "length": result.lengths[:, 0],
                "score": tf.cast(result.scores[:, 0], tf.float32)}

    function = tf.function(search, autograph=False,
                           input_signature=list(encode_specs) + scalars)
    return function.get_concrete_function()
