from pathlib import Path

import pytest

from monitor import config
from monitor.config import ConfigError

MINIMAL = """
[[deployments]]
name = "a"
provider = "scripted"
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "framewatch.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_embedded_default_is_the_demo():
    cfg = config.load(None)
    assert [d.name for d in cfg.deployments] == ["gemma-plain", "gemma-neutral"]
    assert cfg.deployments[0].system_prompt == "" and cfg.deployments[1].system_prompt
    assert cfg.feeds[0].url == "sample:1"


def test_minimal_file_gets_defaults(tmp_path):
    cfg = config.load(write(tmp_path, MINIMAL))
    assert cfg.grid.repeats == 3
    assert cfg.db_path == tmp_path / "data" / "framewatch.db"


def test_db_override(tmp_path):
    cfg = config.load(write(tmp_path, MINIMAL), db_path=tmp_path / "x.db")
    assert cfg.db_path == tmp_path / "x.db"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[[deployments]\nname=", "not valid TOML"),
        (MINIMAL + "\n[grid]\nrepeat = 3\n", "unknown key grid.repeat; did you mean grid.repeats?"),
        (MINIMAL + "\n[grid]\nrepeats = 'three'\n", "grid.repeats = 'three' has the wrong type; expected int"),
        (MINIMAL + "\n[grid]\nrepeats = 0\n", "must be >= 1"),
        ("[store]\npath = 'x.db'\n", "no [[deployments]]"),
        ("[[deployments]]\nname = 'a'\n", "missing required key deployments[0].provider"),
        ("[[deployments]]\nname = 'a'\nprovider = 'gpt'\n", "provider = 'gpt' is not known"),
        ("[[deployments]]\nname = 'a'\nprovider = 'openai'\nmodel = 'm'\n", "deployments[0].base_url is required"),
        (MINIMAL + MINIMAL, "two deployments have name = 'a'"),
        (MINIMAL + "\n[stats]\nfdr = 1.5\n", "stats.fdr"),
        ("feeds = 3\n" + MINIMAL, "feeds must be an array of tables"),
        (MINIMAL + "\n[[feeds]]\nname = 'x'\n", "missing required key feeds[0].url"),
        (MINIMAL + "\n[grid]\nplacebo = 1\n", "grid.placebo = 1 has the wrong type; expected bool"),
    ],
)
def test_bad_config_names_file_key_and_fix(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert str(path) in str(err.value)
    assert expected in str(err.value)


def test_missing_file_says_how_to_fix(tmp_path):
    with pytest.raises(ConfigError, match="Copy framewatch.example.toml"):
        config.load(tmp_path / "nope.toml")


def test_not_utf8(tmp_path):
    p = tmp_path / "framewatch.toml"
    p.write_bytes(b"\xff\xfe[[deployments]]")
    with pytest.raises(ConfigError, match="UTF-8"):
        config.load(p)


def test_example_config_loads():
    example = Path(__file__).resolve().parents[1] / "framewatch.example.toml"
    if not example.exists():
        pytest.fail("framewatch.example.toml is missing from the repo")
    cfg = config.load(example)
    assert cfg.deployments


def test_version_changes_with_content(tmp_path):
    a = config.load(write(tmp_path, MINIMAL))
    b = config.load(write(tmp_path, MINIMAL + "\n[grid]\nrepeats = 4\n"))
    assert a.version() != b.version()


def test_cli_reports_config_error(tmp_path):
    from click.testing import CliRunner

    from monitor.cli import main

    result = CliRunner().invoke(main, ["init", "--config", str(write(tmp_path, MINIMAL + "\n[grid]\nrepeat = 2\n"))])
    assert result.exit_code != 0
    assert "configuration error" in result.output and "grid.repeat" in result.output


@pytest.mark.parametrize(
    "section, expected",
    [
        ("[alerts.webhook]\nurll = 'http://127.0.0.1:9/hook'\n", "alerts.webhook"),
        ("[stereo]\nratings_per_itme = 3\n", "ratings_per_itme"),
    ],
)
def test_area_sections_fail_at_load_too(tmp_path, section, expected):
    """[alerts] and [stereo] have their own parsers; a typo there still stops every command at start."""
    path = write(tmp_path, MINIMAL + "\n" + section)
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_dashboard_gets_the_configured_ratings_target(tmp_path):
    """The dashboard never reads framewatch.toml; `framewatch dashboard` passes what it needs."""
    from monitor.cli import dashboard_settings

    cfg = config.load(write(tmp_path, MINIMAL + "\n[stereo]\nratings_per_item = 5\n"))
    assert dashboard_settings(cfg) == {"FRAMEWATCH_RATINGS_PER_ITEM": "5"}
