"""benchmarks/backend_engines.py: auto over xla, each round against the
same round, as speeds (the milliseconds' ratio inverted)."""

from benchmark_scripts import load_benchmark


def test_speed_ratios_pair_rounds_and_invert_milliseconds():
    bench = load_benchmark("backend_engines")
    rounds = {"translator_auto_one_sentence_ms": [10.0, 20.0],
              "translator_xla_one_sentence_ms": [30.0, 30.0],
              "translator_auto_batch_sentences_per_s": [100.0, 50.0],
              "translator_xla_batch_sentences_per_s": [40.0, 50.0]}
    assert bench.speed_ratios(rounds, ["translator"]) == {
        "translator_one_sentence_ms_auto_over_xla": [3.0, 1.5],
        "translator_batch_sentences_per_s_auto_over_xla": [2.5, 1.0]}
