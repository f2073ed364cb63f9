"""The frame around every page: store checks, shared filters, presentation mode, and the
small rendering helpers pages use (charts with downloads, tables with CSV, safe text)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ui import charts, data, filters
from ui.filters import Filters, View
from ui.text import plain

CHARTS: dict[str, str] = {
    "overview.scfs": "Overview: SCFS per deployment over batches",
    "overview.sentiment": "Overview: sentiment disparity per deployment over batches",
    "stability.sd": "Stability: SD and CV per deployment",
    "stability.heatmap": "Stability: batch x deployment",
    "stability.tau": "Stability: rank agreement between batches",
    "hotspots.grid": "Hotspots: dimension x family grid",
    "compare.bars": "Compare: mean SCFS per dimension",
    "compare.scatter": "Compare: matched cells",
    "bundle.profile": "Bundle: distance and sentiment per identity",
    "runs.volume": "Runs: responses and errors per cycle",
    "review.counts": "Review queue: verdicts on significant cells",
    "stereo.countries": "Stereotype probe: stereotype wins per deployment and country",
    "stereo.heatmap": "Stereotype probe: category x country",
    "stereo.groups": "Stereotype probe: target groups",
    "stereo.series": "Stereotype probe: country scores over probe runs",
}
"""Chart id -> title, offered under 'Charts to present'. Pages of other areas add theirs here."""
HEADLINE = ("overview.scfs", "overview.sentiment", "stability.sd", "hotspots.grid", "compare.bars", "bundle.profile")
"""Shown in presentation mode when no chart was chosen explicitly (charts not listed in CHARTS too)."""

CAVEAT = ("Every score here is an audit signal for human review: it says that a model's answer moved when only the "
          "stated identity changed. It is not a fairness ranking of models and not proof of harm; read the raw "
          "responses (Bundle) and the Methods page before drawing conclusions.")

PRESENTATION_CSS = """<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 20px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.3rem; }
[data-testid="stMetricValue"], [data-testid="stMetricValue"] * { font-size: 2.5rem !important; }
[data-testid="stMetricLabel"] p { font-size: 1.05rem; }
[data-testid="stText"], [data-testid="stText"] * { font-size: 1.25rem; }
h1 { font-size: 3.2rem !important; } h2 { font-size: 2.4rem !important; } h3 { font-size: 2rem !important; }
</style>"""

@dataclass(frozen=True, slots=True)
class Ctx:
    path: str
    state: data.StoreState
    filters: Filters
    view: View
    options: dict
    batches: pd.DataFrame

    @property
    def present(self) -> bool:
        return self.view.present


def _store(path: str) -> tuple[data.StoreState, dict, pd.DataFrame]:
    state = data.store_state(path)
    if state.status in ("ok", "empty"):
        return state, data.options(path), data.batches(path)
    return state, {}, pd.DataFrame(columns=["id", "label", "opened_at"])


def frame(current_page) -> Ctx:
    """Called by app.py on every run, before the page: checks the store and draws the shared sidebar."""
    path = data.db_path()
    state, options, batches = _store(path)
    f, v = filters.sidebar(options, batches, list(CHARTS.items()))
    if v.present:
        st.html(PRESENTATION_CSS)
    with st.sidebar:
        st.caption(f"Store: `{path}`")
    return Ctx(path, state, f, v, options, batches)


def _leave_legacy_multipage_mode() -> None:
    """Make a deep link on a freshly started server go through app.py.

    Streamlit treats an app with a `pages/` folder as a legacy multipage app until some
    session runs st.navigation: the first request for /bundle?cell=... would run
    pages/bundle.py on its own (no navigation, no shared filters). Clearing that flag and
    re-running sends the request through app.py, whose page url_paths equal the file names (keep them so),
    so the same page is resolved with its query parameters.
    """
    from streamlit import config
    from streamlit.runtime.pages_manager import PagesManager

    # AppTest resets the flag before every run, so there the rerun would only lose the
    # run's button clicks; pages then run on their own, which the tests account for.
    if PagesManager.uses_pages_directory and not config.get_option("global.appTest"):
        PagesManager.uses_pages_directory = False
        st.rerun()


def ctx() -> Ctx:
    """What a page needs: the store, its state and the current filters (from the session, else the URL)."""
    _leave_legacy_multipage_mode()
    path = data.db_path()
    state, options, batches = _store(path)
    f, v = filters.load_state(options, batches)
    return Ctx(path, state, f, v, options, batches)


def require_data(c: Ctx) -> None:
    """Stop the page with a helpful first-run message when there is nothing to show yet."""
    if c.state.status == "ok":
        return
    st.info(f"{c.state.message}\n\n" + {
        "missing": "To get started, build the demo store and open it here:\n\n"
                   "    framewatch demo            # builds data/demo.db with the local model, then serves this dashboard\n\n"
                   "or run one monitoring cycle on your own configuration:\n\n"
                   "    framewatch init && framewatch run-once\n    framewatch dashboard --db data/framewatch.db",
        "empty": "The database exists but no cycle has finished yet. Run `framewatch run-once` (or start "
                 "`framewatch monitor`) and this page fills in as batches are scored.",
        "outdated": "Bring the schema up to date with `framewatch init --db <this file>`; it only adds tables.",
        "broken": "Point the dashboard at a framewatch store with `framewatch dashboard --db PATH` "
                  "(or the FRAMEWATCH_DB environment variable).",
    }.get(c.state.status, ""))
    st.stop()


def caveat() -> None:
    st.caption(f":material/info: {CAVEAT}")


def shows_chart(c: Ctx, chart_id: str) -> bool:
    if not c.present:
        return True
    if c.view.show:
        return chart_id in c.view.show
    return chart_id in HEADLINE or chart_id not in CHARTS


def chart(c: Ctx, fig: go.Figure, chart_id: str, *, key: str | None = None, selectable: bool = False):
    """A plotly chart whose toolbar camera saves PNG or SVG; None when presentation mode hides it."""
    if not shows_chart(c, chart_id):
        return None
    if c.present:
        fig = charts.present(fig)
    config = charts.download_config(f"framewatch-{chart_id.replace('.', '-')}", c.view.image_format)
    if selectable:
        return st.plotly_chart(fig, config=config, key=key or chart_id, on_select="rerun", selection_mode="points")
    st.plotly_chart(fig, config=config, key=key or chart_id)
    return None


def table(c: Ctx, df: pd.DataFrame, name: str, *, key: str | None = None, selectable: bool = False,
          column_config: dict | None = None, height: int | str = "auto"):
    """A table with a CSV download; hidden in presentation mode. Returns the selection event when selectable."""
    if c.present:
        return None
    key = key or f"table_{name}"
    event = st.dataframe(df, key=key, hide_index=True, column_config=column_config, height=height,
                         on_select="rerun" if selectable else "ignore",
                         selection_mode="single-row" if selectable else "multi-row")
    st.download_button(f"Download {name} as CSV", data=lambda d=df: d.to_csv(index=False).encode("utf-8"),
                       file_name=f"framewatch-{name}.csv", mime="text/csv", key=f"{key}_csv", on_click="ignore",
                       icon=":material/download:")
    return event if selectable else None


def selected_row(event, df: pd.DataFrame) -> pd.Series | None:
    rows = getattr(getattr(event, "selection", None), "rows", None) or []
    if rows and rows[0] < len(df):
        return df.iloc[rows[0]]
    return None


def selected_points(event) -> list[dict]:
    return list(getattr(getattr(event, "selection", None), "points", None) or [])


def selected_cell(event) -> str | None:
    """The cell id carried (first in customdata) by the first selected point of a chart, if any."""
    for point in selected_points(event):
        custom = point.get("customdata") if isinstance(point, dict) else None
        if isinstance(custom, (list, tuple)) and custom and isinstance(custom[0], str) and custom[0]:
            return custom[0]
    return None


def safe(text: object) -> None:
    """Untrusted text (feeds, models) shown exactly as written: st.text parses neither HTML nor
    Markdown, so not even a bare URL becomes a link."""
    st.text(plain(text))


def open_bundle(cell_id: str, **extra: str) -> None:
    st.switch_page("pages/bundle.py", query_params={"cell": cell_id, **extra})
