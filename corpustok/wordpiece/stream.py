"""Incremental E2E WordPiece: text fed in pieces gives the ids of a whole-text encode, holding
back only the open word (and a tail that may begin a special token); see
:meth:`WordPiece.stream`."""
import numpy as np

from corpustok.arrow import utf8_batch
from corpustok.kernels.wordpiece import walk as K


class WordPieceStream:
    """State of an incremental E2E encode (see :meth:`WordPiece.stream`)."""

    def __init__(self, model):
        self._model = model
        self._args = model._e2e_args()
        self._state = np.zeros(K.STATE_SIZE, np.int64)
        self._pending = np.zeros(0, np.int32)  # provisional ids of the open word
        self._tail = b""  # bytes held back while a special token may still be completing
        sp_off = model._arrays["sp_off"]
        self._hold = int(np.diff(sp_off).max()) - 1 if len(sp_off) > 1 else 0
        self._max_chars = int(model._arrays["params"][2])

    def _run(self, raw, final):
        data = np.frombuffer(raw or b"\0", np.uint8)
        end = len(raw)
        stop = end if final else max(0, end - self._hold)
        # The open word's ids are rewritten from its start: it may emit one id per symbol
        # it holds (a live word has at most max_chars of them; a dead one emits one [UNK]).
        open_word = min(int(self._state[K.ST_WORD_LEN]), self._max_chars)
        out = np.empty(len(self._pending) + open_word + self._model._capacity(end, 1), np.int32)
        out[:len(self._pending)] = self._pending
        self._state[K.ST_WORD_START] = 0
        n, i = K.e2e_run(data, np.array([0, end], np.int64), stop, int(final), *self._args,
                         out, len(self._pending), np.empty(2, np.int64), np.empty(1, np.int64),
                         self._state)
        self._tail = raw[i:]
        done = int(self._state[K.ST_WORD_START]) if self._state[K.ST_WORD_LEN] else n
        self._pending = out[done:n].copy()
        return out[:done].tolist()

    def feed(self, chunk):
        """Ids that are final after ``chunk``; a word still open at its end waits."""
        if not isinstance(chunk, str):
            raise TypeError(f"feed() takes a str, got {type(chunk).__name__}")
        b = utf8_batch([chunk])
        return self._run(self._tail + b.data[b.offsets[0]:b.offsets[1]].tobytes(), False)

    def finish(self):
        """Ids of whatever is left; the stream is reset for a new text."""
        ids = self._run(self._tail, True)
        self._state[:] = 0
        self._pending = self._pending[:0]
        self._tail = b""
        return ids
