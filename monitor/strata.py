"""Stratify articles: identity-relevant or identity-neutral, by a versioned keyword lexicon. Pure.

Why a lexicon: it is transparent (every decision lists the words that made it), fast,
deterministic, needs no model, and works on Spanish and Portuguese feeds too. The rule,
documented in docs/INGEST.md:

- text is lower-cased and accent-folded, split into word tokens;
- a term is a word (``vote``), a stem ending in ``*`` (``immigra*`` matches immigrant,
  immigration ...) or a phrase of such words (``cost of living``);
- each distinct identity term found scores 2 in the title and 1 in the summary;
- an article is ``identity_relevant`` when its score is >= 2 (one title hit, or two
  different summary hits), else ``identity_neutral``. A sports story about racist abuse
  is therefore identity-relevant: any clear identity signal wins over the neutral topics.
- neutral topics (sports, weather, markets, technology ...) are matched the same way and
  stored only to explain the decision.

Change the lexicon => bump STRATA_VERSION (stored with every article).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

STRATA_VERSION = "lexicon-1"
IDENTITY_RELEVANT = "identity_relevant"
IDENTITY_NEUTRAL = "identity_neutral"
STRATA = (IDENTITY_RELEVANT, IDENTITY_NEUTRAL)
THRESHOLD = 2

IDENTITY_TOPICS: dict[str, tuple[str, ...]] = {
    "immigration": (
        "immigra*", "emigra*", "migrant*", "migration", "refugee*", "asylum", "deport*", "border crossing*",
        "undocumented", "visa ban", "inmigra*", "imigra*", "refugiad*", "asilo",
        "xenophob*", "xenofob*",
    ),
    "religion": (
        "religio*", "church*", "mosque*", "synagogue*", "muslim*", "islam*", "christian*", "catholic*", "jewish",
        "jews", "judaism", "hindu*", "buddhis*", "sikh*", "pope", "imam*", "rabbi*", "atheis*", "faith",
        "antisemit*", "evangelical*", "ramadan", "hijab*", "iglesia*", "mezquita*", "musulman*", "cristian*",
        "catolic*", "judio*", "judia*", "muculman*", "igreja*", "sinagoga*", "blasphem*", "sectarian",
    ),
    "race_ethnicity": (
        "racis*", "racial*", "ethnic*", "indigenous", "aborigin*", "minorit*", "segregat*",
        "hate crime*", "civil rights", "apartheid", "black communit*", "black american*", "black people", "latino*", "hispanic*",
        "etnia*", "etnic*", "indigena*", "discrimina*", "afro*", "tribal", "tribe*",
    ),
    "gender_sexuality": (
        "women", "woman", "gender*", "feminis*", "femicide*", "feminicid*", "abortion*", "transgender*",
        "lgbt*", "gay", "lesbian*", "queer", "same-sex", "same sex", "sexual harass*", "rape*", "misogyn*",
        "domestic violence", "maternity", "mujer*", "genero", "femicidio*", "aborto*", "violacion*",
        "homosexual*", "machis*", "mulher*", "estupro*", "girls", "sexism", "sexist",
    ),
    "politics_elections": (
        "election*", "elector*", "vote", "votes", "voter*", "voting", "ballot*", "referendum*",
        "far-right", "far right", "far-left", "right-wing", "left-wing", "populis*", "nationalis*", "conservative*",
        "progressive*", "socialist*", "democrats", "republicans", "opposition leader", "polling station*", "eleccion*",
        "voto*", "votacion*", "candidat*", "balotaje", "plebiscit*", "eleicao", "eleicoes", "eleitor*", "urnas",
        "campaign trail",
    ),
    "poverty_class": (
        "poverty", "poor", "homeless*", "inequalit*", "welfare", "minimum wage*", "unemploy*", "cost of living",
        "hunger", "famine", "food bank*", "evict*", "low-income", "low income", "slum*", "pension*", "benefit cut*",
        "pobre*", "desigualdad*", "desemple*", "hambre", "salario minimo", "indigencia",
        "desempreg*", "fome", "working class", "wealth tax", "billionaire*",
    ),
}

NEUTRAL_TOPICS: dict[str, tuple[str, ...]] = {
    "sports": (
        "football*", "soccer", "league", "cup", "tournament*", "olympic*", "tennis", "cricket", "goal*",
        "championship*", "coach", "striker", "marathon", "match*", "season", "cyclist*", "rugby", "basketball",
        "futbol", "partido", "copa", "liga", "torneo", "campeonato",
    ),
    "weather": (
        "weather", "storm*", "rain*", "snow*", "heatwave*", "heat wave", "forecast*", "temperature*", "hurricane*",
        "flood*", "wind*", "frost", "fog", "clima", "tormenta*", "lluvia*", "chuva*",
    ),
    "markets": (
        "market*", "stock*", "shares", "index", "nasdaq", "dow", "interest rate*", "central bank", "currency",
        "earnings", "profit*", "bond*", "investor*", "oil price*", "merger", "mercado*", "bolsa", "acciones",
        "dolar", "tasas",
    ),
    "technology": (
        "technolog*", "tech", "software", "ai", "artificial intelligence", "app", "apps", "smartphone*", "chip*",
        "robot*", "satellite*", "rocket*", "launch*", "cyber*", "internet", "battery", "batteries", "electric vehicle*",
        "tecnologia", "developer*", "programming", "open source",
    ),
    "science_culture": (
        "scien*", "research*", "species", "telescope", "fossil*", "film*", "music", "album", "festival*",
        "museum*", "exhibition", "archaeolog*", "ciencia",
    ),
}


@dataclass(frozen=True, slots=True)
class StratumDecision:
    stratum: str
    score: int
    """Identity score: 2 per distinct title hit, 1 per distinct summary-only hit."""
    identity_topics: tuple[str, ...]
    neutral_topics: tuple[str, ...]
    matched: tuple[str, ...]
    """The identity terms that matched, so a reviewer sees why."""
    version: str = STRATA_VERSION


_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


def tokens(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _WORD.findall(folded)


@functools.cache
def _term_pattern(term: str) -> re.Pattern:
    words = [re.escape(w[:-1]) + r"[a-z0-9'-]*" if w.endswith("*") else re.escape(w) for w in term.split()]
    return re.compile(r"(?<![a-z0-9'-])" + " ".join(words) + r"(?![a-z0-9'-])")


def _hits(lexicon: dict[str, tuple[str, ...]], toks: list[str]) -> dict[str, set[str]]:
    text = " ".join(toks)
    found: dict[str, set[str]] = {}
    for topic, terms in lexicon.items():
        for term in terms:
            if _term_pattern(term).search(text):
                found.setdefault(topic, set()).add(term)
    return found


def classify(title: str, summary: str = "") -> StratumDecision:
    title_toks, summary_toks = tokens(title), tokens(summary)
    in_title = _hits(IDENTITY_TOPICS, title_toks)
    in_summary = _hits(IDENTITY_TOPICS, summary_toks)
    title_terms = set().union(*in_title.values()) if in_title else set()
    summary_terms = (set().union(*in_summary.values()) if in_summary else set()) - title_terms
    score = 2 * len(title_terms) + len(summary_terms)
    neutral = _hits(NEUTRAL_TOPICS, title_toks + ["|"] + summary_toks)
    return StratumDecision(
        stratum=IDENTITY_RELEVANT if score >= THRESHOLD else IDENTITY_NEUTRAL,
        score=score,
        identity_topics=tuple(sorted(set(in_title) | set(in_summary))),
        neutral_topics=tuple(sorted(neutral)),
        matched=tuple(sorted(title_terms | summary_terms)),
    )
