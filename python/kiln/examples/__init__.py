"""Small end-to-end programs that use kiln as a user would (``python -m kiln.examples.<name>``)."""
