"""Token log-likelihood of a continuation given a context, for deployments that expose it.

- Local llama.cpp: the packaged GGUF loaded with ``logits_all=True``; one forward pass over
  context + continuation, log-softmax of the logits that predict each continuation token.
- OpenAI-compatible completion endpoints that echo prompt log-probabilities
  (``echo=True, logprobs=0``: vLLM, llama.cpp server started with ``--logits_all true``).

Both return the sum of log-probabilities and the token count; the probe divides one by
the other (length normalisation), so a longer continuation is not penalised for its length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from monitor.config import DeploymentConfig
from monitor.providers.base import ProviderError

DEFAULT_PROBE_N_CTX = 512


@dataclass(frozen=True, slots=True)
class TokenScore:
    logprob_sum: float
    n_tokens: int

    @property
    def mean(self) -> float:
        return self.logprob_sum / self.n_tokens


class LogprobScorer(Protocol):
    model_reported: str

    def score(self, context: str, continuation: str) -> TokenScore:
        """Log-likelihood of ``continuation`` after ``context``; raise ProviderError on failure."""
        ...


def continuation_logprob(logits: np.ndarray, tokens: list[int], start: int) -> TokenScore:
    """Sum of log P(tokens[i] | tokens[:i]) for i >= start, from per-position logits
    (``logits[j]`` predicts ``tokens[j + 1]``). Pure."""
    if start < 1 or start >= len(tokens):
        raise ValueError(f"continuation must start inside the sequence (start={start}, length={len(tokens)})")
    rows = np.asarray(logits[start - 1: len(tokens) - 1], dtype=np.float32)
    top = rows.max(axis=1)
    # log-sum-exp per row; only the picked entries are needed, not the whole log-softmax
    lse = top.astype(np.float64) + np.log(np.exp(rows - top[:, None]).sum(axis=1, dtype=np.float64))
    picked = rows[np.arange(len(rows)), np.asarray(tokens[start:])].astype(np.float64) - lse
    return TokenScore(float(picked.sum()), len(picked))


class LlamaScorer:
    def __init__(self, dep: DeploymentConfig, separator: str = " ") -> None:
        from monitor.providers.llamacpp import DEFAULT_MODEL, gguf_path

        self.model = dep.model or DEFAULT_MODEL
        self.n_ctx = int(dep.extra.get("probe_n_ctx", DEFAULT_PROBE_N_CTX))
        self.separator = separator
        self.model_reported = f"llama.cpp:{gguf_path(self.model).name}"

    def score(self, context: str, continuation: str) -> TokenScore:
        return self.score_pair(context, continuation, continuation)[0]

    def score_pair(self, context: str, first: str, second: str) -> tuple[TokenScore, TokenScore]:
        """Both continuations after one evaluation of their shared prefix (the context), whose
        logits are computed for its last position only."""
        from monitor.providers.llamacpp import _LOCK, load_llama

        # The probe's own context size keeps the logits buffer (n_ctx x vocabulary) small.
        llm = load_llama(self.model, logits_all=True, n_ctx=self.n_ctx)
        ctx_tokens = llm.tokenize(context.encode("utf-8"), add_bos=True)
        seqs = [llm.tokenize((context + self.separator + c).encode("utf-8"), add_bos=True) for c in (first, second)]
        starts = [max(1, _common_prefix(ctx_tokens, s)) for s in seqs]
        for seq, start in zip(seqs, starts, strict=True):
            if len(seq) > self.n_ctx:
                raise ProviderError(f"item is {len(seq)} tokens, longer than probe_n_ctx={self.n_ctx}", retriable=False)
            if start >= len(seq):
                raise ProviderError("a continuation adds no token to the context", retriable=False)
        shared = min(starts)
        out = []
        with _LOCK:
            last_context_row = _decode(llm, seqs[0][:shared], 0, rows="last")
            for seq, start in zip(seqs, starts, strict=True):
                rows = _decode(llm, seq[shared:], shared, rows="all")  # drops the other continuation's cache
                # logits of positions shared-1 .. len-1, so the sequence is shifted by shared-1 too
                logits = np.vstack([last_context_row[None, :], rows])
                out.append(continuation_logprob(logits, seq[shared - 1:], start - shared + 1))
        return out[0], out[1]


class OpenAICompletionScorer:
    """Prompt log-probabilities echoed by an OpenAI-compatible ``/completions`` endpoint."""

    def __init__(self, dep: DeploymentConfig, separator: str = " ") -> None:
        from monitor.providers.openai_compat import OpenAICompatProvider

        self.dep = dep
        self.provider = OpenAICompatProvider(dep)
        self.separator = separator
        self.model_reported = dep.model

    def score(self, context: str, continuation: str) -> TokenScore:
        import openai

        prompt = context + self.separator + continuation
        try:
            response = self.provider.client().completions.create(
                model=self.dep.model, prompt=prompt, max_tokens=1, echo=True, logprobs=0, temperature=0.0)
        except openai.APIStatusError as exc:
            raise self.provider._status_error(exc) from None
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise ProviderError(f"{self.dep.name}: {type(exc).__name__}", retriable=True) from None
        self.model_reported = str(getattr(response, "model", None) or self.dep.model)
        return echoed_score(response, len(context), len(prompt))


def echoed_score(response, context_chars: int, prompt_chars: int) -> TokenScore:
    """Sum the echoed log-probabilities of tokens that start inside the continuation. Pure."""
    try:
        lp = response.choices[0].logprobs
        offsets, values = list(lp.text_offset), list(lp.token_logprobs)
    except (AttributeError, IndexError, TypeError):
        raise ProviderError("the endpoint returned no prompt log-probabilities (echo + logprobs); "
                            "set supports_logprobs = false for this deployment to use the forced-choice probe",
                            retriable=False) from None
    picked = [val for off, val in zip(offsets, values, strict=False)
              if context_chars <= off < prompt_chars and val is not None]
    if not picked:
        raise ProviderError("no echoed log-probabilities fall inside the continuation", retriable=False)
    return TokenScore(float(sum(picked)), len(picked))


def _decode(llm, tokens: list[int], n_past: int, *, rows: str) -> np.ndarray:
    """Evaluate ``tokens`` after the first ``n_past`` cached ones and return their logits:
    ``rows="last"`` keeps only the last position's (all a context needs), ``"all"`` every one.

    Skipping the context's logits saves the vocabulary-sized output layer (262k rows for
    Gemma 3) at each context position. That needs llama-cpp-python's batch object; without
    it the public ``eval`` computes every row and the unneeded ones are dropped.
    """
    batch, ctx = getattr(llm, "_batch", None), getattr(llm, "_ctx", None)
    if batch is None or ctx is None or len(tokens) > llm.n_batch or not hasattr(batch, "set_batch"):
        llm.n_tokens = n_past
        llm.eval(tokens)
        full = np.array(llm.scores[n_past: n_past + len(tokens)], copy=True)
        return full[-1] if rows == "last" else full
    ctx.kv_cache_seq_rm(-1, n_past, -1)
    batch.set_batch(batch=tokens, n_past=n_past, logits_all=rows == "all")
    ctx.decode(batch)
    n_rows = len(tokens) if rows == "all" else 1
    out = np.ctypeslib.as_array(ctx.get_logits(), shape=(n_rows * llm.n_vocab(),)).reshape(n_rows, -1).copy()
    llm.input_ids[n_past: n_past + len(tokens)] = tokens
    llm.n_tokens = n_past + len(tokens)
    return out[0] if rows == "last" else out


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def scorer_for(dep: DeploymentConfig, separator: str = " ") -> LogprobScorer:
    if dep.provider == "local":
        return LlamaScorer(dep, separator)
    return OpenAICompletionScorer(dep, separator)
