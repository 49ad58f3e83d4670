#!/usr/bin/env python3
"""Trains a text classifier on a labelled corpus and writes it as an ONNX model that
`OnnxClassifier` (processors-builtins, feature `onnx`) loads as a detector's local check.

    bash scripts/onnx-venv.sh   # numpy, onnx and onnxruntime in target/onnx-venv
    target/onnx-venv/bin/python scripts/onnx_classifier.py train eval/prompt_injection.jsonl \
        --label injection --out injection.onnx

The corpus is JSON lines of {"text": ..., "expected": "flag" | "pass"} (the format of
`eval/`). The model reads the features `OnnxClassifier` computes in Rust, which this script
computes the same way (`features` below): the text lower-cased, its whitespace collapsed,
padded with a space at each end, cut to `max_chars` characters; each character n-gram
(`ngram_min` to `ngram_max` characters) hashed with 32-bit FNV-1a over its UTF-8 bytes into one
of `dims` buckets; the bucket counts scaled to unit length. The classifier is a logistic
regression (weights, bias, sigmoid), trained by gradient descent, and the model file carries
what Rust needs in its metadata: `processors.features`, `processors.dims`,
`processors.ngram_min`, `processors.ngram_max`, `processors.max_chars`, `processors.labels`.

`expect MODEL TEXT...` prints the scores onnxruntime gives for each text, as JSON: the figures
the Rust tests compare their own with.
"""

import argparse
import json
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193


def fnv1a(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h ^= b
        h = (h * FNV_PRIME) & 0xFFFFFFFF
    return h


def features(text: str, dims: int, ngram_min: int, ngram_max: int, max_chars: int) -> np.ndarray:
    chars = (" " + " ".join(text.lower().split()) + " ")[:max_chars]
    v = np.zeros(dims, dtype=np.float32)
    for n in range(ngram_min, ngram_max + 1):
        for i in range(len(chars) - n + 1):
            v[fnv1a(chars[i : i + n].encode("utf-8")) % dims] += 1.0
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else v


def load(path):
    texts, labels = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                sample = json.loads(line)
                texts.append(sample["text"])
                labels.append(1.0 if sample["expected"] == "flag" else 0.0)
    return texts, np.array(labels, dtype=np.float32)


def train(args):
    texts, y = load(args.corpus)
    x = np.stack([features(t, args.dims, args.ngram_min, args.ngram_max, args.max_chars) for t in texts])
    w = np.zeros(args.dims, dtype=np.float32)
    b = np.float32(0.0)
    for _ in range(args.epochs):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        grad = p - y
        w -= args.rate * (x.T @ grad / len(y) + args.l2 * w)
        b -= args.rate * grad.mean()
    weights = numpy_helper.from_array(w.reshape(args.dims, 1).astype(np.float32), "weights")
    bias = numpy_helper.from_array(np.array([b], dtype=np.float32), "bias")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["features", "weights"], ["logits_raw"]),
            helper.make_node("Add", ["logits_raw", "bias"], ["logits"]),
            helper.make_node("Sigmoid", ["logits"], ["scores"]),
        ],
        "classifier",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, args.dims])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1])],
        initializer=[weights, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    meta = {
        "processors.features": "hashed-char-ngrams",
        "processors.dims": str(args.dims),
        "processors.ngram_min": str(args.ngram_min),
        "processors.ngram_max": str(args.ngram_max),
        "processors.max_chars": str(args.max_chars),
        "processors.labels": args.label,
    }
    for key, value in meta.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    onnx.save(model, args.out)
    p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
    right = int(((p >= 0.5) == (y == 1.0)).sum())
    print(f"{args.out}: {len(y)} samples, {right} right on the training corpus", file=sys.stderr)


def expect(args):
    import onnxruntime

    model = onnx.load(args.model)
    meta = {p.key: p.value for p in model.metadata_props}
    dims, lo, hi, cut = (int(meta[f"processors.{k}"]) for k in ("dims", "ngram_min", "ngram_max", "max_chars"))
    session = onnxruntime.InferenceSession(args.model)
    out = {}
    for text in args.texts:
        x = features(text, dims, lo, hi, cut).reshape(1, dims)
        out[text] = float(session.run(None, {session.get_inputs()[0].name: x})[0][0][0])
    print(json.dumps(out, indent=1, ensure_ascii=False))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(required=True)
    t = sub.add_parser("train", help="train on a corpus and write the model")
    t.add_argument("corpus")
    t.add_argument("--label", required=True, help="the category the score is for, e.g. injection")
    t.add_argument("--out", required=True)
    t.add_argument("--dims", type=int, default=4096)
    t.add_argument("--ngram-min", type=int, default=2)
    t.add_argument("--ngram-max", type=int, default=4)
    t.add_argument("--max-chars", type=int, default=2048)
    t.add_argument("--epochs", type=int, default=2000)
    t.add_argument("--rate", type=float, default=2.0)
    t.add_argument("--l2", type=float, default=1e-4)
    t.set_defaults(run=train)
    e = sub.add_parser("expect", help="print onnxruntime's scores for texts")
    e.add_argument("model")
    e.add_argument("texts", nargs="+")
    e.set_defaults(run=expect)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
