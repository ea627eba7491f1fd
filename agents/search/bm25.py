"""Okapi BM25 over token lists, with a code-aware tokenizer that splits identifiers.

``tokenize("parseHTTPResponse_v2")`` yields the whole word and its parts:
``["parsehttpresponse_v2", "parse", "http", "response", "v2"]``. Path tokens are added to a file's
document several times (see :func:`path_tokens`), which weights them like a title field.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

#: Words too common in prose and code to carry signal (kept short on purpose; IDF does the rest).
STOPWORDS = frozenset(
    """a an and are as at be but by can could did do does for from had has have he her his how i if in into is it
    its me my no not of on or our she so than that the their them then there these they this those to too us was
    we were what when where which while who why will with would you your self def return import none true false
    let var const func fn pub use new null nil void int str
    """.split()
)

_split_cache: dict[str, tuple[str, ...]] = {}


def split_identifier(word: str) -> tuple[str, ...]:
    """Lower-cased parts of an identifier split at underscores, camelCase humps and digit runs."""
    cached = _split_cache.get(word)
    if cached is not None:
        return cached
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
    result = tuple(parts)
    if len(_split_cache) < 500_000:
        _split_cache[word] = result
    return result


_expand_cache: dict[str, tuple[str, ...]] = {}


def _expand(word: str) -> tuple[str, ...]:
    """Tokens for one identifier: the whole word lower-cased, plus its parts when it has several."""
    low = word.lower()
    parts = split_identifier(word)
    if len(parts) > 1:
        toks = [] if low in STOPWORDS else [low]
        toks += [p for p in parts if len(p) > 1 and p not in STOPWORDS and not p.isdigit()]
        return tuple(toks)
    return (low,) if len(low) > 1 and low not in STOPWORDS else ()


def tokenize(text: str) -> list[str]:
    """Search tokens of ``text``: each identifier lower-cased whole, plus its parts when it has several."""
    out: list[str] = []
    extend = out.extend
    cache = _expand_cache
    for word in _WORD.findall(text):
        toks = cache.get(word)
        if toks is None:
            toks = _expand(word)
            if len(cache) < 1_000_000:
                cache[word] = toks
        extend(toks)
    return out


def path_tokens(path: str, repeat: int = 3) -> list[str]:
    """Tokens of a file path (directories, stem), repeated ``repeat`` times to weight them."""
    stem = path.rsplit(".", 1)[0]
    return tokenize(stem.replace("/", " ").replace("\\", " ").replace("-", "_")) * repeat


class BM25Index:
    """An inverted index scoring documents with Okapi BM25 (``k1``, ``b``) for weighted queries."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.doc_ids: list[str] = []
        self._lengths: list[int] = []
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._idf: dict[str, float] = {}
        self._avgdl = 0.0
        self._norm: list[float] = []

    def __len__(self) -> int:
        return len(self.doc_ids)

    def add(self, doc_id: str, tokens: Iterable[str]) -> int:
        """Add a document; returns its internal number."""
        return self.add_counts(doc_id, Counter(tokens))

    def add_counts(self, doc_id: str, counts: Mapping[str, int]) -> int:
        """Add a document given as token -> count; returns its internal number."""
        idx = len(self.doc_ids)
        self.doc_ids.append(doc_id)
        self._lengths.append(sum(counts.values()))
        postings = self._postings
        for tok, tf in counts.items():
            lst = postings.get(tok)
            if lst is None:
                postings[tok] = [(idx, tf)]
            else:
                lst.append((idx, tf))
        return idx

    def finalize(self) -> None:
        """Compute IDF and length norms; call after the last :meth:`add`."""
        n = len(self.doc_ids)
        self._avgdl = (sum(self._lengths) / n) if n else 0.0
        avg = self._avgdl or 1.0
        self._norm = [self.k1 * (1 - self.b + self.b * dl / avg) for dl in self._lengths]
        self._idf = {t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self._postings.items()}

    def idf(self, token: str) -> float:
        """The token's IDF (0 for unknown tokens)."""
        return self._idf.get(token, 0.0)

    def doc_freq(self, token: str) -> int:
        """How many documents contain the token."""
        return len(self._postings.get(token, ()))

    def scores(self, query: Mapping[str, float] | Iterable[str], max_df: float = 1.0) -> dict[int, float]:
        """BM25 score per internal document number for a query (token list or token -> weight).

        Tokens found in more than ``max_df`` of the documents are skipped (they barely change ranks).
        """
        weights = query if isinstance(query, Mapping) else _query_weights(query)
        n = len(self.doc_ids)
        limit = max_df * n
        k1 = self.k1
        norm = self._norm
        acc: dict[int, float] = {}
        get = acc.get
        for tok, qw in weights.items():
            postings = self._postings.get(tok)
            if not postings or len(postings) > limit or qw <= 0:
                continue
            w = self._idf[tok] * qw * (k1 + 1)
            for doc, tf in postings:
                acc[doc] = get(doc, 0.0) + w * tf / (tf + norm[doc])
        return acc

    def search(self, query: Mapping[str, float] | Iterable[str], k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` best documents as ``(doc_id, score)``, best first."""
        acc = self.scores(query)
        best = heapq.nlargest(k, acc.items(), key=lambda kv: kv[1])
        return [(self.doc_ids[d], s) for d, s in best]


def _query_weights(tokens: Iterable[str], k3: float = 1.5) -> dict[str, float]:
    """Saturated query-term weights: repeating a word in the query helps, but less and less."""
    counts = Counter(tokens)
    return {t: (k3 + 1) * c / (k3 + c) for t, c in counts.items()}


def query_weights(tokens: Iterable[str], k3: float = 1.5) -> dict[str, float]:
    """Public form of the saturated query-term weighting used by :meth:`BM25Index.scores`."""
    return _query_weights(tokens, k3)
