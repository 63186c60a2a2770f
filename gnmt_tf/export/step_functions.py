"""What every exporter builds on: a model's `encode` and `decode_step` as
`tf.function`s over a flat decoding state, and a `tf.Module` that holds
only a model's weights.

The SavedModel's host-search signatures, the TFLite files and the ONNX
graphs are all converted from `make_step_functions`; keeping it here, and
not in one exporter, means no exporter imports another.
"""

import types

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

from gnmt_tf.seq2seq_model import SplitStep

# decode_step's own inputs and outputs: no state tensor may take these names.
STEP_RESERVED_NAMES = ("ids", "log_probs", "attention")


def flatten_state(state, prefix=""):
    """Flattens a nested dict of tensors to `{"a__b": tensor}` (sorted keys)."""
    flat = {}
    for key in sorted(state):
        name = f"{prefix}{key}"
        if isinstance(state[key], dict):
            flat.update(flatten_state(state[key], name + "__"))
        else:
            flat[name] = state[key]
    return flat


def unflatten_state(flat, template):
    """Inverse of `flatten_state`, with `template` giving the nesting."""
    def build(node, prefix):
        return {key: (build(value, f"{prefix}{key}__")
                      if isinstance(value, dict) else flat[f"{prefix}{key}"])
                for key, value in node.items()}
    return build(template, "")


def make_step_functions(model, encode_batch_size=None, step_source_length=None,
                        encode_fn=None, encode_specs=None, cache_length=None,
                        growing_cache=False, log_softmax=None,
                        cache_block=None):
    """The `encode` and `decode_step` functions of a step-function model.

    Both are concrete functions with flat keyword inputs and dict outputs, as
    signatures need (see the module docstring for names and shapes).

    Args:
      model: a model with `encode`, `initial_state` and `step`.
      encode_batch_size: int or None. A fixed batch size for `encode` (TFLite
        needs one to lower the encoder's `tf.scan`); `decode_step` always
        takes any batch size.
      step_source_length: int or None. A fixed source length for the state
        inputs of `decode_step` (every unknown non-batch dimension): TFLite
        lowers the attention's broadcasting slices only with it. Callers pad
        `encode`'s outputs to it (zeros, mask False), which changes nothing:
        masked positions get exactly zero attention.
      encode_fn, encode_specs: for models whose encoder takes more than the
        source ids (e.g. the task-space Transformer): a callable taking the
        inputs `encode_specs` (a list of named `tf.TensorSpec`s, in order)
        and returning `model.encode`'s result. Default: `model.encode` of a
        ``source_ids`` int32 `[encode_batch_size, None]` input.
      cache_length: int or None. For models with a fixed-size decoder cache
        (the task-space Transformer's KV cache): `encode` calls
        `model.initial_state(encoded, cache_length)`, so the cache, and with
        it the longest output, has this many positions. None: the model's
        default (`model.initial_state(encoded)`).
      growing_cache: bool. For models with `supports_growing_cache`:
        `encode` returns an empty self-attention cache and each
        `decode_step` returns it one position longer (its time axis is
        unknown in `decode_step`), so a step reads and writes only the
        positions so far; `cache_length` must then be None. `encode`
        leaves the empty cache out (TFLite cannot return an empty tensor):
        callers start each `decode_step` input that `encode` does not
        return as zeros of batch 1 and length 0 along its unknown axes.
      log_softmax: callable or None. `decode_step`'s log-probs are
        `log_softmax(model.output_logits(hidden))` of `model.step_hidden`
        (the same model arithmetic as `model.step` but this last op), for
        models that split their `step` so (`Seq2SeqModel`). None, or a
        model without the split: `model.step`'s own.
      cache_block: int or None. For models with `supports_growing_cache`:
        the fixed-size cache layout (`model.initial_state(encoded,
        length)`, written at each row's `time`), but of any length:
        `encode` returns it as `cache_block` zero positions and
        `decode_step` takes it with its time axis unknown and returns it
        at the length it was given. Callers lengthen it by `cache_block`
        zero positions before a step that would write past its end
        (`gnmt_tf.tflite_runtime`), so the step's shapes change once every
        `cache_block` steps, not at every step as with `growing_cache`.
        `cache_length` and `growing_cache` must then be unset.

    Returns:
      `(encode, decode_step)`.

    Raises:
      ValueError: a state tensor is named like a `decode_step` input/output,
        or `growing_cache` or `cache_block` for a model without a growing
        cache, with `cache_length`, or together.
    """
    if ((growing_cache or cache_block is not None)
            and not model.supports_growing_cache):
        raise ValueError(f"{type(model).__name__} has no growing cache")
    if growing_cache and cache_length is not None:
        raise ValueError("a growing cache has no cache_length")
    if cache_block is not None and (growing_cache
                                    or cache_length is not None):
        raise ValueError("cache_block takes neither growing_cache nor "
                         "cache_length")
    if cache_block is not None and int(cache_block) < 1:
        raise ValueError(f"cache_block must be >= 1, got {cache_block}")
    if encode_fn is None:
        encode_fn = model.encode
        encode_specs = [tf.TensorSpec([encode_batch_size, None], tf.int32,
                                      name="source_ids")]
    # The nesting of the state, to rebuild it from flat signature inputs;
    # recorded while `encode` is traced.
    template = {}
    # name -> TensorSpec of a cache entry whose time axis decode_step takes
    # at any length: left out of `encode` (growing), or returned by it with
    # `cache_block` positions.
    empty = {}

    def encode_body(*inputs):
        encoded = encode_fn(*inputs)
        if growing_cache:
            state = model.initial_state(encoded, growing_cache=True)
        elif cache_block is not None:  # found as empty, then filled below
            state = model.initial_state(encoded, 0)
        elif cache_length is None:
            state = model.initial_state(encoded)
        else:
            state = model.initial_state(encoded, cache_length)
        template.update(tf.nest.map_structure(lambda _: None, state))
        flat = flatten_state(state)
        for name, value in list(flat.items()):
            if 0 in value.shape[1:]:  # a cache's time axis, empty
                dims = value.shape[1:].as_list()
                empty[name] = tf.TensorSpec(
                    [None] + [None if d == 0 else d for d in dims],
                    value.dtype, name=name)
                if cache_block is None:
                    del flat[name]
                else:
                    flat[name] = tf.zeros(
                        tf.concat([tf.shape(value)[:1],
                                   [int(cache_block) if d == 0 else d
                                    for d in dims]], 0), value.dtype)
        return flat

    encode = tf.function(encode_body, autograph=False,
                         input_signature=list(encode_specs))
    encoded = encode.get_concrete_function().structured_outputs
    state_specs = {
        name: tf.TensorSpec(
            [None] + [step_source_length if d is None else d
                      for d in value.shape[1:].as_list()],
            value.dtype, name=name)
        for name, value in encoded.items()}
    state_specs.update(empty)
    clash = set(STEP_RESERVED_NAMES) & set(state_specs)
    if clash:
        raise ValueError(f"decoding state names {sorted(clash)} clash with "
                         "decode_step's own inputs/outputs")

    step = exported_step(model, log_softmax)

    def decode_step(ids, **flat_state):
        state = unflatten_state(flat_state, template)
        log_probs, attention, new_state = step(ids, state)
        outputs = {"log_probs": tf.cast(log_probs, tf.float32)}
        if attention is not None:
            outputs["attention"] = tf.cast(attention, tf.float32)
        for name, value in flatten_state(new_state).items():
            if value is not flat_state[name]:  # read-only entries stay host-side
                outputs[name] = value
        return outputs

    decode_step = tf.function(decode_step, autograph=False)
    return (encode.get_concrete_function(),
            decode_step.get_concrete_function(
                ids=tf.TensorSpec([None], tf.int32, name="ids"), **state_specs))


def exported_step(model, log_softmax=None):
    """The step function an export traces: `model.step`, or, given a
    `log_softmax` and a model that splits its step (`SplitStep`),
    `log_softmax(model.output_logits(hidden))` of `model.step_hidden` (the
    same arithmetic but this last op). Shared by `decode_step` and the
    in-graph search (`gnmt_tf.export.search_signature`), so both compute
    the same log-probs."""
    if log_softmax is None or not isinstance(model, SplitStep):
        return model.step

    def step(ids, state):
        hidden, attention, new_state = model.step_hidden(ids, state)
        return log_softmax(model.output_logits(hidden)), attention, new_state

    return step


def task_encode_function(model, batch_size=None):
    """`(encode_fn, specs)` of a model's encoder with its task inputs as ids:
    `encode_fn(source_ids, *task)` calls `model.encode`, `specs` are the
    named `TensorSpec`s (``source_ids`` int32 `[batch_size, None]`, then one
    int32 `[batch_size]` or `[batch_size, K]` per `TaskInput`), as
    `make_step_functions`' `encode_fn` / `encode_specs` take them."""
    inputs = model.task_inputs()
    specs = [tf.TensorSpec([batch_size, None], tf.int32, name="source_ids")]
    specs += [tf.TensorSpec((batch_size,) + tuple(t.shape[1:]), tf.int32,
                            name=t.name) for t in inputs]

    def encode_fn(source_ids, *task):
        return model.encode(source_ids, **{
            t.name: value for t, value in zip(inputs, task)})

    return encode_fn, specs


class WeightsModule(tf.Module):
    """A `tf.Module` over a Keras model that tracks only its weights
    (`model_variables`): saving a tracked Keras model traces every layer's
    call for Keras's own loading path, which nothing here uses, which
    doubles export time and which fails for models never called."""

    def __init__(self, model, name):
        super().__init__(name=name)
        self._untracked = types.SimpleNamespace(model=model)
        self.model_variables = list(model.variables)

    @property
    def model(self):
        """The model (not tracked: its variables are, as `model_variables`)."""
        return self._untracked.model


def directory_metadata(payload):
    """What a model directory's `config.json` (`payload`) says besides the
    model and training configs (a GNMT model's direction, a task-space
    model's trained directions), and its model type: for an export's
    metadata."""
    return {**{k: v for k, v in payload.items() if k not in ("model", "train")},
            "model_type": payload.get("model_type", "gnmt")}
