"""Model families, one folder each: `gnmt` (the GNMT LSTM encoder-decoder) and
`task_space` (the task-space Transformer). Each holds its model, layers,
config, presets, model-type registry entry and quantization-aware variant.

Importing this package is cheap (no TensorFlow): import a family's modules.
"""
