"""Model-agnostic decoding, one module per search; import from the module
(`from gnmt_tf.decoding.beam_search import beam_search`).

In the graph (TensorFlow): `beam_search` (beam search with GNMT's length
and coverage penalties and pruning; its beam helpers), `greedy_search`,
`sampling`, `forced` (forced decoding), `penalties`, `xla_step`,
`ensemble` (ensembles and log-linear predictor combination), `shortlist`
(vocabulary shortlists). On the host, over a step function:
`exact_search` (dfs), `bucket_search`, `sepbeam_search`,
`constrained_search`, `host_steps`, `host_decoding`; and
`host_beam_search`, the NumPy beam search of the TFLite/ONNX host
translators.

A model is seen only through a step function
`step_fn(ids [N], state) -> (log_probs [N, V], attention [N, S] or None,
new_state)`; every search here is written once against it.

This package imports nothing itself, so the NumPy host search loads no
TensorFlow (`gnmt_tf.host_translator` runs without it).
"""
