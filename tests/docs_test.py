"""The README and the guides under docs/: a short front page whose commands
and figures are real, guides without project history, and every `gnmt-tf`
command they show accepted by the command's own parser."""

import json
import pathlib
import re
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDES = ("cli", "python", "serving", "pipeline", "beam", "export",
          "design", "benchmarks")
PAGES = [README] + sorted((ROOT / "docs").glob("*.md"))


def _text(path):
    return path.read_text(encoding="utf-8")


def test_readme_is_a_front_page():
    readme = _text(README)
    assert len(readme.splitlines()) <= 250
    for guide in GUIDES:
        assert f"](docs/{guide}.md)" in readme, guide
    assert "](CHANGELOG.md)" in readme


def test_the_readme_test_command_is_the_one_ci_runs():
    commands = re.search(r"## The two commands\n\n```bash\n(.*?)```",
                         _text(README), re.S).group(1)
    assert commands.splitlines()[0].startswith("make test ")
    assert any(l.startswith("make quickstart ") for l in commands.splitlines())
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("make test")


def test_no_project_history_outside_the_changelog():
    """Sessions, issue numbers and stops belong in CHANGELOG.md."""
    pattern = re.compile(r"\b(session|issue|stop)s? #?\d", re.I)
    for page in PAGES:
        found = [m.group(0) for m in pattern.finditer(_text(page))]
        assert not found, f"{page.name}: {found}"
    assert pattern.search(_text(ROOT / "CHANGELOG.md"))


def test_readme_model_table_matches_the_shipped_scores():
    """The model table's BLEU figures are those of each model's
    scores.json (test_2016_flickr), to two decimals."""
    from gnmt_tf import pretrained

    table = re.search(r"\| model \| what \| directions \| en→de \| en→fr \|"
                      r"\n\|[- |]+\|\n((?:\|.*\|\n)+)", _text(README)).group(1)
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[3:5]
    assert sorted(rows) == pretrained.names()
    for name, cells in rows.items():
        bleu = pretrained.describe(name)["scores"]["sacrebleu"]
        for direction, cell in zip(("en-de", "en-fr"), cells):
            expected = bleu.get(direction, {}).get("test_2016_flickr")
            assert cell == ("–" if expected is None else f"{expected:.2f}"), \
                (name, direction)
    # The quickstart's sample output scores the shipped Transformer as its
    # card does (all of test_2016_flickr, the card's search).
    quoted = re.findall(r"^BLEU = (\d+\.\d+) ", _text(README), re.M)
    card = pretrained.describe("multi30k-transformer")["scores"]["sacrebleu"]
    assert quoted == [f"{card['en-de']['test_2016_flickr']:.2f}"]


def _shell_commands(text):
    """The commands of the page's bash/sh code blocks: continuation lines
    joined, comments dropped, split at pipes, redirections and `&`."""
    commands = []
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", text, re.S):
        block = re.sub(r"\\\n\s*", " ", block)
        for line in block.splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.commenters = "#"
            lexer.whitespace_split = True
            try:
                tokens = list(lexer)
            except ValueError:
                continue
            current = []
            for token in tokens + [";"]:
                if token and set(token) <= set("<>|&;"):
                    if current:
                        commands.append(current)
                    current = []
                    if token in ("<", ">", ">>"):
                        current = None  # the file name is not a command
                elif current is None:
                    current = []
                else:
                    current.append(token)
    return commands


def _gnmt_tf_commands():
    """`(page, args)` of the guides' commands; benchmarks.md holds the
    commands as the benchmarks recorded them (with notes), not guidance."""
    found = []
    for page in PAGES:
        if page.name == "benchmarks.md":
            continue
        for command in _shell_commands(_text(page)):
            if command and command[0] == "gnmt-tf":
                found.append((page.name, command[1:]))
    return found


def test_every_page_shows_gnmt_tf_commands():
    pages = {page for page, _ in _gnmt_tf_commands()}
    assert {"README.md", "cli.md", "export.md", "serving.md", "pipeline.md",
            "beam.md"} <= pages


@pytest.mark.parametrize(
    "page, args", _gnmt_tf_commands(),
    ids=lambda value: value if isinstance(value, str) else " ".join(value)[:60])
def test_shown_commands_parse(page, args, capsys):
    """Every flag a page shows exists and takes the value shown (commands
    with placeholders such as `...` or `[--flag]` are left out)."""
    if any("..." in a or a.startswith("[") for a in args):
        pytest.skip("a placeholder command")
    from gnmt_tf.cli.main import build_parser

    try:
        build_parser().parse_args(args)
    except SystemExit as e:
        pytest.fail(f"{page}: gnmt-tf {' '.join(args)}: exit {e.code}: "
                    f"{capsys.readouterr().err.strip()}")


def test_gateway_curl_examples_send_a_content_type():
    """The gateway answers 415 to curl's default form content type."""
    for page in PAGES:
        for block in re.findall(r"```(?:bash|sh)\n(.*?)```", _text(page),
                                re.S):
            block = re.sub(r"\\\n\s*", " ", block)
            for line in block.splitlines():
                if line.startswith("curl") and "/v1/translate" in line \
                        and (" -d " in line or "--data" in line):
                    assert "-H 'Content-Type: " in line, (page.name, line)


def test_benchmark_links_point_at_sections():
    anchors = set()
    for line in _text(ROOT / "docs" / "benchmarks.md").splitlines():
        if line.startswith("## "):
            title = line[3:].lower()
            title = "".join(c for c in title if c.isalnum() or c in " -_")
            anchors.add(title.replace(" ", "-"))
    for page in PAGES:
        for anchor in re.findall(r"benchmarks\.md#([\w-]+)", _text(page)):
            assert anchor in anchors, (page.name, anchor)
