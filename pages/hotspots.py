"""Hotspots: where identity moves the answers most, per deployment and batch; each leads to its bundle."""

import streamlit as st

from ui import charts, data, filters, labels, page
from ui.text import escape_markdown, shorten

c = page.ctx()
st.title("Hotspots")
page.require_data(c)
page.caveat()

batch_id = filters.selected_batch(c.batches, c.filters)
if batch_id is None:
    st.info("No batch falls in the chosen date range. Widen 'Batch dates' in the sidebar.")
    st.stop()
batch_label = c.batches.set_index("id").loc[batch_id, "label"]
cell_filter = c.filters.cells(batch_id=batch_id)
grid = data.hotspot_grid(c.path, cell_filter)
ranked = data.ranked_cells(c.path, cell_filter)

st.caption(f"Batch {batch_label}. Squares: mean SCFS of the cells of each dimension x prompt family (invalid cells included where SCFS is defined); the number "
           "is how many cells are significant after FDR (outlined in orange). Click a square to open its strongest bundle.")
event = page.chart(c, charts.grid_heatmap(grid, title=f"Dimension x prompt family per deployment, batch {batch_label}"),
                   "hotspots.grid", key="grid", selectable=True)
chosen = page.selected_cell(event)
if chosen:
    page.open_bundle(chosen)

st.subheader(f"Significant cells, ranked by SCFS ({len(ranked)})")
if ranked.empty:
    st.info("No cell in this batch is significant after FDR for this selection. That is a result too: the "
            "identity effect is not distinguishable from sampling noise here.")
    st.stop()

top = ranked.head(5)
for i, row in enumerate(top.itertuples(), start=1):
    st.page_link("pages/bundle.py", query_params={"cell": row.cell_id}, icon=":material/arrow_forward:",
                 label=f"#{i} {labels.dimension(row.dimension)} x {labels.family(row.family)} · {row.deployment} · "
                       f"SCFS {row.scfs:.3f} · {labels.verdict(row.review)} · {escape_markdown(shorten(row.title, 48))}")

shown = ranked.assign(
    dimension=ranked["dimension"].map(labels.dimension), family=ranked["family"].map(labels.family),
    far_identity=ranked["far_identity"].map(labels.identity), review=ranked["review"].map(labels.verdict),
)[["deployment", "dimension", "family", "paraphrase", "title", "scfs", "s", "n", "s_minus_placebo",
   "sent_range_corrected", "q_value", "far_identity", "review", "cell_id"]]
event = page.table(c, shown, "hotspots", selectable=True, column_config={
    "title": st.column_config.TextColumn("article"), "scfs": st.column_config.NumberColumn("SCFS", format="%.4f"),
    "s": st.column_config.NumberColumn("S", format="%.4f"), "n": st.column_config.NumberColumn("N", format="%.4f"),
    "s_minus_placebo": st.column_config.NumberColumn("S - placebo", format="%.4f"),
    "sent_range_corrected": st.column_config.NumberColumn("sentiment range (corr.)", format="%.3f"),
    "q_value": st.column_config.NumberColumn("q", format="%.2e"),
    "far_identity": st.column_config.TextColumn("farthest identity"),
})
row = page.selected_row(event, shown)
if row is not None:
    page.open_bundle(str(row["cell_id"]))
