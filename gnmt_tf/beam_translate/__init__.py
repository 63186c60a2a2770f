"""Batch translation with Apache Beam (`gnmt-tf translate-beam`).

- `shards`: which input shards a job translates, their output names, the
  per-shard records (sha256 and line count of input and output) and the
  job's manifest; reruns skip shards whose records still hold.
- `handlers`: `RunInference` model handlers, one for a trained model
  directory (`gnmt_tf.translator.Translator`), one for an exported
  SavedModel (`gnmt-tf export savedmodel`).
- `job`: the pipeline (read shards -> RunInference -> one atomically
  written output per input shard) and the driver around it.

Apache Beam is optional (the `beam` extra): only `handlers` and `job`
import it.
"""
