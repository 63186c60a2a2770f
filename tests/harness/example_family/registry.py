"""The example family's model type (the entry point's target: no TensorFlow
import here)."""

from gnmt_tf.model_types import ModelType

EXAMPLE_GRU = ModelType(
    model_class="example_family.model:ExampleGRU",
    config_class="example_family.model:ExampleGRUConfig")
