"""DataFrame -> plotly Figure. No streamlit here: pages decide where a figure goes.

Colours: the Okabe-Ito palette, readable with the common colour-vision deficiencies.
Every figure carries a title, so a downloaded PNG/SVG explains itself.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ui import labels

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
SEQUENTIAL = "Viridis"
DIVERGING = "RdBu_r"


def color_for(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _layout(fig: go.Figure, title: str, *, height: int = 380) -> go.Figure:
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=-0.3), hovermode="closest")
    return fig


def empty(title: str, message: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, title, height=220)


def series_with_bands(series: pd.DataFrame, *, title: str, y_title: str, zero_line: bool = True) -> go.Figure:
    """One line per deployment over batches, with its confidence band (columns of ui.stats.batch_series)."""
    if series.empty:
        return empty(title, "no scored cells for this selection")
    fig = go.Figure()
    for i, (dep, g) in enumerate(series.groupby("deployment", sort=True)):
        g = g.sort_values("opened_at")
        color = color_for(i)
        x = g["batch_label"].tolist()
        band = g.dropna(subset=["ci_low", "ci_high"])
        if len(band):
            fig.add_trace(go.Scatter(
                x=band["batch_label"].tolist() + band["batch_label"].tolist()[::-1],
                y=band["ci_high"].tolist() + band["ci_low"].tolist()[::-1],
                mode="lines", fill="toself", fillcolor=_rgba(color, 0.18), line=dict(width=0), hoverinfo="skip",
                name=f"{dep} 95% CI", legendgroup=str(dep), showlegend=False))
        fig.add_trace(go.Scatter(
            x=x, y=g["mean"], mode="lines+markers", name=str(dep), legendgroup=str(dep), line=dict(color=color, width=2),
            customdata=g[["ci_low", "ci_high", "n"]].to_numpy(),
            hovertemplate="%{x}<br>mean %{y:.4f}<br>95% CI [%{customdata[0]:.4f}, %{customdata[1]:.4f}]"
                          "<br>%{customdata[2]} cells<extra>" + str(dep) + "</extra>"))
    if zero_line:
        fig.add_hline(y=0, line=dict(color="#888", width=1, dash="dot"))
    fig.update_xaxes(title="batch", type="category")
    fig.update_yaxes(title=y_title)
    return _layout(fig, title)


def grid_heatmap(grid: pd.DataFrame, *, title: str, columns: int = 2) -> go.Figure:
    """Dimension x family squares per deployment, coloured by mean SCFS on one shared scale.

    Drawn as square scatter markers rather than heatmap traces, because Streamlit's chart
    selection works on points: clicking a square selects it, and its customdata starts with
    the id of the cell to open. One panel per deployment, all in one figure, so the browser
    draws a single chart however many deployments there are.
    """
    if grid.empty:
        return empty(title, "no cells for this selection")
    from plotly.subplots import make_subplots

    g = grid.copy()
    g["dim_label"] = g["dimension"].map(labels.dimension)
    g["fam_label"] = g["family"].map(labels.family)
    deps = sorted(g["deployment"].unique())
    cols = min(columns, len(deps))
    rows = -(-len(deps) // cols)
    valid = g["mean"].dropna()
    lo, hi = (min(0.0, float(valid.min())), float(valid.max())) if len(valid) else (0.0, 1.0)
    # Shared y axes: the dimension names are drawn once per row, not over the neighbouring panel.
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=deps, horizontal_spacing=0.06, shared_yaxes=True,
                        vertical_spacing=min(0.12, 0.5 / rows))
    for i, dep in enumerate(deps):
        d = g[g["deployment"] == dep]
        fig.add_trace(go.Scatter(
            x=d["fam_label"], y=d["dim_label"], mode="markers+text", name=str(dep), showlegend=False,
            marker=dict(symbol="square", size=34, color=d["mean"], coloraxis="coloraxis",
                        line=dict(width=d["significant"].gt(0).map({True: 3, False: 0}).tolist(), color="#D55E00")),
            text=[f"{int(s)}" if s else "" for s in d["significant"]], textfont=dict(color="white"),
            customdata=d[["top_cell_id", "dimension", "family", "significant", "cells", "ci_low", "ci_high"]].to_numpy(),
            hovertemplate="<b>" + str(dep) + "</b><br>%{y} x %{x}<br>mean SCFS %{marker.color:.4f}<br>"
                          "95% CI [%{customdata[5]:.4f}, %{customdata[6]:.4f}]<br>%{customdata[3]} of %{customdata[4]} "
                          "cells significant<extra>click to open the top bundle</extra>"),
            row=i // cols + 1, col=i % cols + 1)
    fig.update_xaxes(type="category", tickangle=-30)
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_layout(coloraxis=dict(colorscale=SEQUENTIAL, cmin=lo, cmax=hi, colorbar=dict(title="mean SCFS")))
    return _layout(fig, title, height=120 + rows * (70 + 42 * g["dim_label"].nunique()))


def stability_bars(stab: pd.DataFrame, *, title: str) -> go.Figure:
    """SD and CV of batch means per deployment, side by side (different scales, so two panels)."""
    if stab.empty:
        return empty(title, "needs at least one batch")
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("SD of batch means", "CV = SD / |mean|"))
    fig.add_trace(go.Bar(x=stab["deployment"], y=stab["sd"], name="SD", marker_color=PALETTE[0]), row=1, col=1)
    fig.add_trace(go.Bar(x=stab["deployment"], y=stab["cv"], name="CV", marker_color=PALETTE[1],
                         hovertemplate="%{x}<br>CV %{y:.2f}<extra>empty when the mean is about zero</extra>"),
                  row=1, col=2)
    fig.update_layout(showlegend=False)
    return _layout(fig, title)


def batch_deployment_heatmap(series: pd.DataFrame, *, title: str) -> go.Figure:
    if series.empty:
        return empty(title, "no scored cells for this selection")
    order = series.drop_duplicates("batch_label").sort_values("opened_at")["batch_label"].tolist()
    wide = series.pivot_table(index="deployment", columns="batch_label", values="mean").reindex(columns=order)
    fig = go.Figure(go.Heatmap(z=wide.to_numpy(), x=list(wide.columns), y=list(wide.index), colorscale=SEQUENTIAL,
                               colorbar=dict(title="mean"), hovertemplate="%{y}<br>%{x}<br>%{z:.4f}<extra></extra>"))
    fig.update_xaxes(type="category", title="batch")
    return _layout(fig, title, height=140 + 40 * len(wide.index))


def tau_line(tau: pd.DataFrame, *, title: str) -> go.Figure:
    if tau.empty or tau["tau"].isna().all():
        return empty(title, "needs two batches and two deployments")
    fig = go.Figure(go.Scatter(x=tau["batch_label"], y=tau["tau"], mode="lines+markers", line=dict(color=PALETTE[2]),
                               customdata=tau[["previous_label", "deployments"]].to_numpy(),
                               hovertemplate="%{customdata[0]} -> %{x}<br>tau %{y:.2f}<br>%{customdata[1]} deployments"
                                             "<extra></extra>"))
    fig.update_yaxes(range=[-1.05, 1.05], title="Kendall tau")
    fig.update_xaxes(type="category", title="batch")
    return _layout(fig, title)


def compare_scatter(cmp: pd.DataFrame, dep_a: str, dep_b: str, *, title: str) -> go.Figure:
    if cmp.empty:
        return empty(title, "no article was answered by both deployments")
    fig = go.Figure()
    for i, (dim, g) in enumerate(cmp.groupby("dimension", sort=True)):
        fig.add_trace(go.Scatter(x=g["scfs_a"], y=g["scfs_b"], mode="markers", name=labels.dimension(dim),
                                 marker=dict(color=color_for(i), size=8, opacity=0.75),
                                 customdata=g[["cell_a", "cell_b", "family"]].to_numpy(),
                                 hovertemplate=f"{dep_a} %{{x:.4f}}<br>{dep_b} %{{y:.4f}}<br>%{{customdata[2]}}<extra></extra>"))
    lo = float(min(cmp["scfs_a"].min(), cmp["scfs_b"].min()))
    hi = float(max(cmp["scfs_a"].max(), cmp["scfs_b"].max()))
    fig.add_shape(type="line", x0=lo, y0=lo, x1=hi, y1=hi, line=dict(color="#888", dash="dot"))
    fig.update_xaxes(title=f"SCFS {dep_a}")
    fig.update_yaxes(title=f"SCFS {dep_b}")
    return _layout(fig, title, height=460)


def compare_bars(summary: pd.DataFrame, *, title: str) -> go.Figure:
    """Mean SCFS per dimension for each deployment (columns dimension, deployment, mean, ci_low, ci_high)."""
    if summary.empty:
        return empty(title, "nothing to compare")
    fig = go.Figure()
    for i, (dep, g) in enumerate(summary.groupby("deployment", sort=True)):
        fig.add_trace(go.Bar(x=g["dimension"].map(labels.dimension), y=g["mean"], name=str(dep), marker_color=color_for(i),
                             error_y=dict(type="data", symmetric=False, array=(g["ci_high"] - g["mean"]).tolist(),
                                          arrayminus=(g["mean"] - g["ci_low"]).tolist())))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title="mean SCFS (95% CI)")
    return _layout(fig, title)


def bundle_profile(rows: pd.DataFrame, *, title: str) -> go.Figure:
    """Per identity: distance from the bundle centroid (bars) and sentiment (markers, second axis)."""
    if rows.empty:
        return empty(title, "no responses")
    fig = go.Figure()
    fig.add_trace(go.Bar(x=rows["identity"], y=rows["distance"], name="distance from centroid", marker_color=PALETTE[0]))
    fig.add_trace(go.Scatter(x=rows["identity"], y=rows["sentiment"], name="sentiment (VADER compound)", mode="markers",
                             marker=dict(color=PALETTE[5], size=12, symbol="diamond"), yaxis="y2"))
    fig.update_layout(yaxis=dict(title="1 - cos to centroid"),
                      yaxis2=dict(title="sentiment", overlaying="y", side="right", range=[-1.05, 1.05]))
    return _layout(fig, title)


def run_volume(runs: pd.DataFrame, *, title: str) -> go.Figure:
    """Responses and errors per cycle (columns started_at, responses, errors, status)."""
    if runs.empty:
        return empty(title, "no cycles yet")
    r = runs.sort_values("started_at")
    x = [f"{str(t)[:16].replace('T', ' ')} {s}" for t, s in zip(r["started_at"], r["status"])]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=r["responses"], name="responses", marker_color=PALETTE[0]))
    fig.add_trace(go.Bar(x=x, y=r["errors"], name="errors", marker_color=PALETTE[5]))
    fig.update_layout(barmode="group")
    fig.update_xaxes(title="cycle start (UTC) and status", type="category")
    return _layout(fig, title)


def review_bars(counts: pd.DataFrame, *, title: str) -> go.Figure:
    if counts.empty:
        return empty(title, "no significant cells")
    fig = go.Figure(go.Bar(x=counts["verdict"].map(labels.verdict), y=counts["cells"], marker_color=PALETTE[2]))
    fig.update_yaxes(title="significant cells")
    return _layout(fig, title, height=300)


def present(fig: go.Figure) -> go.Figure:
    """Larger type and taller plots for a meeting room."""
    fig.update_layout(font=dict(size=20), title_font=dict(size=28), height=max(fig.layout.height or 400, 520))
    return fig


def download_config(filename: str, image_format: str = "png") -> dict:
    """plotly modebar config: its camera button saves the chart as PNG or SVG in the browser."""
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": image_format if image_format in ("png", "svg") else "png",
                                     "filename": filename, "scale": 2}}
