"""Memory helpers for jitted code: growable flat arrays (buffers), huge pages for very large
work arrays (hugepages), a software prefetch (prefetch).
"""
