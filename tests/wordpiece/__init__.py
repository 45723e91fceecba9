"""Fast WordPiece: corpustok/wordpiece/ and kernels/wordpiece/ against HF BertTokenizerFast."""
