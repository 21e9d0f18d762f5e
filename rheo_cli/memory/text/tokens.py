"""Token estimates for budgeting the injected context, with no tokenizer download.

The estimate is about 4 characters per token for ASCII text (English prose, code) and about
one token per character for other scripts (CJK, emoji), which errs on the side of spending
fewer real tokens than the budget. It is used only for budgeting and for the figures
``rheo context`` prints; the provider's reported usage is what rheo records.
"""

from __future__ import annotations


def estimate(text: str) -> int:
    """Estimated tokens in ``text`` (int >= 0; 0 only for the empty string)."""
    if not text:
        return 0
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    other = len(text) - ascii_chars
    return max(1, (ascii_chars + 3) // 4 + other)
