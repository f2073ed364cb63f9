"""Runs and feeds: monitoring cycles (progress, failures, counts, cost), feed health, and requests to the monitor."""

import json
from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from monitor.service_state import liveness
from store import StoreError
from store.reviews import REQUEST_RESCORE_BATCH, REQUEST_RUN_CYCLE, ReviewError
from ui import auth, charts, data, page
from ui.text import escape_markdown

c = page.ctx()
st.title("Runs and feeds")
page.require_data(c)


def counts(raw: object) -> dict:
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        value = {}
    return value if isinstance(value, dict) else {}


f = c.filters
runs = data.runs(c.path, f.date_from.isoformat() if f.date_from else None,
                 (f.date_to + pd.Timedelta(days=1)).isoformat() if f.date_to else None)
parsed = pd.DataFrame([counts(x) for x in runs["counts_json"]], index=runs.index)
for col in ("articles", "responses", "ok", "refusals", "errors", "tokens_in", "tokens_out", "cost", "cells",
            "significant_cells"):
    runs[col] = pd.to_numeric(parsed[col], errors="coerce") if col in parsed else pd.NA

# IS THE MONITOR ALIVE? (a dead monitor is otherwise only noticed at its next start)
state, sentence = liveness(data.monitor_status(c.path), datetime.now(UTC))
{"alive": st.success, "stale": st.error, "stopped": st.warning, "never": st.info}[state](sentence)

# THE RUNNING CYCLE
running = runs[runs["status"] == "running"]
for r in running.itertuples():
    total = int(r.progress_total or 0)
    done = int(r.progress_done or 0)
    st.progress(min(done / total, 1.0) if total else 0.0,
                text=f"Cycle for batch {r.batch_label or '…'} running: {r.stage} {done}/{total} "
                     f"(last heartbeat {r.heartbeat_at})")

m = st.columns(5)
m[0].metric("Cycles", len(runs))
m[1].metric("Failed", int((runs["status"] == "failed").sum()))
m[2].metric("Responses", int(runs["responses"].fillna(0).sum()))
m[3].metric("Errors", int(runs["errors"].fillna(0).sum()))
m[4].metric("Cost", f"{float(runs['cost'].fillna(0).sum()):.4f}", help="Sum of the per-cycle cost the monitor recorded.")
page.chart(c, charts.run_volume(runs.fillna({"responses": 0, "errors": 0}), title="Responses and errors per cycle"),
           "runs.volume")

failed = runs[runs["status"].isin(["failed", "partial", "abandoned"])]
if not failed.empty and not c.present:
    st.subheader("Cycles that did not finish cleanly")
    for r in failed.head(10).itertuples():
        with st.container(border=True):
            st.markdown(f"**{escape_markdown(r.status)}** · started {r.started_at} · batch {escape_markdown(r.batch_label)}")
            st.code(str(r.error or "no error recorded"), language=None, wrap_lines=True)

st.subheader("Cycles")
page.table(c, runs[["started_at", "finished_at", "status", "stage", "batch_label", "articles", "responses", "ok",
                    "refusals", "errors", "tokens_in", "tokens_out", "cost", "cells", "significant_cells", "error",
                    "config_version", "taxonomy_version", "families_version", "scorer_version", "id"]], "runs")

st.subheader("Feed health")
feeds = data.feeds(c.path)
if not feeds.empty and not c.present:
    bad = feeds[feeds["last_status"].fillna("").ne("ok") & feeds["last_polled_at"].notna()]
    if len(bad):
        st.warning(f"{len(bad)} of {len(feeds)} feeds failed on their last poll; see last_error below.")
page.table(c, feeds, "feeds")
with st.expander("Poll history"):
    page.table(c, data.feed_polls(c.path), "feed-polls")

# REQUESTS TO THE MONITOR (the dashboard never runs models itself)
if not c.present:
    st.subheader("Ask the monitor")
    st.caption("These add a request row; the running `framewatch monitor` picks it up on its next check.")
    reviewer = auth.sign_in_panel("runs")
    if reviewer:
        left, right = st.columns(2)
        if left.button("Run a cycle now", icon=":material/play_arrow:"):
            try:
                data.write_request(c.path, kind=REQUEST_RUN_CYCLE, args={}, requested_by=reviewer.name)
                st.toast("Requested: one cycle.")
            except (ReviewError, StoreError) as exc:
                st.error(str(exc))
        label_of = dict(zip(c.batches["id"], c.batches["label"]))
        batch = right.selectbox("Batch to re-score", list(reversed(c.batches["id"].tolist())), format_func=label_of.get)
        if right.button("Re-score this batch", icon=":material/refresh:"):
            try:
                data.write_request(c.path, kind=REQUEST_RESCORE_BATCH, args={"batch_id": batch}, requested_by=reviewer.name)
                st.toast(f"Requested: re-score batch {label_of.get(batch)}.")
            except (ReviewError, StoreError) as exc:
                st.error(str(exc))
    page.table(c, data.requests(c.path), "requests")
