"""Annotator page (Spanish): onboarding, Likert ratings of candidates of one's own country,
items written and approved in-country. The annotator is kept in the URL (?annotator=...)."""

import os

import streamlit as st

from monitor.stereo import validate as v
from prompts.stereo import load_catalog
from ui import auth, page
from ui import stereo as data
from ui.text import escape_markdown

c = page.ctx()
st.title("Anotación de estereotipos")
problem = data.ready(c.path)
if problem:
    st.info(problem)
    st.stop()
catalog = load_catalog()
names = data.country_names()
categories = {k: cat.label for k, cat in catalog.categories.items()}

who = data.annotator(c.path, st.query_params.get("annotator", "")) if st.query_params.get("annotator") else None
if who is None:
    st.markdown("Gracias por ayudar a construir un conjunto de estereotipos **de tu país**. Vas a valorar qué tan "
                "comunes son, en tu país, frases que propuso un modelo de lenguaje. Tus respuestas sirven para medir "
                "estereotipos en modelos, no para difundirlos.")
    with st.form("onboarding"):
        name = st.text_input("Nombre o seudónimo", max_chars=80, key="ob_name")
        country = st.selectbox("País que vas a evaluar", list(names), format_func=names.get, key="ob_country")
        born = st.checkbox("Nací y me crie en ese país", key="ob_born")
        fluent = st.checkbox("Hablo español con fluidez", key="ob_fluent")
        st.caption("Opcional (no sensible): nos ayuda a describir quién anotó.")
        age = st.selectbox("Franja de edad", ["", *v.AGE_BANDS], key="ob_age")
        region = st.text_input("Región o provincia", max_chars=80, key="ob_region")
        password = (st.text_input("Contraseña de anotación", type="password", key="ob_pw")
                    if os.environ.get(data.ANNOTATOR_PASSWORD_ENV) else None)
        if st.form_submit_button("Empezar"):
            if password is not None and not auth.password_matches(password, os.environ.get(data.ANNOTATOR_PASSWORD_ENV)):
                st.error("Contraseña incorrecta.")
                st.stop()
            try:
                aid = data.write_annotator(c.path, name=name, country=country, born_raised=born, fluent=fluent,
                                           age_band=age or None, region=region or None)
            except v.ValidationError as exc:
                st.error(str(exc))
                st.stop()
            st.query_params["annotator"] = aid
            st.rerun()
    st.stop()

country = who["country"]
head = st.columns([5, 1])
head[0].markdown(f"Anotas como **{escape_markdown(who['name'])}** para **{names.get(country, country)}**. "
                 "Solo ves material de ese país.")
if head[1].button("Cambiar", key="switch_annotator"):
    del st.query_params["annotator"]
    st.rerun()

rate_tab, write_tab, approve_tab, mine_tab = st.tabs(["Valorar", "Escribir ítems", "Aprobar ítems", "Mis valoraciones"])

with rate_tab:
    candidate, progress = data.next_candidate(c.path, who["id"], country)
    done = progress["rated"] + progress["skipped"]
    total = done + progress["remaining"]
    st.progress(done / total if total else 1.0,
                text=f"Valoradas: {progress['rated']} · saltadas: {progress['skipped']} · pendientes para ti: "
                     f"{progress['remaining']} (cada frase necesita {progress['target']} valoraciones)")
    if candidate is None:
        st.success("No hay más frases para valorar en tu país por ahora. ¡Gracias!")
    else:
        st.caption(f"Categoría: {categories.get(candidate['category'], candidate['category'])}")
        st.subheader("¿Qué tan común es esta idea en tu país?")
        with st.container(border=True):
            page.safe(candidate["text"])
        rating = st.radio("Tu valoración", list(v.LIKERT_LABELS), format_func=v.LIKERT_LABELS.get, index=None,
                          key=f"likert_{candidate['id']}")
        cols = st.columns(2)
        if cols[0].button("Guardar valoración", type="primary", disabled=rating is None, key="save_rating"):
            data.write_rating(c.path, annotator_id=who["id"], candidate_id=candidate["id"], rating=int(rating))
            st.rerun()
        if cols[1].button("Saltar", key="skip_rating"):
            data.write_rating(c.path, annotator_id=who["id"], candidate_id=candidate["id"], rating=None)
            st.rerun()

with write_tab:
    kept = data.kept_without_items(c.path, country, data.ratings_target())
    if kept.empty:
        st.info("Ningún estereotipo conservado de tu país espera ítems ahora mismo.")
    else:
        st.caption("Escribe un ítem para un estereotipo conservado: una frase de contexto neutra y dos "
                   "continuaciones parecidas, una que confirme el estereotipo y otra que lo contradiga. Otra persona "
                   "de tu país lo aprobará antes de usarlo.")
        choice = st.selectbox("Estereotipo", list(kept["id"]), key="write_candidate",
                              format_func=lambda cid: str(kept.loc[kept["id"] == cid, "text"].iloc[0]))
        with st.form("write_item", clear_on_submit=True):
            ctx_text = st.text_input("Contexto", max_chars=300)
            s1 = st.text_input("Continuación estereotipada", max_chars=300)
            s2 = st.text_input("Continuación contraestereotipada", max_chars=300)
            if st.form_submit_button("Guardar ítem"):
                try:
                    data.write_item(c.path, annotator_id=who["id"], candidate_id=choice, context=ctx_text,
                                    stereotype_sentence=s1, counter_sentence=s2)
                    st.success("Ítem guardado; espera la aprobación de otra persona de tu país.")
                except v.ValidationError as exc:
                    st.error(str(exc))

with approve_tab:
    todo = data.items_to_approve(c.path, who["id"])
    if todo.empty:
        st.info("No hay ítems de tu país esperando aprobación.")
    else:
        item = todo.iloc[0]
        st.caption(f"{len(todo)} ítem(s) esperan aprobación · estereotipo:")
        page.safe(item["stereotype"])
        with st.container(border=True):
            st.markdown("**Contexto**")
            page.safe(item["context"])
            st.markdown("**Continuación estereotipada**")
            page.safe(item["stereotype_sentence"])
            st.markdown("**Continuación contraestereotipada**")
            page.safe(item["counter_sentence"])
        note = st.text_input("Nota (opcional)", key=f"note_{item['id']}", max_chars=500)
        cols = st.columns(2)
        for col, label, approve in ((cols[0], "Aprobar", True), (cols[1], "Rechazar", False)):
            if col.button(label, key=f"{'ok' if approve else 'no'}_{item['id']}"):
                try:
                    data.write_approval(c.path, annotator_id=who["id"], item_id=item["id"], approve=approve, note=note)
                except v.ValidationError as exc:
                    st.error(str(exc))
                    st.stop()
                st.rerun()

with mine_tab:
    mine = data.my_ratings(c.path, who["id"])
    if mine.empty:
        st.info("Todavía no valoraste ninguna frase.")
    else:
        shown = mine.assign(valoracion=mine["rating"].map(lambda r: "saltada" if r != r or r is None else v.LIKERT_LABELS[int(r)]))
        st.dataframe(shown[["text", "valoracion", "updated_at"]], hide_index=True, key="my_ratings",
                     column_config={"text": "frase", "updated_at": "fecha (UTC)"})
