"""Reports of a stored run: tables (console, Markdown, LaTeX, HTML) and figures (plots.py)."""
