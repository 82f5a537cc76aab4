"""The Streamlit dashboard's helpers: caching (cache.py), the sidebar and start-up training (sidebar.py),
and shared widgets, charts and explanation sentences (ui.py). Pages stay thin."""
