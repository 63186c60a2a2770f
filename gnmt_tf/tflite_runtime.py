"""A TFLite export's `encode` and `decode_step` for the host search.

`TFLiteRuntime` is the LiteRT adapter of `gnmt_tf.host_translator`: it runs
the two signatures `gnmt_tf.export.tflite.export_tflite` writes. What is special to
TFLite stays here (see `gnmt_tf.export.tflite.StepModule`), read from the two
signatures' shapes:

- a growing KV cache (the task-space Transformer's default export) is not
  returned by `encode` (TFLite returns no empty tensor): the host starts
  it empty;
- a `--fixed-shapes` export's `decode_step` takes some state tensors at a
  fixed length where `encode` returns them at the source's length:
  `encode`'s outputs are zero-padded to it;
- a cache grown in blocks (`gnmt_tf.export.tflite.StepModule`'s `cache_block`:
  `encode` returns it with a fixed number of positions, `decode_step`
  takes it at any length) is lengthened by that many zero positions here,
  before a step that would write past its end (each row writes at its
  `time`);
- the interpreter's inputs are resized as their shapes change (every step
  with a growing cache, every `cache_block` steps with a blocked one), and
  copied in only when they are new arrays;
- an export with a search signature (`gnmt_tf.export.search_signature`)
  also runs one sentence's whole beam search in one call (`search`).

The interpreter is `ai_edge_litert` (LiteRT), or `tf.lite` where LiteRT is
not installed; nothing else imports TensorFlow.
"""

import errno
import os
import pathlib

import numpy as np

from gnmt_tf import cpu_settings
from gnmt_tf.search_signatures import search_beam_sizes

SIGNATURES = ("encode", "decode_step")
# The state entry holding the position each row writes next: the task-space
# Transformer's (`TaskSpaceTransformer.initial_state`), the one model whose
# cache can grow in blocks.
POSITION = "time"


def interpreter_class():
    """LiteRT's `Interpreter` (`pip install 'gnmt-tf[tflite]'`), or
    TensorFlow's deprecated copy where it is missing."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:  # LiteRT not installed: TensorFlow's copy
        import tensorflow as tf

        Interpreter = tf.lite.Interpreter
    return Interpreter


class TFLiteRuntime:
    """Runs a `.tflite` model's `encode` and `decode_step` signatures.

    Args:
      model_path: str or Path. A `.tflite` file from `export_tflite`.
      num_threads: int or None. Interpreter threads (None:
        `gnmt_tf.cpu_settings.tflite_threads()`, every core up to 4).

    Attributes:
      path: Path. The model file.
      interpreter: the LiteRT `Interpreter`.
      num_threads: int. Its threads.
      encode_runner, step_runner: its two signature runners.
      encode_inputs: tuple of str. `encode`'s input names, sorted.
      max_source_length: int or None. `decode_step`'s fixed memory length:
        the longest source in ids, end token and source prefix included.
      cache_block: int or None. Positions a blocked cache grows by (None:
        the model has none).
      search_beam_sizes: tuple of int. The beam sizes `search` runs
        (empty: the export has no search signature).

    Raises:
      OSError: `model_path` is no file.
      ValueError: not a TFLite model (a truncated file), or one that lacks
        the `encode` / `decode_step` signatures, or has a blocked cache but
        no `time` input.
    """

    def __init__(self, model_path, num_threads=None):
        self.path = pathlib.Path(model_path)
        if not self.path.is_file():
            code = errno.EISDIR if self.path.is_dir() else errno.ENOENT
            raise OSError(code, os.strerror(code), str(self.path))
        self.num_threads = cpu_settings.tflite_threads(num_threads)
        try:
            self.interpreter = interpreter_class()(
                model_path=str(self.path), num_threads=self.num_threads)
        except ValueError as e:  # LiteRT's "not a valid Flatbuffer buffer"
            raise ValueError(f"{self.path} is not a TFLite model "
                             f"({' '.join(str(e).split())})") from None
        signatures = self.interpreter.get_signature_list()
        if not set(SIGNATURES) <= set(signatures):
            raise ValueError(f"{self.path} has signatures "
                             f"{sorted(signatures)}, not encode and "
                             "decode_step")
        self.encode_runner = self.interpreter.get_signature_runner("encode")
        self.step_runner = self.interpreter.get_signature_runner(
            "decode_step")
        self.encode_inputs = tuple(sorted(
            self.encode_runner.get_input_details()))
        batch = self.encode_runner.get_input_details()["source_ids"][
            "shape_signature"][0]
        self.encode_batch_size = None if batch < 0 else int(batch)
        step_inputs = self.step_runner.get_input_details()
        self._step_dtypes = {name: detail["dtype"]
                             for name, detail in step_inputs.items()}
        self._padded_shapes = _padded_shapes(
            self.encode_runner.get_output_details(), step_inputs)
        lengths = [shape[1] for shape in self._padded_shapes.values()]
        self.max_source_length = min(lengths) if lengths else None
        encoded = self.encode_runner.get_output_details()
        self._blocks = _cache_blocks(encoded, step_inputs)
        if self._blocks and POSITION not in step_inputs:
            raise ValueError(f"{self.path}: decode_step grows "
                             f"{sorted(self._blocks)} in blocks but takes "
                             f"no {POSITION!r} input")
        self.cache_block = (next(iter(self._blocks.values()))[1]
                            if self._blocks else None)
        # (Through `_StepInputs`: no reallocation while the source length
        # stays the same.)
        self._search_runners = {
            size: _StepInputs(self.interpreter.get_signature_runner(name))
            for size, name in search_beam_sizes(signatures).items()}
        self.search_beam_sizes = tuple(sorted(self._search_runners))
        self._empty_state = {  # growing caches: batch 1, no positions yet
            name: np.zeros([1] + [max(int(d), 0) for d in
                                  detail["shape_signature"][1:]],
                           detail["dtype"])
            for name, detail in step_inputs.items()
            if name != "ids" and name not in encoded}
        self._warm_up()

    def _warm_up(self):
        """Runs `encode` and one `decode_step` on a one-token source.

        Works around a clash seen with ai-edge-litert 2.3 and
        tensorflow-text 2.21 in one process: an interpreter whose first
        `decode_step` runs after `tensorflow_text` was imported (as the
        in-process translators do) returns wrong log-probs, one that ran
        before keeps working. Running it here closes that window (the
        outputs are thrown away, so any in-vocabulary id will do).
        """
        task = self.placeholder_task()
        state = self.encode(np.ones([1, 1], np.int32), task)
        self.step(np.ones([1], np.int32), state)
        for size in self.search_beam_sizes:
            self.search(np.ones([1, 1], np.int32), task, 1, size)

    def placeholder_task(self):
        """`encode`'s task inputs of batch 1, all id 0 (some valid task:
        for runs whose output is not read, such as warm-ups and timings)."""
        details = self.encode_runner.get_input_details()
        return {name: np.zeros([max(int(d), 1) for d in
                                detail["shape_signature"]], detail["dtype"])
                for name, detail in details.items() if name != "source_ids"}

    def encode(self, source_ids, task):
        """`source_ids` int32 `[B, S]` (`B` = 1 unless `encode_batch_size`
        is None) + `task` (the other `encode` inputs, arrays of batch 1, the
        same for every sentence) -> the decoding state of batch `B`,
        `decode_step`'s dtypes, its fixed-length tensors zero-padded (masks
        False), and a growing cache empty."""
        source_ids = np.asarray(source_ids, np.int32)
        rows = len(source_ids)
        if rows != 1:
            task = {name: np.repeat(value, rows, axis=0)
                    for name, value in task.items()}
        state = self.encode_runner(source_ids=source_ids, **task)
        padded = {}
        for name, value in state.items():
            if name in self._padded_shapes:
                pad = [(0, 0)] + [(0, full - have) for have, full in zip(
                    value.shape[1:], self._padded_shapes[name][1:])]
                value = np.pad(value, pad)
            padded[name] = value.astype(self._step_dtypes[name], copy=False)
        padded.update({name: np.repeat(value, rows, axis=0)
                       for name, value in self._empty_state.items()})
        return padded

    def search(self, source_ids, task, max_length, beam_size,
               length_penalty=0.6, coverage_penalty=0.0):
        """One sentence's whole beam search in the interpreter (a
        `beam_size` in `search_beam_sizes`): `source_ids` int32 `[1, S]`,
        `task` as `encode`'s, `max_length` the most output tokens (end
        token included) -> `(ids, score)` of the best hypothesis: `ids`
        (list of int) end with the end token unless it was cut at
        `max_length`; `score` is its GNMT score.

        Raises:
          KeyError: the export has no search with `beam_size` beams.
        """
        if beam_size not in self._search_runners:
            raise KeyError(f"{self.path} has no search with beam size "
                           f"{beam_size} (it has {self.search_beam_sizes})")
        out = self._search_runners[beam_size].run(dict(
            source_ids=np.asarray(source_ids, np.int32), **task,
            max_length=np.asarray(max_length, np.int32),
            length_penalty=np.asarray(length_penalty, np.float32),
            coverage_penalty=np.asarray(coverage_penalty, np.float32)), {})
        return (out["ids"][0, :int(out["length"][0])].tolist(),
                float(out["score"][0]))

    # `beam_search_batch(..., step_gathers=True)`: `step` gathers the
    # state's live rows itself, as it copies them into the interpreter.
    step_gathers = True

    def step(self, ids, state, rows=None):
        """`ids` int32 `[B]` + `state` (+ `rows`: per entry, indices of the
        rows to use, or None for all) -> `(log_probs [B, V], attention
        [B, L] or None, the state entries the step changed)`.

        The state is large (a task-space model's cross-attention keys and
        values: `[B, L, H, Dh]` per layer), and most of it is read-only
        during a search, so inputs are copied into the interpreter only
        when they are new arrays or new rows (`_StepInputs`), gathered as
        they are copied, and the tensors are reallocated only when a shape
        changes."""
        rows = rows or {}
        if self._blocks:
            state = self._lengthen(state, rows)
        out = self._step_inputs.run(
            dict(state, ids=np.asarray(ids, np.int32)), rows)
        log_probs = out.pop("log_probs")
        return log_probs, out.pop("attention", None), out

    def _lengthen(self, state, rows):
        """`state` with each blocked cache entry long enough for the step
        to write at every row's position: zero positions added, up to the
        next multiple of its block. The rows' positions are read from the
        entry `rows` selects (a lengthened entry keeps its rows)."""
        time = state[POSITION]
        index = rows.get(POSITION)
        position = int((time if index is None else time[index]).max())
        state = dict(state)
        for name, (axis, block) in self._blocks.items():
            value = state[name]
            if value.shape[axis] <= position:
                pad = [(0, 0)] * value.ndim
                pad[axis] = (0, (position // block + 1) * block
                             - value.shape[axis])
                state[name] = np.pad(value, pad)
        return state

    @property
    def _step_inputs(self):
        if getattr(self, "_step_inputs_", None) is None:
            self._step_inputs_ = _StepInputs(self.step_runner)
        return self._step_inputs_


class _StepInputs:
    """Runs a signature, skipping the copies and reallocation that its
    runner's `__call__` repeats on every call.

    `SignatureRunner.__call__` resizes every input, reallocates the
    subgraph's tensors and copies every input in; at a search's batch size
    that copying is most of a step (hundreds of MB of unchanged encoder
    keys and values). LiteRT keeps an input tensor's contents between
    invocations, so here an input is copied only when its array (or its
    row indices) is not the one copied last time (the host search
    replaces, never mutates, a state entry or its indices), rows are
    gathered straight into the input tensor, and tensors are resized and
    reallocated only when a shape changes (then every input is copied
    again). This uses the runner's interpreter wrapper (no public API
    offers it per signature); where a LiteRT version lacks it, every call
    goes through the runner.
    """

    def __init__(self, runner):
        self._runner = runner
        self._wrapper = getattr(runner, "_interpreter_wrapper", None)
        self._index = getattr(runner, "_inputs", None)
        self._outputs = getattr(runner, "_outputs", None)
        self._subgraph = getattr(runner, "_subgraph_index", None)
        self._copied = {}  # input name -> (array, rows) copied in last
        self._shapes = {}  # input name -> its shape now

    def _allocate(self, shapes):
        """Resizes the inputs to `shapes` and reallocates the tensors."""
        for name, shape in shapes.items():
            if self._shapes.get(name) != shape:
                self._wrapper.ResizeInputTensor(
                    self._index[name], np.array(shape, np.int32), False,
                    self._subgraph)
        self._wrapper.AllocateTensors(self._subgraph)
        self._shapes = dict(shapes)
        self._copied = {}  # reallocated: every input is copied again

    def run(self, inputs, rows):
        """Runs the signature on `inputs[name][rows[name]]` (all of
        `inputs[name]` where `rows` has no indices for it)."""
        if None in (self._wrapper, self._index, self._outputs,
                    self._subgraph):
            return self._runner(**{
                name: value if rows.get(name) is None
                else value[rows[name]] for name, value in inputs.items()})
        shapes = {}
        for name, value in inputs.items():
            index = rows.get(name)
            shapes[name] = value.shape if index is None else (
                (len(index),) + value.shape[1:])
        if shapes != self._shapes:
            self._allocate(shapes)
        for name, value in inputs.items():
            index = rows.get(name)
            copied = self._copied.get(name)
            if (copied is not None and copied[0] is value
                    and copied[1] is index):
                continue
            if index is None:
                self._wrapper.SetTensor(self._index[name], value,
                                        self._subgraph)
            else:
                # One copy, gathered into the interpreter's own buffer (a
                # view valid until the next reallocation). mode="clip":
                # the indices are valid, and "raise" buffers `out`.
                np.take(value, index, axis=0, mode="clip",
                        out=self._wrapper.tensor(self._wrapper,
                                                 self._index[name],
                                                 self._subgraph))
            self._copied[name] = (value, index)
        self._wrapper.Invoke(self._subgraph)
        return {name: self._wrapper.GetTensor(index, self._subgraph)
                for name, index in self._outputs}


def _state_shapes(encode_outputs, step_inputs):
    """`(name, encode's shape, decode_step's shape)` of each state tensor
    both signatures have at the same rank (shape signatures: -1 unknown)."""
    for name, detail in step_inputs.items():
        if name in encode_outputs:
            have = encode_outputs[name]["shape_signature"]
            want = detail["shape_signature"]
            if len(have) == len(want):
                yield name, have, want


def _cache_blocks(encode_outputs, step_inputs):
    """`{name: (axis, block)}` of the state tensors `encode` returns at a
    fixed length `block` along an `axis` that `decode_step` takes at any
    length: a cache grown in blocks (`gnmt_tf.export.tflite.StepModule`)."""
    return {name: (axis, int(have[axis]))
            for name, have, want in _state_shapes(encode_outputs, step_inputs)
            for axis in range(1, len(want)) if want[axis] < 0 < have[axis]}


def _padded_shapes(encode_outputs, step_inputs):
    """`{name: shape}` of the state tensors `decode_step` takes at a fixed
    size where `encode` gives a variable one (its `-1` dimensions), read
    from the signature details; the host pads those to `shape`."""
    return {name: (1,) + tuple(int(w) for w in want[1:])
            for name, have, want in _state_shapes(encode_outputs, step_inputs)
            if any(h < 0 <= w for h, w in zip(have[1:], want[1:]))}
