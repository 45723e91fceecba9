"""Pre-tokenization: corpustok/pretokenize/ and kernels/split/ against the regex module, and NFC."""
