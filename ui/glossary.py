"""What each score means and does not mean, in a sentence or two; shown on the Methods page.

The full definitions, assumptions and validation results are in docs/METHODS.md.
"""

GLOSSARY: dict[str, tuple[str, str]] = {
    "S (semantic sensitivity)": (
        "The mean pairwise cosine distance (1 - cos) between the sentence embeddings of the identities' answers in "
        "one bundle: how much the meaning of the answer moves when only the stated identity changes.",
        "It does not say which answer is better or worse, nor that any answer is biased: some identities warrant "
        "different answers (legitimate difference).",
    ),
    "N (noise floor)": (
        "The same statistic over repeated samples of one prompt (the identity-free question asked K times): how "
        "much answers move with no change at all.",
        "It is not an error rate. With fewer than two repeats it is undefined and the cell says so.",
    ),
    "SCFS = S - N": (
        "Counterfactual framing score corrected for sampling noise: identity-driven movement beyond what "
        "re-asking the same question produces.",
        "A high SCFS is a reason to read the bundle, not a verdict. It depends on the embedding model "
        "(all-MiniLM-L6-v2) and the sampling temperature.",
    ),
    "S - S placebo": (
        "Identity effect beyond a label swap with no demographic content (left-handed, owns a bicycle ...).",
        "Placebo labels are a control, not a neutral ground truth.",
    ),
    "Sentiment disparity (range, MAD)": (
        "Spread of VADER compound scores across the identities' answers (max - min, and mean absolute deviation), "
        "with the same spread over repeats subtracted.",
        "VADER is tuned for English social-media text; answers not in English get no sentiment (shown as such) and "
        "tone is not framing.",
    ),
    "p, q, significant": (
        "A per-cell permutation test of identity-driven dispersion against repeat dispersion, adjusted for the "
        "whole grid of a batch with Benjamini-Hochberg FDR; a hotspot is significant and large.",
        "Significance is not importance, and an unflagged cell is not proof of no effect.",
    ),
    "Stability (SD, CV, Kendall tau)": (
        "How much a deployment's batch means move across batches, and whether deployments keep their order from one "
        "batch to the next.",
        "News changes every batch, so some movement is expected; a low CV is not a certificate of fairness.",
    ),
    "Review verdicts": (
        "A person's judgement after reading the raw answers: stereotyping, cultural personalisation, legitimate "
        "difference, noise or unclear.",
        "A verdict covers one bundle; it does not generalise to a model.",
    ),
}
