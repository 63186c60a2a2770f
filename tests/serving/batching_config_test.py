import pytest

from gnmt_tf.serving.batching_config import BatchingParameters
from gnmt_tf.serving.batching_config import TextProtoError
from gnmt_tf.serving.batching_config import parse_text_proto

EXAMPLE = """
# TF Serving batching parameters
max_batch_size { value: 32 }
batch_timeout_micros { value: 2000 }
max_enqueued_batches { value: 100 }
num_batch_threads { value: 4 }
allowed_batch_sizes: 8
allowed_batch_sizes: 16
allowed_batch_sizes: 32
pad_variable_length_inputs: true
thread_pool_name { value: "batch_threads" }
"""


def test_parse_tf_serving_file():
    params = BatchingParameters.from_text(EXAMPLE)
    assert params.max_batch_size == 32
    assert params.batch_timeout_micros == 2000
    assert params.max_enqueued_batches == 100
    assert params.num_batch_threads == 4
    assert params.allowed_batch_sizes == (8, 16, 32)
    assert params.pad_variable_length_inputs is True
    assert params.ignored == ("thread_pool_name",)
    assert params.padded_size(3) == 8 and params.padded_size(17) == 32


def test_round_trip_and_lenient_syntax():
    params = BatchingParameters(max_batch_size=16, allowed_batch_sizes=(4, 16),
                                num_batch_threads=2)
    assert BatchingParameters.from_text(params.to_text()) == params
    lenient = BatchingParameters.from_text(
        "max_batch_size: { value: 4 } allowed_batch_sizes: [2, 4]")
    assert lenient.max_batch_size == 4 and lenient.allowed_batch_sizes == (2, 4)


def test_generic_parser_nesting():
    fields = parse_text_proto(
        'model_config_list { config { name: "a" base_path: "/m/a" } '
        'config { name: "b" } }')
    configs = fields["model_config_list"][0]["config"]
    assert [c["name"][0] for c in configs] == ["a", "b"]


@pytest.mark.parametrize("text, message", [
    ("max_batch_sise { value: 3 }", "unknown batching parameter"),
    ("max_batch_size { value: 0 }", "max_batch_size"),
    ("max_batch_size { value: 8 } allowed_batch_sizes: 4", "must equal"),
    ("max_batch_size { value: 8 } allowed_batch_sizes: 8 "
     "allowed_batch_sizes: 4", "increase"),
    ("max_batch_size { value: 8 ", "end of text"),
    ("max_batch_size { value: 8 } max_batch_size { value: 9 }", "2 times"),
    ("pad_variable_length_inputs: 3", "true or false"),
    ("num_batch_threads { value: \"x\" }", "integer"),
    ("num_batch_threads { value: 100000 }", "num_batch_threads must be in "
     "1..1024"),
    ("batch_timeout_micros { value: 1000000000000000000 }",
     "batch_timeout_micros must be in 0..3600000000"),
    ("max_batch_size $ 3", "unexpected character"),
])
def test_errors_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        BatchingParameters.from_text(text)


def test_from_file_names_the_file(tmp_path):
    path = tmp_path / "batching_parameters.txt"
    path.write_text("bogus: 1\n")
    with pytest.raises(ValueError, match="batching_parameters.txt"):
        BatchingParameters.from_file(path)
    assert issubclass(TextProtoError, ValueError)
