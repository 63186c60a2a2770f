"""Batching gRPC translation client for TensorFlow Serving's `PredictionService`.

Works unchanged against `tensorflow_model_server` and against our local server
(`gnmt-tf serve`): it only speaks TF Serving's gRPC API (`Predict`,
`GetModelMetadata`, and `ModelService.GetModelStatus` for readiness). Importing
it does not import TensorFlow (see `gnmt_tf.serving.protos`).

The served signature maps `text` (`DT_STRING [None]`) to `translations`
(`DT_STRING [None]`) and optionally `scores` (`DT_FLOAT [None]`). Task-space
exports also take `src_lang`, `tgt_lang` and `tags` (`DT_STRING [None]`, one
entry per row): give them as `task_inputs` and every request carries them.
Search options (`beam_size`, `length_penalty`, `coverage_penalty` scalars)
go to the export's `translate_with_options` signature: give them as
`search_options` (see `gnmt_tf.export.savedmodel`).

Example:

    with TranslationClient("127.0.0.1:8500", "gnmt") as client:
        client.translate(["Hello world.", "How are you?"])
        client.translate_document("First sentence. Second one.\\nNew paragraph.")
    with TranslationClient("127.0.0.1:8500", "ts") as client:  # task-space
        client.translate(["A dog runs."], src_lang="en", tgt_lang="fr")

Requests are batched on the client as in Ctrip's MT platform (see
`gnmt_tf.serving.request_batching`); failed requests are retried with exponential
backoff on `UNAVAILABLE` and `RESOURCE_EXHAUSTED` only; a request the server
rejects as `INVALID_ARGUMENT` is bisected so that only the offending sentences
fail.
"""

import dataclasses
import random
import time
from typing import List, Mapping, Optional, Sequence

import grpc

from gnmt_tf.serving import request_batching
from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.search_options import SEARCH_OPTION_TYPES
from gnmt_tf.serving.search_options import SEARCH_SIGNATURE
from gnmt_tf.serving.search_options import check_search_options
from gnmt_tf.serving.protos import get_model_metadata_pb2
from gnmt_tf.serving.protos import get_model_status_pb2
from gnmt_tf.serving.protos import model_service_pb2_grpc
from gnmt_tf.serving.protos import predict_pb2
from gnmt_tf.serving.protos import prediction_service_pb2_grpc
from gnmt_tf.translation import SEARCH_FIELDS, Hypothesis, SearchOptions
from gnmt_tf.translation import split_search_arguments

RETRYABLE_CODES = frozenset({grpc.StatusCode.UNAVAILABLE,
                             grpc.StatusCode.RESOURCE_EXHAUSTED})
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class TranslationError(RuntimeError):
    """A request failed. `code` is the `grpc.StatusCode` (or None)."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class PartialTranslationError(TranslationError):
    """Some sentences failed; `results` holds a `TranslationResult` for each
    input, the successful ones included."""

    def __init__(self, message, results, code=None):
        super().__init__(message, code)
        self.results = results


@dataclasses.dataclass
class TranslationResult:
    """One sentence's outcome.

    Attributes:
      source: str. The input sentence.
      translation: str or None. None when `error` is set.
      score: float or None. The model's score, if the signature returns one.
      error: str or None. Why this sentence failed.
      code: `grpc.StatusCode` or None. The status of the failed request.
      model_version: int or None. The version that served it.
      outputs: dict or None. This sentence's row of each of the client's
        `extra_outputs` (NumPy arrays; strings as bytes), when it has any.
    """
    source: str
    translation: Optional[str] = None
    score: Optional[float] = None
    error: Optional[str] = None
    code: Optional[grpc.StatusCode] = None
    model_version: Optional[int] = None
    outputs: Optional[dict] = None

    @property
    def ok(self) -> bool:
        return self.error is None


class TranslationClient:
    """Translate through a TF Serving `PredictionService`.

    Args:
      target: str. "host:port" of the server.
      model_name: str. The served model's name.
      signature: str or None. Signature to call; None = "serving_default",
        or "translate_with_options" when `search_options` are given.
      version: int or None. Model version; None = the server's default (latest).
      timeout: float. Deadline of each RPC attempt, in seconds.
      max_retries: int. Retries of an RPC on UNAVAILABLE / RESOURCE_EXHAUSTED.
      input_key, output_key, score_key: signature tensor names; `score_key`
        may be missing from the response.
      max_batch_sentences: int. Sentences per request.
      max_batch_units: int. Characters (or tokens) per request.
      batch_unit: "chars" or "tokens".
      max_in_flight: int. Requests running at once.
      backoff_s: float. First retry delay; doubles each retry (with jitter).
      max_backoff_s: float. Cap on the retry delay.
      max_message_bytes: int. gRPC send/receive limit of the channel.
      channel: an existing `grpc.Channel` to use instead of opening one.
      task_inputs: `{input key: str}` sent with every sentence as extra
        string inputs, e.g. `{"src_lang": "en", "tgt_lang": "fr",
        "tags": "caption"}` for a task-space export (`tags` may be "").
      search_options: `{"beam_size": int, "length_penalty": float,
        "coverage_penalty": float}` sent as scalars with every request, for
        an export's `translate_with_options` (whose beam sizes are fixed at
        export time: others fail with INVALID_ARGUMENT; see
        `check_request_inputs`).
      extra_outputs: names of further outputs of the signature (e.g. an
        export's `translate_with_alignment`: ``source_pieces``,
        ``alignment``, ...), each with one row per sentence; every
        `TranslationResult` carries its rows in `outputs`.
    """

    def __init__(self, target: str, model_name: str,
                 signature: Optional[str] = None,
                 version: Optional[int] = None, timeout: float = 30.0,
                 max_retries: int = 3, *, input_key: str = "text",
                 output_key: str = "translations", score_key: str = "scores",
                 max_batch_sentences: int = 32, max_batch_units: int = 2000,
                 batch_unit: str = "chars", max_in_flight: int = 4,
                 backoff_s: float = 0.1, max_backoff_s: float = 5.0,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 channel: Optional[grpc.Channel] = None,
                 task_inputs: Optional[Mapping[str, str]] = None,
                 search_options: Optional[Mapping[str, float]] = None,
                 extra_outputs: Sequence[str] = ()):
        if timeout <= 0 or max_retries < 0 or max_in_flight < 1:
            raise ValueError("need timeout > 0, max_retries >= 0, "
                             "max_in_flight >= 1")
        request_batching.length_in(batch_unit)  # validates the unit
        self.input_key = input_key
        self.task_inputs = self._check_task_inputs(task_inputs)
        self.search_options = (check_search_options(search_options)
                               if search_options else {})
        self.target = target
        self.model_name = model_name
        self.signature = signature or (SEARCH_SIGNATURE if self.search_options
                                       else "serving_default")
        self.version = version
        self.timeout = timeout
        self.max_retries = max_retries
        self.output_key = output_key
        self.score_key = score_key
        self.extra_outputs = tuple(extra_outputs)
        self.max_batch_sentences = max_batch_sentences
        self.max_batch_units = max_batch_units
        self.batch_unit = batch_unit
        self.max_in_flight = max_in_flight
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._own_channel = channel is None
        self._channel = channel or grpc.insecure_channel(target, options=[
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes)])
        self._predict = prediction_service_pb2_grpc.PredictionServiceStub(
            self._channel)
        self._models = model_service_pb2_grpc.ModelServiceStub(self._channel)

    # --- plumbing -------------------------------------------------------

    def close(self):
        """Close the channel (if this client opened it)."""
        if self._own_channel:
            self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check_task_inputs(self, task_inputs) -> dict:
        """`{key: str}`: lists (multi-valued tags) joined with commas;
        ValueError for the text input's key or a non-string value."""
        checked = {}
        for key, value in (task_inputs or {}).items():
            if isinstance(value, (list, tuple)):
                value = ",".join(value)
            if key == self.input_key or not isinstance(value, str):
                raise ValueError(f"task input {key!r} must be a str input "
                                 f"other than {self.input_key!r}; got "
                                 f"{value!r}")
            checked[key] = value
        return checked

    def _model_spec(self, spec, signature=None):
        spec.name = self.model_name
        spec.signature_name = signature or self.signature
        if self.version is not None:
            spec.version.value = int(self.version)

    def _call(self, method, request):
        """One RPC with retries; raises `TranslationError`."""
        for attempt in range(self.max_retries + 1):
            try:
                return method(request, timeout=self.timeout)
            except grpc.RpcError as e:
                code = e.code() if hasattr(e, "code") else None
                details = e.details() if hasattr(e, "details") else str(e)
                if code not in RETRYABLE_CODES or attempt == self.max_retries:
                    name = code.name if code else "UNKNOWN"
                    raise TranslationError(f"{name}: {details}", code) from None
                delay = min(self.max_backoff_s, self.backoff_s * 2 ** attempt)
                time.sleep(delay * random.uniform(0.5, 1.0))
        raise AssertionError("unreachable")

    # --- single request -------------------------------------------------

    def predict(self, sentences: Sequence[str],
                task_inputs: Optional[Mapping[str, str]] = None):
        """One `Predict` request with `sentences` as-is (no batching), with
        `task_inputs` (checked; default: the client's).

        Returns:
          (translations, scores or None, model_version)

        Raises:
          TranslationError: the request failed (after retries).
        """
        return self._request(sentences, task_inputs)[:3]

    def _request(self, sentences, task_inputs=None, search=None):
        """`predict`, plus `{key: array}` of the `extra_outputs`; `search`
        (checked search options) replaces the client's for this request."""
        request = predict_pb2.PredictRequest()
        self._model_spec(request.model_spec, search and SEARCH_SIGNATURE)
        request.inputs[self.input_key].CopyFrom(
            tensor_codec.string_tensor(list(sentences)))
        if task_inputs is None:
            task_inputs = self.task_inputs
        for key, value in task_inputs.items():
            request.inputs[key].CopyFrom(
                tensor_codec.string_tensor([value] * len(sentences)))
        for key, value in (search or self.search_options).items():
            request.inputs[key].CopyFrom(tensor_codec.make_tensor(value))
        response = self._call(self._predict.Predict, request)
        if self.output_key not in response.outputs:
            raise TranslationError(
                f"response has no output {self.output_key!r} "
                f"(has {sorted(response.outputs)})")
        translations = tensor_codec.to_strings(response.outputs[self.output_key])
        scores = None
        if self.score_key in response.outputs:
            scores = tensor_codec.to_floats(response.outputs[self.score_key])
        if len(translations) != len(sentences) or (
                scores is not None and len(scores) != len(sentences)):
            raise TranslationError(
                f"{len(sentences)} sentences sent, {len(translations)} "
                "translations received")
        version = (response.model_spec.version.value
                   if response.model_spec.HasField("version") else None)
        extras = {}
        # Another signature's outputs when a call brings its own search.
        for key in (() if search else self.extra_outputs):
            if key not in response.outputs:
                raise TranslationError(
                    f"response has no output {key!r} "
                    f"(has {sorted(response.outputs)})")
            extras[key] = tensor_codec.to_numpy(response.outputs[key])
            if extras[key].shape[:1] != (len(sentences),):
                raise TranslationError(
                    f"output {key!r} has shape {list(extras[key].shape)} "
                    f"for {len(sentences)} sentences")
        return translations, scores, version, extras

    def _send(self, sentences: List[str], task_inputs=None, search=None
              ) -> List[TranslationResult]:
        """Translate one packed request; never raises for server errors."""
        try:
            translations, scores, version, extras = self._request(
                sentences, task_inputs, search)
        except TranslationError as e:
            if (e.code == grpc.StatusCode.INVALID_ARGUMENT
                    and len(sentences) > 1):
                half = len(sentences) // 2  # find the offending sentences
                return (self._send(sentences[:half], task_inputs, search)
                        + self._send(sentences[half:], task_inputs, search))
            return [TranslationResult(s, error=str(e), code=e.code)
                    for s in sentences]
        return [TranslationResult(
                    s, t, None if scores is None else scores[i],
                    model_version=version,
                    outputs={k: v[i] for k, v in extras.items()} or None)
                for i, (s, t) in enumerate(zip(sentences, translations))]

    def check_request_inputs(self, probe: str = "a"):
        """Sends one request for `probe` with the client's task inputs and
        search options, so that a server refusing them (an unknown language,
        a beam size the export was not compiled for, a missing signature)
        fails once, before a batch of sentences does.

        Raises:
          TranslationError: the request failed (after retries).
        """
        self.predict([probe])

    # --- public API -----------------------------------------------------

    def _served_search(self, options, task):
        """`(search inputs or None, task)`: the search options of one call
        (a `SearchOptions` and/or its fields as keywords in `task`), as the
        export's `translate_with_options` takes them; None: the client's.

        Raises:
          ValueError: a setting a served model cannot take (only beam size
            and the two penalties are inputs of the export).
        """
        if options is None and not set(task) & set(SEARCH_FIELDS):
            return None, task
        options, task = split_search_arguments(options, **task)
        beam_size = 1 if options.decoder == "greedy" else options.beam_size
        default = SearchOptions()
        fixed = [name for name in SEARCH_FIELDS
                 if name not in SEARCH_OPTION_TYPES and name != "decoder"
                 and getattr(options, name) != getattr(default, name)]
        if fixed or options.decoder not in ("beam", "greedy"):
            raise ValueError(
                "a served model searches with beam_size, length_penalty and "
                "coverage_penalty only (decoder beam or greedy); not "
                + ", ".join(fixed or ["decoder"]))
        return check_search_options(
            {"beam_size": beam_size, "length_penalty": options.length_penalty,
             "coverage_penalty": options.coverage_penalty}), task

    def translate_detailed(self, sentences: Sequence[str], options=None,
                           **task) -> List[TranslationResult]:
        """A `TranslationResult` per sentence, in input order; never raises for
        per-request failures. Blank sentences translate to "" locally.

        `task` holds task inputs for these sentences only, on top of the
        client's `task_inputs` (e.g. `src_lang="en", tgt_lang="fr",
        tags="caption"`; a list of tags is joined with commas, None values
        are left out). `options` (a `SearchOptions`, or its fields as
        keywords) are sent to the export's `translate_with_options` for these
        sentences; without them, the client's `search_options` apply.
        """
        search, task = self._served_search(options, task)
        task_inputs = {**self.task_inputs, **self._check_task_inputs(
            {key: value for key, value in task.items() if value is not None})}
        sentences = [str(s) for s in sentences]
        to_send = [s for s in sentences if s.strip()]
        plan = request_batching.plan_requests(
            to_send, self.max_batch_sentences, self.max_batch_units,
            self.batch_unit)
        done = request_batching.execute_plan(
            plan, lambda batch: self._send(batch, task_inputs, search),
            self.max_in_flight)
        sent = iter(plan.reassemble(done))
        return [next(sent) if s.strip() else TranslationResult(s, "")
                for s in sentences]

    def translate_nbest(self, sentences: Sequence[str], options=None,
                        **task) -> List[List[Hypothesis]]:
        """One `Hypothesis` a sentence (a served model returns its best
        translation), in order: the `gnmt_tf.translation.TranslationBackend`
        protocol (`options`, `task`: as `translate_detailed`).

        Raises:
          PartialTranslationError: some sentences failed; its `results` keeps
            every sentence's `TranslationResult`, the successful ones included.
          ValueError: `options.num_hypotheses` > 1 or another setting a served
            model cannot take.
        """
        results = self.translate_detailed(sentences, options, **task)
        failed = [r for r in results if not r.ok]
        if failed:
            raise PartialTranslationError(
                f"{len(failed)} of {len(results)} sentences failed; first: "
                f"{failed[0].error}", results, failed[0].code)
        return [[Hypothesis(r.translation, float(r.score or 0.0))]
                for r in results]

    def translate(self, sentences: Sequence[str], options=None,
                  **task) -> List[str]:
        """Translations of `sentences`, in order (`options`, `task`: as
        `translate_detailed`).

        Raises:
          PartialTranslationError: as `translate_nbest`.
        """
        return [hyps[0].text for hyps in self.translate_nbest(
            sentences, options, **task)]

    def translate_document(self, text: str, joiner: str = " ",
                           language: Optional[str] = None) -> str:
        """Translate a document: lines are paragraphs, split into sentences,
        translated (each distinct sentence once) and joined back with `joiner`;
        line breaks are kept.

        Args:
          text: str. The document.
          joiner: str. Put between a paragraph's translated sentences.
          language: str or None. The source language's code, for sentence
            splitting (see `gnmt_tf.pipeline.sentence_split`); default: the
            `src_lang` task input, else "en".

        Raises:
          PartialTranslationError: as `translate`.
        """
        language = (language or self.task_inputs.get("src_lang")
                    or request_batching.DEFAULT_LANGUAGE)
        paragraphs = request_batching.split_document(text, language)
        flat = [s for p in paragraphs for s in p]
        translated = iter(self.translate(flat))
        return "\n".join(joiner.join(next(translated) for _ in p)
                         for p in paragraphs)

    def metadata(self) -> dict:
        """Signatures of the served model from `GetModelMetadata`:
        `{signature: {"inputs": {key: (dtype, shape)}, "outputs": {...}}}`
        with dtype names like "DT_STRING" and -1 for unknown dims."""
        request = get_model_metadata_pb2.GetModelMetadataRequest()
        request.model_spec.name = self.model_name
        if self.version is not None:
            request.model_spec.version.value = int(self.version)
        request.metadata_field.append("signature_def")
        response = self._call(self._predict.GetModelMetadata, request)
        sig_map = get_model_metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(sig_map)

        def tensors(infos):
            return {k: (tensor_codec.dtype_name(v.dtype),
                        [d.size for d in v.tensor_shape.dim])
                    for k, v in infos.items()}

        return {name: {"inputs": tensors(sig.inputs),
                       "outputs": tensors(sig.outputs)}
                for name, sig in sig_map.signature_def.items()}

    def model_status(self) -> dict:
        """`{version: state name}` from `ModelService.GetModelStatus`."""
        request = get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = self.model_name
        if self.version is not None:
            request.model_spec.version.value = int(self.version)
        response = self._call(self._models.GetModelStatus, request)
        state = get_model_status_pb2.ModelVersionStatus.State
        return {s.version: state.Name(s.state)
                for s in response.model_version_status}

    def wait_until_available(self, timeout: float = 60.0,
                             poll_s: float = 0.2) -> int:
        """Block until a version of the model is AVAILABLE; returns it.

        Raises:
          TimeoutError: nothing became available within `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                available = [v for v, s in self.model_status().items()
                             if s == "AVAILABLE"]
                if available:
                    return max(available)
            except TranslationError as e:
                last = e
            time.sleep(poll_s)
        raise TimeoutError(f"model {self.model_name!r} at {self.target} not "
                           f"available after {timeout} s (last error: {last})")


def translate_lines(target: str, model_name: str, lines: Sequence[str],
                    **client_kwargs) -> List[str]:
    """Translate lines (one sentence a line, trailing newlines dropped) through
    a server; for `gnmt-tf translate --server`. Blank lines stay blank.

    With `search_options`, one probe request (`check_request_inputs`) goes
    first, so that options the server refuses fail the call once.

    Args:
      target: "host:port".
      model_name: served model name.
      lines: input lines.
      **client_kwargs: passed to `TranslationClient` (e.g. `task_inputs`,
        `search_options`).

    Raises:
      TranslationError: the probe request failed.
      PartialTranslationError: some lines failed (see `TranslationClient`).
    """
    with TranslationClient(target, model_name, **client_kwargs) as client:
        if client.search_options:
            client.check_request_inputs()
        return client.translate([line.rstrip("\r\n") for line in lines])
