"""What a host-run search needs to know of an exported step pair (TFLite
or ONNX): the source and cache lengths the export was made for, and the
`model.json` a `gnmt_tf.host_translator.HostTranslator` reads beside it."""

from gnmt_tf.export.step_functions import directory_metadata

DEFAULT_MAX_SOURCE_LENGTH = 128  # models without a length limit (GNMT)
DEFAULT_MAX_TARGET_LENGTH = 128  # cache length, at most the model's limit


def growing_cache(model, fixed_shapes=False, max_target_length=None,
                  cache_block=None):
    """Whether a model's export gets a growing cache (one position a
    step): where the model has one, unless `fixed_shapes`, a cache length
    or a `cache_block` is asked for."""
    return bool(model.supports_growing_cache
                and not fixed_shapes and max_target_length is None
                and cache_block is None)


def default_lengths(model, max_source_length=None, max_target_length=None):
    """`(L, T)` of a model's export: the given lengths, or the defaults.

    Models with a length limit (`model.max_target_length`, the task-space
    Transformer): `L` = that limit + the end token + the source prefix (the
    longest source `Translator` accepts), `T` = at most
    `DEFAULT_MAX_TARGET_LENGTH`. Others (GNMT): `L` =
    `DEFAULT_MAX_SOURCE_LENGTH`, `T` = None.

    Raises:
      ValueError: `L < 2` (one subword and the end token), `T < 1`, or a
        `max_target_length` for a model without a cache.
    """
    limit = model.max_target_length
    if limit is None:
        if max_target_length is not None:
            raise ValueError("max_target_length is for models with a "
                             "fixed-size decoder cache (the task-space "
                             "Transformer); a GNMT decoder state has no length")
        max_source_length = max_source_length or DEFAULT_MAX_SOURCE_LENGTH
    else:
        prefix = 0 if model.source_prefix is None else 1
        max_source_length = max_source_length or limit + 1 + prefix
        max_target_length = (max_target_length
                             or min(DEFAULT_MAX_TARGET_LENGTH, limit))
        if int(max_target_length) < 1:
            raise ValueError(f"max_target_length must be >= 1, got "
                             f"{max_target_length}")
        max_target_length = int(max_target_length)
    if int(max_source_length) < 2:
        raise ValueError(f"max_source_length must be >= 2, got "
                         f"{max_source_length}")
    return int(max_source_length), max_target_length


def export_lengths(model, max_source_length=None, max_target_length=None,
                   fixed_shapes=False, cache_block=None):
    """`default_lengths`, with no cache length `T` where the export gets
    a growing cache (`growing_cache`) or grows it in blocks."""
    lengths = default_lengths(model, max_source_length, max_target_length)
    if (growing_cache(model, fixed_shapes, max_target_length)
            or cache_block is not None):
        return lengths[0], None
    return lengths


def export_metadata(model, payload, max_source_length, max_target_length,
                    fixed_shapes=False, cache_block=None):
    """The `model.json` dict a host translator reads: the task inputs, the
    source prefix, a default task, the lengths (`export_lengths`), the
    shapes, and the model directory's own entries
    (`directory_metadata`)."""
    prefix = model.source_prefix
    growing = growing_cache(model, fixed_shapes, max_target_length,
                            cache_block)
    if growing or cache_block is not None:  # the model's own limit
        output_length = model.max_target_length
    else:
        output_length = (None if max_target_length is None else
                         min(max_target_length, model.max_target_length))
    return {
        **directory_metadata(payload),
        "task_inputs": [t.to_json() for t in model.task_inputs()],
        "source_prefix": None if prefix is None else {
            "input": prefix[0], "ids": list(prefix[1])},
        "default_task": {k: v if isinstance(v, str) else list(v)
                         for k, v in model.default_task.items()},
        "trained_tasks": model.trained_tasks,
        "fixed_task": model.fixed_task,
        "bos_id": model.config.bos_id,
        "eos_id": model.config.eos_id,
        "max_source_length": max_source_length,
        "max_target_length": max_target_length,
        "fixed_shapes": bool(fixed_shapes),
        "growing_cache": growing,
        "cache_block": cache_block,
        # Where the host stops: the cache, or the model's own limit.
        "max_output_length": output_length,
    }
