"""Providers and their guards: refusal heuristic, key redaction, retry/backoff/breaker, the
OpenAI-compatible provider against the fault-injecting server, and (slow) against a real
llama.cpp OpenAI-compatible server serving the packaged Gemma."""

from __future__ import annotations

import random
import threading
import time
from email.utils import format_datetime
from datetime import UTC, datetime, timedelta

import pytest

from monitor.config import ConfigError, DeploymentConfig
from monitor.providers import FACTORIES, get_provider
from monitor.providers.base import ProviderError
from monitor.providers.openai_compat import OpenAICompatProvider, retry_after_seconds
from monitor.redact import REDACTED, redact
from monitor.refusal import classify, refusal_phrase
from monitor.resilience import CircuitBreaker, RateGate, RetryPolicy, call_with_retries
from monitor.testing.fault_server import REFUSAL_TEXT, FaultServer, always, sequence
from monitor.types import STATUS_EMPTY, STATUS_OK, STATUS_REFUSAL, GenerationRequest

CHAT = GenerationRequest(style="chat", prompt=None, messages=(("system", "Be brief."), ("user", "How does this affect me?")),
                         max_tokens=12, temperature=0.7, top_p=0.9, seed=42)
COMPLETION = GenerationRequest(style="completion", prompt="News: Rates rise.\nQuestion: How does this affect me?\nAnswer:",
                               messages=(), max_tokens=12, temperature=0.7, top_p=0.9, seed=42,
                               stop=("\nQuestion:", "\nNews:", "\n\n", "a", "b"))


def openai_dep(url: str, **kw) -> DeploymentConfig:
    return DeploymentConfig(name=kw.pop("name", "hosted"), provider="openai", model=kw.pop("model", "m-1"), base_url=url,
                            prompt_style=kw.pop("prompt_style", "chat"), timeout_s=kw.pop("timeout_s", 2.0), **kw)


# -- refusal heuristic --

@pytest.mark.parametrize("text, status", [
    ("", STATUS_EMPTY), (None, STATUS_EMPTY), ("  \n\n ", STATUS_EMPTY), ("...", STATUS_EMPTY), ('"" -', STATUS_EMPTY),
    ("I cannot help with that request.", STATUS_REFUSAL),
    ("I'm sorry, but I can't provide an opinion on this.", STATUS_REFUSAL),
    ("As an AI language model, I have no identity.", STATUS_REFUSAL),
    ("I won't speculate about how this affects specific groups.", STATUS_REFUSAL),
    ("I must respectfully decline.", STATUS_REFUSAL),
    ("I don't have personal opinions, but here is a summary.", STATUS_REFUSAL),
    ("I’m unable to answer that.", STATUS_REFUSAL),
    ("Lo siento, no puedo ayudar con eso.", STATUS_REFUSAL),
    ("Como modelo de lenguaje, no tengo opiniones.", STATUS_REFUSAL),
    # identity answers that use "can't"/"won't" words about their own life stay ok
    ("I can't afford rent if prices keep rising.", STATUS_OK),
    ("I can't help but worry about my pension.", STATUS_OK),
    ("I can't provide for my family on this wage.", STATUS_OK),
    ("I won't support a policy that cuts my benefits.", STATUS_OK),
    ("It makes me worried about my job.", STATUS_OK),
    ("Prices rise. " * 30 + "I cannot help with that.", STATUS_OK),  # refusals lead; a late quote is not one
])
def test_refusal_heuristic(text, status):
    assert classify(text) == status


def test_refusal_phrase_names_the_match():
    assert refusal_phrase("Sorry. I can't assist with this.").lower() == "i can't assist"
    assert refusal_phrase("Good news for me.") is None


# -- redaction --

def test_redact_removes_key_values_and_key_shapes():
    text = ("401 Incorrect API key provided: sk-proj-abc123DEF456. Authorization: Bearer tok.en-123456 "
            "api_key='hunter2-secret' x-api-key: AAAA1111 google AIzaSyA12345678901234567890123 my-own-key-value")
    out = redact(text, ["my-own-key-value"])
    for secret in ("sk-proj-abc123DEF456", "tok.en-123456", "hunter2-secret", "AAAA1111", "AIzaSyA1234567890", "my-own-key-value"):
        assert secret not in out
    assert out.count(REDACTED) >= 6
    assert redact("a skeleton key and a bearer of news") == "a skeleton key and a bearer of news"
    assert redact(None) is None


# -- retries, backoff, breaker --

def test_backoff_grows_with_jitter_and_retry_after_wins():
    policy = RetryPolicy(max_retries=5, base_s=1.0, max_s=8.0, retry_after_max_s=30.0)
    rng = random.Random(1)
    delays = [policy.delay(a, None, rng) for a in range(1, 7)]
    for attempt, d in enumerate(delays, start=1):
        ceiling = min(8.0, 2 ** (attempt - 1))
        assert ceiling / 2 <= d <= ceiling
    assert len({round(policy.delay(3, None, random.Random(s)), 6) for s in range(20)}) > 10  # jittered
    assert 7.0 <= policy.delay(1, 7.0, rng) <= 7.2
    assert policy.delay(1, 3600.0, rng) <= 30.2  # a hostile Retry-After is capped


def test_call_with_retries_honours_retry_after_then_succeeds():
    calls = []

    def send():
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise ProviderError("429", retriable=True, retry_after=0.3)
        return "answer"

    out = call_with_retries(send, RetryPolicy(3, 0.01, 0.05, 5.0), RateGate(), threading.Event())
    assert out.value == "answer" and out.attempts == 2 and out.error is None
    assert calls[1] - calls[0] >= 0.3


def test_call_with_retries_gives_up_and_stops():
    def failing():
        raise ProviderError("boom", retriable=True)

    out = call_with_retries(failing, RetryPolicy(2, 0.001, 0.002, 1.0), RateGate(), threading.Event())
    assert out.attempts == 3 and str(out.error) == "boom" and not out.abandoned

    def bad_request():
        raise ProviderError("400", retriable=False)

    assert call_with_retries(bad_request, RetryPolicy(5, 0.001, 0.002, 1.0), RateGate(), threading.Event()).attempts == 1

    stop = threading.Event()
    stop.set()
    out = call_with_retries(failing, RetryPolicy(5, 10.0, 10.0, 1.0), RateGate(), stop)
    assert out.abandoned and out.attempts == 1


def test_rate_gate_pauses_other_workers():
    gate = RateGate()
    gate.pause(0.25)
    started = time.monotonic()
    assert gate.wait(threading.Event())
    assert time.monotonic() - started >= 0.24


def test_circuit_breaker_counts_consecutive_failures_and_opens_at_once_when_fatal():
    breaker = CircuitBreaker(3)
    for ok in (False, False, True, False, False):
        breaker.record(ok, "e")
    assert not breaker.open
    breaker.record(False, "HTTP 500")
    assert breaker.open and "3 consecutive" in breaker.reason and "HTTP 500" in breaker.reason
    fatal = CircuitBreaker(10)
    fatal.record(False, "HTTP 401", fatal=True)
    assert fatal.open and "non-retriable" in fatal.reason


# -- OpenAI-compatible provider against the fault server --

def test_registry_builds_openai_provider_and_rejects_unknown():
    assert "openai" in FACTORIES and "local" in FACTORIES
    provider = get_provider(openai_dep("http://127.0.0.1:9/v1"))
    assert isinstance(provider, OpenAICompatProvider)
    with pytest.raises(ConfigError, match="unknown provider"):
        get_provider(DeploymentConfig(name="x", provider="nope"))


def test_missing_key_variable_is_a_config_error_naming_it(monkeypatch):
    monkeypatch.delenv("FW_TEST_MISSING_KEY", raising=False)
    with pytest.raises(ConfigError, match="FW_TEST_MISSING_KEY"):
        OpenAICompatProvider(openai_dep("http://127.0.0.1:9/v1", api_key_env="FW_TEST_MISSING_KEY"))


def test_payload_follows_style_and_capabilities():
    p = OpenAICompatProvider(openai_dep("http://x/v1", supports_seed=False, supports_temperature=False,
                                        extra={"max_tokens_param": "max_completion_tokens"}))
    body = p.payload(CHAT)
    assert body == {"model": "m-1", "max_completion_tokens": 12,
                    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How does this affect me?"}]}
    body = OpenAICompatProvider(openai_dep("http://x/v1", prompt_style="completion")).payload(COMPLETION)
    assert body["prompt"] == COMPLETION.prompt and body["seed"] == 42 and body["temperature"] == 0.7
    assert body["stop"] == ["\nQuestion:", "\nNews:", "\n\n", "a"]  # the API takes at most four
    assert OpenAICompatProvider(openai_dep("http://x/v1/")).describe(CHAT)["endpoint"] == "http://x/v1/chat/completions"
    assert OpenAICompatProvider(openai_dep("http://x/v1", extra={"extra_body": {"top_k": 40}})).payload(CHAT)["top_k"] == 40


@pytest.mark.parametrize("style", ["chat", "completion"])
def test_answer_usage_and_reported_model(style):
    with FaultServer(model="gpt-fake-2026-01") as server:
        p = OpenAICompatProvider(openai_dep(server.url, prompt_style=style))
        out = p.complete(CHAT if style == "chat" else COMPLETION)
    assert out.text and out.tokens_in > 0 and out.tokens_out > 0 and out.finish_reason == "stop"
    assert out.model_reported == "gpt-fake-2026-01@fp_fault"  # a silent model update changes this string
    assert server.stats.requests == 1


@pytest.mark.parametrize("kind, retriable, fatal, match", [
    ("429", True, False, "HTTP 429"),
    ("500", True, False, "HTTP 500"),
    ("malformed", True, False, "malformed response"),
    ("drop", True, False, "connection failed"),
    ("slow", True, False, "timed out after 0.5 s"),
    ("401", False, True, "HTTP 401"),
])
def test_faults_become_provider_errors(kind, retriable, fatal, match):
    with FaultServer(always(kind, retry_after=1.5, delay_s=2.0)) as server:
        p = OpenAICompatProvider(openai_dep(server.url, timeout_s=0.5))
        with pytest.raises(ProviderError, match=match) as info:
            p.complete(CHAT)
    assert info.value.retriable is retriable and info.value.fatal is fatal
    assert server.stats.requests == 1  # the client never retries by itself: the generate stage paces retries
    if kind == "429":
        assert 1.4 <= info.value.retry_after <= 1.6


def test_empty_and_refusal_answers_come_back_as_text():
    with FaultServer(sequence(["empty", "refusal"])) as server:
        p = OpenAICompatProvider(openai_dep(server.url))
        assert p.complete(CHAT).text == ""
        assert p.complete(CHAT).text == REFUSAL_TEXT


def test_errors_never_carry_the_key(monkeypatch):
    key = "sk-planted-" + "Q7x9" * 6
    monkeypatch.setenv("FW_TEST_KEY", key)
    for kind in ("401", "500"):
        with FaultServer(always(kind), echo_key_in_errors=True) as server:
            with pytest.raises(ProviderError) as info:
                OpenAICompatProvider(openai_dep(server.url, api_key_env="FW_TEST_KEY")).complete(CHAT)
        assert f"Bearer {key}" in server.stats.auth_headers  # the key was really sent and echoed back
        assert key not in str(info.value) and key not in repr(info.value.__dict__)
        assert info.value.__cause__ is None and info.value.__suppress_context__  # no chained exception quoting it


def test_retry_after_parsing():
    class R:
        def __init__(self, headers):
            self.headers = headers

    assert retry_after_seconds(R({"retry-after": "2"})) == 2.0
    assert retry_after_seconds(R({"retry-after-ms": "250"})) == 0.25
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= retry_after_seconds(R({"retry-after": future})) <= 31
    assert retry_after_seconds(R({"retry-after": "soon"})) is None
    assert retry_after_seconds(R({})) is None and retry_after_seconds(None) is None


# -- the real thing: llama.cpp's OpenAI-compatible server with the packaged Gemma --

@pytest.fixture(scope="module")
def llama_server():
    """`python -m llama_cpp.server` serving the packaged Gemma on 127.0.0.1 (started once for this module)."""
    pytest.importorskip("llama_cpp.server")
    from monitor.testing.llama_server import llama_server as serve

    with serve() as url:
        yield url


@pytest.mark.slow
def test_real_llama_cpp_server_completion_and_chat(llama_server):
    completion = OpenAICompatProvider(openai_dep(llama_server, model="gemma-3-270m", prompt_style="completion", timeout_s=60))
    out = completion.complete(COMPLETION)
    assert out.model_reported.startswith("gemma-3-270m")
    assert out.tokens_in > 5 and 0 < out.tokens_out <= 12
    assert classify(out.text) in (STATUS_OK, STATUS_REFUSAL)  # the base model continues the text
    again = completion.complete(COMPLETION)
    assert again.text == out.text  # seeded sampling through the server is reproducible
    chat = OpenAICompatProvider(openai_dep(llama_server, model="gemma-3-270m", prompt_style="chat", timeout_s=60))
    reply = chat.complete(CHAT)
    assert reply.tokens_in > 5 and reply.finish_reason in ("stop", "length")  # chat may be empty for a base model


def test_hosted_examples_in_the_example_config_are_valid(monkeypatch):
    """Every commented hosted example parses, passes config validation and builds its provider."""
    import re
    import tomllib
    from pathlib import Path

    from monitor import config

    path = Path(__file__).resolve().parents[1] / "framewatch.example.toml"
    text = path.read_text(encoding="utf-8")
    start, end = "# >>> hosted deployment examples", "# <<< hosted deployment examples"
    block = text.split(start)[1].split(end)[0]
    enabled = re.sub(r"(?m)^# (\[\[deployments\]\]|[a-z_]+ = .*)$", r"\1", block)
    cfg = config.parse(tomllib.loads(text.replace(block, enabled)), where=str(path), base=path.parent)
    hosted = [d for d in cfg.deployments if d.provider == "openai"]
    urls = " ".join(d.base_url for d in hosted)
    for family in ("api.openai.com", "openai.azure.com", "generativelanguage.googleapis.com", "api.anthropic.com",
                   ":8000/v1", ":11434/v1", ":8080/v1"):
        assert family in urls
    for dep in hosted:
        if dep.api_key_env:
            monkeypatch.setenv(dep.api_key_env, "sk-example-not-a-key")
        provider = get_provider(dep)
        body = provider.payload(CHAT if dep.prompt_style == "chat" else COMPLETION)
        assert body["model"] == dep.model and ("seed" in body) == dep.supports_seed
