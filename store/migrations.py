"""Schema, only ever changed by appending a migration here.

sqlite-utils records each applied migration by name in the same transaction as the
change, so a failing migration rolls back and stays pending. Never edit an applied
migration: add a new one below it.
"""

from __future__ import annotations

from sqlite_utils import Database, Migrations

migrations = Migrations("framewatch")


@migrations()
def m001_core(db: Database) -> None:
    db["runs"].create(
        {
            "id": str, "kind": str, "status": str, "started_at": str, "finished_at": str, "heartbeat_at": str,
            "batch_id": str, "stage": str, "progress_done": int, "progress_total": int, "error": str,
            "config_json": str, "config_version": str, "taxonomy_version": str, "families_version": str,
            "frames_version": str, "scorer_version": str, "counts_json": str, "skipped_json": str,
        },
        pk="id",
    )
    db["feeds"].create(
        {
            "id": str, "name": str, "url": str, "etag": str, "last_modified": str, "last_polled_at": str,
            "last_success_at": str, "last_status": str, "last_error": str, "last_error_at": str,
        },
        pk="id",
    )
    db["batches"].create(
        {
            "id": str, "label": str, "status": str, "opened_at": str, "closed_at": str, "run_id": str,
            "feeds_ok": int, "feeds_failed": int, "feeds_unchanged": int, "articles": int,
        },
        pk="id",
    )
    db["feed_polls"].create(
        {
            "id": str, "batch_id": str, "feed_id": str, "polled_at": str, "status": str, "http_status": int,
            "error": str, "fetched": int, "new": int, "duplicate": int, "dropped": int, "dropped_json": str,
        },
        pk="id",
    )
    db["articles"].create(
        {
            "id": str, "feed_id": str, "batch_id": str, "guid": str, "link": str, "canonical_link": str,
            "title": str, "summary": str, "published_at": str, "fetched_at": str, "date_missing": int,
            "language": str, "language_declared": str, "stratum": str, "story_id": str, "flags": str,
            "sampled": int, "sample_reason": str,
        },
        pk="id",
    )
    db["articles"].create_index(["batch_id"])
    db["articles"].create_index(["canonical_link"])
    db["deployments"].create(
        {
            "name": str, "provider": str, "model": str, "prompt_style": str, "system_prompt": str,
            "params_json": str, "config_hash": str, "updated_at": str,
        },
        pk="name",
    )
    db["prompts"].create(
        {
            "id": str, "article_id": str, "family": str, "paraphrase": int, "control": str, "dimension": str,
            "identity_key": str, "question": str, "question_hash": str, "taxonomy_version": str,
            "families_version": str,
        },
        pk="id",
    )
    db["prompts"].create_index(["article_id", "family", "paraphrase"])
    db["responses"].create(
        {
            "id": str, "prompt_id": str, "deployment": str, "sample_index": int, "seed": int, "run_id": str,
            "batch_id": str, "status": str, "text": str, "error": str, "model_reported": str,
            "tokens_in": int, "tokens_out": int, "cost": float, "latency_s": float, "created_at": str,
            "request_json": str, "frames_version": str,
        },
        pk="id",
    )
    db["responses"].create_index(["batch_id", "deployment"])
    db["responses"].create_index(["prompt_id"])
    db["scores"].create(
        {
            "response_id": str, "scorer_version": str, "sentiment": float, "language": str, "is_english": int,
            "embedding": bytes, "scored_at": str,
        },
        pk="response_id",
    )
    db["cells"].create(
        {
            "id": str, "batch_id": str, "deployment": str, "article_id": str, "family": str, "paraphrase": int,
            "dimension": str, "n_identities": int, "n_valid": int, "n_refusals": int, "n_errors": int,
            "n_non_english": int, "valid": int, "s": float, "n": float, "scfs": float, "s_placebo": float,
            "s_minus_placebo": float, "sent_range": float, "sent_mad": float, "sent_range_noise": float,
            "sent_mad_noise": float, "sent_range_corrected": float, "sent_mad_corrected": float,
            "p_value": float, "q_value": float, "significant": int, "far_identity": str,
            "sent_min_identity": str, "sent_max_identity": str, "note": str, "scorer_version": str,
            "computed_at": str,
        },
        pk="id",
    )
    db["cells"].create_index(["batch_id", "deployment"])
    db["cells"].create_index(["deployment", "dimension", "family"])
    # Rows the dashboard may add (run now, re-score); the monitor picks them up and marks them done.
    db["requests"].create(
        {
            "id": str, "kind": str, "args_json": str, "requested_at": str, "requested_by": str, "status": str,
            "picked_at": str, "done_at": str, "result": str,
        },
        pk="id",
    )


@migrations()
def m_generate_001_ledger(db: Database) -> None:
    # Sends per key (retries included), why generation ended, which refusal heuristic classified it;
    # the ledger view sums tokens and cost per cycle and deployment from the responses themselves.
    for name, typ in (("attempts", int), ("finish_reason", str), ("refusal_version", str)):
        db["responses"].add_column(name, typ)
    db["responses"].create_index(["run_id", "deployment"])
    db.create_view(
        "ledger",
        """
        select run_id, batch_id, deployment, count(*) as requests,
          coalesce(sum(status = 'ok'), 0) as ok, coalesce(sum(status = 'refusal'), 0) as refusals,
          coalesce(sum(status = 'empty'), 0) as empty, coalesce(sum(status = 'error'), 0) as errors,
          coalesce(sum(attempts), 0) as attempts, coalesce(sum(tokens_in), 0) as tokens_in,
          coalesce(sum(tokens_out), 0) as tokens_out, coalesce(sum(cost), 0.0) as cost,
          min(created_at) as first_at, max(created_at) as last_at
        from responses group by run_id, batch_id, deployment
        """,
    )


@migrations()
def m_dashboard_001_reviews(db: Database) -> None:
    # One row per judgement; a cell may be reviewed again (the latest row is its status).
    # The cell's coordinates are copied in so the review survives a re-scored cell.
    db["reviews"].create(
        {
            "id": str, "cell_id": str, "batch_id": str, "deployment": str, "dimension": str, "family": str,
            "verdict": str, "note": str, "reviewer": str, "auth_method": str, "created_at": str,
        },
        pk="id",
    )
    db["reviews"].create_index(["cell_id", "created_at"])


@migrations()
def m_dashboard_002_search(db: Database) -> None:
    # Triggers keep the FTS5 tables in step with every insert/update by the monitor.
    db["responses"].enable_fts(["text"], create_triggers=True)
    db["articles"].enable_fts(["title", "summary"], create_triggers=True)


@migrations()
def m_ingest_001_feed_health(db: Database) -> None:
    # Why each article got its stratum, which lexicon decided it, and per-poll diagnostics for feed health.
    for name, typ in (("stratum_topics", str), ("stratum_terms", str), ("stratum_version", str)):
        db["articles"].add_column(name, typ)
    for name, typ in (("content_hash", str), ("feed_title", str), ("language", str), ("last_http_status", int)):
        db["feeds"].add_column(name, typ)
    for name, typ in (("warning", str), ("elapsed_s", float), ("bytes", int), ("final_url", str)):
        db["feed_polls"].add_column(name, typ)
    db["articles"].create_index(["guid"])
    db["articles"].create_index(["story_id"])
    db["feed_polls"].create_index(["feed_id", "polled_at"])


@migrations()
def m_stereo_001_tables(db: Database) -> None:
    # Stereotype probe: raw retrieval outputs, deduplicated candidates (with imported votes
    # kept as they are), annotators and their Likert ratings, test items and their
    # approvals, and probe runs whose results form a per-country time series.
    db["stereo_outputs"].create(
        {
            "id": str, "run_id": str, "deployment": str, "country": str, "category": str, "perspective": str,
            "round": int, "seed": int, "prompt": str, "request_json": str, "perspectives_version": str,
            "status": str, "raw_text": str, "error": str, "model_reported": str, "n_parsed": int, "n_new": int,
            "parsed_json": str, "created_at": str,
        },
        pk="id",
    )
    db["stereo_outputs"].create_index(["country", "category", "perspective"])
    db["stereo_candidates"].create(
        {
            "id": str, "country": str, "category": str, "target_group": str, "text": str, "text_norm": str,
            "source": str, "dataset": str, "source_file": str, "source_row": int, "keep_rule": str,
            "identity": str, "attribute": str, "votes_stereotype": int, "votes_non_stereotype": int,
            "votes_unsure": int, "extra_json": str, "deployment": str, "perspective": str, "round": int,
            "output_id": str, "embedding": bytes, "embedder": str, "catalog_version": str, "created_at": str,
        },
        pk="id",
    )
    db["stereo_candidates"].create_index(["country", "category"])
    db["stereo_candidates"].create_index(["dataset"])
    db["stereo_mentions"].create(
        {"id": str, "output_id": str, "candidate_id": str, "text": str, "match": str, "similarity": float},
        pk="id",
    )
    db["stereo_mentions"].create_index(["candidate_id"])
    db["stereo_annotators"].create(
        {
            "id": str, "name": str, "country": str, "born_raised": int, "fluent": int, "age_band": str,
            "region": str, "created_at": str,
        },
        pk="id",
    )
    db["stereo_ratings"].create(
        {
            "id": str, "annotator_id": str, "candidate_id": str, "country": str, "rating": int, "skipped": int,
            "created_at": str, "updated_at": str,
        },
        pk="id",
    )
    db["stereo_ratings"].create_index(["candidate_id"])
    db["stereo_ratings"].create_index(["annotator_id"])
    db["stereo_items"].create(
        {
            "id": str, "candidate_id": str, "country": str, "category": str, "target_group": str,
            "stereotype": str, "context": str, "stereotype_sentence": str, "counter_sentence": str,
            "source": str, "dataset": str, "author": str, "status": str, "raw_output": str, "error": str,
            "created_at": str, "decided_at": str,
        },
        pk="id",
    )
    db["stereo_items"].create_index(["status", "country"])
    db["stereo_item_approvals"].create(
        {"id": str, "item_id": str, "annotator_id": str, "decision": str, "note": str, "created_at": str},
        pk="id",
    )
    db["stereo_item_approvals"].create_index(["item_id"])
    db["stereo_probe_runs"].create(
        {
            "id": str, "started_at": str, "finished_at": str, "status": str, "seed": int, "deployments_json": str,
            "n_items": int, "probe_version": str, "catalog_version": str, "error": str,
        },
        pk="id",
    )
    db["stereo_probe_results"].create(
        {
            "id": str, "run_id": str, "deployment": str, "item_id": str, "country": str, "category": str,
            "target_group": str, "dataset": str, "method": str, "stereo_first": int, "prompt": str, "answer": str,
            "choice": str, "outcome": str, "stereo_wins": int, "lp_stereo": float, "lp_counter": float,
            "n_tok_stereo": int, "n_tok_counter": int, "error": str, "model_reported": str, "created_at": str,
        },
        pk="id",
    )
    db["stereo_probe_results"].create_index(["run_id", "deployment"])
    db["stereo_probe_results"].create_index(["deployment", "country"])


@migrations()
def m_alerts_001_alerts(db: Database) -> None:
    # alerts: one row per notification, with the data that triggered it and a dashboard link.
    # alert_state: one row per condition (rule + subject), so a condition that stays true alerts once.
    # alert_deliveries: one row per channel per alert; a failed delivery is data, never an exception.
    db["alerts"].create(
        {
            "id": str, "rule": str, "kind": str, "condition_key": str, "severity": str, "status": str,
            "title": str, "message": str, "data_json": str, "link": str, "batch_id": str, "deployment": str,
            "dimension": str, "family": str, "feed": str, "run_id": str, "created_at": str,
        },
        pk="id",
    )
    db["alerts"].create_index(["created_at"])
    db["alerts"].create_index(["condition_key"])
    db["alert_state"].create(
        {
            "condition_key": str, "rule": str, "active": int, "first_seen_at": str, "last_seen_at": str,
            "last_alert_at": str, "last_alert_id": str, "times_seen": int, "cleared_at": str,
        },
        pk="condition_key",
    )
    db["alert_deliveries"].create(
        {
            "id": str, "alert_id": str, "channel": str, "target": str, "status": str, "attempts": int,
            "error": str, "http_status": int, "sent_at": str,
        },
        pk="id",
    )
    db["alert_deliveries"].create_index(["alert_id"])


@migrations()
def m_scheduler_001_service(db: Database) -> None:
    # runs.label lets a restarted monitor resume an interrupted cycle (the run id is a hash of it);
    # resumes caps retries of a cycle that keeps killing the process. requests.label pins the cycle
    # a "run now" request started, so a request re-picked after a crash resumes it instead of
    # starting another. monitor_status: one row per database saying whether a monitor is alive.
    for name, typ in (("label", str), ("resumes", int), ("pid", int), ("host", str)):
        db["runs"].add_column(name, typ)
    db["runs"].create_index(["status"])
    for name, typ in (("label", str), ("run_id", str)):
        db["requests"].add_column(name, typ)
    db["requests"].create_index(["status"])
    db["monitor_status"].create(
        {
            "id": str, "pid": int, "host": str, "status": str, "started_at": str, "heartbeat_at": str,
            "stopped_at": str, "next_cycle_at": str, "current_run_id": str, "schedule": str, "message": str,
        },
        pk="id",
    )


@migrations()
def m_scoring_001_cell_details(db: Database) -> None:
    # Per-cell counts and context the METHODS define: why a cell is invalid, how many controls it had,
    # the smallest p its permutation test could give, and the article's stratum for strata comparisons.
    for name, kind in (("stratum", str), ("n_empty", int), ("n_missing", int), ("n_unscored", int),
                       ("n_sentiment", int), ("n_repeats", int), ("n_placebo", int), ("p_min", float)):
        db["cells"].add_column(name, kind)
    db["cells"].create_index(["batch_id", "significant"])
    db["scores"].create_index(["scorer_version"])


@migrations()
def m_dashboard_003_read_indexes(db: Database) -> None:
    # The dashboard's reads at scale (1M responses): a bundle's sibling cells, the compare join
    # and search hits find their cells by this key; hotspot lists filter significant cells of a batch.
    db["cells"].create_index(["batch_id", "deployment", "article_id", "family", "dimension", "paraphrase"],
                             index_name="idx_cells_bundle_key", if_not_exists=True)
    db["cells"].create_index(["batch_id", "significant", "scfs"], index_name="idx_cells_batch_significant",
                             if_not_exists=True)
    db["reviews"].create_index(["batch_id"], if_not_exists=True)


def migrate(db: Database) -> None:
    migrations.apply(db)
