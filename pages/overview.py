"""Overview: the latest batch at a glance and SCFS / sentiment disparity over batches."""

import streamlit as st

from ui import charts, data, filters, page

c = page.ctx()
st.title("Overview")
page.require_data(c)
page.caveat()

in_range = filters.batches_in_range(c.batches, c.filters)
latest = filters.selected_batch(c.batches, c.filters)
if latest is None:
    st.info("No batch falls in the chosen date range. Widen 'Batch dates' in the sidebar.")
    st.stop()

label = c.batches.set_index("id").loc[latest, "label"]
summary = data.batch_summary(c.path, latest)
st.subheader(f"Batch {label}")
cols = st.columns(6)
cols[0].metric("Batches in range", len(in_range))
cols[1].metric("Deployments", len(c.filters.deployments or c.options.get("deployments", [])))
cols[2].metric("Articles", summary["articles"], help="Articles ingested in this batch (sampled ones are asked about).")
cols[3].metric("Responses", summary["responses"], help=f"{summary['responses_not_ok']} were refusals, empty or errors.")
cols[4].metric("Valid cells", f"{summary['valid_cells']}/{summary['cells']}",
               help="A cell is valid when every identity slot has a non-empty, non-refusal answer.")
cols[5].metric("Hotspot cells", summary["significant_cells"],
               help="Cells significant after Benjamini-Hochberg FDR across the batch's grid.")

scfs = data.batch_series(c.path, c.filters.cells(), "scfs")
sent = data.batch_series(c.path, c.filters.cells(), "sent_range_corrected")
left, right = st.columns(2) if not c.present else (st.container(), st.container())
with left:
    page.chart(c, charts.series_with_bands(scfs, title="Semantic sensitivity beyond noise (SCFS), mean per batch",
                                           y_title="SCFS = S - N"), "overview.scfs")
with right:
    page.chart(c, charts.series_with_bands(sent, title="Sentiment disparity beyond noise, mean per batch",
                                           y_title="range of VADER compound - repeat range"), "overview.sentiment")
if len(in_range) == 1 and not c.present:
    st.caption("Only one batch so far: the series become lines once a second batch is scored.")
if not c.present and scfs["ci_low"].isna().any():
    st.caption("Bands are 95% bootstrap intervals that resample articles, since cells of one article share its "
               "controls; a batch with a single sampled article (as in the demo) has no interval.")

if not c.present:
    st.subheader("Latest values per deployment")
    last = scfs[scfs["batch_id"] == latest].rename(columns={"mean": "mean SCFS", "ci_low": "CI low", "ci_high": "CI high",
                                                            "n": "valid cells"})
    last_sent = sent[sent["batch_id"] == latest][["deployment", "mean"]].rename(columns={"mean": "mean sentiment disparity"})
    page.table(c, last.drop(columns=["batch_id", "opened_at"]).merge(last_sent, on="deployment", how="left"),
               "overview-latest")
