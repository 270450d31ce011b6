"""Run model -> findings: derived metrics, rules, the ZeRO planner; `diagnose.cli` is the composition root."""
__version__ = "0.1.0"
