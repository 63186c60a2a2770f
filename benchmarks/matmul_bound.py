"""How fast a Transformer training step could be if it were only its
dense matrix products: an upper bound on target tokens/s for this machine.

For each batch (`[B, S]` sources, `[B, T]` targets) a training step of a
pre-norm Transformer (`layers` encoder and decoder layers, width `d`, FFN
width `f`, tied output layer of `vocabulary` rows) multiplies, forward and
backward, the activations of every position by every projection, FFN and
output matrix. This times exactly those products with `tf.matmul` at the
batch's shapes (forward `x @ W`, the input gradient `g @ W^T` and the
weight gradient `x^T @ g`, each alone, best of a few calls) and adds them
up. The products run on one thread, and the bound divides their time by
the number of cores: as if every core multiplied all the time, in
parallel and without waiting (a trainer may run products side by side,
so the time of two-thread products in sequence would not bound it).
Everything else in a step (attention scores, softmax, layer norm,
dropout, the loss, the optimizer) counts as free. So no float32
implementation of the model that uses TensorFlow's matmul kernels on this
machine trains faster than this bound; `training_speed.py` reports it next
to our and OpenNMT-tf's measured rates, in the same run.

    python benchmarks/matmul_bound.py shapes.json bound.json

(`shapes.json`: `{"batches": [[B, S, T, target_tokens], ...], "layers":
3, "width": 256, "ffn": 1024, "vocabulary": 8000}`.)

Two bounds: ``separate`` with the query, key and value projections as
three products (as our model and OpenNMT-tf compute them), and ``fused``
with them as one product three times as wide (and the cross-attention's
key and value as one), which runs closer to the kernels' peak.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time


def dense_products(batch, sources, targets, layers, width, ffn, vocabulary,
                   fused=False):
    """`{(m, k, n): count}`: the `[m, k] @ [k, n]` forward products of one
    step (each also costs its two gradient products)."""
    enc, dec = batch * sources, batch * targets
    products = {}

    def add(m, k, n, count=1):
        products[(m, k, n)] = products.get((m, k, n), 0) + count

    for _ in range(layers):
        # Encoder: self-attention (q, k, v, output), FFN.
        add(enc, width, 3 * width) if fused else add(enc, width, width, 3)
        add(enc, width, width)
        add(enc, width, ffn)
        add(enc, ffn, width)
        # Decoder: self-attention, cross-attention (q and output on the
        # targets, k and v on the encoder output), FFN.
        add(dec, width, 3 * width) if fused else add(dec, width, width, 3)
        add(dec, width, width, 3)
        add(enc, width, 2 * width) if fused else add(enc, width, width, 2)
        add(dec, width, ffn)
        add(dec, ffn, width)
    add(dec, width, vocabulary)  # the output layer
    return products


def _timer(calls=3, repeats=3):
    import tensorflow as tf

    spec = [tf.TensorSpec([None, None], tf.float32)] * 2
    forms = {
        "forward": tf.function(lambda x, w: tf.matmul(x, w),
                               input_signature=spec),
        "input_gradient": tf.function(
            lambda g, w: tf.matmul(g, w, transpose_b=True),
            input_signature=spec),
        "weight_gradient": tf.function(
            lambda x, g: tf.matmul(x, g, transpose_a=True),
            input_signature=spec),
    }
    cache = {}

    def seconds(m, k, n):
        """Forward plus both gradients of `[m, k] @ [k, n]`."""
        if (m, k, n) in cache:
            return cache[(m, k, n)]
        x = tf.random.normal([m, k])
        w = tf.random.normal([k, n])
        g = tf.random.normal([m, n])
        total = 0.0
        for name, args in (("forward", (x, w)), ("input_gradient", (g, w)),
                           ("weight_gradient", (x, g))):
            run = forms[name]
            run(*args).numpy()  # warm-up
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                for _ in range(calls):
                    out = run(*args)
                out.numpy()
                best = min(best, (time.perf_counter() - start) / calls)
            total += best
        cache[(m, k, n)] = total
        return total

    return seconds


def matmul_bound(batch_shapes, layers, width, ffn, vocabulary, cores=None):
    """The bound over `batch_shapes`, a list of `(B, S, T, target_tokens)`
    (`target_tokens`: the batch's non-padding targets, as the trainers
    count them).

    Returns:
      `{"separate": {...}, "fused": {...}}`, each with
      ``target_tokens_per_s`` (the bound),
      ``one_core_matmul_seconds_per_step`` (median over the batches) and
      ``gflop_per_s`` (the products' rate over all cores).
    """
    cores = cores or len(os.sched_getaffinity(0))
    seconds = _timer()
    tokens = sum(shape[3] for shape in batch_shapes)
    result = {}
    for name, fused in (("separate", False), ("fused", True)):
        per_batch, flops = [], 0
        for b, s, t, _ in batch_shapes:
            products = dense_products(b, s, t, layers, width, ffn,
                                      vocabulary, fused)
            per_batch.append(sum(count * seconds(*shape)
                                 for shape, count in products.items()))
            flops += sum(3 * 2 * m * k * n * count
                         for (m, k, n), count in products.items())
        total = sum(per_batch) / cores
        result[name] = {
            "target_tokens_per_s": round(tokens / total, 1),
            "one_core_matmul_seconds_per_step": round(
                statistics.median(per_batch), 4),
            "gflop_per_s": round(flops / total / 1e9, 1)}
    result["cores"] = cores
    result["batches"] = len(batch_shapes)
    result["target_tokens"] = tokens
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("spec", help="the batches' shapes and the model's "
                                     "dimensions (JSON, see above)")
    parser.add_argument("out", help="where the bound is written (JSON)")
    args = parser.parse_args(argv)
    import tensorflow as tf

    from gnmt_tf.io_utils import write_text_atomic

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    spec = json.loads(pathlib.Path(args.spec).read_text())
    bound = matmul_bound([tuple(b) for b in spec["batches"]],
                         spec["layers"], spec["width"], spec["ffn"],
                         spec["vocabulary"])
    write_text_atomic(pathlib.Path(args.out), json.dumps(bound) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
