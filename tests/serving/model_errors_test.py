import pytest

from gnmt_tf.serving.model_errors import MAX_MESSAGE_CHARS
from gnmt_tf.serving.model_errors import describe_model_error


class FakeTFError(Exception):
    """Has `message`, as `tf.errors.OpError` does."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


DUMP = ("Graph execution error:\n\nDetected at node {node} defined at (most "
        "recent call last):\n{trace}\n{reason}\n\t [[{{{{node {node}}}}}]] "
        "[Op:__inference_signature_wrapper_16500]")


@pytest.mark.parametrize("node, trace, reason, expected", [
    ("Assert/Assert", "<stack traces unavailable>",
     "assertion failed: [input too long: the limit is 250 subwords, got] "
     "[4096] [(split it into sentences)]",
     "input too long: the limit is 250 subwords, got 4096 (split it into "
     "sentences)"),
    ("Assert/Assert", '  File "serve.py", line 9, in <module>\n\n  File '
     '"serve.py", line 5, in f\n',
     "assertion failed: [unknown src_lang: known languages are cs, de, en, "
     "fr; got] [zz]",
     "unknown src_lang: known languages are cs, de, en, fr; got zz"),
    ("encoder/scan/TensorListStack", "<stack traces unavailable>",
     "Tried to stack elements of an empty list with non-fully-defined "
     "element_shape: [?,16]",
     "Tried to stack elements of an empty list with non-fully-defined "
     "element_shape: [?,16]"),
])
def test_graph_dumps_become_their_reason(node, trace, reason, expected):
    error = FakeTFError(DUMP.format(node=node, trace=trace, reason=reason))
    assert describe_model_error(error) == expected


def test_plain_and_long_messages():
    assert describe_model_error(ValueError("bad value")) == "bad value"
    assert describe_model_error(ValueError()) == "ValueError"
    long = describe_model_error(ValueError("x" * 2000))
    assert len(long) == MAX_MESSAGE_CHARS and long.endswith("...")
    assert "\n" not in describe_model_error(ValueError("a\nb"))
