"""Bundle: one cell's article and every identity's raw answer side by side, with its controls and review."""

import pandas as pd
import streamlit as st

import prompts as prompt_data
from store import StoreError
from store.reviews import VERDICTS, ReviewError
from ui import auth, charts, data, filters, labels, page
from ui.text import escape_markdown, plain, shorten

c = page.ctx()
st.title("Bundle")
page.require_data(c)

cell_id = filters.param("cell")
if not cell_id:
    st.info("A bundle is one deployment's answers to one article, prompt family, paraphrase and dimension. "
            "Open one from Hotspots, the Review queue or Search, or pick one of the strongest below.")
    batch_id = filters.selected_batch(c.batches, c.filters)
    top = data.ranked_cells(c.path, c.filters.cells(batch_id=batch_id), False, False, 10)
    for row in top.itertuples():
        st.page_link("pages/bundle.py", query_params={"cell": row.cell_id}, icon=":material/arrow_forward:",
                     label=f"{labels.dimension(row.dimension)} x {labels.family(row.family)} · {row.deployment} · "
                           f"paraphrase {row.paraphrase} · SCFS {row.scfs:.3f} · {escape_markdown(shorten(row.title, 48))}")
    st.stop()

cell = data.cell(c.path, cell_id)
if cell is None:
    st.error("This link points to a cell that is not in this database (it may come from another store). "
             "Open a bundle from Hotspots instead.")
    st.stop()

st.caption(f"Batch {cell['batch_label']} · deployment **{escape_markdown(cell['deployment'])}** "
           f"({escape_markdown(cell['model'])}) · {labels.dimension(cell['dimension'])} · "
           f"{labels.family(cell['family'])} · paraphrase {int(cell['paraphrase'])}")

# THE ARTICLE (feed text: shown as text, never as markup)
with st.container(border=True):
    st.markdown("#### " + escape_markdown(cell["title"]))
    page.safe(cell["summary"])
    st.caption(escape_markdown(f"{cell['feed_name'] or 'unknown feed'} · published {cell['published_at']}"))
    if cell["link"]:
        st.code(plain(cell["link"]), language=None)

# THE CELL'S SCORES
m = st.columns(6)
fmt = lambda v, p=4: "n/a" if v is None or pd.isna(v) else f"{v:.{p}f}"  # noqa: E731
m[0].metric("SCFS = S - N", fmt(cell["scfs"]), help="Semantic sensitivity beyond the sampling noise floor.")
m[1].metric("S", fmt(cell["s"]), help="Mean pairwise cosine distance between the identities' answers.")
m[2].metric("N (noise)", fmt(cell["n"]), help="The same statistic over repeated samples of one prompt.")
m[3].metric("S - S placebo", fmt(cell["s_minus_placebo"]), help="Identity effect beyond any label swap.")
m[4].metric("Sentiment range (corr.)", fmt(cell["sent_range_corrected"], 3),
            help="max - min VADER compound over identities, minus the same range over repeats.")
m[5].metric("q (FDR)", "n/a" if pd.isna(cell["q_value"]) else f"{cell['q_value']:.2g}",
            help="Benjamini-Hochberg adjusted p-value across the batch's grid.")
flags = [f"{int(cell['n_valid'] or 0)} of {int(cell['n_identities'] or 0)} identity answers valid",
         f"{int(cell['n_refusals'] or 0)} refusals", f"{int(cell['n_errors'] or 0)} errors",
         f"{int(cell['n_non_english'] or 0)} not English (no VADER score)",
         "significant after FDR" if cell["significant"] else "not significant"]
st.caption(" · ".join(flags))
if cell.get("note"):
    st.caption("Note: " + escape_markdown(cell["note"]))

# SWITCH PARAPHRASE, DIMENSION AND SAMPLE
rows = data.bundle(c.path, cell_id)
siblings = data.sibling_cells(c.path, cell["batch_id"], cell["deployment"], cell["article_id"], cell["family"])
same_dim = siblings[siblings["dimension"] == cell["dimension"]]
same_para = siblings[siblings["paraphrase"] == cell["paraphrase"]]
samples = sorted(rows.loc[rows["control"] == "identity", "sample_index"].unique().tolist()) or [0]
sample = int(filters.param("sample", "0")) if (filters.param("sample", "0") or "0").isdigit() else 0
sample = sample if sample in samples else samples[0]
s1, s2, s3 = st.columns(3)
para_choice = s1.selectbox("Paraphrase", same_dim["cell_id"].tolist(), key=f"para_{cell_id}",
                           index=same_dim["cell_id"].tolist().index(cell_id) if cell_id in same_dim["cell_id"].tolist() else 0,
                           format_func=lambda i: f"paraphrase {int(same_dim.set_index('cell_id').loc[i, 'paraphrase'])}")
dim_choice = s2.selectbox("Dimension", same_para["cell_id"].tolist(), key=f"dim_{cell_id}",
                          index=same_para["cell_id"].tolist().index(cell_id) if cell_id in same_para["cell_id"].tolist() else 0,
                          format_func=lambda i: labels.dimension(same_para.set_index("cell_id").loc[i, "dimension"]))
sample_choice = s3.selectbox("Sample", samples, index=samples.index(sample), key=f"sample_{cell_id}",
                             help="Each identity prompt is sampled more than once; the cell is scored on sample 0.")
for choice in (para_choice, dim_choice):
    if choice and choice != cell_id:
        page.open_bundle(choice, sample=str(sample_choice))
if sample_choice != sample:
    filters.set_param("sample", str(sample_choice))
    st.rerun()

# EVERY IDENTITY, SIDE BY SIDE
order = [i.key for i in prompt_data.load_taxonomy().dimensions.get(cell["dimension"], ())]
ident = rows[(rows["control"] == "identity") & (rows["sample_index"] == sample)].copy()
ident["order"] = ident["identity_key"].map(lambda k: order.index(k) if k in order else len(order))
ident = ident.sort_values(["order", "identity_key"])
ident["identity"] = ident["identity_key"].map(labels.identity)


def sentiment_text(r) -> str:
    if r.status != "ok":
        return "no sentiment: " + ("error" if r.status == "error" else r.status)
    if r.is_english == 0 or (pd.isna(r.sentiment) and isinstance(r.language, str) and r.language != "en"):
        return f"no sentiment: answer is not English ({r.language or 'unknown'}); VADER scores English only"
    return "sentiment n/a" if pd.isna(r.sentiment) else f"sentiment {r.sentiment:+.3f}"


st.subheader(f"Every identity's answer (sample {sample})")
st.caption("Distance = 1 - cosine similarity to the centroid of this sample's identity answers (MiniLM embeddings); "
           "sentiment = VADER compound in [-1, 1].")
per_row = 4
for start in range(0, len(ident), per_row):
    cols = st.columns(per_row)
    for col, r in zip(cols, ident.iloc[start:start + per_row].itertuples()):
        with col.container(border=True):
            marks = []
            if r.identity_key == cell["far_identity"]:
                marks.append("farthest from centroid")
            if r.identity_key == cell["sent_min_identity"]:
                marks.append("most negative")
            if r.identity_key == cell["sent_max_identity"]:
                marks.append("most positive")
            st.markdown(f"**{escape_markdown(r.identity)}**")
            st.caption(" · ".join([sentiment_text(r), "distance n/a" if pd.isna(r.distance) else f"distance {r.distance:.4f}",
                                   *marks]))
            if r.status == "error":
                st.caption("Error: " + escape_markdown(r.error))
            else:
                page.safe(r.text)
if ident.empty:
    st.warning("No identity responses are stored for this sample.")

page.chart(c, charts.bundle_profile(ident, title="Distance from the bundle centroid and sentiment, per identity"),
           "bundle.profile")
page.table(c, ident[["identity", "status", "sentiment", "language", "distance", "text", "question", "response_id"]],
           f"bundle-{cell_id}-sample-{sample}")

# THE CONTROLS
if not c.present:
    st.subheader("Controls")
    free, placebo = rows[rows["control"] == "identity_free"], rows[(rows["control"] == "placebo") & (rows["sample_index"] == sample)]
    others = rows[(rows["control"] == "identity") & (rows["sample_index"] != sample)]
    t1, t2, t3, t4 = st.tabs([f"Identity-free repeats ({len(free)})", f"Placebo ({len(placebo)})",
                              f"Other samples ({len(others)})", f"Paraphrases ({len(same_dim)})"])
    with t1:
        st.caption("The same question with no identity, sampled repeatedly: their spread is the noise floor N.")
        for r in free.itertuples():
            with st.container(border=True):
                st.caption(f"repeat {r.sample_index} · {sentiment_text(r)} · "
                           + ("distance n/a" if pd.isna(r.distance) else f"distance {r.distance:.4f}"))
                page.safe(r.text if r.status != "error" else f"Error: {r.error}")
    with t2:
        st.caption("Labels with no demographic content: how much answers move for any label swap.")
        for r in placebo.itertuples():
            with st.container(border=True):
                st.caption(f"{escape_markdown(labels.identity(r.identity_key))} · {sentiment_text(r)}")
                page.safe(r.text if r.status != "error" else f"Error: {r.error}")
    with t3:
        page.table(c, others.assign(identity=others["identity_key"].map(labels.identity))[
            ["sample_index", "identity", "status", "sentiment", "distance", "text"]], f"bundle-{cell_id}-other-samples")
    with t4:
        st.caption("The same dimension asked with the family's other wordings; a robust effect shows in each.")
        page.table(c, same_dim.drop(columns=["dimension"]), f"bundle-{cell_id}-paraphrases")

# REVIEW
if not c.present:
    st.subheader("Review")
    history = data.reviews_for_cell(c.path, cell_id)
    if history.empty:
        st.caption("Not reviewed yet.")
    else:
        latest = history.iloc[0]
        st.caption(f"Latest verdict: **{labels.verdict(latest['verdict'])}** by {escape_markdown(latest['reviewer'])} "
                   f"at {latest['created_at']}")
        page.table(c, history, f"reviews-{cell_id}")
    reviewer = auth.sign_in_panel("bundle")
    if reviewer:
        with st.form("review_form", clear_on_submit=True):
            verdict = st.radio("Verdict", list(VERDICTS), format_func=VERDICTS.get, horizontal=True)
            note = st.text_area("Note", max_chars=4000, placeholder="What you saw in the responses, and why.")
            if st.form_submit_button("Record verdict", type="primary"):
                try:
                    data.write_review(c.path, cell_id=cell_id, verdict=verdict, note=note, reviewer=reviewer.name,
                                      auth_method=reviewer.method)
                except (ReviewError, StoreError) as exc:
                    st.error(str(exc))
                else:
                    st.toast(f"Recorded: {VERDICTS[verdict]}.")
                    st.rerun()
