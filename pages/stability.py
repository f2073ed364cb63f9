"""Stability: how much each deployment's batch means move across batches, and whether rankings hold."""

import streamlit as st

from ui import charts, data, page, stats

c = page.ctx()
st.title("Stability")
page.require_data(c)
page.caveat()

metric = st.radio("Metric", ["scfs", "sent_range_corrected"], horizontal=True, key="stab_metric",
                  format_func={"scfs": "SCFS", "sent_range_corrected": "Sentiment disparity (noise-corrected)"}.get)
series = data.batch_series(c.path, c.filters.cells(), metric)
stab = stats.stability(series)
tau = stats.rank_agreement(series)

if series["batch_id"].nunique() < 2 and not c.present:
    st.info("Stability needs at least two scored batches; one is shown so far.")

page.chart(c, charts.stability_bars(stab, title="Spread of batch means per deployment"), "stability.sd")
left, right = st.columns(2) if not c.present else (st.container(), st.container())
with left:
    page.chart(c, charts.batch_deployment_heatmap(series, title="Batch x deployment mean"), "stability.heatmap")
with right:
    page.chart(c, charts.tau_line(tau, title="Rank agreement of deployments between consecutive batches"),
               "stability.tau")

st.markdown("SD and CV are computed over each deployment's batch means; CV = SD / |mean| is left empty when "
            "the mean is about zero. Kendall tau compares the ranking of deployments in one batch with the "
            "previous batch (1 = same order, -1 = reversed).")
page.table(c, stab, "stability")
page.table(c, tau, "rank-agreement")
