"""benchmarks/task_space_decode_speed.py: CTranslate2 timed in processes of
its own, and the machine's load recorded with the figures."""

import json
import os
import subprocess
import sys

import pytest

from benchmark_scripts import BENCHMARKS, load_benchmark

pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("task_space_decode_speed")


def _run_script(argv, out):
    """Runs the benchmark as from the command line (it sets TensorFlow's
    thread counts, which a process that already ran TensorFlow cannot);
    returns the JSON it wrote to `out`."""
    process = subprocess.run(
        [sys.executable, str(BENCHMARKS / "task_space_decode_speed.py"),
         *argv], capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=str(BENCHMARKS.parent)))
    assert process.returncode == 0, process.stderr[-2000:]
    return json.loads(out.read_text())


def test_ctranslate2_runs_in_a_child_process_and_load_is_recorded(
        tmp_path):
    out = tmp_path / "speed.json"
    argv = ["--preset", "transformer_tiny", "--only", "ctranslate2",
            "--batch-sizes", "1", "--thread-counts", "1", "--rounds", "2",
            "--repeats", "1", "--source-length", "6", "--output-length",
            "4", "--output", str(out)]
    results = _run_script(argv, out)
    assert results["ctranslate2_beam4_batch1"] > 0
    assert len(results["rounds"]["ctranslate2_beam4_batch1"]) == 2
    settings = results["settings"]
    assert "own" in settings["ctranslate2_process"]
    assert len(settings["other_cpu_share_per_round"]) == 2
    assert all(0 <= share <= 1
               for share in settings["other_cpu_share_per_round"])
    assert settings["ctranslate2"].startswith("ctranslate2 ")


def test_a_failing_child_is_an_error_not_a_figure(bench, tmp_path):
    args = type("Args", (), {"preset": "transformer_tiny",
                             "source_length": 6, "output_length": 4,
                             "repeats": 1})()
    with pytest.raises(RuntimeError):
        bench._child_ctranslate2(args, tmp_path / "missing", "default", 1,
                                 1, 1)


def test_the_whole_search_is_timed_at_batch_1_only(tmp_path):
    """The TFLite export's search signature gets its own keys and its ratio
    to CTranslate2, at batch 1 (a sentence at a time) and not at batch 2."""
    out = tmp_path / "speed.json"
    argv = ["--preset", "transformer_tiny", "--only",
            "ctranslate2,tflite_float32,tflite_float32_search",
            "--batch-sizes", "2,1", "--thread-counts", "1", "--repeats", "1",
            "--source-length", "6", "--output-length", "4", "--output",
            str(out)]
    results = _run_script(argv, out)
    assert results["ours_tflite_float32_search_beam4_batch1"] > 0
    assert results["ours_tflite_float32_beam4_batch2"] > 0
    assert "ours_tflite_float32_search_beam4_batch2" not in results
    ratio = ("ours_tflite_float32_search_beam4_batch1_over_"
             "ctranslate2_beam4_batch1")
    assert results[ratio] == round(
        results["ours_tflite_float32_search_beam4_batch1"]
        / results["ctranslate2_beam4_batch1"], 3)
    assert "tflite_float32_search batch 1" in results["side_by_side"]


def test_the_workers_split_batches_of_two_or_more(tmp_path):
    """The host loop split between two single-threaded interpreters is timed
    at batch 2 and up, at two threads, against CTranslate2 with one and with
    two workers; at batch 1 there is nothing to split."""
    out = tmp_path / "speed.json"
    argv = ["--preset", "transformer_tiny", "--only",
            "ctranslate2,ctranslate2_two_workers,tflite_float32_workers",
            "--batch-sizes", "2,1", "--thread-counts", "1,2", "--repeats",
            "1", "--source-length", "6", "--output-length", "4", "--output",
            str(out)]
    results = _run_script(argv, out)
    key = "ours_tflite_float32_workers_beam4_batch2"
    assert results[key] > 0
    assert results["settings"]["best_threads"][key] == 2
    assert "ours_tflite_float32_workers_beam4_batch1" not in results
    for ct2 in ("ctranslate2", "ctranslate2_two_workers"):
        assert results[f"{key}_over_{ct2}_beam4_batch2"] == round(
            results[key] / results[f"{ct2}_beam4_batch2"], 3)
    assert "tflite_float32_workers batch 2" in results["side_by_side"]


def test_the_default_key_times_the_default_path(tmp_path, bench):
    """``ours`` is the shipped export's host search at the translator's
    default settings (one thread count, no best-of): the whole search at
    batch 1, the workers at batch 2 on a machine with several cores; the
    XLA default keeps a key of its own."""
    from gnmt_tf import cpu_settings

    out = tmp_path / "speed.json"
    argv = ["--preset", "transformer_tiny", "--only",
            "ours,xla_default,ctranslate2", "--batch-sizes", "2,1",
            "--thread-counts", "1", "--repeats", "1", "--source-length",
            "6", "--output-length", "4", "--output", str(out)]
    results = _run_script(argv, out)
    best = results["settings"]["best_threads"]
    assert best["ours_beam4_batch1"] == cpu_settings.tflite_threads()
    assert best["ours_beam4_batch2"] == cpu_settings.tflite_workers()
    for batch in (1, 2):
        key = f"beam4_batch{batch}"
        assert results[f"ours_{key}"] > 0
        assert results[f"ours_xla_default_{key}"] > 0
        assert results[f"ours_{key}_over_ctranslate2_{key}"] == round(
            results[f"ours_{key}"] / results[f"ctranslate2_{key}"], 3)
        assert f"xla_default batch {batch}" in results["side_by_side"]
    assert "ours" in results["settings"] and bench.SETTINGS[:2] == (
        "ours", "xla_default")
