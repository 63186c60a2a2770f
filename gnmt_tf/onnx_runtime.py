"""An ONNX export's `encode` and `decode_step` for the host search.

`OnnxRuntime` is the ONNX Runtime adapter of `gnmt_tf.host_translator`: it
runs the two graphs `gnmt_tf.export.onnx_export.export_onnx` writes,
``encode.onnx`` and ``decode_step.onnx``. Their shapes are dynamic, so the
state goes from one to the other as it is, except a growing KV cache, which
`encode` does not return (the task-space Transformer's): it starts empty
here. `decode_step` gives its new state as ``next_<name>`` (an ONNX output
cannot share an input's name), renamed back here. onnxruntime is an optional dependency (the ``dev``
extra), imported only when a runtime is made.
"""

import errno
import os
import pathlib

import numpy as np

ENCODE_FILE = "encode.onnx"
STEP_FILE = "decode_step.onnx"
NEXT_PREFIX = "next_"  # as gnmt_tf.export.onnx_export
_NUMPY_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
                "tensor(int32)": np.int32, "tensor(int64)": np.int64,
                "tensor(bool)": np.bool_}


def _onnxruntime():
    try:
        import onnxruntime
    except ImportError as e:
        raise ImportError(
            "translating an ONNX export needs onnxruntime: pip install "
            "'gnmt-tf[onnx]'") from e
    return onnxruntime


def _session(onnxruntime, path, options, providers):
    """An `InferenceSession` of the graph at `path`.

    Raises:
      ValueError: ONNX Runtime cannot load it.
    """
    try:
        return onnxruntime.InferenceSession(str(path), options,
                                            providers=list(providers))
    # ONNX Runtime's errors (InvalidProtobuf, Fail, InvalidGraph, ...)
    # share no base class below Exception.
    except Exception as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        raise ValueError(f"{path}: ONNX Runtime cannot load it (truncated, "
                         f"or not written by gnmt-tf export onnx): "
                         f"{reason}") from None


class OnnxRuntime:
    """Runs an ONNX export's ``encode.onnx`` and ``decode_step.onnx``.

    Args:
      export_dir: str or Path. A directory from `export_onnx`.
      num_threads: int or None. Intra-op threads of each session.
      providers: sequence of str. ONNX Runtime execution providers.

    Attributes:
      path: Path. The export directory.
      encode_session, step_session: the two `onnxruntime.InferenceSession`s.
      encode_inputs: tuple of str. `encode`'s input names, sorted.
      max_source_length: None (the graphs take any length; a model's own
        limit is in ``model.json``).

    Raises:
      OSError: `export_dir` is missing or not a directory.
      ValueError: `export_dir` has no ``encode.onnx`` / ``decode_step.onnx``,
        or one that ONNX Runtime cannot load (a truncated file).
      ImportError: onnxruntime is not installed.
    """

    max_source_length = None

    def __init__(self, export_dir, num_threads=None,
                 providers=("CPUExecutionProvider",)):
        self.path = pathlib.Path(export_dir)
        if not self.path.is_dir():
            code = errno.ENOTDIR if self.path.exists() else errno.ENOENT
            raise OSError(code, os.strerror(code), str(self.path))
        missing = [name for name in (ENCODE_FILE, STEP_FILE)
                   if not (self.path / name).is_file()]
        if missing:
            raise ValueError(f"{self.path} is not an ONNX export: no "
                             f"{' or '.join(missing)} (gnmt-tf export onnx "
                             "writes them)")
        onnxruntime = _onnxruntime()
        options = onnxruntime.SessionOptions()
        if num_threads:
            options.intra_op_num_threads = int(num_threads)
        self.encode_session, self.step_session = (
            _session(onnxruntime, self.path / name, options, providers)
            for name in (ENCODE_FILE, STEP_FILE))
        self.encode_inputs = tuple(sorted(
            i.name for i in self.encode_session.get_inputs()))
        self._encode_outputs = [o.name for o in
                                self.encode_session.get_outputs()]
        self._step_inputs = {i.name for i in self.step_session.get_inputs()}
        # Growing caches: (static dims or 0 where unknown, dtype), batch
        # first.
        self._empty_state = {
            i.name: ([d if isinstance(d, int) else 0 for d in i.shape[1:]],
                     _NUMPY_TYPES[i.type])
            for i in self.step_session.get_inputs()
            if i.name != "ids" and i.name not in self._encode_outputs}
        self._step_outputs = [o.name for o in self.step_session.get_outputs()]

    # `encode` takes any number of sentences (of one length: the host pads
    # nothing), so `host_translator.encode_sources` groups them by length.
    encode_batch_size = None

    def encode(self, source_ids, task):
        """`source_ids` int32 `[B, S]` + `task` (the other `encode` inputs,
        arrays of batch `B`, or of batch 1 for the same task for every
        sentence) -> the decoding state."""
        source_ids = np.asarray(source_ids, np.int32)
        rows = len(source_ids)
        task = {name: np.repeat(value, rows, axis=0)
                if len(value) == 1 and rows != 1 else value
                for name, value in task.items()}
        feed = {"source_ids": source_ids, **task}
        state = dict(zip(self._encode_outputs,
                         self.encode_session.run(None, feed)))
        for name, (shape, dtype) in self._empty_state.items():
            state[name] = np.zeros([len(source_ids)] + shape, dtype)
        return state

    def step(self, ids, state):
        """`ids` int32 `[B]` + `state` -> `(log_probs [B, V], attention
        [B, S], the state entries the step changed)`."""
        feed = {name: value for name, value in state.items()
                if name in self._step_inputs}
        feed["ids"] = np.asarray(ids, np.int32)
        out = dict(zip(self._step_outputs, self.step_session.run(None, feed)))
        log_probs = out.pop("log_probs")
        attention = out.pop("attention", None)
        return log_probs, attention, {
            name[len(NEXT_PREFIX):]: value for name, value in out.items()
            if name.startswith(NEXT_PREFIX)}
