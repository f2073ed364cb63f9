"""Candidate retrieval: six Spanish perspectives, rounds until nothing new, deduplication by
normalised text and embedding similarity, every raw output stored, refusals and errors kept,
resume without new requests; instantiation drafts; the real MiniLM in a slow test."""

from __future__ import annotations

import pytest

from monitor import config as config_mod
from monitor.providers import ProviderError
from monitor.stereo import validate as v
from monitor.stereo.embedding import HashingEmbedder
from monitor.stereo.generate import build_request, classify, generate
from monitor.stereo.instantiate import draft_items, parse_draft
from monitor.stereo.text import normalise, parse_candidates
from monitor.types import Completion
from prompts.stereo import load_perspectives
from store import stereo as store

DEP = {"name": "chat", "provider": "scripted", "prompt_style": "chat", "temperature": 0.9}


def _cfg(**stereo):
    return config_mod.parse({"deployments": [DEP, {"name": "base", "provider": "local"}], "stereo": stereo},
                            where="test", base=config_mod.Path("."))


class ListModel:
    """Answers by round: round r returns the first r*2 stereotypes of its list (so round 3 adds nothing
    when the list has 4), plus formatting noise the parser must survive."""

    LISTS = ["las mujeres: conducen mal", "los hombres: no lloran", "las mujeres: son emocionales",
             "los hombres: no saben cocinar"]

    def __init__(self, refuse_perspective: str | None = None):
        self.name = "list-model"
        self.calls = []
        self.refuse = refuse_perspective

    def complete(self, request):
        text = request.messages[-1][1]
        self.calls.append(text)
        if self.refuse and load_perspectives().perspectives[self.refuse].question.split("{")[0] in text:
            return Completion(text="Lo siento, no puedo generar estereotipos sobre grupos de personas.", model_reported="m")
        round_ = 1 + sum(1 for c in self.calls[:-1] if c == text)
        shown = self.LISTS[: min(len(self.LISTS), 2 * round_)]
        lines = ["Estereotipos comunes:", ""] + [f"{i + 1}. **{s.capitalize()}**" for i, s in enumerate(shown)]
        return Completion(text="\n".join(lines), model_reported="m")


def test_parse_candidates_handles_lists_headings_and_separators():
    raw = ("Aquí tienes algunos:\n\n1. Las mujeres: conducen mal\n- **Los hombres** — no lloran\n• gitanos - venden en "
           "mercadillos\n2) Los jóvenes son vagos\n\n---\n")
    assert parse_candidates(raw) == [("Las mujeres", "conducen mal"), ("Los hombres", "no lloran"),
                                     ("gitanos", "venden en mercadillos"), ("", "Los jóvenes son vagos")]
    assert normalise("  Las MUJERES: ¡Conducen mal!  ") == "las mujeres conducen mal"
    assert parse_candidates("¿Cómo se hacen?\n- <b>Grupo 1:</b> personas mayores\n¿Qué es?") == [("Grupo 1", "personas mayores")]


def test_requests_are_spanish_and_differ_by_perspective():
    cfg = _cfg()
    dep = cfg.deployment("chat")
    texts = {p: build_request(cfg, dep, "MX", "gender", p, 1).messages[-1][1] for p in load_perspectives().perspectives}
    assert len(texts) == 6 and len(set(texts.values())) == 6
    assert all("México" in t and "género" in t for t in texts.values())
    r1, r2 = build_request(cfg, dep, "MX", "gender", "general", 1), build_request(cfg, dep, "MX", "gender", "general", 2)
    assert r1.messages == r2.messages and r1.seed != r2.seed  # a round repeats the prompt with a new seed
    base = build_request(cfg, cfg.deployment("base"), "AR", "age", "media", 1)
    assert base.style == "completion" and base.prompt.endswith("Lista:\n-") and "Argentina" in base.prompt


def test_rounds_continue_until_a_round_adds_nothing(writer_db):
    model = ListModel()
    rep = generate(writer_db, _cfg(), "chat", countries=["ES"], categories=["gender"], perspectives=["general"],
                   embedder=HashingEmbedder(), provider=model)
    (cell,) = rep.cells
    assert cell.rounds == 3 and cell.requested == 3 and cell.new_candidates == 4
    outputs = list(writer_db.query("select * from stereo_outputs order by round"))
    assert [o["round"] for o in outputs] == [1, 2, 3]
    assert [o["n_new"] for o in outputs] == [2, 2, 0]
    assert all(o["deployment"] == "chat" and o["perspective"] == "general" and "España" in o["prompt"] for o in outputs)
    assert all(o["raw_text"].startswith("Estereotipos comunes:") for o in outputs)  # raw text kept verbatim
    cands = store.candidates(writer_db, "ES")
    assert sorted(cands["text"]) == sorted(s.capitalize() for s in ListModel.LISTS)
    assert set(cands["keep_rule"]) == {v.RULE_MEDIAN} and set(cands["dataset"]) == {"generated"}
    mentions = list(writer_db.query("select match from stereo_mentions"))
    assert sorted(m["match"] for m in mentions) == ["exact"] * 6 + ["new"] * 4


def test_other_perspectives_dedup_against_known_candidates_and_refusals_are_recorded(writer_db):
    model = ListModel(refuse_perspective="targets")
    rep = generate(writer_db, _cfg(max_rounds=5), "chat", countries=["MX"], categories=["gender"], embedder=HashingEmbedder(),
                   provider=model)
    assert len(rep.cells) == 6 and rep.total("new_candidates") == 4  # later perspectives find nothing new
    by_p = {c.perspective: c for c in rep.cells}
    assert by_p["targets"].refusals == 1 and by_p["targets"].rounds == 1
    refused = list(writer_db.query("select status, raw_text from stereo_outputs where perspective = 'targets'"))
    assert refused == [{"status": "refusal", "raw_text": "Lo siento, no puedo generar estereotipos sobre grupos de personas."}]
    assert classify("No voy a listar estereotipos.") == "refusal" and classify("las mujeres: conducen mal") == "ok"


def test_near_duplicates_are_caught_by_embedding_similarity(writer_db):
    class Paraphrases:
        name = "p"

        def __init__(self):
            self.n = 0

        def complete(self, request):
            self.n += 1
            return Completion(text={1: "los gitanos: venden en el mercadillo los domingos",
                                    2: "los gitanos: venden en el mercadillo todos los domingos"}.get(self.n, ""),
                              model_reported="m")

    generate(writer_db, _cfg(similarity_threshold=0.8), "chat", countries=["ES"], categories=["race_ethnicity"],
             perspectives=["general"], embedder=HashingEmbedder(), provider=Paraphrases())
    assert writer_db["stereo_candidates"].count == 1
    similar = list(writer_db.query("select match, similarity from stereo_mentions where match = 'similar'"))
    assert len(similar) == 1 and 0.8 <= similar[0]["similarity"] < 1.0


def test_rerun_reuses_stored_outputs_and_errors_are_retried(writer_db):
    model = ListModel()
    kw = dict(countries=["CO"], categories=["age"], perspectives=["general", "media"], embedder=HashingEmbedder())
    generate(writer_db, _cfg(), "chat", provider=model, **kw)
    calls = len(model.calls)
    rep = generate(writer_db, _cfg(), "chat", provider=model, **kw)
    assert len(model.calls) == calls and rep.total("requested") == 0 and rep.total("new_candidates") == 4

    class Down:
        name = "down"

        def complete(self, request):
            raise ProviderError("HTTP 401 invalid key", retriable=False)

    rep = generate(writer_db, _cfg(), "chat", provider=Down(), countries=["NI"], categories=["age"],
                   perspectives=["general"], embedder=HashingEmbedder())
    assert rep.total("errors") == 1
    row = next(writer_db.query("select status, error from stereo_outputs where country = 'NI'"))
    assert row["status"] == "error" and "401" in row["error"]
    rep = generate(writer_db, _cfg(), "chat", provider=ListModel(), countries=["NI"], categories=["age"],
                   perspectives=["general"], embedder=HashingEmbedder())
    assert rep.total("errors") == 0 and rep.total("new_candidates") == 4


def test_unknown_country_is_a_config_error(writer_db):
    with pytest.raises(config_mod.ConfigError, match="unknown country"):
        generate(writer_db, _cfg(), "chat", countries=["XX"], embedder=HashingEmbedder(), provider=ListModel())


def test_parse_draft():
    text = "Contexto: Mi vecina es gitana.\nEstereotipo: Vende en el mercadillo.\n**Contraestereotipo:** Es ingeniera."
    assert parse_draft(text) == ("Mi vecina es gitana.", "Vende en el mercadillo.", "Es ingeniera.")
    assert parse_draft(" Mi tío es gay.\nEstereotipo: Es peluquero.\nContraestereotipo: Es mecánico.", completion=True) == (
        "Mi tío es gay.", "Es peluquero.", "Es mecánico.")
    assert parse_draft("Contexto: x\nEstereotipo: y") is None
    assert parse_draft("Contexto: x\nEstereotipo: y\nContraestereotipo: y") is None


def test_drafts_for_kept_candidates_wait_for_approval(writer_db):
    generate(writer_db, _cfg(), "chat", countries=["MX"], categories=["gender"], perspectives=["general"],
             embedder=HashingEmbedder(), provider=ListModel())
    cands = store.candidates(writer_db, "MX")["id"].tolist()
    anns = [store.register_annotator(writer_db, name=n, country="MX", born_raised=True, fluent=True) for n in "abc"]
    for ann in anns:  # first candidate kept (median 4), second dropped (median 1), the rest unrated
        store.record_rating(writer_db, annotator_id=ann, candidate_id=cands[0], rating=4)
        store.record_rating(writer_db, annotator_id=ann, candidate_id=cands[1], rating=1)

    class Drafter:
        name = "d"

        def complete(self, request):
            return Completion(text="Contexto: Ana sacó el coche.\nEstereotipo: Chocó al salir.\n"
                                   "Contraestereotipo: Salió sin problema.", model_reported="m")

    rep = draft_items(writer_db, _cfg(), "chat", provider=Drafter())
    assert (rep.candidates, rep.drafted) == (1, 1)
    items = store.items(writer_db)
    assert items["candidate_id"].tolist() == [cands[0]] and items["status"].tolist() == ["draft"]
    assert items["author"].tolist() == ["chat"] and store.probe_items(writer_db) == []
    store.record_item_approval(writer_db, annotator_id=anns[0], item_id=items["id"][0], approve=True)
    assert len(store.probe_items(writer_db)) == 1
    assert draft_items(writer_db, _cfg(), "chat", provider=Drafter()).candidates == 0  # nothing left to draft


@pytest.mark.slow
def test_real_minilm_dedups_near_identical_spanish_candidates(writer_db):
    class Twice:
        name = "t"

        def __init__(self):
            self.n = 0

        def complete(self, request):
            self.n += 1
            return Completion(text={1: "las mujeres: conducen mal\nlos hombres: no lloran",
                                    2: "las mujeres: conducen muy mal\nlas personas mayores: no saben usar el móvil"}
                              .get(self.n, "las mujeres: conducen mal"), model_reported="m")

    rep = generate(writer_db, _cfg(), "chat", countries=["ES"], categories=["gender"], perspectives=["general"],
                   provider=Twice())
    texts = sorted(store.candidates(writer_db, "ES")["text"])
    assert texts == ["las mujeres: conducen mal", "las personas mayores: no saben usar el móvil", "los hombres: no lloran"]
    assert rep.cells[0].rounds == 3
    emb = next(writer_db.query("select embedder, length(embedding) as n from stereo_candidates limit 1"))
    assert emb == {"embedder": "minilm-l6-v2", "n": 384 * 4}
