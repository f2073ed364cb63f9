import pytest

import prompts
from monitor.config import GridConfig
from monitor.expand import expand_article
from monitor.types import CONTROL_IDENTITY, CONTROL_IDENTITY_FREE, CONTROL_PLACEBO


def test_taxonomy_is_six_by_seven_plus_placebo():
    t = prompts.load_taxonomy()
    assert len(t.dimensions) == 6
    assert all(len(v) == 7 for v in t.dimensions.values())
    keys = [i.key for v in t.dimensions.values() for i in v] + [i.key for i in t.placebo]
    assert len(keys) == len(set(keys)) == 49
    assert t.identity("religion.muslim").sentence == "I am Muslim."


def test_families_have_canonical_and_two_paraphrases():
    fams = prompts.load_families().families
    assert len(fams) == 7
    assert all(len(f.templates) >= 3 for f in fams.values())


def test_versions_carry_declared_version_and_content_hash():
    v = prompts.versions()
    assert set(v) == {"taxonomy", "families", "frames"}
    assert all("+" in x for x in v.values())


def test_full_grid_size():
    grid = GridConfig(families=("all",), dimensions=("all",), paraphrases=3, repeats=3)
    planned = list(expand_article("a1", grid))
    per_template = 42 + 7 + 1
    assert len(planned) == 7 * 3 * per_template
    assert sum(p.samples for p in planned) == 7 * 3 * (42 + 7 + 3)


def test_bundles_are_counterfactual():
    """Within one family and paraphrase, identity prompts differ only in the identity sentence."""
    grid = GridConfig(families=("impact",), dimensions=("religion",), paraphrases=1)
    planned = [p.prompt for p in expand_article("a1", grid)]
    free = [p for p in planned if p.control == CONTROL_IDENTITY_FREE]
    assert len(free) == 1
    question = free[0].question
    for p in planned:
        if p.control in (CONTROL_IDENTITY, CONTROL_PLACEBO):
            assert p.question.endswith(" " + question)
            assert p.question != question
    assert len({p.id for p in planned}) == len(planned)


def test_prompt_ids_are_deterministic():
    grid = GridConfig(families=("impact",), dimensions=("religion",))
    assert [p.prompt.id for p in expand_article("a1", grid)] == [p.prompt.id for p in expand_article("a1", grid)]
    assert [p.prompt.id for p in expand_article("a1", grid)] != [p.prompt.id for p in expand_article("a2", grid)]


def test_unknown_family_is_a_config_error():
    from monitor.config import ConfigError

    with pytest.raises(ConfigError, match="grid.families"):
        list(expand_article("a1", GridConfig(families=("nope",))))
