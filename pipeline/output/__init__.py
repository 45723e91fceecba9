"""The output folder: its layout, ownership and shard names (``layout``, ``old_layout``),
the shard and manifest writers (``shards``), exports (``export``), checks (``verify``) and
the summary of a folder (``stats``)."""
