"""What serves one page only (ARCHITECTURE step two): ``sections/<page>.py``; shared widgets stay in widgets.py."""
