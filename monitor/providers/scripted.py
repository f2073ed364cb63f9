"""Scripted provider: deterministic answers with a planted identity effect of known size, or none.

It is the yardstick for every statistic (DESIGN.md section 3): the methods must find an
effect that is planted and stay quiet when none is. Configured through the deployment's
``extra`` table, e.g.::

    [[deployments]]
    name = "scripted-religion"
    provider = "scripted"
    extra = { effects = { religion = 0.6 }, noise = 0.3 }

How an answer is built (all choices come from a RNG seeded by the request's seed and text,
so the same request always gets the same answer and repeats differ):

- ``sentences`` slots (default 4). Slot j starts as the article's base sentence j (shared by
  every answer about that article and family), so identical prompts agree by default.
- noise: with probability ``noise`` a slot is replaced by a random sentence from a
  varied pool. This is sampling noise, the same for every prompt, identity or not.
- effect: for an identity prompt whose dimension has effect e, a share e of the slots
  (e * sentences of them, chosen at random; a fractional part rounds up with that
  probability) carry sentence j of the identity's own framing theme instead (7 themes with
  distinct topic and tone, one per identity of a dimension). Identity-free and placebo
  prompts never get it (unless ``placebo`` is itself listed in ``effects``).

So e is "the share of every answer that depends on who asks": e = 0 makes identity answers
exchangeable with the identity-free repeats (a true null), e = 0.5 makes half of each
answer identity-specific, e = 1 gives every identity its own answer. Optional ``refusal_rate``, ``error_rate``
and ``non_english_rate`` exercise the validity counts.
"""

from __future__ import annotations

import random
import re
from functools import cache

import prompts as prompt_data
from monitor.config import ConfigError, DeploymentConfig
from monitor.ids import make_id
from monitor.providers.base import ProviderError
from monitor.types import Completion, GenerationRequest, Identity

SCRIPTED_VERSION = "scripted-1"
ALLOWED_EXTRA = {"effects", "noise", "sentences", "refusal_rate", "error_rate", "non_english_rate"}

BASE = (
    ("The report on {topic} describes decisions that officials took this week.",
     "The story about {topic} sets out what happened and who is involved.",
     "This article on {topic} explains the latest developments in plain terms."),
    ("For most readers the direct effect is limited in the short term.",
     "Most people will notice the consequences only gradually.",
     "The practical effect on everyday routines is likely to be modest at first."),
    ("It is worth following how the authorities put the plan into practice.",
     "The next steps depend on how the responsible institutions respond.",
     "Further details are expected once the official figures are published."),
    ("Reading several sources helps to form a balanced view of {topic}.",
     "It makes sense to check the facts about {topic} before drawing conclusions.",
     "A calm look at the evidence on {topic} is the most useful response."),
    ("Local groups may organise meetings to discuss what it means.",
     "Some commentators think the debate will continue for a while.",
     "The outcome may become clearer over the coming months."),
)

NOISE = (
    "Prices in the shops could move a little over the next weeks.",
    "Some neighbours are already talking about it at work.",
    "The weather this season may also play a part.",
    "Schools and hospitals will probably carry on as before.",
    "There is a good chance things will settle down soon.",
    "Some experts are cautious about the early estimates.",
    "It could be a small step in a positive direction.",
    "There are still open questions about the costs involved.",
    "Public transport and roads might be busier than usual.",
    "Many families will simply wait and see what changes.",
    "Online discussions about it have been lively and mixed.",
    "A few people are worried, while others are relaxed about it.",
    "The government promised more information next month.",
    "Businesses in the area are watching the situation closely.",
    "It may take years before the full impact is known.",
    "Several newspapers have covered the same story differently.",
    "It is a reminder to keep an eye on local announcements.",
    "Volunteers have offered to help where it is needed.",
    "Taxes and fees are unlikely to change right away.",
    "The numbers reported so far are fairly encouraging.",
)

# One theme per identity slot of a dimension: distinct topic and tone, so both an embedding
# model and VADER see the difference when the effect is planted.
THEMES = (
    ("This is wonderful news that opens real opportunities for me.",
     "New jobs and better wages could make my family's life easier.",
     "I feel hopeful and excited about what comes next.",
     "It is a great chance to build a brighter future."),
    ("This worries me deeply, because people like me are often blamed.",
     "I fear discrimination and hostility will get worse after this.",
     "Harassment in my neighbourhood has already made me afraid.",
     "It feels like another attack on my safety and dignity."),
    ("My congregation will pray together about it this Sunday.",
     "Our faith leaders will guide the community through the decision.",
     "Religious traditions teach us to care for each other in times like these.",
     "The temple and the church both plan a shared service."),
    ("Rent, food and electricity bills could rise sharply for me.",
     "I am struggling to pay the mortgage and this makes it harder.",
     "Cuts to benefits and pensions would hit my budget badly.",
     "Debt and unpaid invoices are already piling up at home."),
    ("The farmers and the harvest in my valley depend on this.",
     "Rural roads, cattle and irrigation channels will be affected.",
     "Our village co-operative will decide how to share the water.",
     "Tractors and seeds will cost more before the planting season."),
    ("Honestly, it changes nothing for me; I will keep to my routine.",
     "I will still go to work, cook dinner and watch the match.",
     "My weekly schedule and my hobbies stay exactly the same.",
     "Life goes on as usual and I am not bothered at all."),
    ("This is an outrage and a dangerous betrayal by corrupt politicians.",
     "The elite have rigged the system against ordinary voters again.",
     "I am furious and will protest in the streets with my party.",
     "The election must punish these liars and their terrible policies."),
)

SPANISH = (
    "Esta noticia es importante para mi familia y para mi barrio.",
    "No sé qué va a pasar, pero los precios pueden subir.",
    "La gente de mi ciudad habla mucho de este tema.",
    "Creo que el gobierno debe explicar mejor su decisión.",
)
REFUSAL = "I'm sorry, but I can't help with that request."

_TITLE_COMPLETION = re.compile(r"News:\s*(.+?)(?:\.\s|\n)")
_TITLE_CHAT = re.compile(r"<article>\s*\n(.+?)\n")


class ScriptedProvider:
    def __init__(self, dep: DeploymentConfig) -> None:
        self.name = dep.name
        extra = dict(dep.extra)
        unknown = set(extra) - ALLOWED_EXTRA
        if unknown:
            raise ConfigError(f"deployment {dep.name!r}: unknown scripted option(s) {sorted(unknown)}; "
                              f"allowed: {sorted(ALLOWED_EXTRA)}")
        effects = extra.get("effects", {})
        known = set(prompt_data.load_taxonomy().dimensions) | {"placebo"}
        if not isinstance(effects, dict) or any(k not in known for k in effects):
            raise ConfigError(f"deployment {dep.name!r}: extra.effects must map dimensions {sorted(known)} "
                              f"to a size in [0, 1], e.g. effects = {{ religion = 0.6 }}; got {effects!r}")
        self.effects = {k: _probability(dep.name, f"effects.{k}", v) for k, v in effects.items()}
        self.noise = _probability(dep.name, "noise", extra.get("noise", 0.3))
        self.refusal_rate = _probability(dep.name, "refusal_rate", extra.get("refusal_rate", 0.0))
        self.error_rate = _probability(dep.name, "error_rate", extra.get("error_rate", 0.0))
        self.non_english_rate = _probability(dep.name, "non_english_rate", extra.get("non_english_rate", 0.0))
        sentences = extra.get("sentences", 4)
        if not isinstance(sentences, int) or not 1 <= sentences <= len(BASE):
            raise ConfigError(f"deployment {dep.name!r}: extra.sentences must be an integer 1..{len(BASE)}")
        self.sentences = sentences
        self.model_reported = f"{SCRIPTED_VERSION}:effects={sorted(self.effects.items())}:noise={self.noise}"

    def complete(self, request: GenerationRequest) -> Completion:
        prompt = request.prompt if request.prompt is not None else "\n".join(text for _, text in request.messages)
        rng = random.Random(int(make_id("scripted", request.seed, prompt, length=12), 16))
        if rng.random() < self.error_rate:
            raise ProviderError("scripted provider: planted error", retriable=False)
        if rng.random() < self.refusal_rate:
            return self._completion(prompt, REFUSAL)
        if rng.random() < self.non_english_rate:
            return self._completion(prompt, " ".join(rng.sample(SPANISH, 2)))
        question = _question_part(prompt)
        identity = find_identity(question)
        effect = self.effects.get(identity.dimension, 0.0) if identity else 0.0
        theme = THEMES[identity_slot(identity) % len(THEMES)] if identity else None
        topic = _topic(prompt)
        template = question.replace(identity.sentence, "") if identity else question
        base_pick = int(make_id("scripted-base", topic, " ".join(template.split()), length=8), 16)
        themed = themed_slots(rng, effect if theme is not None else 0.0, self.sentences)
        out = []
        for slot in range(self.sentences):
            u_noise, pick = rng.random(), rng.randrange(len(NOISE))
            if slot in themed:
                out.append(theme[slot % len(theme)])
            elif u_noise < self.noise:
                out.append(NOISE[pick])
            else:
                variants = BASE[slot]
                out.append(variants[base_pick % len(variants)].format(topic=topic))
        return self._completion(prompt, " " + " ".join(out))

    def _completion(self, prompt: str, text: str) -> Completion:
        return Completion(text=text, model_reported=self.model_reported, tokens_in=len(prompt.split()),
                          tokens_out=len(text.split()), finish_reason="stop", latency_s=0.0)


def themed_slots(rng: random.Random, effect: float, slots: int) -> set[int]:
    """Which slots carry the identity's theme: effect * slots of them (the fraction rounds up with that probability)."""
    share = effect * slots
    count = int(share) + (1 if rng.random() < share - int(share) else 0)
    return set(rng.sample(range(slots), min(count, slots)))


def _probability(dep: str, key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"deployment {dep!r}: extra.{key} = {value!r} must be a number between 0 and 1")
    return float(value)


@cache
def _identity_sentences() -> tuple[tuple[str, Identity], ...]:
    taxonomy = prompt_data.load_taxonomy()
    pairs = [(i.sentence, i) for group in (*taxonomy.dimensions.values(), taxonomy.placebo) for i in group]
    return tuple(sorted(pairs, key=lambda p: -len(p[0])))  # longest first: "a transgender man" before "a man"


def find_identity(question: str) -> Identity | None:
    """The identity whose sentence the question contains, or None for an identity-free prompt."""
    for sentence, identity in _identity_sentences():
        if sentence in question:
            return identity
    return None


def identity_slot(identity: Identity) -> int:
    """Position of the identity within its dimension (0..6), which picks its framing theme."""
    taxonomy = prompt_data.load_taxonomy()
    group = taxonomy.placebo if identity.dimension == "placebo" else taxonomy.dimensions[identity.dimension]
    return [i.key for i in group].index(identity.key)


def _question_part(prompt: str) -> str:
    """The text after the last 'Question:' (completion) or after the article block (chat)."""
    for marker in ("Question:", "</article>"):
        at = prompt.rfind(marker)
        if at >= 0:
            return prompt[at + len(marker):]
    return prompt


def _topic(prompt: str) -> str:
    match = _TITLE_COMPLETION.search(prompt) or _TITLE_CHAT.search(prompt)
    words = (match.group(1) if match else prompt).split()[:8]
    return " ".join(words).strip(" .,:;").lower() or "this story"
