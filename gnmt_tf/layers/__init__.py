"""Keras layers shared by the model families (GNMT's own layers live in
`gnmt_tf.models.gnmt`)."""
