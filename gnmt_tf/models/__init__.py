"""Trainable sequence-to-sequence models."""

from gnmt_tf.models.gnmt import GNMT

__all__ = ["GNMT"]
