"""The GNMT family (Wu et al. 2016): deep residual LSTM encoder-decoder with a
bidirectional bottom layer and bottom-decoder-to-top-encoder attention.

- `model.GNMT`: the Keras model (training, beam search, split step);
- layers: `encoder.GNMTEncoder`, `decoder.GNMTDecoder`,
  `additive_attention.AdditiveAttention`, `lstm.LSTM`;
- `presets`: named configurations (`gnmt_tiny`, `gnmt_small`, `gnmt_8x8`);
- `qat.QATGNMT`: the quantization-aware variant;
- `registry`: the model types this family declares.

Importing the package is cheap (no TensorFlow).
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
