"""SentencePiece models: corpustok/sentencepiece/ and kernels/sentencepiece/ against sentencepiece."""
