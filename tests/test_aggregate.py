"""Dashboard aggregates: means with bootstrap CIs, hotspots, strata, stability. Pure pandas, no models."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from monitor.scoring import aggregate, stats


def _cells(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    batches = ["b1", "b2", "b3"]
    for b, dep, art, dim, fam in itertools.product(batches, ["plain", "neutral"], range(4), ["religion", "political"],
                                                  ["impact", "emotion"]):
        hot = dep == "plain" and dim == "religion"
        scfs = (0.3 if hot else 0.0) + 0.02 * rng.normal() + (0.01 if b == "b2" else 0.0)
        p = 1 / 120 if hot else rng.uniform(0.1, 1.0)
        rows.append({"id": f"{b}-{dep}-{art}-{dim}-{fam}", "batch_id": b, "deployment": dep,
                     "article_id": f"{b}-a{art}", "family": fam, "paraphrase": 0, "dimension": dim,
                     "stratum": "identity_relevant" if art % 2 else "identity_neutral", "valid": int(art != 3),
                     "scfs": scfs, "s": scfs + 0.2, "n": 0.2, "s_placebo": 0.2, "s_minus_placebo": scfs,
                     "sent_range": 0.5, "sent_mad": 0.2, "sent_range_corrected": 0.1, "sent_mad_corrected": 0.05,
                     "p_value": p, "q_value": p * 2, "significant": int(hot),
                     "far_identity": "religion.muslim" if hot else "political.centrist",
                     "sent_min_identity": "religion.jewish", "sent_max_identity": "religion.hindu"})
    return pd.DataFrame(rows)


def test_summarize_means_cis_and_counts():
    cells = _cells()
    out = aggregate.summarize(cells, ["deployment", "dimension"], n_boot=300)
    hot = out[(out.deployment == "plain") & (out.dimension == "religion")].iloc[0]
    cold = out[(out.deployment == "neutral") & (out.dimension == "religion")].iloc[0]
    assert hot["mean"] == pytest.approx(cells[(cells.deployment == "plain") & (cells.dimension == "religion")].scfs.mean())
    assert hot.ci_low <= hot["mean"] <= hot.ci_high and hot.ci_unit == "article"
    assert hot.ci_low > cold.ci_high  # a planted difference is visible through the CIs
    assert (hot.n_cells, hot.n_articles, hot.n_invalid, hot.n_significant) == (24, 12, 6, 24)
    assert hot.share_significant == 1.0 and cold.share_significant == 0.0
    valid = aggregate.summarize(cells, ["deployment"], valid_only=True, n_boot=100)
    assert (valid.n_invalid == 0).all() and (valid.n_cells == 36).all()  # 48 per deployment, 1 article in 4 invalid


def test_summarize_rejects_unknown_metrics_and_handles_empty_frames():
    with pytest.raises(ValueError, match="unknown metric"):
        aggregate.summarize(_cells(), ["deployment"], "bogus")
    empty = aggregate.summarize(pd.DataFrame(), ["deployment"])
    assert empty.empty and "ci_low" in empty.columns


def test_timeseries_follows_the_batch_order():
    ts = aggregate.timeseries(_cells(), batch_order=["b3", "b1", "b2"], n_boot=100)
    assert list(ts[ts.deployment == "plain"].batch_id) == ["b3", "b1", "b2"]
    ts = aggregate.timeseries(_cells(), n_boot=100)
    assert list(ts[ts.deployment == "plain"].batch_id) == ["b1", "b2", "b3"]


def test_single_article_falls_back_to_cell_resampling():
    cells = _cells()
    one = cells[cells.article_id == "b1-a0"]
    out = aggregate.summarize(one, ["deployment"], n_boot=100)
    assert set(out.ci_unit) == {"cell"}


def test_hotspot_cells_are_significant_and_ranked_by_effect():
    hot = aggregate.hotspot_cells(_cells(), top=10)
    assert len(hot) == 10 and (hot.significant == 1).all()
    assert list(hot.scfs) == sorted(hot.scfs, reverse=True)
    assert set(hot.far_identity) == {"religion.muslim"}


def test_hotspot_groups_flag_only_the_planted_group_with_its_identities():
    groups = aggregate.hotspot_groups(_cells(), fdr=0.1, n_boot=200)
    assert len(groups) == 6  # 3 batches x (plain, religion) x 2 families
    assert set(groups.deployment) == {"plain"} and set(groups.dimension) == {"religion"}
    assert (groups.q_value <= 0.1).all() and (groups.ci_low > 0).all()
    assert groups.far_identities.str.startswith("religion.muslim").all()
    everything = aggregate.hotspot_groups(_cells(), only_significant=False, top=None, n_boot=50)
    assert len(everything) == 3 * 2 * 2 * 2 and everything.significant.sum() == 6
    cells = _cells()
    for row in everything.head(4).itertuples():
        own = cells[(cells.batch_id == row.batch_id) & (cells.deployment == row.deployment)
                    & (cells.dimension == row.dimension) & (cells.family == row.family)]
        assert row.p_value == pytest.approx(stats.fisher_combine(own.p_value.to_numpy()))
        assert row.n_cells == row.n_tested == len(own)


def test_compare_strata():
    cells = _cells()
    cells.loc[cells.stratum == "identity_relevant", "scfs"] += 0.5
    out = aggregate.compare_strata(cells, by=["deployment"], n_boot=300)
    assert len(out) == 2
    assert out.difference.to_numpy() == pytest.approx([0.5, 0.5], abs=0.05)
    assert (out.ci_low > 0.3).all()


def test_stability_sd_cv_and_kendall_tau():
    per_dep, pairs = aggregate.stability(_cells(), batch_order=["b1", "b2", "b3"])
    plain = per_dep.set_index("deployment").loc["plain"]
    assert plain.n_batches == 3 and plain.sd >= 0 and plain.cv == pytest.approx(plain.sd / abs(plain.mean_of_batch_means))
    assert list(pairs.batch_from) == ["b1", "b2"] and (pairs.n_deployments == 2).all()
    assert (pairs.kendall_tau == 1.0).all()  # plain stays above neutral in every batch


def test_identity_label():
    assert aggregate.identity_label("religion.muslim") == "Muslim"
    assert aggregate.identity_label("nope.x") == "nope.x"
    assert aggregate.identity_label(None) == ""


def test_aggregate_imports_no_model_libraries():
    code = ("import sys, monitor.scoring.aggregate; "
            "bad = [m for m in ('torch', 'sentence_transformers', 'llama_cpp', 'openai') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
