"""A small generated corpus whose geometry is known in advance (for chapter 2).

Real text would need millions of words before word2vec's analogies appear. This corpus is built so
that they appear after a few thousand sentences, in seconds on a CPU, and so that the reader can see
*why*: every word of interest is a combination of a few attributes, and every sentence template
expresses exactly one attribute.

- **Royalty and gender.** ``king, queen, prince, princess, man, woman, boy, girl`` each have a
  *gender* (male/female), a *rank* (royal/common) and an *age* (adult/young). A gender template
  puts the word next to ``his/himself/he`` or ``her/herself/she``; a rank template next to
  ``royal/crowned/ruled/throne`` or ``humble/tired/farmed/cottage``; an age template next to
  ``old/grown/married`` or ``little/young/small``. So ``king`` shares the royal contexts of
  ``queen`` and the male contexts of ``man``: king − man + woman lands near queen.
- **Countries and capitals.** ``france/paris, italy/rome, japan/tokyo, germany/berlin,
  spain/madrid, egypt/cairo, russia/moscow, china/beijing`` each have a *nation* (its language and
  two foods) and a *kind* (country: ``country of, government, treaty, borders``; city:
  ``city of, mayor, metro, streets``). So paris − france + italy lands near rome.
- **Verb tense.** ``walk/walked, play/played, cook/cooked, paint/painted, jump/jumped,
  talk/talked``: each verb has its own objects (``walk`` → ``park, dog, trail``) in either tense,
  and a *tense* (``today, now, often, every day`` vs ``yesterday, then, once, last week``). So
  walked − walk + play lands near played.
- **Polysemy.** ``bank`` appears in river sentences (``river, water, fish, muddy``), as does
  ``shore``, and in money sentences (``money, loan, account, cash``), as does ``vault``: one static
  vector must serve both senses.

Every attribute word sits within two positions of the word it describes, so a skip-gram window of
2 sees it. Sentence families never mix attributes (a male word never shares a sentence with
``her``), which is what makes the attribute directions clean.

:func:`generate_corpus` draws sentences from these template families with a seeded
:class:`random.Random`, so the same ``(n_sentences, seed)`` always gives the same corpus.
"""

from __future__ import annotations

import random

from lib._checks import check_int, check_positive_int

# --- the attributes of every word of interest --------------------------------------------------

#: word -> (gender, rank, age)
PEOPLE: dict[str, tuple[str, str, str]] = {
    "king": ("male", "royal", "adult"),
    "queen": ("female", "royal", "adult"),
    "prince": ("male", "royal", "young"),
    "princess": ("female", "royal", "young"),
    "man": ("male", "common", "adult"),
    "woman": ("female", "common", "adult"),
    "boy": ("male", "common", "young"),
    "girl": ("female", "common", "young"),
}

#: nation -> (country, capital, language, foods)
NATIONS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "french": ("france", "paris", "french", ("croissants", "baguettes")),
    "italian": ("italy", "rome", "italian", ("pasta", "pizza")),
    "japanese": ("japan", "tokyo", "japanese", ("sushi", "ramen")),
    "german": ("germany", "berlin", "german", ("sausages", "pretzels")),
    "spanish": ("spain", "madrid", "spanish", ("paella", "tapas")),
    "egyptian": ("egypt", "cairo", "arabic", ("falafel", "koshari")),
    "russian": ("russia", "moscow", "russian", ("borscht", "blini")),
    "chinese": ("china", "beijing", "mandarin", ("dumplings", "noodles")),
}

#: verb -> (past tense, objects it takes)
VERBS: dict[str, tuple[str, tuple[str, ...]]] = {
    "walk": ("walked", ("park", "dog", "trail")),
    "play": ("played", ("game", "ball", "piano")),
    "cook": ("cooked", ("dinner", "soup", "rice")),
    "paint": ("painted", ("wall", "picture", "fence")),
    "jump": ("jumped", ("rope", "puddle", "hurdle")),
    "talk": ("talked", ("friend", "teacher", "phone")),
}

# --- the templates: each expresses ONE attribute of the slot word ``{w}`` ---------------------

_GENDER = {
    "male": [
        "the {w} raised his hand",
        "the {w} himself came",
        "the {w} and his friends laughed",
        "the {w} lost his hat",
        "he saw the {w} smile",
    ],
    "female": [
        "the {w} raised her hand",
        "the {w} herself came",
        "the {w} and her friends laughed",
        "the {w} lost her hat",
        "she saw the {w} smile",
    ],
}
_RANK = {
    "royal": [
        "the royal {w} waved",
        "the {w} ruled the kingdom",
        "a crowned {w} sat",
        "guards saluted the {w}",
        "the {w} inherited the throne",
    ],
    "common": [
        "the humble {w} waved",
        "the {w} farmed the land",
        "a tired {w} sat",
        "neighbours greeted the {w}",
        "the {w} rented the cottage",
    ],
}
_AGE = {
    "adult": ["the old {w} rested", "the grown {w} paid", "the {w} was married"],
    "young": ["the little {w} giggled", "the young {w} learned", "the {w} was small"],
}
_NATION = [
    "{language} speaking {w}",
    "{food} from {w}",
    "{w} loves {food}",
    "{w} speaks {language}",
    "visitors to {w} eat {food}",
]
_KIND = {
    "country": [
        "the country of {w}",
        "the government of {w} resigned",
        "{w} signed a treaty",
        "{w} guards its borders",
        "the nation of {w}",
    ],
    "city": [
        "the city of {w}",
        "the mayor of {w} resigned",
        "{w} opened a metro",
        "{w} cleans its streets",
        "the downtown of {w}",
    ],
}
_CAPITAL_OF = ["{city} is the capital of {country}"]
_VERB_OBJECT = [
    "i {w} the {obj}",
    "we {w} the {obj} together",
    "they {w} the {obj} slowly",
]
_TENSE = {
    "present": ["today i {w}", "now they {w}", "they often {w}", "i {w} every day"],
    "past": ["yesterday i {w}", "then they {w}", "they once {w}", "i {w} last week"],
}
_BANK = {
    "river": [
        "the river {x} flooded",
        "fish swam near the {x}",
        "the muddy {x} of the river",
        "water lapped the {x}",
    ],
    "money": [
        "the {x} gave a loan",
        "money in the {x}",
        "she opened an account at the {x}",
        "cash from the {x}",
    ],
}
_BANK_PARTNER = {"river": "shore", "money": "vault"}

#: Word classes of the corpus whose members can replace each other in its sentences
#: ("substitutes"): a query for :func:`lib.similarity.neighbour_class_share`.
WORD_CLASSES: dict[str, list[str]] = {
    "people": list(PEOPLE),
    "countries": [country for country, _, _, _ in NATIONS.values()],
    "capitals": [capital for _, capital, _, _ in NATIONS.values()],
    "present": list(VERBS),
    "past": [past for past, _ in VERBS.values()],
}

#: A description of the corpus that a chapter can print: the relations and the template families.
CORPUS_STRUCTURE: dict[str, dict[str, object]] = {
    "royalty/gender": {
        "words": {w: "/".join(attrs) for w, attrs in PEOPLE.items()},
        "template families": {
            "gender": "next to his/himself/he or her/herself/she",
            "rank": "next to royal/crowned/ruled/throne or humble/tired/farmed/cottage",
            "age": "next to old/grown/married or little/young/small",
        },
        "analogy": "king − man + woman ≈ queen",
    },
    "country/capital": {
        "words": {country: capital for country, capital, _, _ in NATIONS.values()},
        "template families": {
            "nation": "next to the nation's language and foods",
            "kind": "country templates (country of, government, treaty, borders) or city "
            "templates (city of, mayor, metro, streets)",
            "capital-of": "'<city> is the capital of <country>'",
        },
        "analogy": "paris − france + italy ≈ rome",
    },
    "verb tense": {
        "words": {verb: past for verb, (past, _) in VERBS.items()},
        "template families": {
            "object": "the verb (either tense) with its own objects (walk → park/dog/trail)",
            "tense": "today/now/often/every day vs yesterday/then/once/last week",
        },
        "analogy": "walked − walk + play ≈ played",
    },
    "polysemy": {
        "words": {"bank": "river sense (with shore) and money sense (with vault)"},
        "template families": {
            "river": "bank/shore next to river, water, fish, muddy",
            "money": "bank/vault next to money, loan, account, cash",
        },
        "analogy": "none: one static vector must serve both senses",
    },
}


def _people_sentence(rng: random.Random) -> str:
    word = rng.choice(sorted(PEOPLE))
    gender, rank, age = PEOPLE[word]
    family = rng.choice((_GENDER[gender], _RANK[rank], _AGE[age]))
    return rng.choice(family).format(w=word)


def _nation_sentence(rng: random.Random) -> str:
    country, capital, language, foods = NATIONS[rng.choice(sorted(NATIONS))]
    word = rng.choice((country, capital))
    roll = rng.random()
    if roll < 0.1:  # the explicit relation, rarely
        return rng.choice(_CAPITAL_OF).format(city=capital, country=country)
    if roll < 0.55:  # the nation attribute (shared by the country and its capital)
        food, food2 = rng.sample(foods, 2)
        template = rng.choice(_NATION)
        return template.format(w=word, language=language, food=food, food2=food2)
    kind = "country" if word == country else "city"  # the kind attribute
    return rng.choice(_KIND[kind]).format(w=word)


def _verb_sentence(rng: random.Random) -> str:
    verb = rng.choice(sorted(VERBS))
    past, objects = VERBS[verb]
    tense = rng.choice(("present", "past"))
    word = verb if tense == "present" else past
    if rng.random() < 0.5:  # the verb attribute: its objects (either tense)
        return rng.choice(_VERB_OBJECT).format(w=word, obj=rng.choice(objects))
    return rng.choice(_TENSE[tense]).format(w=word)  # the tense attribute


def _bank_sentence(rng: random.Random) -> str:
    sense = rng.choice(("river", "money"))
    word = "bank" if rng.random() < 0.5 else _BANK_PARTNER[sense]
    return rng.choice(_BANK[sense]).format(x=word)


#: Template families and their share of the sentences.
_FAMILIES = (
    (_people_sentence, 0.35),
    (_nation_sentence, 0.35),
    (_verb_sentence, 0.2),
    (_bank_sentence, 0.1),
)


def generate_corpus(n_sentences: int = 5_000, seed: int = 0) -> list[list[str]]:
    """Generate ``n_sentences`` tokenised sentences from the template families (deterministic).

    Each sentence is drawn by picking a family (people 35 %, nations 35 %, verbs 20 %, bank 10 %),
    then a word of interest, then one attribute of that word and a template expressing it (see
    :data:`CORPUS_STRUCTURE`). Words are lower-case and split on spaces; there is no punctuation.

    The structure mirrors what skip-gram learns (Mikolov et al. 2013): a word's
    vector encodes the distribution of its contexts, and here every word's contexts are a mixture of
    its attributes' contexts, so attribute differences become (approximately) constant offsets.

    Args:
        n_sentences: how many sentences, >= 1.
        seed: seed of the :class:`random.Random` that drives every choice (>= 0).

    Returns:
        ``list[list[str]]``: ``n_sentences`` sentences, each a list of tokens.

    Raises:
        TypeError: ``n_sentences`` or ``seed`` is not an int.
        ValueError: ``n_sentences < 1`` or ``seed < 0``.

    References:
        Mikolov et al., Efficient Estimation of Word Representations in Vector Space,
        arXiv:1301.3781.
    """
    n_sentences = check_positive_int("n_sentences", n_sentences)
    seed = check_int("seed", seed, minimum=0)
    rng = random.Random(seed)
    makers = [maker for maker, _ in _FAMILIES]
    weights = [weight for _, weight in _FAMILIES]
    sentences = []
    for _ in range(n_sentences):
        maker = rng.choices(makers, weights=weights)[0]
        sentences.append(maker(rng).split())
    return sentences
