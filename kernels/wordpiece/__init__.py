"""Fast WordPiece (LinMaxMatch + E2E): building the trie and normalization tables (build) and the
walk over documents (walk).
"""
