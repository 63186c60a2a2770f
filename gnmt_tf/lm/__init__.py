"""Target-side n-gram language models: estimating an ARPA file
(`gnmt_tf.lm.arpa`) and scoring with it during search
(`gnmt_tf.lm.predictor`, through kenlm)."""
