"""Compare: two deployments on the same articles, side by side."""

import streamlit as st

from ui import charts, data, filters, labels, page, stats

c = page.ctx()
st.title("Compare deployments")
page.require_data(c)
page.caveat()

deps = c.options.get("deployments", [])
if len(deps) < 2:
    st.info("Comparing needs two deployments; this store has one. Add another under [[deployments]] in framewatch.toml.")
    st.stop()
a_param, b_param = filters.param("a"), filters.param("b")
left, right = st.columns(2)
dep_a = left.selectbox("Deployment A", deps, index=deps.index(a_param) if a_param in deps else 0, key="cmp_a")
rest = [d for d in deps if d != dep_a]
dep_b = right.selectbox("Deployment B", rest, index=rest.index(b_param) if b_param in rest else 0, key="cmp_b")
filters.set_param("a", dep_a)
filters.set_param("b", dep_b)

batch_id = filters.selected_batch(c.batches, c.filters)
if batch_id is None:
    st.info("No batch falls in the chosen date range. Widen 'Batch dates' in the sidebar.")
    st.stop()
cmp = data.compare_cells(c.path, dep_a, dep_b, c.filters.cells(batch_id=batch_id))
st.caption(f"Batch {c.batches.set_index('id').loc[batch_id, 'label']} (pick another under 'Batch' in the sidebar): "
           "cells of the two deployments on the same article, prompt family, paraphrase and dimension.")
if cmp.empty:
    st.info(f"{dep_a} and {dep_b} have no cell on the same article, family, paraphrase and dimension in this selection.")
    st.stop()

long = cmp.melt(id_vars=["dimension"], value_vars=["scfs_a", "scfs_b"], var_name="which", value_name="scfs")
long["deployment"] = long["which"].map({"scfs_a": dep_a, "scfs_b": dep_b})
per_dim = stats.grouped_mean_ci(long.dropna(subset=["scfs"]), ["dimension", "deployment"], "scfs")
page.chart(c, charts.compare_bars(per_dim, title=f"Mean SCFS per dimension on the same {cmp['article_id'].nunique()} articles"),
           "compare.bars")
page.chart(c, charts.compare_scatter(cmp, dep_a, dep_b, title="Matched cells: A against B (diagonal = equal)"),
           "compare.scatter")

if not c.present:
    m = st.columns(4)
    m[0].metric("Matched cells", len(cmp))
    m[1].metric(f"Higher SCFS in {dep_a}", int((cmp["scfs_a"] > cmp["scfs_b"]).sum()))
    m[2].metric(f"Significant in {dep_a}", int(cmp["sig_a"].fillna(0).sum()))
    m[3].metric(f"Significant in {dep_b}", int(cmp["sig_b"].fillna(0).sum()))
    st.subheader("Side by side")
    st.caption("Pick a row to open either deployment's bundle for that article, family and dimension.")
    shown = cmp.assign(dimension=cmp["dimension"].map(labels.dimension), family=cmp["family"].map(labels.family),
                       difference=cmp["scfs_a"] - cmp["scfs_b"]).sort_values("difference", key=abs, ascending=False)[
        ["batch_label", "title", "family", "paraphrase", "dimension", "scfs_a", "scfs_b", "difference", "sent_a", "sent_b",
         "cell_a", "cell_b"]]
    event = page.table(c, shown, f"compare-{dep_a}-{dep_b}", selectable=True, column_config={
        "title": st.column_config.TextColumn("article"),
        "scfs_a": st.column_config.NumberColumn(f"SCFS {dep_a}", format="%.4f"),
        "scfs_b": st.column_config.NumberColumn(f"SCFS {dep_b}", format="%.4f"),
        "difference": st.column_config.NumberColumn("A - B", format="%.4f"),
        "sent_a": st.column_config.NumberColumn(f"sentiment {dep_a}", format="%.3f"),
        "sent_b": st.column_config.NumberColumn(f"sentiment {dep_b}", format="%.3f")})
    row = page.selected_row(event, shown)
    if row is not None:
        b1, b2 = st.columns(2)
        if b1.button(f"Open {dep_a}'s bundle", key="open_a"):
            page.open_bundle(str(row["cell_a"]))
        if b2.button(f"Open {dep_b}'s bundle", key="open_b"):
            page.open_bundle(str(row["cell_b"]))
