"""Command-line flags that several front ends share (`gnmt-tf translate`,
the gateway, the exporters, the alignment tools): argparse types that
validate every number, and the search and predictor flag groups.

Light (no TensorFlow), and below every front end: `gnmt_tf.cli` and the
packages whose commands it discovers import it, never the other way round.
"""
