"""Findings + run model -> HTML, Markdown, JSON and terminal output. Templates never compute."""
