"""Shared filters and view state, kept in the URL so every view is a shareable link.

The URL is the source of truth when a session opens (a shared link), and the widgets are
the source of truth while the session lives; after every run the current state is written
back to st.query_params. Page-specific state (the bundle's cell, the search text ...) uses
the same mechanism through ``param`` / ``set_param``.

``parse`` and ``to_params`` are pure and tested directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta

import pandas as pd
import streamlit as st

from store.queries import CellFilter
from ui import labels

MULTI_KEYS = {"dep": "deployments", "dim": "dimensions", "fam": "families", "stratum": "strata"}
"""URL key -> Filters field, for the multi-valued filters."""
FILTER_KEYS = (*MULTI_KEYS, "batch", "from", "to")
PRESENT_KEY = "present"
SHOW_KEY = "show"
IMAGE_KEY = "img"
VIEW_KEYS = (PRESENT_KEY, SHOW_KEY, IMAGE_KEY)
_SYNCED = "_fw_synced_params"


@dataclass(frozen=True, slots=True)
class Filters:
    deployments: tuple[str, ...] = ()
    dimensions: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    strata: tuple[str, ...] = ()
    batch: str | None = None
    """A batch id, or None for 'the latest batch in the date range'."""
    date_from: date | None = None
    date_to: date | None = None
    """Inclusive."""

    def cells(self, *, batch_id: str | None = None) -> CellFilter:
        """The store filter; ``batch_id`` narrows to one batch (pages that show a single batch)."""
        return CellFilter(
            deployments=self.deployments, dimensions=self.dimensions, families=self.families, strata=self.strata,
            batch_ids=(batch_id,) if batch_id else (),
            date_from=self.date_from.isoformat() if self.date_from else None,
            date_to=(self.date_to + timedelta(days=1)).isoformat() if self.date_to else None,
        )


@dataclass(frozen=True, slots=True)
class View:
    present: bool = False
    show: tuple[str, ...] = ()
    """Chart ids shown in presentation mode; empty = each page's headline charts."""
    image_format: str = "png"


def _date(text: str | None) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def parse(params: Mapping[str, Sequence[str]], options: Mapping[str, Sequence[str]], batch_ids: Sequence[str]) -> Filters:
    """URL parameters (key -> list of values) -> Filters, dropping values the store does not have."""
    values = {}
    for key, field in MULTI_KEYS.items():
        allowed = set(options.get(field, ()))
        seen = []
        for v in params.get(key, ()):
            if v in allowed and v not in seen:
                seen.append(v)
        values[field] = tuple(seen)
    batch = next(iter(params.get("batch", ())), None)
    d_from, d_to = _date(next(iter(params.get("from", ())), None)), _date(next(iter(params.get("to", ())), None))
    if d_from and d_to and d_from > d_to:
        d_from, d_to = d_to, d_from
    return Filters(**values, batch=batch if batch in set(batch_ids) else None, date_from=d_from, date_to=d_to)


def to_params(f: Filters) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, field in MULTI_KEYS.items():
        if getattr(f, field):
            out[key] = list(getattr(f, field))
    if f.batch:
        out["batch"] = [f.batch]
    if f.date_from:
        out["from"] = [f.date_from.isoformat()]
    if f.date_to:
        out["to"] = [f.date_to.isoformat()]
    return out


def parse_view(params: Mapping[str, Sequence[str]]) -> View:
    present = next(iter(params.get(PRESENT_KEY, ())), "") in ("1", "true", "yes")
    show = tuple(v for raw in params.get(SHOW_KEY, ()) for v in raw.split(",") if v)
    fmt = next(iter(params.get(IMAGE_KEY, ())), "png")
    return View(present=present, show=show, image_format=fmt if fmt in ("png", "svg") else "png")


def view_params(v: View) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if v.present:
        out[PRESENT_KEY] = ["1"]
    if v.show:
        out[SHOW_KEY] = [",".join(v.show)]
    if v.image_format != "png":
        out[IMAGE_KEY] = [v.image_format]
    return out


def batches_in_range(batches: pd.DataFrame, f: Filters) -> pd.DataFrame:
    """Batches whose opening date lies in the filter's date range (all when unset), oldest first."""
    if batches.empty:
        return batches
    opened = pd.to_datetime(batches["opened_at"], utc=True, format="ISO8601").dt.date
    keep = pd.Series(True, index=batches.index)
    if f.date_from:
        keep &= opened >= f.date_from
    if f.date_to:
        keep &= opened <= f.date_to
    return batches[keep]


def selected_batch(batches: pd.DataFrame, f: Filters) -> str | None:
    """The batch a single-batch page shows: the chosen one, else the latest in the date range."""
    if f.batch:
        return f.batch
    in_range = batches_in_range(batches, f)
    return None if in_range.empty else str(in_range.iloc[-1]["id"])


# -- streamlit side -----------------------------------------------------------------------

def _url_params() -> dict[str, list[str]]:
    return {k: st.query_params.get_all(k) for k in st.query_params.keys()}


def param(name: str, default: str | None = None) -> str | None:
    values = st.query_params.get_all(name)
    return values[0] if values else default


def set_param(name: str, value: str | None) -> None:
    if value is None or value == "":
        if name in st.query_params:
            del st.query_params[name]
    elif st.query_params.get(name) != value:
        st.query_params[name] = value


_FILTERS, _VIEW = "_fw_filters", "_fw_view"
_WIDGETS = {  # widget key -> (state object, field)
    "w_dep": (_FILTERS, "deployments"), "w_dim": (_FILTERS, "dimensions"), "w_fam": (_FILTERS, "families"),
    "w_stratum": (_FILTERS, "strata"), "w_batch": (_FILTERS, "batch"), "w_dates": (_FILTERS, "dates"),
    "w_present": (_VIEW, "present"), "w_show": (_VIEW, "show"), "w_img": (_VIEW, "image_format"),
}


def _state_keys() -> tuple[str, ...]:
    return (*FILTER_KEYS, *VIEW_KEYS)


def load_state(options: Mapping[str, Sequence[str]], batches: pd.DataFrame) -> tuple[Filters, View]:
    """The session's state; taken from the URL when the session starts or the URL was changed from outside.

    Kept under plain session keys, not widget keys, because Streamlit forgets a widget's
    state on any run that does not draw it (presentation mode hides the filters).
    """
    ss = st.session_state
    url = {k: v for k, v in _url_params().items() if k in _state_keys()}
    if _FILTERS not in ss or (url and url != ss.get(_SYNCED)):
        ss[_FILTERS] = parse(url, options, batches["id"].tolist() if not batches.empty else [])
        ss[_VIEW] = parse_view(url)
    return ss[_FILTERS], ss[_VIEW]


def _widget_value(key: str) -> object:
    obj, field = _WIDGETS[key]
    state = st.session_state[obj]
    if field == "dates":
        return tuple(d for d in (state.date_from, state.date_to) if d)
    value = getattr(state, field)
    if field == "batch":
        return value or ""
    return list(value) if isinstance(value, tuple) else value


def _on_change(key: str) -> None:
    obj, field = _WIDGETS[key]
    value = st.session_state[key]
    if field == "dates":
        dates = tuple(value or ())
        changes = {"date_from": dates[0] if dates else None, "date_to": dates[1] if len(dates) > 1 else None}
    elif field == "batch":
        changes = {"batch": value or None}
    elif isinstance(value, list):
        changes = {field: tuple(value)}
    else:
        changes = {field: value}
    st.session_state[obj] = replace(st.session_state[obj], **changes)


def _bound(widget, label: str, key: str, *args, **kwargs):
    """Draw a widget whose value lives in the session state object, not in the widget."""
    st.session_state[key] = _widget_value(key)
    return widget(label, *args, key=key, on_change=_on_change, args=(key,), **kwargs)


def _clamp_dates(lo: date, hi: date) -> None:
    f = st.session_state[_FILTERS]

    def clamp(d: date | None) -> date | None:
        return None if d is None else min(max(d, lo), hi)

    st.session_state[_FILTERS] = replace(f, date_from=clamp(f.date_from), date_to=clamp(f.date_to))


def write_url(f: Filters, v: View) -> None:
    """Mirror the state into the URL (leaving page-specific parameters alone)."""
    wanted = {**to_params(f), **view_params(v)}
    for key in _state_keys():
        if key in wanted:
            if st.query_params.get_all(key) != wanted[key]:
                st.query_params[key] = wanted[key] if len(wanted[key]) > 1 else wanted[key][0]
        elif key in st.query_params:
            del st.query_params[key]
    st.session_state[_SYNCED] = wanted


def sidebar(options: Mapping[str, Sequence[str]], batches: pd.DataFrame,
            charts: Sequence[tuple[str, str]]) -> tuple[Filters, View]:
    """Draw the shared filters (hidden in presentation mode) and return the state they describe."""
    f, v = load_state(options, batches)
    with st.sidebar:
        _bound(st.toggle, "Presentation mode", "w_present",
               help="Larger type, no filters, only the charts chosen under 'Presentation and export'.")
        if not v.present:
            st.markdown("**Filters**")
            _bound(st.multiselect, "Deployment", "w_dep", options.get("deployments", []), placeholder="all")
            _bound(st.multiselect, "Dimension", "w_dim", options.get("dimensions", []), format_func=labels.dimension,
                   placeholder="all")
            _bound(st.multiselect, "Prompt family", "w_fam", options.get("families", []), format_func=labels.family,
                   placeholder="all")
            _bound(st.multiselect, "Stratum", "w_stratum", options.get("strata", []), placeholder="all",
                   format_func=lambda s: s.replace("_", "-"))
            if not batches.empty:
                opened = pd.to_datetime(batches["opened_at"], utc=True, format="ISO8601").dt.date
                _clamp_dates(opened.min(), opened.max())
                _bound(st.date_input, "Batch dates", "w_dates", min_value=opened.min(), max_value=opened.max(),
                       help="Batches opened in this range (inclusive). Clear it to see every batch.")
                label_of = dict(zip(batches["id"], batches["label"]))
                _bound(st.selectbox, "Batch (single-batch pages)", "w_batch", ["", *reversed(batches["id"].tolist())],
                       format_func=lambda b: label_of.get(b, "latest in range") if b else "latest in range")
            with st.expander("Presentation and export"):
                titles = dict(charts)
                st.session_state[_VIEW] = replace(v, show=tuple(c for c in v.show if c in titles))
                _bound(st.multiselect, "Charts to present", "w_show", list(titles),
                       format_func=lambda c: titles.get(c, c), placeholder="headline charts")
                _bound(st.radio, "Chart download format", "w_img", ["png", "svg"], horizontal=True,
                       help="Used by the camera button in each chart's toolbar.")
    f, v = st.session_state[_FILTERS], st.session_state[_VIEW]
    write_url(f, v)
    return f, v
