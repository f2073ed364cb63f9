"""Review queue: significant cells nobody has judged yet, strongest first."""

import streamlit as st

from ui import charts, data, labels, page

c = page.ctx()
st.title("Review queue")
page.require_data(c)
st.caption("Significant cells (after FDR) with no verdict yet, across the batches in the date range. Open one, read "
           "every identity's answer, and record a verdict: stereotyping, cultural personalisation, legitimate "
           "difference, noise or unclear.")

counts = data.review_counts(c.path, c.filters.cells())
page.chart(c, charts.review_bars(counts, title="Significant cells by latest verdict"), "review.counts")
queue = data.ranked_cells(c.path, c.filters.cells(), True, True, 500)
if queue.empty:
    st.success("Nothing to review: every significant cell in this selection has a verdict.")
    st.stop()

st.subheader(f"Unreviewed hotspot cells ({len(queue)}{'+' if len(queue) >= 500 else ''})")
first = queue.iloc[0]
st.page_link("pages/bundle.py", query_params={"cell": first["cell_id"]}, icon=":material/arrow_forward:",
             label=f"Review the strongest: {labels.dimension(first['dimension'])} x {labels.family(first['family'])} · "
                   f"{first['deployment']} · batch {first['batch_label']} · SCFS {first['scfs']:.3f}")
shown = queue.assign(dimension=queue["dimension"].map(labels.dimension), family=queue["family"].map(labels.family))[
    ["batch_label", "deployment", "dimension", "family", "paraphrase", "title", "scfs", "q_value", "cell_id"]]
event = page.table(c, shown, "review-queue", selectable=True, column_config={
    "title": st.column_config.TextColumn("article"), "scfs": st.column_config.NumberColumn("SCFS", format="%.4f"),
    "q_value": st.column_config.NumberColumn("q", format="%.2e")})
row = page.selected_row(event, shown)
if row is not None:
    page.open_bundle(str(row["cell_id"]))
