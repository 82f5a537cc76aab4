"""The Streamlit dashboard's helpers; pages stay thin: caching and the model listing (cache.py), the
page header and sidebar (sidebar.py), widgets (widgets.py), figures (charts.py), words (texts.py) and
background jobs (jobs_ui.py)."""
