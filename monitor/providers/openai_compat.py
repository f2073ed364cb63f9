"""Any OpenAI-compatible endpoint through the ``openai`` client: OpenAI, Azure OpenAI (v1 API),
Gemini's and Anthropic's compatible endpoints, vLLM, Ollama, llama.cpp server.

One client per deployment, built lazily (the import is deferred). It sends each request
exactly once (``max_retries=0``): retries, backoff and the circuit breaker live in the
generate stage, so every attempt is paced and counted there. The key is read from the
environment variable the deployment names and never leaves this object: errors are
redacted before they are raised.
"""

from __future__ import annotations

import email.utils
import os
import threading
import time
from typing import Any

from monitor.config import ConfigError, DeploymentConfig
from monitor.providers.base import ProviderError
from monitor.redact import redact
from monitor.types import Completion, GenerationRequest

NO_KEY = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) accept any non-empty key
RETRIABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529}
FATAL_STATUS = {401, 402, 403, 404}  # rejected key, no credit, no access, unknown model: every request would fail


class OpenAICompatProvider:
    """Chat or completion style, as the deployment's ``prompt_style`` says."""

    def __init__(self, dep: DeploymentConfig) -> None:
        self.name = dep.name
        self.dep = dep
        self._key = self._read_key(dep)
        self._client = None
        self._lock = threading.Lock()
        self.client()  # built now, so the import and setup do not stall the first wave of concurrent requests

    @staticmethod
    def _read_key(dep: DeploymentConfig) -> str:
        if not dep.api_key_env:
            return NO_KEY
        key = os.environ.get(dep.api_key_env, "").strip()
        if not key:
            raise ConfigError(
                f"deployment {dep.name!r}: environment variable {dep.api_key_env} (named by api_key_env) is not set; "
                f"export {dep.api_key_env}=<your key> before running, or remove api_key_env for a server without keys."
            )
        return key

    def client(self):
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self.dep.base_url, api_key=self._key, max_retries=0, timeout=self.dep.timeout_s,
                    default_headers={str(k): str(v) for k, v in (self.dep.extra.get("headers") or {}).items()} or None,
                )
            return self._client

    def payload(self, request: GenerationRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``, honouring the deployment's capabilities (stored as request_json)."""
        dep = self.dep
        body: dict[str, Any] = {"model": dep.model}
        if request.style == "chat":
            body["messages"] = [{"role": role, "content": text} for role, text in request.messages]
            body[str(dep.extra.get("max_tokens_param", "max_tokens"))] = request.max_tokens
        else:
            body["prompt"] = request.prompt if request.prompt is not None else _flatten(request.messages)
            body["max_tokens"] = request.max_tokens
        if dep.supports_temperature:
            body["temperature"] = request.temperature
            body["top_p"] = request.top_p
        if dep.supports_seed:
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)[:4]  # the OpenAI API accepts at most four stop sequences
        body.update(dep.extra.get("extra_body") or {})
        return body

    def describe(self, request: GenerationRequest) -> dict[str, Any]:
        path = "/chat/completions" if request.style == "chat" else "/completions"
        return {"endpoint": (self.dep.base_url or "").rstrip("/") + path, "body": self.payload(request)}

    def complete(self, request: GenerationRequest) -> Completion:
        import openai

        body = self.payload(request)
        path = "/chat/completions" if request.style == "chat" else "/completions"
        started = time.perf_counter()
        try:
            # The client's documented low-level call: same auth, base_url, timeout and error classes as
            # `chat.completions.create`, without re-validating our own body or building pydantic models
            # for the reply, which halves the client's CPU per request at high concurrency.
            response = self.client().post(path, body=body, cast_to=object)
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except openai.APITimeoutError:
            raise ProviderError(f"timed out after {self.dep.timeout_s:g} s (deployment timeout_s)", retriable=True) from None
        except openai.APIConnectionError as exc:
            raise ProviderError(self._clean(f"connection failed: {_cause(exc)}"), retriable=True) from None
        except (openai.APIResponseValidationError, ValueError) as exc:  # ValueError covers undecodable JSON
            raise ProviderError(self._clean(f"malformed response: {type(exc).__name__}: {exc}"), retriable=True) from None
        return self._parse(response, request.style, time.perf_counter() - started)

    def _parse(self, response: Any, style: str, latency: float) -> Completion:
        try:
            choice = response["choices"][0]
            if style == "chat":
                message = choice["message"]
                text = message.get("content")
                refusal = message.get("refusal")
                finish = "refusal" if refusal and not text else choice.get("finish_reason")
                text = text if text is not None else (refusal or "")
            else:
                text, finish = choice.get("text") or "", choice.get("finish_reason")
            usage = response.get("usage") or {}
            tokens_in, tokens_out = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            model = str(response.get("model") or self.dep.model)
            fingerprint = response.get("system_fingerprint")
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            shown = repr(response)[:200]
            raise ProviderError(self._clean(f"malformed response ({type(exc).__name__}): {shown}"), retriable=True) from None
        if not isinstance(text, str):
            raise ProviderError(self._clean(f"malformed response: content is {type(text).__name__}"), retriable=True)
        return Completion(
            text=text, model_reported=f"{model}@{fingerprint}" if fingerprint else model, tokens_in=tokens_in,
            tokens_out=tokens_out, finish_reason=finish, latency_s=latency,
        )

    def _status_error(self, exc: Any) -> ProviderError:
        status = int(getattr(exc, "status_code", 0) or 0)
        detail = _body_message(exc)
        message = self._clean(f"HTTP {status} {type(exc).__name__}: {detail}")
        return ProviderError(
            message, retriable=status in RETRIABLE_STATUS or status >= 500, fatal=status in FATAL_STATUS,
            retry_after=retry_after_seconds(getattr(exc, "response", None)),
        )

    def _clean(self, text: str) -> str:
        return redact(text, [self._key] if self._key != NO_KEY else []) or ""


def retry_after_seconds(response: Any) -> float | None:
    """Seconds from ``Retry-After`` (delta-seconds or an HTTP date) or ``retry-after-ms``; None when absent."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _body_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:500]
        return str(inner)[:500]
    return str(getattr(exc, "message", exc))[:500]


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{type(cause).__name__}: {cause}" if cause else str(exc)


def _flatten(messages: tuple[tuple[str, str], ...]) -> str:
    return "\n\n".join(text for _, text in messages) + "\nAnswer:"
