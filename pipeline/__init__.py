"""Beam transforms, the ``corpustok`` CLI and run manifests."""
