"""Corpora (reading, downloading, verifying) and tf.data input pipelines."""
