"""Which TensorFlow ops an exported SavedModel needs, checked against an
allowlist.

`tensorflow_model_server` runs only the ops linked into it: all core TF ops
plus, in the standard build, the TF Text ops. `allowed_ops.txt` (next to this
file) lists the ops our exports may use, one per line; TF Text ops carry a
comment tagged ``TF Text`` saying why they are acceptable. A test exports a
tiny model and checks its graph against the list, so a model change that pulls
in a `py_function` or an op from another package fails there, not in a server.
"""

import pathlib

ALLOWLIST = pathlib.Path(__file__).with_name("allowed_ops.txt")
TF_TEXT_TAG = "TF Text"
# Ops that call back into the Python interpreter: never servable.
FORBIDDEN_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


def list_ops(export_dir):
    """Every op type in a SavedModel's graphs, function library included.

    Args:
      export_dir: a SavedModel directory (with `saved_model.pb`).

    Returns:
      A sorted list of op names (e.g. `"SentencepieceOp"`, `"While"`).
    """
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    path = pathlib.Path(export_dir) / "saved_model.pb"
    saved_model.ParseFromString(path.read_bytes())
    ops = set()
    for meta_graph in saved_model.meta_graphs:
        graph = meta_graph.graph_def
        ops.update(node.op for node in graph.node)
        for function in graph.library.function:
            ops.update(node.op for node in function.node_def)
    return sorted(ops)


def read_allowlist(path=ALLOWLIST):
    """Reads an allowlist: `{op_name: comment}` (comment "" when none).

    Lines are `OpName  # optional comment`; blank and comment-only lines are
    skipped.
    """
    allowed = {}
    for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines():
        name, _, comment = line.partition("#")
        name = name.strip()
        if name:
            allowed[name] = comment.strip()
    return allowed


def tf_text_ops(allowlist):
    """The ops of `allowlist` (from `read_allowlist`) tagged as TF Text ops."""
    return sorted(name for name, comment in allowlist.items()
                  if comment.startswith(TF_TEXT_TAG))


def disallowed_ops(export_dir, path=ALLOWLIST):
    """Ops of the SavedModel at `export_dir` that are not allowed.

    Returns:
      A sorted list: ops missing from the allowlist, plus any Python-callback
      op (`PyFunc`, `EagerPyFunc`, ...) even if listed.
    """
    allowed = read_allowlist(path)
    return sorted(op for op in list_ops(export_dir)
                  if op not in allowed or op in FORBIDDEN_OPS)
