"""Keras layers of GNMT."""

from gnmt_tf.layers.additive_attention import AdditiveAttention
from gnmt_tf.layers.gnmt_decoder import GNMTDecoder
from gnmt_tf.layers.gnmt_encoder import GNMTEncoder
from gnmt_tf.layers.lstm import LSTM

__all__ = ["AdditiveAttention", "GNMTDecoder", "GNMTEncoder", "LSTM"]
