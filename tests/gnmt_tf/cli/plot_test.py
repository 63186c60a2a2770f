"""`gnmt-tf plot` and `gnmt-tf translate --plot-attention`: PNG files."""

import sys

import pytest

from gnmt_tf.cli.main import main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _is_png(path):
    return path.read_bytes()[:8] == PNG_SIGNATURE and path.stat().st_size > 1000


def test_plot_writes_the_training_curves(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "curves.png"
    assert main(["plot", "--model-dir", str(tiny_model_dir), "--out",
                 str(out)]) == 0
    assert _is_png(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curves.png"]


def test_plot_errors_are_one_line(tmp_path, tiny_model_dir, monkeypatch,
                                  capsys):
    assert main(["plot", "--model-dir", str(tmp_path), "--out",
                 str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert "metrics.csv: no such file" in err and len(err.splitlines()) == 1
    # Without matplotlib: the extra to install, before any work.
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert main(["plot", "--model-dir", str(tiny_model_dir), "--out",
                 str(tmp_path / "c.png")]) == 2
    assert "pip install 'gnmt-tf[plot]'" in capsys.readouterr().err
    assert not (tmp_path / "c.png").exists()


def test_translate_plot_attention(tiny_model_dir, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("A big dog runs.\n\nA small cat sleeps.\nA man eats.\n")
    plots = tmp_path / "attention"
    assert main(["translate", "--model", str(tiny_model_dir), "-i",
                 str(source), "--beam-size", "1", "--plot-attention",
                 str(plots), "--plot-attention-count", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    # The first two non-blank lines, named by line number.
    names = sorted(p.name for p in plots.iterdir())
    assert names == ["attention_00001.png", "attention_00003.png"]
    assert all(_is_png(plots / name) for name in names)


def test_plot_attention_needs_a_model_dir(tmp_path, capsys):
    assert main(["translate", "--tflite", str(tmp_path / "m.tflite"),
                 "--plot-attention", str(tmp_path / "a")]) == 2
    assert "--plot-attention needs --model" in capsys.readouterr().err


@pytest.fixture(scope="module")
def tiny_translator(tiny_model_dir):
    from gnmt_tf import Translator

    return Translator.from_model_dir(tiny_model_dir)


def test_attention_maps_of_a_forced_pass(tiny_translator):
    import numpy as np

    from gnmt_tf.attention_maps import attention_maps

    sources = ["A big dog runs.", "A cat."]
    [first, second] = attention_maps(tiny_translator, sources,
                                     ["Ein großer Hund läuft.", ""])
    assert first.source_tokens[-1] == "</s>"
    assert first.target_tokens[-1] == "</s>" and len(first.target_tokens) > 1
    assert first.weights.shape == (len(first.target_tokens),
                                   len(first.source_tokens))
    # Additive attention: a distribution over the source at every step.
    np.testing.assert_allclose(first.weights.sum(axis=1), 1.0, atol=1e-5)
    assert second.target_tokens == ["</s>"]
    with pytest.raises(ValueError, match="2 sources but 1 translations"):
        attention_maps(tiny_translator, sources, [""])
