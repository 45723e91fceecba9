"""What makes an input unreadable: :class:`ReadFailure` (a file that stops being readable part
way, with how much of it is known sound) and :data:`READ_ERRORS`, every type a reader may
raise for a bad input. The job turns each into a ``batches.ReadError`` record for that input
and goes on."""
import pyarrow as pa

from corpustok.schemas import InputFormatError


class ReadFailure(Exception):
    """An input file stopped being readable part way. ``verified_rows``: its leading lines
    known sound (read as stored; of a compressed file, up to the end of its last member that
    passed its check); the shards of its ranges that end past them are not kept. The message
    says which lines are."""

    def __init__(self, message, verified_rows=0):
        super().__init__(message)
        self.verified_rows = verified_rows

    def __reduce__(self):
        return type(self), (self.args[0], self.verified_rows)


# What makes an input unreadable (counted against that file; the job goes on): I/O (OSError,
# which pyarrow's ArrowIOError is), a damaged compressed stream (ReadFailure), a layout we
# cannot read (InputFormatError), a file pyarrow finds invalid or uses a Parquet feature it
# lacks. Anything else raised while reading is a bug of ours and fails the job (exit 3).
READ_ERRORS = (OSError, ReadFailure, InputFormatError, pa.ArrowInvalid,
               pa.ArrowNotImplementedError)
