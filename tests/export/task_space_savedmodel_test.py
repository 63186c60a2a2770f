"""SavedModel export of a task-space Transformer: metadata, signatures, the
output limit, bad task inputs, op allowlist, warm-up, and the local server
serving it. (Parity with `Translator` in a fresh process and the host loop:
`tests/harness/model_family_test.py`, for every model family.)"""

import json

import pytest

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

from model_families import FAMILIES_BY_NAME

TASK_SPACE = FAMILIES_BY_NAME["task_space_transformer"]
BEAM_SIZE = TASK_SPACE.savedmodel["beam_size"]  # the only one compiled in


@pytest.fixture(scope="session")
def batch(task_space):
    """The family's example requests as one batch (directions mixed, a
    blank row)."""
    return task_space.batch()


def _expected(translator, **options):
    """In-process translations and scores of the batch, in its order."""
    from gnmt_tf.translator import SearchOptions

    texts, scores = [], []
    for task, sentences in TASK_SPACE.requests:
        for hyps in translator.translate_nbest(
                list(sentences), SearchOptions(**options), **task):
            texts.append(hyps[0].text)
            scores.append(hyps[0].score)
    return texts, scores


def test_metadata_and_layout(ts_export_dir, ts_model_dir):
    from gnmt_tf.export.savedmodel import METADATA_FILE

    assert ((ts_export_dir / "assets" / "spm.model").read_bytes()
            == (ts_model_dir / "spm.model").read_bytes())
    assert [p.name for p in ts_export_dir.parent.iterdir()] == ["1"]
    metadata = json.loads(
        (ts_export_dir / "assets.extra" / METADATA_FILE).read_text())
    assert metadata["model_type"] == "task_space_transformer"
    assert metadata["task_inputs"]["src_lang"] == ["en", "de", "fr", "cs"]
    assert metadata["task_inputs"]["tags"][0] == "caption"
    assert metadata["task_space"]["directions"] == "en-fr,de-cs"
    assert metadata["beam_sizes"] == [BEAM_SIZE]
    # The model's max_sequence_length caps the CLI's default limit of 250.
    assert metadata["max_source_length"] == metadata["max_target_length"]
    assert metadata["signatures"] == ["decode_step", "encode",
                                      "serving_default",
                                      "translate_with_alignment",
                                      "translate_with_options"]


def test_signatures(ts_fresh):
    sigs = ts_fresh["signatures"]
    string = ["string", [None]]
    request = {"text": string, "src_lang": string, "tgt_lang": string,
               "tags": string}
    assert sigs["serving_default"] == {
        "inputs": request,
        "outputs": {"translations": string, "scores": ["float32", [None]]}}
    assert sigs["translate_with_options"]["inputs"] == dict(
        request, beam_size=["int32", []], length_penalty=["float32", []],
        coverage_penalty=["float32", []])
    assert sigs["translate_with_alignment"]["inputs"] == request
    assert sigs["translate_with_alignment"]["outputs"]["alignment"] == [
        "float32", [None, None, None]]
    encode, step = sigs["encode"], sigs["decode_step"]
    assert encode["inputs"] == {"source_ids": ["int32", [None, None]],
                                "src_lang": string, "tgt_lang": string,
                                "tags": string}
    layers = {f"layer_{i}__{k}" for i in range(2)  # transformer_tiny
              for k in ("self_key", "self_value", "cross_key", "cross_value")}
    assert set(encode["outputs"]) == layers | {"time", "source_mask",
                                               "decoder_task"}
    assert step["inputs"] == dict(encode["outputs"], ids=["int32", [None]])
    # The step returns what it changes: the position and the KV caches.
    assert set(step["outputs"]) == {"log_probs", "attention", "time"} | {
        name for name in layers if "self" in name}


def test_output_length_is_capped_at_the_cache_length(ts_translator):
    # The exported `encode` gives a KV cache of max_sequence_length (16 for
    # transformer_tiny) positions, so in-graph searches stop there too.
    import tensorflow as tf

    from gnmt_tf.translator import SearchOptions

    limits = ts_translator.max_lengths(tf.constant([3, 8, 20]),
                                       SearchOptions(max_length_ratio=2.0))
    assert limits.numpy().tolist() == [6, 16, 16]


def test_bad_task_inputs_are_invalid_argument(ts_fresh):
    errors = ts_fresh["errors"]
    assert "unknown src_lang" in errors["src_lang"]
    assert "known languages are en, de, fr, cs" in errors["src_lang"]
    assert "xx" in errors["src_lang"]
    assert errors["tgt_lang"] is None  # zero-shot directions are allowed
    assert "unknown scene tag" in errors["tag"] and "bogus" in errors["tag"]
    assert "must differ" in errors["same"]
    assert "one entry per row" in errors["sizes"]


def test_ops_are_allowed_and_core(ts_export_dir, ts_fresh):
    from gnmt_tf.export import ops

    found = set(ops.list_ops(ts_export_dir))
    lookup = {"HashTableV2", "LookupTableImportV2", "LookupTableFindV2"}
    assert lookup <= found
    # Everything but the SentencePiece ops is core TensorFlow.
    allowlist = ops.read_allowlist()
    assert (set(allowlist) - set(ops.tf_text_ops(allowlist))
            <= set(ts_fresh["core_ops"]))


def test_warmup_requests_replay(ts_fresh):
    inputs = ["src_lang", "tags", "text", "tgt_lang"]
    assert ts_fresh["warmup"] == [
        ["task_space_transformer", "serving_default", inputs, 2],
        ["task_space_transformer", "translate_with_options",
         sorted(inputs + ["beam_size", "coverage_penalty", "length_penalty"]),
         2]]


def test_local_server_serves_it(ts_export_dir, ts_fresh, batch):
    import grpc
    from tensorflow_serving.apis import predict_pb2
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    from gnmt_tf.serving import tensor_codec
    from gnmt_tf.serving.model_manager import ModelManager
    from gnmt_tf.serving.server import ModelServer

    server = ModelServer(ModelManager({"ts": str(ts_export_dir.parent)},
                                      poll_interval_s=0.0), port=0)
    server.start()
    try:
        def predict(batch):
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "ts"
            for key, values in batch.items():
                request.inputs[key].CopyFrom(
                    tensor_codec.string_tensor(values))
            return stub.Predict(request, timeout=60)

        with grpc.insecure_channel(server.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            # The server rejects blank text itself; "" tags are fine.
            keep = [i for i, t in enumerate(batch["text"]) if t.strip()]
            batch = {k: [v[i] for i in keep] for k, v in batch.items()}
            response = predict(batch)
            got = tensor_codec.to_strings(response.outputs["translations"])
            assert got == [ts_fresh["serving_default"]["translations"][i]
                           for i in keep]
            with pytest.raises(grpc.RpcError) as error:
                predict(dict(batch, src_lang=["xx"] * len(keep)))
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "unknown src_lang" in error.value.details()
    finally:
        server.stop(grace=2)


def test_server_side_batching_gives_batch_one_outputs(ts_export_dir, batch):
    """Each row sent as its own request, all at once, to a server that merges
    them into batches: every answer equals that row translated alone."""
    import concurrent.futures
    import threading

    import numpy as np

    from gnmt_tf.serving.batching_config import BatchingParameters
    from gnmt_tf.serving.client import TranslationClient
    from gnmt_tf.serving.model_manager import ModelManager
    from gnmt_tf.serving.server import ModelServer

    rows = [i for i, t in enumerate(batch["text"]) if t.strip()]
    batching = BatchingParameters(max_batch_size=len(rows),
                                  batch_timeout_micros=200_000)
    server = ModelServer(ModelManager({"ts": str(ts_export_dir.parent)},
                                      poll_interval_s=0.0, batching=batching),
                         port=0)
    server.start()
    try:
        batcher, = [b for _, _, key, b in server.manager.batchers()
                    if key == "serving_default"]
        # The served model itself, one row a call, past the batcher.
        alone = [batcher.run_fn({k: np.array([v[i].encode()], object)
                                 for k, v in batch.items()})
                 ["translations"][0].decode() for i in rows]
        barrier = threading.Barrier(len(rows))

        def one(i):
            task = {k: v[i] for k, v in batch.items() if k != "text"}
            with TranslationClient(server.target, "ts", timeout=60,
                                   task_inputs=task) as client:
                barrier.wait(30)
                return client.predict([batch["text"][i]])[0][0]

        with concurrent.futures.ThreadPoolExecutor(len(rows)) as pool:
            served = list(pool.map(one, rows, timeout=120))
        assert served == alone
        assert max(batcher.batch_sizes) > 1, dict(batcher.batch_sizes)
    finally:
        server.stop(grace=2)


@pytest.mark.slow
def test_target_language_token_baseline(ts_baseline_model_dir, tmp_path,
                                        batch):
    """The Johnson et al. baseline (no task space, `<2xx>` source token)
    exports too: in-process parity, and the token counts toward the limit."""
    import tensorflow as tf

    from gnmt_tf.export.savedmodel import export_savedmodel
    from gnmt_tf.translator import SearchOptions
    from gnmt_tf.translator import Translator

    model_dir = ts_baseline_model_dir
    options = SearchOptions(beam_size=2)
    path = export_savedmodel(model_dir, tmp_path / "exports" / "b" / "1",
                             options, warmup_sentences=[], beam_sizes=())
    serve = tf.saved_model.load(str(path)).signatures["serving_default"]
    out = serve(**{k: tf.constant(v) for k, v in batch.items()})
    translator = Translator.from_model_dir(model_dir)
    assert translator.model.language_token_ids is not None
    texts, scores = _expected(translator, beam_size=2)
    assert [t.decode() for t in out["translations"].numpy()] == texts
    assert out["scores"].numpy().tolist() == pytest.approx(scores, abs=1e-4)
    # The limit counts subwords, not the <2xx> token, as in-process.
    limit = translator.max_source_length
    texts = {}
    for n in range(1, 30):
        for tail in ("", "d", "do", " dog"):
            text = " ".join(["a"] * n) + tail
            texts.setdefault(len(translator.subwords.encode([text])[0]), text)
    translator.check_inputs([texts[limit]])
    with pytest.raises(ValueError, match="limit is"):
        translator.check_inputs([texts[limit + 1]])
    task = dict(src_lang=tf.constant(["en"]), tgt_lang=tf.constant(["fr"]),
                tags=tf.constant([""]))
    serve(text=tf.constant([texts[limit]]), **task)
    with pytest.raises(tf.errors.InvalidArgumentError, match="too long"):
        serve(text=tf.constant([texts[limit + 1]]), **task)


def _einsum_nodes(export_dir):
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((export_dir / "saved_model.pb").read_bytes())
    graph = saved.meta_graphs[0].graph_def
    return sum(node.op == "Einsum" for function in graph.library.function
               for node in function.node_def)


def test_attention_products_change_the_graph_not_the_translations(
        ts_export_dir, task_space, batch, tmp_path):
    import numpy as np
    import tensorflow as tf

    from gnmt_tf.export.savedmodel import export_savedmodel
    from gnmt_tf.translator import SearchOptions

    settings = TASK_SPACE.savedmodel
    einsums_dir = export_savedmodel(
        task_space.model_dir, tmp_path / "e" / "1",
        SearchOptions(**{k: settings[k] for k in (
            "beam_size", "length_penalty", "coverage_penalty")}),
        beam_sizes=settings["beam_sizes"], attention_products=False)
    # Each decoder layer's two attentions per step: einsums only without.
    assert _einsum_nodes(ts_export_dir) < _einsum_nodes(einsums_dir)
    metadata = json.loads((einsums_dir / "assets.extra" /
                           "gnmt_tf_export.json").read_text())
    assert metadata["attention_products"] is False
    outputs = [tf.saved_model.load(str(d)).signatures["serving_default"](
        **{k: tf.constant(v) for k, v in batch.items()})
        for d in (ts_export_dir, einsums_dir)]
    np.testing.assert_array_equal(outputs[0]["translations"],
                                  outputs[1]["translations"])
    # The same arithmetic up to float32 rounding of the sums.
    np.testing.assert_allclose(outputs[0]["scores"], outputs[1]["scores"],
                               rtol=1e-5, atol=1e-5)
