"""The reference counts: Hugging Face's Python `tokenizers`, one count a line
for each NUL-separated text of argv[2], with argv[1]'s tokenizer.json."""
import sys
from tokenizers import Tokenizer

tokenizer = Tokenizer.from_file(sys.argv[1])
tokenizer.no_truncation()
tokenizer.no_padding()
texts = open(sys.argv[2], encoding="utf-8", newline="").read().split("\0")
for text in texts:
    print(len(tokenizer.encode(text, add_special_tokens=False).ids))
