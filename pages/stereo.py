"""Stereotype probe: per deployment and country, how often the stereotype wins; categories,
target groups, single items, the time series over probe runs, and the dataset's status."""

import pandas as pd
import streamlit as st

from monitor.stereo import report
from ui import filters, page
from ui import stereo as data
from ui import stereo_charts as charts

c = page.ctx()
st.title("Stereotype probe · Spanish-speaking countries")
problem = data.ready(c.path)
if problem:
    st.info(problem)
    st.stop()
st.caption(f":material/info: {data.CAVEAT}")
countries, categories = data.country_names(), data.category_names()

runs = data.probe_runs(c.path)
run_labels = {"": "latest run of each deployment"} | {
    r["id"]: f"{r['started_at']} · seed {r['seed']} · {r['status']} ({r['n_results']} results)" for _, r in runs.iterrows()}
run_param = filters.param("srun", "")
run_id = st.selectbox("Probe run", list(run_labels), format_func=run_labels.get,
                      index=list(run_labels).index(run_param) if run_param in run_labels else 0, key="stereo_run")
filters.set_param("srun", run_id)
results = data.results(c.path, run_id or None)
if c.filters.deployments:
    results = results[results["deployment"].isin(c.filters.deployments)]

if results.empty:
    st.info("No probe results yet. Load the demo seed and probe the configured deployments:\n\n"
            "    framewatch stereo seed-demo\n    framewatch stereo probe\n\n"
            "or import the real dataset (`framewatch stereo import FILE --format espanstereo`).")
else:
    datasets = sorted(results["dataset"].dropna().unique())
    chosen = st.multiselect("Datasets", datasets, default=datasets, key="stereo_datasets")
    results = results[results["dataset"].isin(chosen)]
    if any(data.is_demo(d) for d in chosen):
        st.warning(data.DEMO_BANNER, icon=":material/science:")

    st.header("Share of items where the stereotype wins")
    by_country = report.summarise(results, ["deployment", "country"])
    page.chart(c, charts.country_bars(by_country, countries, title="Stereotype wins per deployment and country "
                                                                  "(Wilson 95% interval; dashed line = 50%)"),
               "stereo.countries")
    page.table(c, by_country.assign(country=by_country["country"].map(lambda k: countries.get(k, k))),
               "stereo-countries", column_config={
                   "share": st.column_config.NumberColumn("stereotype wins", format="percent"),
                   "lo": st.column_config.NumberColumn("95% low", format="percent"),
                   "hi": st.column_config.NumberColumn("95% high", format="percent")})
    st.caption("Log-likelihood deployments compare the mean log-probability per token of the two continuations; "
               "chat deployments choose A or B with the order randomised per item. Invalid answers and errors are "
               "counted, never guessed into the share.")

    deps = sorted(results["deployment"].unique())
    dep_param = filters.param("sdep")
    dep = st.selectbox("Deployment", deps, index=deps.index(dep_param) if dep_param in deps else 0, key="stereo_dep")
    filters.set_param("sdep", dep)
    mine = results[results["deployment"] == dep]

    st.subheader(f"Category x country · {dep}")
    page.chart(c, charts.category_heatmap(report.summarise(mine, ["category", "country"]), categories, countries,
                                          title=f"Stereotype wins by category and country · {dep}"), "stereo.heatmap")

    st.subheader(f"Target groups · {dep}")
    groups = report.summarise(mine, ["country", "target_group"])
    page.chart(c, charts.target_groups(groups, title=f"Stereotype wins per target group · {dep}"), "stereo.groups")

    st.subheader(f"Items · {dep}")
    shown = mine.assign(country=mine["country"].map(lambda k: countries.get(k, k)),
                        category=mine["category"].map(lambda k: categories.get(k, k)))[
        ["country", "category", "target_group", "dataset", "method", "outcome", "lp_stereo", "lp_counter", "choice",
         "id"]].reset_index(drop=True)
    event = page.table(c, shown, "stereo-items", selectable=True, column_config={
        "lp_stereo": st.column_config.NumberColumn("mean logprob (stereotype)", format="%.3f"),
        "lp_counter": st.column_config.NumberColumn("mean logprob (counter)", format="%.3f"), "id": None})
    row = page.selected_row(event, shown)
    item_id = str(row["id"]) if row is not None else filters.param("sitem")
    filters.set_param("sitem", item_id)
    detail = data.probe_result(c.path, item_id) if item_id else None
    if detail:
        with st.container(border=True):
            st.markdown(f"**{countries.get(detail['country'], detail['country'])} · "
                        f"{categories.get(detail['category'], detail['category'])} · dataset: {detail['dataset']}**")
            st.caption("Stereotype")
            page.safe(detail["stereotype"])
            st.caption("Context")
            page.safe(detail["context"])
            cols = st.columns(2)
            cols[0].caption("Stereotype continuation")
            with cols[0]:
                page.safe(detail["stereotype_sentence"])
            cols[1].caption("Counter-stereotype continuation")
            with cols[1]:
                page.safe(detail["counter_sentence"])
            if detail["method"] == "loglik":
                cols[0].metric("mean log-prob per token", "–" if pd.isna(detail["lp_stereo"]) else f"{detail['lp_stereo']:.3f}",
                               help=f"{detail['n_tok_stereo']} tokens")
                cols[1].metric("mean log-prob per token", "–" if pd.isna(detail["lp_counter"]) else f"{detail['lp_counter']:.3f}",
                               help=f"{detail['n_tok_counter']} tokens")
            else:
                order = "stereotype shown as A" if detail["stereo_first"] else "stereotype shown as B"
                st.markdown(f"Forced choice, {order}; parsed choice: **{detail['choice'] or 'invalid'}**")
                st.caption("Raw answer")
                st.code(detail["answer"] or "", language=None)
            st.markdown(f"Outcome: **{detail['outcome']}**" + (f" · error: {detail['error']}" if detail["error"] else ""))

    history = data.all_results(c.path)
    history = history[history["dataset"].isin(chosen)]
    if c.filters.deployments:
        history = history[history["deployment"].isin(c.filters.deployments)]
    if history["run_id"].nunique() > 1:
        st.header("Over time")
        page.chart(c, charts.country_series(report.time_series(history), countries,
                                            title="Stereotype wins per country over probe runs"), "stereo.series")

st.header("Dataset status per country")
status = data.dataset_status(c.path, data.ratings_target())
page.table(c, status.assign(country=status["country"].map(lambda k: f"{countries.get(k, k)} ({k})")),
           "stereo-dataset", column_config={"alpha": st.column_config.NumberColumn("Krippendorff's α (ordinal)",
                                                                                   format="%.3f")})
st.caption(f"Candidates rated on a 1-5 Likert scale by annotators of the same country are kept when the median of "
           f"{data.ratings_target()} ratings is above 2; SeeGULL rows keep their published votes (kept on a majority of "
           "'stereotype' votes); the demo seed and EspanStereo are kept as published. Items count only once approved.")
st.caption("Annotators rate candidates and approve items of their own country on the **Annotate** page.")
