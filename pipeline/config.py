"""The configuration of a tokenize job: built once, hashed once, passed as is.

Everything that changes a shard's bytes or which shards exist is in it; its hash names the
job in ``.corpustok/job.json``, in every shard name and entry, and in the run manifest, so
resume and "same job?" are decided by one value. ``max_doc_bytes`` is not in it: it changes
how a long document is encoded (streamed), never the ids. ``id_type`` is the kind of the
inputs' ids (``schemas.ID_KINDS``), found from the inputs before the job starts
(``read.inputs.job_id_type``): it changes the shards' schema, and a job appended to must keep it.
``columns``: the inputs read with other columns than ``id_column``/``text_column``
(``read.inputs.resolve_inputs``), recorded here but hashed into those inputs' shard names, not
into the configuration's hash (see ``inputs``); ``txt_docs``: what a document of a ``.txt``
input is, set when the job has one (both enter the dict only when set). ``sources``: each
input's name in its shards' ``source`` column (the path as the user gave it, kept from the
job's first run; hashed into its shard names like ``columns``); ``vocab_size`` and
``tokenizer_name`` say which tokenizer the ids are of (exports choose their id type by the
vocabulary); ``layout``: the folder layout (``output.layout.LAYOUT``).
"""
import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Optional

OMITTED_WHEN_NONE = ("columns", "txt_docs", "keep_columns")
# Recorded with the configuration but not hashed: each is part of its inputs' identity
# instead (``columns``, ``sources``: hashed into those inputs' shard names), or a label
# (``tokenizer_name``: the tokenizer itself is ``tokenizer_sha256``).
NOT_HASHED = ("columns", "sources", "tokenizer_name")
EXPORT_FORMATS = ("megatron", "datatrove", "numpy")  # the layouts pipeline.export writes


def config_hash(config: dict) -> str:
    """Hash of a configuration dict (first 16 hex digits of the sha256 of its sorted JSON),
    :data:`NOT_HASHED` left out."""
    hashed = {k: v for k, v in config.items() if k not in NOT_HASHED}
    return hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TokenizeConfig:
    tokenizer_sha256: str
    bos: Optional[int]
    eos: Optional[int]
    id_column: Optional[str]  # None: the input has no ids
    text_column: str
    shard_bytes: int
    shard_rows: int
    write_rejects: bool
    id_type: str = "string"
    columns: Optional[dict] = None  # {shown input: {"id": COL or None, "text": COL}}
    txt_docs: Optional[str] = None  # "line" or "paragraph"
    vocab_size: Optional[int] = None  # the tokenizer's ids: what an export's id type needs
    tokenizer_name: Optional[str] = None  # a label: the file's name, or the known vocabulary's
    sources: Optional[dict] = None  # {shown input: its name in the shards' source column}
    layout: int = 3  # output.layout.LAYOUT: where the shards lie and how they are named
    keep_columns: Optional[list] = None  # ["NAME:TYPE", ...]: read.spec.KeepColumn

    def to_dict(self) -> dict:
        """The dict written to manifests (and hashed)."""
        d = asdict(self)
        for key in OMITTED_WHEN_NONE:
            if d[key] is None:
                del d[key]
        return d

    @property
    def id(self) -> str:
        return config_hash(self.to_dict())
