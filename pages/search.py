"""Search: full-text search over responses and articles (SQLite FTS5); every hit leads to its bundle."""

import streamlit as st

from ui import data, filters, labels, page
from ui.text import escape_markdown, shorten

c = page.ctx()
st.title("Search")
page.require_data(c)

scopes = {"responses": "Model responses", "articles": "Articles"}
scope_param = filters.param("in", "responses")
left, right = st.columns([3, 1])
text = left.text_input("Search text", value=filters.param("q", "") or "", key="search_q", max_chars=200,
                       placeholder="e.g. worried about rent", help="The words are matched as a phrase, in order; case and punctuation do not matter.")
scope = right.radio("In", list(scopes), format_func=scopes.get, key="search_in",
                    index=list(scopes).index(scope_param) if scope_param in scopes else 0)
filters.set_param("q", text.strip() or None)
filters.set_param("in", scope if scope != "responses" else None)
if not text.strip():
    st.caption("Type a word or phrase. Deployment, dimension, family and batch filters from the sidebar apply to "
               "response search.")
    st.stop()

if scope == "responses":
    hits = data.search_responses(c.path, text.strip(), c.filters.cells(batch_id=c.filters.batch), 50)
    st.caption(f"{len(hits)} responses{' (first 50)' if len(hits) == 50 else ''} matching "
               f"\u201c{escape_markdown(text.strip())}\u201d.")
    if hits.empty:
        st.stop()
    shown = hits.assign(identity=hits["identity_key"].map(labels.identity), family=hits["family"].map(labels.family),
                        text=hits["text"].map(lambda t: shorten(t, 200)))[
        ["deployment", "identity", "control", "family", "paraphrase", "sample_index", "status", "text", "title", "cell_id"]]
    event = page.table(c, shown, "search-responses", selectable=True,
                       column_config={"title": st.column_config.TextColumn("article")})
    row = page.selected_row(event, shown)
    if row is not None and isinstance(row["cell_id"], str):
        page.open_bundle(row["cell_id"], sample=str(int(row["sample_index"])))
else:
    hits = data.search_articles(c.path, text.strip(), 50)
    st.caption(f"{len(hits)} articles matching \u201c{escape_markdown(text.strip())}\u201d.")
    if hits.empty:
        st.stop()
    shown = hits.assign(summary=hits["summary"].map(lambda t: shorten(t, 200)))[
        ["batch_label", "feed_name", "published_at", "title", "summary", "stratum", "article_id"]]
    event = page.table(c, shown, "search-articles", selectable=True)
    row = page.selected_row(event, shown)
    if row is not None:
        cells = data.article_cells(c.path, str(row["article_id"]))
        st.markdown("**" + escape_markdown(row["title"]) + "**")
        st.caption(f"{len(cells)} cells built from this article; the strongest first.")
        for cell in cells.head(12).itertuples():
            st.page_link("pages/bundle.py", query_params={"cell": cell.cell_id}, icon=":material/arrow_forward:",
                         label=f"{cell.deployment} · {labels.dimension(cell.dimension)} x {labels.family(cell.family)} · "
                               f"paraphrase {cell.paraphrase} · SCFS {cell.scfs:.3f}")
