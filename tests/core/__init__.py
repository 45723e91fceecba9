"""The substrate codec, the references, the Tokenizer protocol, PackedSequences, schemas, CUDA."""
