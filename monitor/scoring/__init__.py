"""Scoring: per-response language, sentiment and embedding; per-cell framing metrics and their statistics.

Modules: embed (MiniLM and a fake), language, sentiment, framing (metric maths), stats
(permutation test, FDR, bootstrap), bundles (cells from rows), responses and cells (the
stage), aggregate (dashboard aggregates; safe to import without torch).
"""
