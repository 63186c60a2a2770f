"""Gradient checkpointing ("recomputation", as in Facebook's Caffe2 NMT).

`checkpointed(fn, enabled)` wraps a layer call in `tf.recompute_grad`: the
forward pass keeps only the call's inputs on the tape, and the backward
pass runs the call again to get its intermediate activations, trading about
one extra forward pass for the memory of every activation inside the layer.

Only tensors passed as positional arguments get gradients; masks, lengths
and flags go into the closure. The wrapped call must not create variables
(layers are built before training starts).

Caveat: `tf.recompute_grad` does not replay random ops, so with dropout the
recomputed forward pass draws fresh masks and the gradient of a
checkpointed layer is taken under a different mask than its forward output
was (exact without dropout, a noisier estimate with it).
"""

import tensorflow as tf


def checkpointed(fn, enabled):
    """`fn`, wrapped in `tf.recompute_grad` when `enabled`."""
    return tf.recompute_grad(fn) if enabled else fn
