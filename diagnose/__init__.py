"""Run model -> findings: derived metrics, rules, the ZeRO planner; `diagnose.cli` is the composition root."""
import os

__version__ = "0.1.0"

# Polars allocates through its own jemalloc, which by default keeps freed pages for seconds: on a long log the chunks
# already parsed stay resident and peak RSS grows with the log (8 GiB, 16 ranks: 1.19 GB kept against 0.9 GB
# returned at once). Set before polars loads; a user's own setting wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
