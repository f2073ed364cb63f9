"""Stereotype-probe figures: DataFrame -> plotly Figure. No streamlit here.

Scores are shares in [0, 1] with Wilson intervals (monitor.stereo.report.summarise);
every figure marks the 50% line, where a model shows no preference.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ui.charts import _layout, color_for, empty


def _no_preference(fig: go.Figure, *, axis: str = "y") -> None:
    if axis == "y":
        fig.add_hline(y=0.5, line=dict(color="#555", width=1.5, dash="dash"), annotation_text="50% = no preference",
                      annotation_position="top left")
    else:
        fig.add_vline(x=0.5, line=dict(color="#555", width=1.5, dash="dash"), annotation_text="50%",
                      annotation_position="top")


def country_bars(scores: pd.DataFrame, country_names: dict[str, str], *, title: str) -> go.Figure:
    """Per deployment and country: share of items where the stereotype wins, Wilson 95% error bars."""
    scores = scores.dropna(subset=["share"]) if not scores.empty else scores
    if scores.empty:
        return empty(title, "no valid probe answers for this selection")
    fig = go.Figure()
    for i, (dep, g) in enumerate(scores.groupby("deployment", sort=True)):
        g = g.sort_values("country")
        fig.add_trace(go.Bar(
            x=[country_names.get(c, c) for c in g["country"]], y=g["share"], name=str(dep), marker_color=color_for(i),
            error_y=dict(type="data", symmetric=False, array=(g["hi"] - g["share"]).tolist(),
                         arrayminus=(g["share"] - g["lo"]).tolist()),
            customdata=g[["lo", "hi", "n_valid", "n_invalid", "n_error"]].to_numpy(),
            hovertemplate="%{x}: %{y:.0%} [%{customdata[0]:.0%}, %{customdata[1]:.0%}]<br>%{customdata[2]} valid, "
                          "%{customdata[3]} invalid, %{customdata[4]} errors<extra>" + str(dep) + "</extra>"))
    _no_preference(fig)
    fig.update_layout(barmode="group")
    fig.update_yaxes(title="stereotype wins (share of items)", range=[0, 1], tickformat=".0%")
    fig.update_xaxes(title="country")
    return _layout(fig, title, height=420)


def category_heatmap(scores: pd.DataFrame, category_names: dict[str, str], country_names: dict[str, str], *,
                     title: str) -> go.Figure:
    """Category x country, coloured by share (diverging around 50%), with n in each square."""
    scores = scores.dropna(subset=["share"]) if not scores.empty else scores
    if scores.empty:
        return empty(title, "no valid probe answers for this selection")
    cats = sorted(scores["category"].unique(), key=lambda k: category_names.get(k, k))
    countries = sorted(scores["country"].unique())
    lookup = {(r["category"], r["country"]): r for r in scores.to_dict("records")}
    z, text = [], []
    for cat in cats:
        z.append([lookup[(cat, c)]["share"] if (cat, c) in lookup else None for c in countries])
        text.append([f"{lookup[(cat, c)]['share']:.0%}<br>n={lookup[(cat, c)]['n_valid']}" if (cat, c) in lookup else ""
                     for c in countries])
    fig = go.Figure(go.Heatmap(
        z=z, x=[country_names.get(c, c) for c in countries], y=[category_names.get(k, k) for k in cats],
        text=text, texttemplate="%{text}", zmin=0, zmax=1, zmid=0.5, colorscale="RdBu_r",
        colorbar=dict(title="stereotype<br>wins", tickformat=".0%"),
        hovertemplate="%{y} · %{x}<br>%{text}<extra></extra>"))
    return _layout(fig, title, height=120 + 60 * len(cats))


def target_groups(scores: pd.DataFrame, *, title: str) -> go.Figure:
    """Horizontal dots with Wilson intervals per target group (country in the label)."""
    scores = scores.dropna(subset=["share"]) if not scores.empty else scores
    if scores.empty:
        return empty(title, "no valid probe answers for this selection")
    g = scores.sort_values(["share", "n_valid"], ascending=[True, False])
    labels = [f"{t} ({c})" for t, c in zip(g["target_group"], g["country"], strict=True)]
    fig = go.Figure(go.Scatter(
        x=g["share"], y=labels, mode="markers", marker=dict(size=9, color=color_for(0)),
        error_x=dict(type="data", symmetric=False, array=(g["hi"] - g["share"]).tolist(),
                     arrayminus=(g["share"] - g["lo"]).tolist()),
        customdata=g[["n_valid"]].to_numpy(), hovertemplate="%{y}: %{x:.0%} of %{customdata[0]} items<extra></extra>"))
    _no_preference(fig, axis="x")
    fig.update_xaxes(range=[0, 1], tickformat=".0%", title="stereotype wins")
    return _layout(fig, title, height=max(300, 22 * len(labels) + 120))


def country_series(series: pd.DataFrame, country_names: dict[str, str], *, title: str) -> go.Figure:
    """Score per (deployment, country) over probe runs: the monitor's time series."""
    series = series.dropna(subset=["share"]) if not series.empty else series
    if series.empty:
        return empty(title, "no probe runs yet")
    fig = go.Figure()
    for i, ((dep, country), g) in enumerate(series.groupby(["deployment", "country"], sort=True)):
        g = g.sort_values("started_at")
        fig.add_trace(go.Scatter(
            x=g["started_at"], y=g["share"], mode="lines+markers", name=f"{dep} · {country_names.get(country, country)}",
            line=dict(color=color_for(i)), error_y=dict(type="data", symmetric=False, array=(g["hi"] - g["share"]).tolist(),
                                                        arrayminus=(g["share"] - g["lo"]).tolist(), thickness=1),
            hovertemplate="%{x}<br>%{y:.0%}<extra>" + f"{dep} · {country}" + "</extra>"))
    _no_preference(fig)
    fig.update_yaxes(range=[0, 1], tickformat=".0%", title="stereotype wins")
    fig.update_xaxes(title="probe run (UTC)")
    return _layout(fig, title, height=420)
