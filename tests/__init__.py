"""corpustok's tests, a folder per subject of the package (see each folder's docstring)."""
