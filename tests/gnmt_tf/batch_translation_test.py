"""The batch-decoding pipeline on the tiny trained GNMT: the same
translations as plain `translate`, cut translations redone, CLI."""

import pytest

from gnmt_tf.batch_decoding import BatchPipeline
from gnmt_tf.batch_translation import TranslationStages
from gnmt_tf.cli.main import main as cli_main
from gnmt_tf.translator import SearchOptions, Translator


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    return Translator.from_model_dir(tiny_model_dir)


@pytest.fixture(scope="module")
def sentences(toy_corpus):
    lines = [en for en, _ in toy_corpus[::7]]
    lines.insert(3, "")
    lines.insert(9, "   ")
    return lines + ["A dog.", "A big old small young dog runs and sleeps."]


def _pipeline(translator, sentences, options, retries, batch_size=3,
              window=6):
    stages = TranslationStages(translator, options, retries)
    return [h for _, h in BatchPipeline(stages, batch_size, window).run(
        sentences)]


@pytest.mark.parametrize("options", [
    SearchOptions(beam_size=1),
    SearchOptions(beam_size=3, num_hypotheses=2, length_penalty=0.6)])
def test_same_translations_as_plain_translate(translator, sentences,
                                              options):
    plain = []
    for start in range(0, len(sentences), 6):  # plain translate's windows
        plain += translator.translate_nbest(sentences[start:start + 6],
                                            options, batch_size=3)
    # Without retries (with them, a cut translation is redone longer).
    out = _pipeline(translator, sentences, options, 0)
    assert [[h.text for h in hyps] for hyps in out] == [
        [h.text for h in hyps] for hyps in plain]
    assert [h.score for hyps in out for h in hyps] == pytest.approx(
        [h.score for hyps in plain for h in hyps])


def test_cut_translations_are_redone_with_a_doubled_limit(translator,
                                                          sentences):
    short = SearchOptions(beam_size=1, max_length_ratio=0.5)
    cut = [h[0].text for h in _pipeline(translator, sentences, short, 0)]
    redone = [h[0].text for h in _pipeline(translator, sentences, short, 1)]
    # Greedy search continues a cut output the same way with more room: one
    # retry at ratio 1.0 gives what ratio 1.0 gives outright.
    full = [h[0].text for h in _pipeline(
        translator, sentences, SearchOptions(beam_size=1,
                                             max_length_ratio=1.0), 0)]
    assert redone == full
    assert redone != cut  # some were cut at 0.5
    stages = TranslationStages(translator, short, 1)
    assert stages.options_for(2).max_length_ratio == 2.0
    with pytest.raises(ValueError, match="max_retries"):
        TranslationStages(translator, short, -1)


def test_cli_pipeline_writes_what_plain_translate_writes(
        tiny_model_dir, sentences, tmp_path, capsys):
    source = tmp_path / "in.en"
    source.write_text("".join(line + "\n" for line in sentences * 3))
    outputs = {}
    for name, flags in (("plain", []), ("pipeline", [
            "--pipeline", "--pipeline-retries", "0"])):
        outputs[name] = tmp_path / f"{name}.de"
        assert cli_main(["translate", "--model", str(tiny_model_dir),
                         "--input", str(source), "--output",
                         str(outputs[name]), "--batch-size", "2",
                         "--beam-size", "2", *flags]) == 0
    assert outputs["pipeline"].read_text() == outputs["plain"].read_text()
    assert "note: 6 empty input line(s)" in capsys.readouterr().err
    # An over-long line: one error naming its line in the whole input.
    source.write_text("A dog.\n" * 40 + "dog " * 400 + "\n")
    assert cli_main(["translate", "--model", str(tiny_model_dir), "--input",
                     str(source), "--pipeline", "--batch-size", "4"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("gnmt-tf translate: error: input 41 has ")
    assert cli_main(["translate", "--model", str(tiny_model_dir), "--server",
                     "localhost:1", "--pipeline"]) == 2
    assert "--pipeline translates with --model" in capsys.readouterr().err
