"""Training a byte-level BPE tokenizer from corpus files."""
import time

import pyarrow as pa

from .read import READ_ERRORS, expand_inputs, read_documents


def _texts(files, id_column, text_column, errors):
    """Texts of every readable input (binary columns decoded with U+FFFD replacement)."""
    for f in files:
        try:
            for b in read_documents(f, id_column, text_column):
                text = b.table.column("text")
                if pa.types.is_binary(text.type) or pa.types.is_large_binary(text.type):
                    yield from (x.decode("utf-8", "replace") for x in text.to_pylist() if x)
                else:
                    yield from (x for x in text.to_pylist() if x)
        except READ_ERRORS as e:
            errors.append(str(e))


def train(inputs, vocab_size, substrate="ube", id_column="id", text_column="text",
          beam_args=(), workers=None):
    """``(BytePairTokenizer, info)`` trained on ``inputs``; ``info`` has documents, bytes,
    seconds and the errors of unreadable inputs."""
    from corpustok import BytePairTokenizer
    files = expand_inputs(inputs)
    t0 = time.perf_counter()
    errors = []
    texts = list(_texts(files, id_column, text_column, errors))
    tok = BytePairTokenizer.train(texts, vocab_size, substrate=substrate)
    info = {"documents": len(texts), "bytes": sum(len(t.encode("utf-8", "replace"))
                                                   for t in texts),
            "seconds": time.perf_counter() - t0, "errors": errors}
    return tok, info
