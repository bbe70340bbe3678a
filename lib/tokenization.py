"""Byte-level BPE taken apart, and under-trained tokens found from an embedding table (chapter 1).

GPT-2's tokenizer (Radford et al. 2019) runs BPE (Sennrich et al. 2016, arXiv:1508.07909) on the
UTF-8 *bytes* of the text. So that every byte can be written as a printable character in a
vocabulary file, each of the 256 byte values gets a Unicode character of its own
(:func:`bytes_to_unicode`): the printable Latin-1 bytes stand for themselves, the others (space,
newline, control bytes, ...) are moved to code points 256 and up, so a space is ``Ġ`` (U+0120)
and a newline ``Ċ`` (U+010A). :func:`byte_level_spelling` writes a text that way and
:func:`bpe_merge_steps` replays the merges of a piece in rank order, as GPT-2's ``encoder.py``
does. SmolLM2 (:mod:`lib.smollm`) uses the same scheme.

:func:`unused_token_distance` is the indicator Land & Bartolo (2024, arXiv:2405.05417) use to find
under-trained ("glitch") tokens: the cosine distance of each row of the (output) embedding matrix
to the mean of rows of tokens known to be unused, after removing the matrix's first principal
component (their code: ``magikarp/utils.py``, ``embedding_distance_metrics``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch

from lib._checks import check_floating, check_index_range, check_integer_tensor
from lib.smollm import GGML_TYPES, GGUFContents, dequantize

__all__ = [
    "MergeStep",
    "bpe_merge_steps",
    "byte_level_spelling",
    "bytes_to_unicode",
    "gguf_tensor",
    "missing_byte_symbols",
    "unused_token_distance",
]


@functools.lru_cache(maxsize=1)
def _byte_map() -> tuple[tuple[int, str], ...]:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    chars = list(printable)
    shift = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + shift)  # the next unused code point from 256 on
            shift += 1
    return tuple(zip(printable, (chr(c) for c in chars), strict=True))


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte value to the printable character that spells it.

    The 188 bytes that are printable Latin-1 characters (``!`` … ``~``, ``¡`` … ``¬``,
    ``®`` … ``ÿ``) map to themselves; the other 68 (controls, space, DEL, NBSP, soft hyphen) map,
    in byte order, to the code points 256, 257, …: byte 32 (space) becomes ``Ġ`` (U+0120).

    Equation:
        m(b) = chr(b) if b is printable, else chr(256 + #{non-printable bytes < b})

    Returns:
        A new dict with the 256 byte values as keys, each mapped to a one-character string.

    References:
        Radford et al., Language Models are Unsupervised Multitask Learners (2019), GPT-2's
        ``encoder.py`` (``bytes_to_unicode``).
    """
    return dict(_byte_map())


def byte_level_spelling(text: str) -> str:
    """Spell a text's UTF-8 bytes with :func:`bytes_to_unicode`: what byte-level BPE works on.

    Equation:
        spelling(text) = m(b_1) m(b_2) … m(b_n),  b = utf8(text)

    Args:
        text: any string.

    Returns:
        One character per UTF-8 byte of ``text`` (an ASCII letter stays itself, a space is ``Ġ``,
        an emoji is four characters).

    Raises:
        TypeError: ``text`` is not a string.

    References:
        Radford et al., Language Models are Unsupervised Multitask Learners (2019).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    table = dict(_byte_map())
    return "".join(table[b] for b in text.encode("utf-8"))


@dataclass(frozen=True)
class MergeStep:
    """One merge applied to a piece by :func:`bpe_merge_steps`.

    Attributes:
        pair: the two adjacent symbols merged (every occurrence of the pair is merged at once).
        rank: the merge's rank, its 0-based line in the merges list (lower is applied first).
        symbols: the piece's symbols after the merge.
    """

    pair: tuple[str, str]
    rank: int
    symbols: tuple[str, ...]


def _ranks(merges: Sequence[tuple[str, str]] | Mapping[tuple[str, str], int]) -> dict:
    if isinstance(merges, Mapping):
        return dict(merges)
    if isinstance(merges, str) or not isinstance(merges, Iterable):
        raise TypeError(f"merges must be a sequence of (left, right) pairs, got {merges!r:.60}")
    ranks: dict[tuple[str, str], int] = {}
    for rank, pair in enumerate(merges):
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise ValueError(f"merges[{rank}] must be a (left, right) pair, got {pair!r:.60}")
        ranks.setdefault((str(pair[0]), str(pair[1])), rank)
    return ranks


def bpe_merge_steps(
    piece: str, merges: Sequence[tuple[str, str]] | Mapping[tuple[str, str], int]
) -> list[MergeStep]:
    """Replay byte-level BPE on one pre-tokenized piece: each merge, in the order applied.

    Start from the piece's characters; while some adjacent pair is in the merges list, merge the
    pair of lowest rank, every occurrence from left to right (GPT-2's ``encoder.py``, ``bpe``).
    The last step's symbols are the piece's tokens.

    Equation:
        (a, b)* = argmin over adjacent pairs (a, b) of rank(a, b);  replace each "a b" by "ab"

    Args:
        piece: one piece in byte-level spelling (:func:`byte_level_spelling`), non-empty.
        merges: the merges in rank order, as ``(left, right)`` pairs, or a dict pair -> rank.

    Returns:
        The merges applied, in order; empty when no pair of the piece is a merge.

    Raises:
        TypeError: ``piece`` is not a string, or ``merges`` not a sequence or mapping.
        ValueError: an empty ``piece``, or an entry of ``merges`` that is not a pair.

    References:
        Sennrich et al., Neural Machine Translation of Rare Words with Subword Units,
        arXiv:1508.07909.
    """
    if not isinstance(piece, str):
        raise TypeError(f"piece must be a str, got {type(piece).__name__}")
    if not piece:
        raise ValueError("piece must be a non-empty string")
    ranks = _ranks(merges)
    symbols = list(piece)
    steps: list[MergeStep] = []
    while len(symbols) > 1:
        pairs = set(itertools.pairwise(symbols))
        known = [pair for pair in pairs if pair in ranks]
        if not known:
            break
        best = min(known, key=lambda pair: ranks[pair])
        merged: list[str] = []
        i = 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                merged.append(symbols[i] + symbols[i + 1])
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
        steps.append(MergeStep(pair=best, rank=ranks[best], symbols=tuple(symbols)))
    return steps


def missing_byte_symbols(vocab: Mapping[str, int] | Iterable[str]) -> list[int]:
    """The byte values whose one-character spelling is not a token of a byte-level vocabulary.

    A byte-level BPE vocabulary can spell any text only if it holds all 256 single-byte symbols
    (:func:`bytes_to_unicode`); a byte without its symbol cannot be encoded at all (tokenizers
    then drop it or fail).

    Args:
        vocab: the tokens (a dict token -> id, or any iterable of token strings).

    Returns:
        The missing byte values, sorted (empty for a complete byte-level vocabulary).

    Raises:
        TypeError: ``vocab`` is a string or not iterable.

    References:
        Radford et al., Language Models are Unsupervised Multitask Learners (2019).
    """
    if isinstance(vocab, str) or not isinstance(vocab, Iterable):
        raise TypeError(
            f"vocab must be a mapping or an iterable of token strings, got {vocab!r:.60}"
        )
    tokens = set(vocab)
    return sorted(b for b, char in _byte_map() if char not in tokens)


def gguf_tensor(contents: GGUFContents, name: str) -> torch.Tensor:
    """One tensor of a GGUF file, read and dequantized to float32 alone (the rest stays on disk).

    Chapter 1 needs SmolLM2's embedding table, not the model: this reads the table's bytes
    (``token_embd.weight``, 8-bit Q8_0 blocks, 16 MB on disk) and expands them with
    :func:`lib.smollm.dequantize`.

    Args:
        contents: a parsed file (:func:`lib.smollm.read_gguf`).
        name: the tensor's GGUF name, e.g. ``"token_embd.weight"``.

    Returns:
        A new float32 tensor, shape in torch order (``[49152, 576]`` for SmolLM2's table).

    Raises:
        TypeError: ``contents`` is not a :class:`lib.smollm.GGUFContents`.
        KeyError: no tensor of that name (the message lists a few).
        ValueError: a ggml type :func:`lib.smollm.dequantize` does not read.

    References:
        ggml's GGUF specification, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
    """
    if not isinstance(contents, GGUFContents):
        raise TypeError(
            f"contents must be a GGUFContents (read_gguf), got {type(contents).__name__}"
        )
    if name not in contents.tensors:
        some = sorted(contents.tensors)[:5]
        raise KeyError(f"name must be a tensor of the file, got {name!r}; e.g. {some}")
    kind, shape, offset = contents.tensors[name]
    if kind not in GGML_TYPES:
        raise ValueError(
            f"tensor {name} has ggml type {kind}; dequantize reads {sorted(GGML_TYPES)}"
        )
    _, block, nbytes = GGML_TYPES[kind]
    n = 1
    for size in shape:
        n *= size
    with open(contents.path, "rb") as handle:
        handle.seek(offset)
        raw = torch.frombuffer(bytearray(handle.read(n // block * nbytes)), dtype=torch.uint8)
    return dequantize(raw, kind, shape)


def _first_pc(x: torch.Tensor) -> torch.Tensor:
    """Unit first principal component of the rows of x, without a centred copy of x."""
    mean = x.mean(dim=0).double()
    cov = (x.T @ x).double() - x.shape[0] * torch.outer(mean, mean)  # [d, d]
    _, vectors = torch.linalg.eigh(cov)  # ascending eigenvalues
    return vectors[:, -1].to(x.dtype)


def unused_token_distance(
    E: torch.Tensor, reference_ids: torch.Tensor | Sequence[int], *, remove_first_pc: bool = True
) -> torch.Tensor:
    """Land & Bartolo's under-trained-token indicator: cosine distance to the unused tokens' mean.

    Tokens that never occur in training keep rows that look alike; given a few tokens known to be
    unused (``reference_ids``), every row is scored by its cosine distance to their mean. The
    first principal component of the whole table (a direction most rows share) is projected out
    first, as in one of the indicators their code computes for tied models (it also computes the
    plain cosine distance, ``remove_first_pc=False``). Small distances are candidates, to be
    verified by prompting the model.

    Equation:
        u = first principal component of the centred rows of E (unit length)
        E' = E − (E u) uᵀ,  r = mean of E'[reference_ids]
        score_v = 1 − E'[v] · r / (‖E'[v]‖ ‖r‖)

    Args:
        E: the (output) embedding matrix, floating ``[V, d]`` with V > d; for a tied model
            the one shared table.
        reference_ids: ids of tokens known to be unused, a non-empty 1-D integer sequence.
        remove_first_pc: project out the first principal component first (the variant the book uses).

    Returns:
        One score per row, float32 ``[V]``, in [0, 2]; the reference rows score low.

    Raises:
        TypeError: a non-floating ``E`` or non-integer ``reference_ids``.
        ValueError: ``E`` not 2-D with more rows than columns, empty ``reference_ids``, or an id
            outside ``[0, V)``.

    Shapes:
        E: [V, d], reference_ids: [n] -> [V]

    References:
        Land & Bartolo, Fishing for Magikarp: Automatically Detecting Under-trained Tokens in
        Large Language Models, arXiv:2405.05417 (code: cohere-ai/magikarp).
    """
    E = check_floating("E", E)
    if E.ndim != 2 or E.shape[0] <= E.shape[1]:
        raise ValueError(f"E must be a [V, d] matrix with V > d, got shape {tuple(E.shape)}")
    if not isinstance(reference_ids, torch.Tensor):
        reference_ids = torch.as_tensor(list(reference_ids), dtype=torch.long)
    ids = check_integer_tensor("reference_ids", reference_ids)
    if ids.ndim != 1 or ids.numel() == 0:
        raise ValueError(
            f"reference_ids must be a non-empty 1-D list of ids, got shape {tuple(ids.shape)}"
        )
    ids = check_index_range("reference_ids", ids, E.shape[0])
    x = E.float()  # no copy for a float32 table
    dot_r: torch.Tensor
    if remove_first_pc:  # E' = E - (E u) u^T, used through dot products only (no V x d copy)
        u = _first_pc(x)
        xu = x @ u  # [V]
        r = x[ids].mean(dim=0) - xu[ids].mean() * u
        dot_r = x @ r - xu * (u @ r)
        norms_sq = torch.linalg.vector_norm(x, dim=1).pow(2) - xu * xu
        del xu
    else:
        r = x[ids].mean(dim=0)
        dot_r = x @ r
        norms_sq = torch.linalg.vector_norm(x, dim=1).pow(2)
    norms = (norms_sq.clamp_min(0).sqrt() * r.norm()).clamp_min(1e-6)  # a zero row: distance 1
    return 1 - dot_r / norms
