"""The jobs: ``tokenize`` (inputs to shards: ``corpustok tokenize``), ``train`` (a BPE
tokenizer from inputs; its chunk counting, ``count``), ``main`` (``corpustok main``: train,
tokenize and verify the embedded sample; the substrate codec on it, ``demo``)."""
