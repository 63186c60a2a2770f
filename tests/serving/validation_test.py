"""Request validation with several string inputs (the task-space export's
`text`, `src_lang`, `tgt_lang`, `tags`)."""

import pytest

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.protos import meta_graph_pb2
from gnmt_tf.serving.protos import types_pb2
from gnmt_tf.serving.validation import InvalidRequest
from gnmt_tf.serving.validation import RequestLimits
from gnmt_tf.serving.validation import decode_inputs

KEYS = ("text", "src_lang", "tgt_lang", "tags")


def _signature():
    signature = meta_graph_pb2.SignatureDef()
    for key in KEYS:
        info = signature.inputs[key]
        info.dtype = types_pb2.DT_STRING
        info.tensor_shape.dim.add().size = -1
    return signature


def _inputs(**changes):
    values = dict(text=["a dog runs", "ein Ball"], src_lang=["en", "de"],
                  tgt_lang=["fr", "cs"], tags=["caption", ""])
    values.update(changes)
    return {k: tensor_codec.string_tensor(v) for k, v in values.items()}


def test_task_inputs_decode_and_empty_tags_are_allowed():
    arrays = decode_inputs(_inputs(), _signature())
    assert sorted(arrays) == sorted(KEYS)
    assert list(arrays["tags"]) == [b"caption", b""]
    assert list(arrays["src_lang"]) == [b"en", b"de"]


@pytest.mark.parametrize("changes, message", [
    (dict(text=["a dog", " "]), "input 'text' element 1 is empty"),
    (dict(src_lang=["en", ""]), "input 'src_lang' element 1 is empty"),
    (dict(tgt_lang=[b"\xff", "cs"]), "'tgt_lang' element 0 is not valid UTF-8"),
    (dict(tags=["x" * 300, ""]), "'tags' element 0 is 300 bytes long"),
])
def test_other_string_checks_still_apply(changes, message):
    with pytest.raises(InvalidRequest, match=message):
        decode_inputs(_inputs(**changes), _signature(),
                      RequestLimits(max_string_bytes=200))


def test_empty_allowed_is_configurable():
    with pytest.raises(InvalidRequest, match="'tags' element 1 is empty"):
        decode_inputs(_inputs(), _signature(),
                      RequestLimits(empty_allowed=frozenset()))
