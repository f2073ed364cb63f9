"""The README inside every snapshot: what each file is and what each column means.

Column descriptions live here, next to nothing else, so adding a column to the store means
adding one line here (tests/test_snapshot.py fails, naming the column, until it is done).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

FILES: dict[str, str] = {
    "README.md": "This file.",
    "manifest.json": "SHA-256 and size of every other file. `framewatch snapshot verify DIR` checks them.",
    "versions.json": "What produced the numbers: framewatch version, taxonomy/families/frames versions, the scorer "
                     "version pinned for reproduction, the embedder, library versions, the selection (batches, "
                     "deployments, with or without response text) and the reproduction tolerance.",
    "config.json": "The framewatch configuration in force at export, secrets removed: keys hold [REDACTED]; API keys "
                   "were never in it (only the NAMES of the environment variables holding them, e.g. api_key_env).",
    "snapshot.db": "A SQLite framewatch store with the same schema as the live one and only the exported rows "
                   "(scrubbed the same way). Open it with `framewatch dashboard --snapshot DIR`.",
    "prompts/*.toml": "The prompt data files in force at export (identity taxonomy, prompt families, frames).",
    "tables/<name>.csv": "Each table as CSV (UTF-8, header row, empty field = missing value).",
    "tables/<name>.parquet": "The same table as Parquet (typed columns; read with pandas.read_parquet or pyarrow).",
}

TABLES: dict[str, str] = {
    "batches": "Ingest batches in the snapshot.",
    "runs": "Monitoring cycles that produced those batches.",
    "feeds": "Feeds the exported articles came from.",
    "deployments": "Monitored deployments (model + sampling parameters + system prompt) in the snapshot.",
    "articles": "News items of the exported batches (metadata; title and feed summary as the feed gave them).",
    "templates": "Prompt templates: every family's canonical question and its paraphrases.",
    "frames": "The frames that wrap article + question into the text a model receives.",
    "identities": "The identity taxonomy: 6 dimensions x 7 identities, plus the placebo labels.",
    "prompts": "Instantiated prompts: one question per article x family x paraphrase x identity (or control).",
    "responses": "One row per model answer (metadata; the answer text only in snapshots exported with --with-text).",
    "scores": "Per-response scores: language check, VADER sentiment (English only).",
    "cells": "One scored bundle (deployment x article x family x paraphrase x dimension) with its controls.",
    "aggregates": "Per batch x deployment x dimension x family and metric: mean with a bootstrap interval.",
    "deployment_batches": "Per deployment x batch and metric: mean with a bootstrap interval (the trend charts).",
    "hotspots": "Groups (deployment x dimension x family) of each batch tested across the grid: significant and large ones flagged.",
    "stability": "Per deployment: SD and coefficient of variation of batch means across the exported batches.",
    "rank_agreement": "Kendall tau of the deployments' ranking between consecutive exported batches.",
}

_COMMON = {
    "id": "Deterministic id (hash of the row's natural key).",
    "batch_id": "Batch (batches.id).",
    "deployment": "Deployment name (deployments.name).",
    "article_id": "Article (articles.id).",
    "family": "Prompt family key.",
    "paraphrase": "Template index within the family: 0 = canonical question, 1.. = paraphrases.",
    "dimension": "Demographic dimension (or the control kind for control prompts).",
    "scorer_version": "Version of the scorer (embedder + VADER + framing maths) that produced the values.",
    "taxonomy_version": "Version of prompts/identities.toml (declared version + content hash).",
    "families_version": "Version of prompts/families.toml.",
    "frames_version": "Version of prompts/controls.toml (the frames).",
}

COLUMNS: dict[str, dict[str, str]] = {
    "batches": {
        "label": "Human label of the batch (the cycle label).", "status": "open or closed.",
        "opened_at": "When ingest opened the batch (UTC, ISO 8601).", "closed_at": "When it was closed (UTC).",
        "run_id": "Run that ingested it.", "feeds_ok": "Feeds polled successfully.", "feeds_failed": "Feeds that failed.",
        "feeds_unchanged": "Feeds that had not changed since the last poll.", "articles": "New articles in the batch.",
    },
    "runs": {
        "kind": "Run kind (cycle).", "status": "running, ok, partial, failed or abandoned.",
        "started_at": "Start (UTC).", "finished_at": "End (UTC).", "heartbeat_at": "Last sign of life (UTC).",
        "stage": "Last stage reached (ingest, generate, score, done, stopped).",
        "progress_done": "Items done in that stage.", "progress_total": "Items planned in that stage.",
        "error": "Why the run failed or stopped (secrets removed).",
        "config_json": "Configuration in force for the run (JSON, secrets removed).",
        "config_version": "Hash of the configuration.", "scorer_version": _COMMON["scorer_version"],
        "counts_json": "Counts recomputed from the stored rows at the end of the run (JSON).",
        "skipped_json": "Per deployment: requests left pending and why (budget, circuit breaker, stop) (JSON).",
        "label": "Cycle label.", "resumes": "How many times the run was resumed after an interruption.",
        "pid": "Process id of the monitor that ran it.", "host": "Host name of the machine that ran it.",
    },
    "feeds": {
        "name": "Feed name from the configuration.", "url": "Feed URL (credentials removed).",
        "etag": "Last HTTP ETag.", "last_modified": "Last HTTP Last-Modified.", "last_polled_at": "Last poll (UTC).",
        "last_success_at": "Last successful poll (UTC).", "last_status": "Status of the last poll.",
        "last_error": "Last error message.", "last_error_at": "When it happened (UTC).",
        "content_hash": "Hash of the last fetched body.", "feed_title": "Title the feed declares.",
        "language": "Language the feed declares.", "last_http_status": "HTTP status of the last poll.",
    },
    "deployments": {
        "name": "Stable deployment name from the configuration.", "provider": "local, openai (compatible) or scripted.",
        "model": "Model name.", "prompt_style": "completion (base models) or chat.",
        "system_prompt": "System prompt, if any.", "params_json": "Sampling and endpoint parameters (JSON, secrets removed).",
        "config_hash": "Hash of the deployment's configuration.", "updated_at": "When it was last recorded (UTC).",
    },
    "articles": {
        "feed_id": "Feed (feeds.id).", "guid": "Feed-provided id (or link).", "link": "Article URL.",
        "canonical_link": "Normalised URL used for de-duplication.", "title": "Title.", "summary": "Feed summary, cleaned.",
        "published_at": "Publication time (UTC).", "fetched_at": "Fetch time (UTC).",
        "date_missing": "1 when the feed gave no date (fetched_at used).", "language": "Detected language.",
        "language_declared": "Language the feed declared.", "stratum": "Identity-relevant or identity-neutral stratum.",
        "story_id": "Story group shared by near-duplicate articles.", "flags": "Normalisation flags (JSON list).",
        "sampled": "1 when the article was sampled for prompting.", "sample_reason": "Why it was (not) sampled.",
        "stratum_topics": "Topics that decided the stratum (JSON list).", "stratum_terms": "Matched terms (JSON list).",
        "stratum_version": "Version of the stratum lexicon.",
    },
    "templates": {
        "family": _COMMON["family"], "title": "Family title.", "paraphrase": _COMMON["paraphrase"],
        "template": "The question asked after the identity sentence.", "families_version": _COMMON["families_version"],
    },
    "frames": {
        "name": "completion, completion_with_system, chat_user or stop.", "text": "The frame text ({title}, {summary}, "
        "{question}, {system} are filled in).", "frames_version": _COMMON["frames_version"],
    },
    "identities": {
        "dimension": "Dimension key, or placebo.", "key": "Identity key (dimension.slug).", "label": "Short label.",
        "sentence": "First-person sentence put into the prompt.", "taxonomy_version": _COMMON["taxonomy_version"],
    },
    "prompts": {
        "control": "Empty for identity prompts; identity_free, placebo or repeat for controls.",
        "identity_key": "Identity (identities.key), empty for identity-free prompts.",
        "question": "The instantiated question (identity sentence + template).", "question_hash": "SHA-256 of question.",
    },
    "responses": {
        "prompt_id": "Prompt (prompts.id).", "sample_index": "Sample number (repeats of one prompt differ here).",
        "seed": "Seed sent with the request.", "run_id": "Run that generated it.",
        "status": "ok, refusal, empty or error.", "text": "The answer (only with --with-text; otherwise empty).",
        "error": "Error message for failed requests (secrets removed).", "model_reported": "Model id the backend reported.",
        "tokens_in": "Input tokens (reported, else estimated).", "tokens_out": "Output tokens.",
        "cost": "Cost of the request from the configured prices.", "latency_s": "Seconds the request took.",
        "created_at": "When it was stored (UTC).",
        "request_json": "Exactly what was sent: the rendered prompt or messages and sampling parameters (JSON).",
        "attempts": "Sends including retries.", "finish_reason": "Finish reason the backend reported.",
        "refusal_version": "Version of the refusal heuristic that set the status.",
    },
    "scores": {
        "response_id": "Response (responses.id).", "sentiment": "VADER compound in [-1, 1]; empty when not English.",
        "language": "Detected language.", "is_english": "1 when English (VADER applies).",
        "scored_at": "When it was scored (UTC).",
    },
    "cells": {
        "stratum": "The article's stratum.", "n_identities": "Identities expected in the dimension (7).",
        "n_valid": "Identity slots with a usable answer.", "n_refusals": "Refusals.", "n_errors": "Errors.",
        "n_empty": "Empty answers.", "n_missing": "Identity slots with no response at all.",
        "n_non_english": "Usable answers not in English (no sentiment).", "n_unscored": "ok answers not yet scored.",
        "n_sentiment": "Identity answers with a sentiment value.", "n_repeats": "Repeats of the identity-free prompt (K).",
        "n_placebo": "Placebo answers.", "valid": "1 when every identity slot has a usable answer.",
        "s": "S: mean pairwise cosine distance between identity answers.",
        "n": "N: the same over the K repeats (noise floor).", "scfs": "SCFS = S - N.",
        "s_placebo": "S over placebo answers.", "s_minus_placebo": "S - S_placebo.",
        "sent_range": "Max - min VADER compound over identities.", "sent_mad": "Mean absolute deviation of compounds.",
        "sent_range_noise": "Range expected from repeat noise alone.", "sent_mad_noise": "MAD expected from repeat noise.",
        "sent_range_corrected": "sent_range - sent_range_noise.", "sent_mad_corrected": "sent_mad - sent_mad_noise.",
        "p_value": "Permutation p-value: identity dispersion vs repeat dispersion.",
        "p_min": "Smallest p-value the permutation plan can give.",
        "q_value": "Benjamini-Hochberg q-value across the batch's grid.", "significant": "1 when q_value <= stats.fdr.",
        "far_identity": "Identity whose answer lies farthest from the centroid.",
        "sent_min_identity": "Identity with the lowest compound.", "sent_max_identity": "Identity with the highest compound.",
        "note": "Why a cell is invalid or partial.", "computed_at": "When it was computed (UTC).",
    },
}


_SUMMARY = {
    "metric": "Which cell metric the row summarises (a column of cells: scfs, s, n, ...).",
    "mean": "Mean of the metric over the group's cells where it is defined (invalid cells with a defined value "
            "included, counted in n_invalid).",
    "ci_low": "Lower end of the 95% percentile bootstrap interval of the mean (resampling articles).",
    "ci_high": "Upper end of that interval.",
    "ci_unit": "What the bootstrap resampled: article, cell (a single article) or empty (no interval possible).",
    "n_cells": "Cells in the group.", "n_defined": "Cells where the metric is defined.",
    "n_invalid": "Invalid cells in the group.", "n_articles": "Distinct articles.",
    "n_significant": "Cells significant after FDR.", "share_significant": "n_significant / n_cells.",
}
COLUMNS.update({
    "aggregates": dict(_SUMMARY),
    "deployment_batches": dict(_SUMMARY),
    "hotspots": {
        "n_cells": "Cells in the group.", "n_tested": "Cells with a permutation p-value.",
        "n_significant_cells": "Cells significant after FDR.", "mean": "Mean SCFS over the group's cells.",
        "ci_low": _SUMMARY["ci_low"], "ci_high": _SUMMARY["ci_high"], "ci_unit": _SUMMARY["ci_unit"],
        "p_value": "Fisher's combination of the cells' permutation p-values.",
        "q_value": "Benjamini-Hochberg q across the groups of the batch.", "significant": "1 when q_value <= stats.fdr.",
        "far_identities": "Identities most often farthest from their bundle's centroid, as 'key (cells)'.",
        "low_identities": "Most frequent lowest-sentiment identities.",
        "high_identities": "Most frequent highest-sentiment identities.",
    },
    "stability": {
        "metric": _SUMMARY["metric"], "n_batches": "Batches with a mean for the deployment.",
        "mean_of_batch_means": "Mean of the deployment's batch means.", "sd": "SD (ddof=1) of the batch means.",
        "cv": "Coefficient of variation sd / |mean|; empty when undefined.",
    },
    "rank_agreement": {
        "metric": _SUMMARY["metric"], "batch_from": "Earlier batch (batches.id).", "batch_to": "The next batch.",
        "n_deployments": "Deployments with a mean in both.",
        "kendall_tau": "Kendall tau-b of the deployments' ranking by mean between the two batches.",
    },
})


def describe(table: str, column: str) -> str | None:
    return COLUMNS.get(table, {}).get(column) or _COMMON.get(column)


def undocumented(tables: Mapping[str, Sequence[str]]) -> list[str]:
    return [f"{t}.{c}" for t, cols in tables.items() for c in cols if describe(t, c) is None]


def render(tables: Mapping[str, Sequence[str]], versions: dict, *, with_text: bool, tolerance: float) -> str:
    """The README: purpose, how to verify and reproduce, then every file and every column."""
    lines = [
        "# framewatch snapshot", "",
        f"Exported {versions['exported_at']} by framewatch {versions['framewatch']}: "
        f"{len(versions['batches'])} batch(es), deployments {', '.join(versions['deployments'])}; "
        + ("response text included." if with_text else "response text NOT included (exported without --with-text)."), "",
        "Every score here is an audit signal for human review: it says that a model's answer moved when only the "
        "stated identity changed. It is not a fairness ranking and not proof of harm.", "",
        "## Check and reproduce", "",
        "    framewatch snapshot verify DIR      # every file against manifest.json (SHA-256)",
        "    framewatch snapshot reproduce DIR   # recompute every score table from the responses", "",
        f"`reproduce` re-scores the responses with the pinned scorer (`{versions['scorer_version']}`) and compares "
        f"every numeric value with an absolute tolerance of {tolerance:g}; text and integer values must match exactly. "
        "It needs the response text, so it works only on snapshots exported with `--with-text`. q-values depend on "
        "the whole grid of a batch, so they are compared only for batches exported with all their deployments.", "",
        "## Files", "",
    ]
    lines += [f"- `{name}`: {text}" for name, text in FILES.items()]
    lines += ["", "## Tables and columns", ""]
    for table, cols in tables.items():
        lines += [f"### {table}", "", TABLES.get(table, ""), "", "| column | meaning |", "|---|---|"]
        lines += [f"| `{c}` | {describe(table, c) or 'undocumented'} |" for c in cols]
        lines.append("")
    return "\n".join(lines)
