"""Reference computations of the model-family harness
(`model_family_test.py`): a model's teacher-forced and step-by-step outputs,
scores of given outputs, exhaustive search, and tolerances."""

import numpy as np

# TFLite's int8 LogSoftmax writes log-probabilities on a grid of 1/16 nat
# (gnmt_tf.export.tflite, int8): the int8 model's quantization step at its output.
INT8_LOG_PROB_STEP = 1.0 / 16


def float_tolerance(dtype, magnitude=1.0, terms=1):
    """Absolute tolerance for two float computations of a value of size
    `magnitude` that sum `terms` rounded terms in different orders (other
    batch shapes, other kernels): 32 units in the last place each (about
    one is seen)."""
    return 32 * float(np.finfo(dtype).eps) * max(1.0, magnitude) * terms


def teacher_forcing(translator, rows):
    """The model's teacher-forced inputs for `rows` = `[(task, source,
    target_ids)]`: `source_ids` (the sources tokenized as `Translator`
    does), `target_in_ids` (BOS + the target ids, at most the model's
    `max_target_length` of them) and each row's task ids."""
    import tensorflow as tf

    task_ids = [translator.task_ids(**task) for task, _, _ in rows]
    task = {name: tf.constant([ids[name] for ids in task_ids])
            for name in task_ids[0]}
    source_ids, _ = translator.tokenize(
        tf.constant([source for _, source, _ in rows]), task)
    limit = translator.model.max_target_length or 1 << 30
    targets = [[translator.bos_id] + list(ids)[:limit - 1]
               for _, _, ids in rows]
    width = max(map(len, targets))
    target_in_ids = tf.constant([t + [0] * (width - len(t)) for t in targets])
    return {"source_ids": source_ids, "target_in_ids": target_in_ids, **task}


def sequence_log_probs(translator, rows):
    """Log-probability of each output in `rows` = `[(task, source, ids)]`
    (`ids` with the end token where the output has one), teacher-forced."""
    import tensorflow as tf

    features = teacher_forcing(
        translator, [(task, source, ids[:-1]) for task, source, ids in rows])
    log_probs = tf.nn.log_softmax(translator.model(features)).numpy()
    return [float(sum(log_probs[r, t, i] for t, i in enumerate(ids)))
            for r, (_, _, ids) in enumerate(rows)]


def cached_and_full(model, features, step_attention):
    """Runs `model` step by step (`encode`, `initial_state`, `step` on each
    decoder input) and in one teacher-forced pass.

    Returns:
      `(step_log_probs, full_log_probs, step_attention, full_attention)`,
      NumPy `[P, V]` and `[P, S]` over the `P` real (unpadded) positions.
    """
    import tensorflow as tf

    task = {k: v for k, v in features.items()
            if k not in ("source_ids", "target_in_ids")}
    target_in_ids = features["target_in_ids"]
    logits, attention = model(features, return_attention=True)
    state = model.initial_state(model.encode(features["source_ids"], **task),
                                target_in_ids.shape[1])
    log_probs, maps = [], []
    for t in range(target_in_ids.shape[1]):
        step_log_probs, step_map, state = model.step(target_in_ids[:, t],
                                                     state)
        log_probs.append(step_log_probs)
        maps.append(step_map)
    mask = target_in_ids.numpy() != 0
    return (tf.stack(log_probs, 1).numpy()[mask],
            tf.nn.log_softmax(logits).numpy()[mask],
            tf.stack(maps, 1).numpy()[mask],
            step_attention(model, attention.numpy())[mask])


def brute_force(translator, sentence, task, max_length, alpha, beta, best=3):
    """The `best` GNMT-scored outputs of `sentence` among all outputs of at
    most `max_length` tokens (ending in the end token, or cut at
    `max_length`), found by scoring every one of them; float64.

    Each prefix gets its own decoding state (`step` on a batch of all the
    prefixes of one length), so no beam bookkeeping is involved.

    Returns:
      A list of `(ids, score)`, best first.
    """
    import tensorflow as tf

    model = translator.model
    ids = {k: tf.constant([v]) for k, v in translator.task_ids(**task).items()}
    source_ids, source_lengths = translator.tokenize(tf.constant([sentence]),
                                                     ids)
    state = model.initial_state(model.encode(source_ids, **ids), max_length)
    real = np.arange(source_ids.shape[1]) < int(source_lengths[0])
    eos = translator.eos_id
    prefixes = np.zeros([1, 0], np.int64)
    log_probs, coverage = np.zeros([1]), 0.0
    last = tf.constant([translator.bos_id])
    finished = []  # (score, ids)
    for t in range(max_length):
        step_log_probs, attention, state = model.step(last, state)
        total = log_probs[:, None] + step_log_probs.numpy().astype(np.float64)
        coverage = coverage + attention.numpy().astype(np.float64)  # [N, S]
        penalty = beta * np.where(real, np.log(np.maximum(
            np.minimum(coverage, 1.0), 1e-10)), 0.0).sum(-1)        # [N]
        scores = total / ((5.0 + t + 1) / 6.0) ** alpha + penalty[:, None]
        ends = np.zeros(scores.shape, bool)
        ends[:, eos] = True
        ends |= t == max_length - 1
        rows, cols = np.nonzero(ends)
        top = np.argsort(-scores[rows, cols])[:best]
        finished += [(scores[rows[i], cols[i]],
                      tuple(prefixes[rows[i]]) + (cols[i],)) for i in top]
        rows, cols = np.nonzero(~ends)
        prefixes = np.concatenate([prefixes[rows], cols[:, None]], 1)
        log_probs, coverage = total[rows, cols], coverage[rows]
        state = tf.nest.map_structure(lambda x: tf.gather(x, rows), state)
        last = tf.constant(cols, tf.int32)
    finished.sort(key=lambda f: -f[0])
    return [(ids, score) for score, ids in finished[:best]]


def grid_step(values):
    """The spacing of the grid fake-quantized `values` lie on: the smallest
    gap between distinct values (rounding noise ignored)."""
    gaps = np.diff(np.unique(np.asarray(values, np.float64)))
    gaps = gaps[gaps > 1e-4 * max(1.0, np.abs(values).max())]
    return float(gaps.min())
