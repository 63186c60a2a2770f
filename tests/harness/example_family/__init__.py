"""A third model family, outside `gnmt_tf`: what adding one takes.

A one-gate recurrent decoder with dot-product attention over the projected
source embeddings, 32 units wide. It lives in
the tests, declares its model type the way an installed package would (an
entry point of the group ``gnmt_tf.model_types``, written by the
`example_family_installed` fixture of `tests/conftest.py`), and then passes
the model-family harness and exports through every exporter without a line
of `gnmt_tf` changed for it:

- `model.py`: the model (a `Seq2SeqModelBase`) and its config;
- `registry.py`: its `ModelType`, the entry point's target;
- `training.py`: how the tests train its tiny model directory (`model.fit`).
"""
