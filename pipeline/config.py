"""The configuration of a tokenize job: built once, hashed once, passed as is.

Everything that changes a shard's bytes or which shards exist is in it; its hash names the
job in ``_job.json``, in every shard name and entry, and in the run manifest, so resume and
"same job?" are decided by one value. ``max_doc_bytes`` is not in it: it changes how a long
document is encoded (streamed), never the ids. ``id_type`` is the kind of the inputs' ids
(``schemas.ID_KINDS``), found from the inputs before the job starts (``read.job_id_type``):
it changes the shards' schema, and a job appended to must keep it.
"""
import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Optional


def config_hash(config: dict) -> str:
    """Hash of a configuration dict (first 16 hex digits of the sha256 of its sorted JSON)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


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

    def to_dict(self) -> dict:
        """The dict written to manifests (and hashed)."""
        return asdict(self)

    @property
    def id(self) -> str:
        return config_hash(self.to_dict())
