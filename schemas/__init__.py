"""Arrow schemas of documents in, token rows out and manifests, with validation helpers."""
