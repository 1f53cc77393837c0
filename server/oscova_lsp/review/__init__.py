"""`oscova-lsp review`: what every agent a change reaches will be sent, before and after, offline.

`git.py` asks git (offline, read-only), `trees.py` copies both sides into a scratch folder, `render.py`
renders requests with fixed inputs, `review.py` compares the two sides, `report.py` holds the findings and
their JSON shape, `formats.py` prints them, `token_delta.py` gives each changed agent's token delta.
"""
