"""The batching client against the local server and against a scripted fake."""

import concurrent.futures
import subprocess
import sys
import textwrap

import grpc
import pytest

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.client import PartialTranslationError
from gnmt_tf.serving.client import TranslationClient
from gnmt_tf.serving.client import TranslationError
from gnmt_tf.serving.client import translate_lines
from gnmt_tf.serving.protos import predict_pb2
from gnmt_tf.serving.protos import prediction_service_pb2_grpc


def test_client_imports_without_tensorflow():
    code = textwrap.dedent("""
        import sys
        import gnmt_tf.serving.client, gnmt_tf.serving.cli
        assert "tensorflow.python" not in sys.modules, "TF was imported"
        assert "tensorflow" not in sys.modules
        import tensorflow as tf  # the real package still loads afterwards
        from gnmt_tf.serving.protos import tensor_pb2
        assert type(tf.make_tensor_proto(["a"])) is tensor_pb2.TensorProto
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


def test_translate_end_to_end_in_order_with_duplicates(any_server):
    sentences = ["b", "a long one", "c", "b", "", "a long one", "Gruesse", "b"]
    with TranslationClient(any_server.target, "toy", version=1,
                           max_batch_sentences=2, max_in_flight=3) as client:
        assert client.translate(sentences) == [s.upper() for s in sentences]
        results = client.translate_detailed(sentences)
    assert [r.score for r in results[:2]] == [1.0, 10.0]
    assert results[4].translation == "" and results[4].score is None
    assert all(r.model_version == 1 for r in results if r.source)


def test_translate_document(batching_server):
    with TranslationClient(batching_server.target, "toy") as client:
        text = "First one. Second one? First one.\n\nLast line"
        assert client.translate_document(text) == (
            "FIRST ONE. SECOND ONE? FIRST ONE.\n\nLAST LINE")


def test_per_item_errors_keep_the_rest(batching_server):
    sentences = ["ok one", "x" * 300, "ok two", "ok three", "caf\udce9"]
    with TranslationClient(batching_server.target, "toy",
                           max_batch_units=100000) as client:
        with pytest.raises(PartialTranslationError) as info:
            client.translate(sentences)
    results = info.value.results
    assert [r.ok for r in results] == [True, False, True, True, False]
    assert results[1].code == grpc.StatusCode.INVALID_ARGUMENT
    assert "limit is 200" in results[1].error
    assert [r.translation for r in results if r.ok] == [
        "OK ONE", "OK TWO", "OK THREE"]


def test_translate_lines(batching_server):
    assert translate_lines(batching_server.target, "toy",
                           ["one\n", "\n", "two\r\n"]) == ["ONE", "", "TWO"]


def test_unknown_model_is_not_retried(batching_server):
    with TranslationClient(batching_server.target, "nope") as client:
        with pytest.raises(PartialTranslationError) as info:
            client.translate(["a"])
    assert info.value.code == grpc.StatusCode.NOT_FOUND


class ScriptedService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """Fails with the scripted codes first, then upper-cases."""

    def __init__(self, codes):
        self.codes, self.calls = list(codes), 0

    def Predict(self, request, context):
        self.calls += 1
        if self.codes:
            context.abort(self.codes.pop(0), "scripted failure")
        response = predict_pb2.PredictResponse()
        strings = tensor_codec.to_strings(request.inputs["text"])
        response.outputs["translations"].CopyFrom(
            tensor_codec.string_tensor([s.upper() for s in strings]))
        return response


@pytest.fixture
def scripted():
    servers = []

    def start(codes):
        service = ScriptedService(codes)
        server = grpc.server(concurrent.futures.ThreadPoolExecutor(2))
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            service, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return service, f"127.0.0.1:{port}"

    yield start
    for server in servers:
        server.stop(0)


@pytest.mark.parametrize("codes, calls, ok", [
    ([grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED], 3,
     True),
    ([grpc.StatusCode.UNAVAILABLE] * 3, 3, False),  # max_retries=2
    ([grpc.StatusCode.INTERNAL], 1, False),
    ([grpc.StatusCode.DEADLINE_EXCEEDED], 1, False),
])
def test_retries_only_transient_errors(scripted, codes, calls, ok):
    service, target = scripted(codes)
    client = TranslationClient(target, "m", max_retries=2, backoff_s=0.01)
    if ok:
        translations, scores, _ = client.predict(["a"])
        assert translations == ["A"] and scores is None  # no scores output
    else:
        with pytest.raises(TranslationError) as info:
            client.predict(["a"])
        assert info.value.code == codes[0]
    assert service.calls == calls
    client.close()


def test_unreachable_server_fails_fast():
    with TranslationClient("127.0.0.1:1", "m", timeout=2, max_retries=1,
                           backoff_s=0.01) as client:
        with pytest.raises(TranslationError) as info:
            client.predict(["a"])
    assert info.value.code == grpc.StatusCode.UNAVAILABLE


@pytest.fixture(scope="module")
def task_server(start_server, tmp_path_factory):
    """"task": a SavedModel with the task-space inputs that answers
    `"<src_lang>-<tgt_lang>[<tags>] <TEXT>"`."""
    import tensorflow as tf

    spec = tf.TensorSpec([None], tf.string)

    class Task(tf.Module):
        @tf.function(input_signature=[spec, spec, spec, spec])
        def serve(self, text, src_lang, tgt_lang, tags):
            return {"translations": tf.strings.join(
                [src_lang, "-", tgt_lang, "[", tags, "] ",
                 tf.strings.upper(text)])}

    base = tmp_path_factory.mktemp("task_models") / "task"
    module = Task()
    tf.saved_model.save(module, str(base / "1"),
                        signatures={"serving_default": module.serve.
                                    get_concrete_function()})
    return start_server({"task": str(base)})


def test_task_inputs_go_with_every_request(task_server):
    sentences = ["a dog", "", "a cat", "a dog", "x"]
    task = {"src_lang": "en", "tgt_lang": "fr", "tags": "caption"}
    with TranslationClient(task_server.target, "task", task_inputs=task,
                           max_batch_sentences=2) as client:
        assert client.translate(sentences) == [
            "en-fr[caption] A DOG", "", "en-fr[caption] A CAT",
            "en-fr[caption] A DOG", "en-fr[caption] X"]
    with TranslationClient(task_server.target, "task") as client:
        with pytest.raises(PartialTranslationError) as info:
            client.translate(["a dog"])  # the task inputs are missing
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_task_inputs_per_call(task_server):
    with TranslationClient(task_server.target, "task",
                           task_inputs={"tags": ""}) as client:
        assert client.translate(["a dog"], src_lang="en", tgt_lang="fr") \
            == ["en-fr[] A DOG"]
        assert client.translate(["x"], src_lang="de", tgt_lang="en",
                                tags=["a", "b"]) == ["de-en[a,b] X"]
        with pytest.raises(ValueError, match="src_lang"):
            client.translate(["x"], src_lang=3)
        assert client.task_inputs == {"tags": ""}


def test_bad_task_inputs_are_rejected_before_sending():
    with pytest.raises(ValueError, match="text"):
        TranslationClient("127.0.0.1:1", "m", task_inputs={"text": "x"})
    with pytest.raises(ValueError, match="tags"):
        TranslationClient("127.0.0.1:1", "m", task_inputs={"tags": None})


def test_translate_cli_sends_task_flags(task_server, tmp_path):
    import argparse

    from gnmt_tf.cli.translate import run

    source = tmp_path / "in.txt"
    source.write_text("a dog\n\nDe rien\n", encoding="utf-8")
    args = argparse.Namespace(
        server=task_server.target, model_name="task", input=str(source),
        output=str(tmp_path / "out.txt"), src_lang="fr", tgt_lang="en",
        tags=None)
    assert run(args) == 0
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines() \
        == ["fr-en[] A DOG", "", "fr-en[] DE RIEN"]
    args.tgt_lang = None
    with pytest.raises(ValueError, match="--tgt-lang"):
        run(args)


def test_translate_document_splits_by_language(batching_server, task_server):
    text = "Das Haus Nr. 5 ist rot. Wir kamen bzw. Karl ging.\nEnde."
    with TranslationClient(batching_server.target, "toy") as client:
        assert client.translate_document(text, "|", language="de") == (
            "DAS HAUS NR. 5 IST ROT.|WIR KAMEN BZW. KARL GING.\nENDE.")
        # English rules do not know "bzw.".
        assert client.translate_document(text, "|") == (
            "DAS HAUS NR. 5 IST ROT.|WIR KAMEN BZW.|KARL GING.\nENDE.")
    task = {"src_lang": "de", "tgt_lang": "en", "tags": ""}
    with TranslationClient(task_server.target, "task",
                           task_inputs=task) as client:
        assert client.translate_document(text, "|").split("|") == [
            "de-en[] DAS HAUS NR. 5 IST ROT.",
            "de-en[] WIR KAMEN BZW. KARL GING.\nde-en[] ENDE."]
