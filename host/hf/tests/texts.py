"""Random and adversarial texts for the tokenizer.json exactness test.

Writes the texts to argv[1], separated by NUL bytes (no text holds one),
deterministic for a seed (argv[2]).
"""
import random
import sys

ATOMS = [
    # Special and added tokens of the tested families, whole and broken.
    "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|im_start|>",
    "<|im_end|>", "<|endoftext|>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<pad>",
    "<｜begin▁of▁sentence｜>", "<think>", "</think>", "<|im_sta", "rt|>", "<|", "|>",
    # Whitespace of every kind, and runs of it.
    " ", "  ", "\t", "\n", "\r\n", "\r", "\n\n\n", " \n ", "\u00a0", "\u2028", "\u3000", "\u200b", "\ufeff",
    # Contractions, upper case too (the (?i:'s|...) group).
    "'s", "'S", "'ll", "'LL", "'re", "n't", "’s",
    # Digits: long runs, other scripts, fullwidth.
    "1", "12", "123", "1234567890", "٣٤٥", "１２３", "½", "3.14159",
    # Letters in many scripts, combining marks (NFC), emoji sequences.
    "hello", "Hello", "HELLO", "naïve", "nai\u0308ve", "e\u0301", "Å", "A\u030a", "ﬁ", "Straße",
    "你好世界", "日本語のテキスト", "カタカナ", "한국어", "русский", "العربية", "עברית", "हिन्दी", "ไทย",
    "👍", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "\U00020000", "\U0010fffd", "▁", "▁▁", "Ġ", "Ċ",
    # Code and markup.
    "def f(x):", "    return x", "{\"a\": [1, 2]}", "</tool>", "<!-- PROEM_CACHE_BOUNDARY -->", "## Heading",
    "- item", "`code`", "https://example.com/a?b=c&d=e", "\\n", "/* */", "=>", "!==", "...", "—", "…",
    # Control characters proem may pass through.
    "\u0001", "\u001b[0m", "\u007f",
]


def random_text(rng):
    kind = rng.random()
    if kind < 0.45:
        return "".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 40)))
    if kind < 0.7:
        # Any code point but surrogates and NUL.
        out = []
        for _ in range(rng.randint(1, 60)):
            c = rng.choice([rng.randint(1, 0x7F), rng.randint(0x80, 0x7FF), rng.randint(0x800, 0xFFFF), rng.randint(0x10000, 0x10FFFF)])
            if 0xD800 <= c <= 0xDFFF:
                c = 0x41
            out.append(chr(c))
        return "".join(out)
    if kind < 0.85:
        # Long runs: whitespace, one letter, digits, one emoji.
        atom = rng.choice([" ", "\n", "\t", "a", "Z", "7", "你", "👍", "!", "\r\n", " a"])
        return atom * rng.randint(1, 3000)
    # Prose-like.
    words = ["the", "agent", "must", "never", "reply", "with", "tools", "Memory", "SOUL.md", "2026-11-26", "—", "don't"]
    return " ".join(rng.choice(words) for _ in range(rng.randint(1, 300)))


def main():
    path, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    texts = [random_text(rng) for _ in range(count)]
    texts += ATOMS
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("\0".join(texts))


main()
