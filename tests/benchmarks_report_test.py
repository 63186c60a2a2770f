"""docs/benchmarks.md is generated from benchmarks/results/*.json
(`benchmarks/report.py`): checked in up to date, and stale as soon as a
JSON changes without `make docs`."""

import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location(
        "benchmarks_report", ROOT / "benchmarks" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_document_is_up_to_date(report):
    up_to_date, diff = report.check()
    assert up_to_date, ("docs/benchmarks.md differs from what "
                        "benchmarks/results/*.json give; run `make docs`:\n"
                        + diff[:3000])


def _commands(value, report):
    """Every command string recorded anywhere in a results JSON."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if report.is_command_key(key):
                found += [item] if isinstance(item, str) else [
                    v for v in item.values() if isinstance(v, str)]
            else:
                found += _commands(item, report)
    elif isinstance(value, list):
        for item in value:
            found += _commands(item, report)
    return found


def test_every_results_file_has_its_section_and_commands(report):
    document = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        assert f"Source: `benchmarks/results/{path.name}`." in document
        title = report.TITLES[path.stem][0]
        assert f"\n## {title}\n" in document, path.name
        commands = _commands(json.loads(path.read_text(encoding="utf-8")),
                             report)
        assert commands, f"{path.name} records no command"
        for command in commands:
            assert f"```bash\n{command}\n```" in document, (path.name,
                                                             command)


@pytest.fixture
def copy(tmp_path, report):
    """A copy of the results folder and of a document generated from it."""
    results = tmp_path / "results"
    shutil.copytree(ROOT / "benchmarks" / "results", results)
    doc = tmp_path / "benchmarks.md"
    report.write(results, doc)
    return results, doc


def test_a_changed_figure_makes_the_check_fail_until_regenerated(copy,
                                                                  report):
    results, doc = copy
    assert report.check(results, doc) == (True, "")
    path = results / "export.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    old = data["sacrebleu"]["tflite_int8_qat"]
    data["sacrebleu"]["tflite_int8_qat"] = 12.34
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")

    up_to_date, diff = report.check(results, doc)
    assert not up_to_date
    assert f"-| `tflite_int8_qat` | {report.format_value(old)} |" in diff
    assert "+| `tflite_int8_qat` | 12.34 |" in diff
    # The command line says so too (exit status 1), and writes nothing.
    before = doc.read_bytes()
    check = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "report.py"), "--check",
         "--results", str(results), "--out", str(doc)],
        capture_output=True, text=True, timeout=120)
    assert check.returncode == 1 and "make docs" in check.stderr
    assert doc.read_bytes() == before

    report.write(results, doc)
    assert report.check(results, doc) == (True, "")
    assert "| `tflite_int8_qat` | 12.34 |" in doc.read_text(encoding="utf-8")
    assert [p.name for p in doc.parent.iterdir() if p.name.startswith(".")] \
        == []  # written through a temporary file, renamed


def test_a_new_or_removed_results_file_makes_the_check_fail(copy, report):
    results, doc = copy
    (results / "new_bench.json").write_text(json.dumps(
        {"speed": 1.5, "command": "python benchmarks/new_bench.py"}))
    assert not report.check(results, doc)[0]
    report.write(results, doc)
    (results / "new_bench.json").unlink()
    assert not report.check(results, doc)[0]


def test_layout_of_a_small_file(tmp_path, report):
    (tmp_path / "toy.json").write_text(json.dumps({
        "command": "python benchmarks/toy.py --n 3",
        "bleu": {"float": 35.64, "int8": 35.861234},
        "size_mb": {"float": 26.0, "int8": 5.5},
        "settings": {"beam_size": 4, "flags": ["avx2", "fma"]},
        "runs": [{"clients": 1, "p50_ms": 28.48},
                 {"clients": 32, "p50_ms": 120.0}],
        "note": "x" * 100,
        "earlier_run": {"bleu": 30.0},
    }))
    text = report.render(tmp_path)
    assert "```bash\npython benchmarks/toy.py --n 3\n```" in text
    # Sibling records with the same keys side by side.
    assert "|  | `bleu` | `size_mb` |" in text
    assert "| `int8` | 35.8612 | 5.5 |" in text
    assert "| `settings.flags` | avx2, fma |" in text
    assert "| clients | p50_ms |" in text and "| 32 | 120 |" in text
    assert "*note*: " + "x" * 100 in text
    assert "<details><summary>Earlier runs kept in this file: " \
           "<code>earlier_run</code>" in text


@pytest.mark.parametrize("value, text", [
    (37.35, "37.35"), (25833542.0, "25833542"), (0.123456, "0.1235"),
    (1234.567891, "1234.5679"), (None, "–"), (True, "yes"),
    ("a|b", "a\\|b"), ([1, 2.5], "1, 2.5"),
])
def test_format_value(report, value, text):
    assert report.format_value(value) == text
