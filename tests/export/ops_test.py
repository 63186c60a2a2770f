"""The op allowlist: core TensorFlow plus TF Text, checked on the GNMT
export. (That every family's export uses only allowlisted ops:
`tests/harness/model_family_test.py`.)"""

from gnmt_tf.export import ops


def test_allowlist_is_core_tf_plus_tf_text(fresh_process, export_dir):
    allowlist = ops.read_allowlist()
    text_ops = ops.tf_text_ops(allowlist)
    assert text_ops == ["SentencepieceDetokenizeOp", "SentencepieceOp",
                        "SentencepieceTokenizeOp"]
    assert not ops.FORBIDDEN_OPS & set(allowlist)
    # Every TF Text op says why it is acceptable.
    assert all(len(allowlist[op]) > len(ops.TF_TEXT_TAG) + 10
               for op in text_ops)
    # In a fresh process: every other allowlisted op is known to TensorFlow
    # alone, the TF Text ops only once tensorflow_text is imported.
    core = set(fresh_process["core_ops"])
    registered = set(fresh_process["registered_ops"])
    assert set(allowlist) - set(text_ops) <= core
    assert not core & set(text_ops)
    assert set(text_ops) <= registered
    assert set(ops.list_ops(export_dir)) <= registered


def test_list_ops_reads_function_library(export_dir):
    found = set(ops.list_ops(export_dir))
    # While, TopKV2 and the SentencePiece ops only occur inside functions.
    assert {"While", "TopKV2", "SentencepieceTokenizeOp", "Case"} <= found


def test_disallowed_ops_flags_python_callbacks(export_dir, tmp_path):
    allowlist = tmp_path / "allowed.txt"
    allowlist.write_text("# nothing allowed but While\nWhile\nPyFunc  # bad\n")
    bad = ops.disallowed_ops(export_dir, allowlist)
    assert "While" not in bad and "SentencepieceOp" in bad
