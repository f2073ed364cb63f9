"""Methods: what each score means and does not mean (docs/METHODS.md), with a glossary."""

from pathlib import Path

import streamlit as st

from ui import page
from ui.glossary import GLOSSARY

page.ctx()  # no data needed, but a deep link must still go through app.py (see ui.page.ctx)
st.title("Methods")
page.caveat()

st.subheader("The scores at a glance")
for name, (means, not_means) in GLOSSARY.items():
    with st.expander(name):
        st.markdown(f"**What it measures.** {means}\n\n**What it does not mean.** {not_means}")

methods = Path(__file__).resolve().parents[1] / "docs" / "METHODS.md"
st.subheader("Full method")
if methods.exists():
    # The project's own document (trusted): rendered as Markdown, HTML still escaped by Streamlit.
    st.markdown(methods.read_text(encoding="utf-8"))
else:
    st.info("docs/METHODS.md is not in this installation; the glossary above summarises it.")
