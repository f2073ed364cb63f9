"""The probe: forced choice with seeded A/B order (an always-"A" model scores ~50%), malformed
answers counted not guessed, log-likelihood comparison, stored runs as a time series,
Wilson intervals; slow tests run the real Gemma (in-process and behind llama.cpp's server)."""

from __future__ import annotations

import math
import os

import pytest

from monitor import config as config_mod
from monitor.ids import make_id
from monitor.stereo import report
from monitor.stereo.seed import load_demo_seed
from monitor.stereo.logprobs import TokenScore, continuation_logprob, echoed_score
from monitor.stereo.probe import (
    COUNTER,
    ERROR,
    INVALID,
    STEREOTYPE,
    choice_request,
    method_for,
    parse_choice,
    probe,
    stereo_first,
)
from monitor.types import Completion
from store import stereo as store

CHAT = {"name": "chat-a", "provider": "scripted", "prompt_style": "chat"}


def _cfg(*deps):
    raw = {"deployments": list(deps) or [CHAT]}
    return config_mod.parse(raw, where="test", base=config_mod.Path("."))


class Scripted:
    """A chat model whose answer is a function of the request (the tests' fake; no network, no model)."""

    def __init__(self, answer):
        self.answer = answer
        self.name = "fake"
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        return Completion(text=self.answer(request), model_reported="fake-1")


def _synthetic_items(db, n, country="MX"):
    rows = []
    for i in range(n):
        cid = make_id("cand", i)
        rows.append({"id": make_id("item", i), "candidate_id": cid, "country": country, "category": "gender",
                     "target_group": f"g{i % 3}", "stereotype": f"s{i}", "context": f"Contexto {i}.",
                     "stereotype_sentence": f"Frase estereotipada {i}.", "counter_sentence": f"Frase contraria {i}.",
                     "source": "test", "dataset": "test", "status": "approved"})
    store.save_items(db, rows)


@pytest.mark.parametrize("text,expected", [
    ("A", "A"), ("B", "B"), (" b ", "B"), ("A)", "A"), ("(B)", "B"), ("A. Porque es más probable", "A"),
    ("**B**", "B"), ("Respuesta: A", "A"), ("La respuesta es B", "B"), ("Opción A", "A"), ("a", "A"), ("b.", "B"),
    ("", None), (None, None), ("No sé", None), ("Ambas", None), ("a la gente le gusta", None), ("AB", None),
    ("Las dos opciones, A y B", None), ("C", None), ("Both A and B", None), ("1", None),
])
def test_parse_choice_accepts_clear_letters_only(text, expected):
    assert parse_choice(text) == expected


def test_ab_order_is_seeded_per_item_and_balanced():
    firsts = [stereo_first(0, "dep", f"item{i}") for i in range(2000)]
    assert firsts == [stereo_first(0, "dep", f"item{i}") for i in range(2000)]  # same seed, same order
    assert abs(sum(firsts) / len(firsts) - 0.5) < 0.04
    assert firsts != [stereo_first(1, "dep", f"item{i}") for i in range(2000)]


def test_choice_request_places_the_stereotype_as_a_or_b():
    dep = _cfg().deployment("chat-a")
    item = {"id": "i", "context": "C.", "stereotype_sentence": "ESTEREO", "counter_sentence": "CONTRA"}
    first = choice_request(dep, item, True, 0).messages[-1][1]
    second = choice_request(dep, item, False, 0).messages[-1][1]
    assert "A) ESTEREO" in first and "B) CONTRA" in first
    assert "A) CONTRA" in second and "B) ESTEREO" in second
    assert choice_request(dep, item, True, 0).temperature == 0.0


def test_always_a_scores_about_half_thanks_to_order_randomisation(writer_db):
    _synthetic_items(writer_db, 400)
    fake = Scripted(lambda req: "A")
    rep = probe(writer_db, _cfg(), seed=7, provider_factory=lambda dep: fake)
    s = rep.scores[0]
    assert s["n_valid"] == 400 and s["n_invalid"] == 0
    # 50% +- 3 standard errors of a fair coin over 400 items
    assert abs(s["share"] - 0.5) < 3 * math.sqrt(0.25 / 400)
    assert s["lo"] < 0.5 < s["hi"]
    # and the share is exactly the share of items whose stereotype was shown as A
    results = store.probe_results(writer_db, run_id=rep.run_id)
    assert results["stereo_wins"].sum() == results["stereo_first"].sum()


def test_always_a_on_the_demo_seed(writer_db):
    load_demo_seed(writer_db)
    rep = probe(writer_db, _cfg(), seed=0, provider_factory=lambda dep: Scripted(lambda req: "A"))
    results = store.probe_results(writer_db, run_id=rep.run_id)
    k, n = int(results["stereo_wins"].sum()), len(results)
    assert n == 50 and abs(k / n - 0.5) < 3 * math.sqrt(0.25 / n)


def test_a_model_that_always_picks_the_stereotype_scores_one(writer_db):
    _synthetic_items(writer_db, 30)

    def pick_stereo(req):
        text = req.messages[-1][1]
        return "A" if "A) Frase estereotipada" in text else "B"

    rep = probe(writer_db, _cfg(), provider_factory=lambda dep: Scripted(pick_stereo))
    assert rep.scores[0]["share"] == 1.0 and rep.scores[0]["wins"] == 30


def test_malformed_answers_are_counted_not_guessed(writer_db):
    _synthetic_items(writer_db, 40)
    answers = iter(["A", "no sé", "B", "", "Ambas opciones", "a la orden"] * 10)
    rep = probe(writer_db, _cfg(), provider_factory=lambda dep: Scripted(lambda req: next(answers)))
    results = store.probe_results(writer_db, run_id=rep.run_id)
    invalid = results[results["outcome"] == INVALID]
    assert len(invalid) == sum(1 for i in range(40) if i % 6 not in (0, 2))
    assert invalid["stereo_wins"].isna().all() and invalid["choice"].isna().all()
    assert set(invalid["answer"]) == {"no sé", "", "Ambas opciones", "a la orden"}  # raw answers kept
    s = rep.scores[0]
    assert s["n_invalid"] == len(invalid) and s["n_valid"] == 40 - len(invalid)
    assert s["share"] == pytest.approx(results["stereo_wins"].dropna().mean())


def test_provider_errors_are_stored_as_errors(writer_db):
    from monitor.providers import ProviderError

    _synthetic_items(writer_db, 3)

    class Broken:
        name = "broken"

        def complete(self, request):
            raise ProviderError("HTTP 400 bad request", retriable=False)

    rep = probe(writer_db, _cfg(), provider_factory=lambda dep: Broken())
    results = store.probe_results(writer_db, run_id=rep.run_id)
    assert set(results["outcome"]) == {ERROR} and results["error"].str.contains("400").all()
    assert rep.scores[0]["n_error"] == 3 and rep.scores[0]["n_valid"] == 0 and rep.scores[0]["share"] is None


class FakeScorer:
    """Log-likelihood that prefers whatever text contains 'estereotipada' by a fixed margin."""

    model_reported = "fake-lp"

    def score(self, context, continuation):
        return TokenScore(-1.0 * len(continuation.split()) if "estereotipada" in continuation else -2.0 * len(continuation.split()),
                          len(continuation.split()))


def test_loglik_deployments_compare_length_normalised_scores(writer_db):
    _synthetic_items(writer_db, 5)
    local = {"name": "local-lp", "provider": "local"}
    rep = probe(writer_db, _cfg(local), scorer_factory=lambda dep, sep: FakeScorer())
    results = store.probe_results(writer_db, run_id=rep.run_id)
    assert set(results["method"]) == {"loglik"} and set(results["outcome"]) == {STEREOTYPE}
    assert (results["lp_stereo"] == -1.0).all() and (results["lp_counter"] == -2.0).all()
    assert results["stereo_first"].isna().all()


def test_loglik_context_carries_the_deployments_system_prompt():
    from monitor.stereo.probe import loglik_context

    cfg = _cfg({"name": "plain", "provider": "local"}, {"name": "neutral", "provider": "local", "system_prompt": "Sé neutral."})
    item = {"context": "Mi vecino es gitano."}
    assert loglik_context(cfg.deployment("plain"), item) == "Mi vecino es gitano."
    assert loglik_context(cfg.deployment("neutral"), item) == "Sé neutral.\n\nMi vecino es gitano."


def test_method_follows_the_deployments_capabilities():
    cfg = _cfg({"name": "l", "provider": "local"}, CHAT,
               {"name": "o", "provider": "openai", "base_url": "http://x/v1", "model": "m", "supports_logprobs": True},
               {"name": "oc", "provider": "openai", "base_url": "http://x/v1", "model": "m", "prompt_style": "chat",
                "supports_logprobs": True})
    assert [method_for(cfg.deployment(n)) for n in ("l", "chat-a", "o", "oc")] == ["loglik", "choice", "loglik", "choice"]


def test_continuation_logprob_is_the_sum_of_the_right_rows():
    import numpy as np

    logits = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [1 / 3, 1 / 3, 1 / 3]]))
    tokens = [0, 1, 2, 0]  # token i is predicted by logits row i-1
    s = continuation_logprob(logits, tokens, 2)
    assert s.n_tokens == 2 and s.logprob_sum == pytest.approx(math.log(0.1) + math.log(0.2))
    assert s.mean == pytest.approx(s.logprob_sum / 2)
    with pytest.raises(ValueError):
        continuation_logprob(logits, tokens, 4)


def test_echoed_logprobs_pick_the_continuation_tokens():
    from types import SimpleNamespace

    lp = SimpleNamespace(text_offset=[0, 3, 8, 11, 15], token_logprobs=[None, -1.0, -2.0, -0.5, -3.0])
    response = SimpleNamespace(choices=[SimpleNamespace(logprobs=lp)])
    # context is 8 characters; prompt is 15 characters; the token at 15 is the generated one
    s = echoed_score(response, 8, 15)
    assert s == TokenScore(-2.5, 2)


def test_each_run_is_stored_with_a_timestamp_and_forms_a_time_series(writer_db):
    _synthetic_items(writer_db, 20)
    first = probe(writer_db, _cfg(), seed=1, provider_factory=lambda dep: Scripted(lambda r: "A"))
    second = probe(writer_db, _cfg(), seed=1, provider_factory=lambda dep: Scripted(lambda r: "B"))
    runs = store.probe_runs(writer_db)
    assert set(runs["id"]) == {first.run_id, second.run_id} and set(runs["status"]) == {"done"}
    assert runs["started_at"].notna().all() and runs["finished_at"].notna().all()
    series = report.time_series(store.probe_results(writer_db))
    assert len(series) == 2
    assert series["share"].sum() == pytest.approx(1.0)  # always-A and always-B are mirror images on the same order
    latest = store.latest_results(writer_db)
    assert set(latest["run_id"]) == {second.run_id}


def test_resuming_a_run_asks_only_for_missing_items(writer_db):
    _synthetic_items(writer_db, 10)
    fake = Scripted(lambda r: "A")
    rep = probe(writer_db, _cfg(), seed=2, limit=4, provider_factory=lambda dep: fake)
    assert len(fake.requests) == 4
    again = probe(writer_db, _cfg(), seed=2, run_id=rep.run_id, provider_factory=lambda dep: fake)
    assert len(fake.requests) == 10 and again.results == 6
    assert len(store.probe_results(writer_db, run_id=rep.run_id)) == 10


def test_wilson_interval():
    lo, hi = report.wilson(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)
    assert report.wilson(0, 10)[0] == pytest.approx(0.0) and report.wilson(10, 10)[1] == pytest.approx(1.0)
    assert all(math.isnan(x) for x in report.wilson(0, 0))


def test_scores_per_category_and_target_group(writer_db):
    _synthetic_items(writer_db, 12)
    rep = probe(writer_db, _cfg(), provider_factory=lambda dep: Scripted(lambda r: "A"))
    results = store.probe_results(writer_db, run_id=rep.run_id)
    groups = report.summarise(results, ["country", "target_group"])
    assert sorted(groups["target_group"]) == ["g0", "g1", "g2"] and groups["n_items"].sum() == 12
    cats = report.summarise(results, ["category", "country"])
    assert cats.iloc[0]["n_valid"] == 12


def test_probe_public_entry_point_and_cli(tmp_path):
    from click.testing import CliRunner

    from monitor.cli import main

    db = tmp_path / "fw.db"
    runner = CliRunner()
    out = runner.invoke(main, ["stereo", "seed-demo", "--db", str(db)])
    assert out.exit_code == 0 and "50 items" in out.output and "demo seed" in out.output
    out = runner.invoke(main, ["stereo", "status", "--db", str(db)])
    assert out.exit_code == 0 and "no probe run yet" in out.output
    assert "MX" in out.output and "NI" in out.output


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_local_gemma_probe_over_the_demo_seed_is_deterministic(writer_db, monkeypatch):
    # One llama.cpp thread: on a CPU shared with other work, two spinning threads made this 4x
    # slower (measured: 142 s with one thread against over 600 s with two at load average 7).
    monkeypatch.setenv("FRAMEWATCH_THREADS", os.environ.get("FRAMEWATCH_THREADS", "1"))
    load_demo_seed(writer_db)
    cfg = config_mod.load(None)
    a = probe(writer_db, cfg, ["gemma-plain"], seed=3)
    b = probe(writer_db, cfg, ["gemma-plain"], seed=3)
    ra = store.probe_results(writer_db, run_id=a.run_id).set_index("item_id").sort_index()
    rb = store.probe_results(writer_db, run_id=b.run_id).set_index("item_id").sort_index()
    assert len(ra) == 50 and set(ra["outcome"]) <= {STEREOTYPE, COUNTER}
    assert (ra["lp_stereo"] == rb["lp_stereo"]).all() and (ra["lp_counter"] == rb["lp_counter"]).all()
    assert (ra["stereo_wins"] == rb["stereo_wins"]).all()
    assert a.scores == b.scores
    assert ra["model_reported"].str.contains("gemma").all()
    assert (ra["lp_stereo"] < 0).all() and (ra["n_tok_stereo"] > 0).all()


@pytest.mark.slow
def test_completion_endpoint_logprobs_match_in_process_scores(tmp_path):
    """The OpenAI-compatible path for real: llama.cpp's server with --logits_all echoes prompt log-probabilities."""
    import subprocess
    import sys
    import time
    import urllib.request

    from monitor.providers.llamacpp import gguf_path
    from monitor.stereo.logprobs import LlamaScorer, OpenAICompletionScorer
    from monitor.testing.processes import free_port

    port = free_port()
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path("")), "--host",
                             "127.0.0.1", "--port", str(port), "--n_ctx", "512", "--logits_all", "true",
                             "--model_alias", "gemma"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail((tmp_path / "server.log").read_text(errors="replace")[-2000:])
                time.sleep(0.5)
        remote = config_mod.parse({"deployments": [{"name": "srv", "provider": "openai", "model": "gemma",
                                                    "base_url": f"http://127.0.0.1:{port}/v1", "supports_logprobs": True,
                                                    "max_retries": 0}]}, where="t", base=tmp_path).deployment("srv")
        local = config_mod.load(None).deployment("gemma-plain")
        ctx, cont = "Mi abuela de ochenta años se compró un móvil nuevo.", "Lo configuró ella sola en cinco minutos."
        served = OpenAICompletionScorer(remote).score(ctx, cont)
        here = LlamaScorer(local).score(ctx, cont)
        assert served.n_tokens == here.n_tokens
        assert served.mean == pytest.approx(here.mean, abs=0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()


def test_an_interrupted_run_stays_running_and_resumes(writer_db):
    _synthetic_items(writer_db, 6)
    calls = {"n": 0}

    def answer(req):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return "A"

    with pytest.raises(KeyboardInterrupt):
        probe(writer_db, _cfg(), seed=5, provider_factory=lambda dep: Scripted(answer))
    (run,) = store.probe_runs(writer_db).to_dict("records")
    assert run["status"] == "running" and run["n_results"] == 3
    again = probe(writer_db, _cfg(), seed=5, run_id=run["id"], provider_factory=lambda dep: Scripted(lambda r: "A"))
    assert again.results == 3 and store.probe_runs(writer_db)["status"].tolist() == ["done"]
    assert len(store.probe_results(writer_db, run_id=run["id"])) == 6


def test_a_failing_run_is_marked_failed(writer_db):
    _synthetic_items(writer_db, 2)

    def boom(dep):
        raise config_mod.ConfigError("deployment 'chat-a': environment variable KEY is not set")

    with pytest.raises(config_mod.ConfigError):
        probe(writer_db, _cfg(), provider_factory=boom)
    run = store.probe_runs(writer_db).iloc[0]
    assert run["status"] == "failed" and "KEY is not set" in run["error"]
